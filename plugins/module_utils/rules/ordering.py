# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one ordering table: in which tier each kind is applied, and deleted (reverse).

Tiers are applied one after another; objects inside a tier are independent and may be applied
concurrently. Namespaces come first (they are applied before the release is saved in history),
then CRDs (which must be Established before their custom resources), cluster policy, then service
accounts and RBAC (a service account token Secret needs its ServiceAccount), configuration and
Services together, workloads, and finally everything else (custom resources, routes, webhook
configurations last so they never block the objects they would admit).

A tier is a barrier: the next starts when the slowest object of this one is done, so kinds share a tier
unless one needs another. Configuration (ConfigMaps, Secrets, volumes) and Services need nothing of each
other, and both only need to exist before the workloads that read them (a pod's environment lists the
Services that existed when it was created, and mounts its ConfigMaps and Secrets). Apart, they cost a first
install one more barrier: a round trip and the tail of the slower tier (measured in docs/performance.md).
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of

TIER_NAMESPACES = 0
TIER_CRDS = 1

# (tier, kinds) in apply order. Kinds not listed go to TIER_OTHER.
_TIERS = (
    (TIER_NAMESPACES, ("Namespace",)),
    (TIER_CRDS, ("CustomResourceDefinition",)),
    (2, ("ResourceQuota", "LimitRange", "StorageClass", "PriorityClass", "RuntimeClass",
         "PodSecurityPolicy", "IngressClass", "ValidatingAdmissionPolicy",
         "ValidatingAdmissionPolicyBinding")),
    (3, ("ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding")),
    (4, ("ConfigMap", "Secret", "PersistentVolume", "PersistentVolumeClaim",
         "Service", "Endpoints", "EndpointSlice", "NetworkPolicy")),
    (5, ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController",
         "Pod", "Job", "CronJob", "HorizontalPodAutoscaler", "PodDisruptionBudget")),
    (6, ("Ingress", "APIService")),
)
TIER_OTHER = 7
TIER_WEBHOOKS = 8
_WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")

_KIND_TIER = {}
_KIND_RANK = {}
for _tier, _kinds in _TIERS:
    for _i, _kind in enumerate(_kinds):
        _KIND_TIER[_kind] = _tier
        _KIND_RANK[_kind] = _i
for _i, _kind in enumerate(_WEBHOOK_KINDS):
    _KIND_TIER[_kind] = TIER_WEBHOOKS
    _KIND_RANK[_kind] = _i


def tier_of(obj):
    return _KIND_TIER.get(obj.get("kind"), TIER_OTHER)


def sort_key(obj):
    """Stable apply order: tier, rank of the kind in its tier, kind, namespace, name."""
    k = key_of(obj)
    return (tier_of(obj), _KIND_RANK.get(k.kind, 99), k.kind, k.group, k.namespace, k.name)


def sort_for_apply(objects):
    return sorted(objects, key=sort_key)


def sort_for_delete(objects):
    return sorted(objects, key=sort_key, reverse=True)


def tiers(objects):
    """[(tier, [objects])] in apply order, each tier's objects in stable order."""
    grouped = {}
    for obj in sort_for_apply(objects):
        grouped.setdefault(tier_of(obj), []).append(obj)
    return sorted(grouped.items())
