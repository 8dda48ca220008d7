# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The apply order of ordering.py: what must exist before what, and what shares a tier (applied at once)."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.rules.ordering import (
    TIER_CRDS, TIER_NAMESPACES, sort_for_apply, sort_for_delete, tier_of, tiers)


def obj(kind, name="x", api_version="v1"):
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "ns"}}


# (needed, needs): the first must be applied in an earlier tier than the second
NEEDED_BEFORE = [
    ("Namespace", "ConfigMap"),
    ("CustomResourceDefinition", "Widget"),  # its custom resources
    ("StorageClass", "PersistentVolumeClaim"),  # the default class is assigned when the claim is created
    ("LimitRange", "Deployment"),  # defaults are set when the pods are admitted
    ("ServiceAccount", "Secret"),  # a service account token Secret is deleted when its ServiceAccount is missing
    ("ServiceAccount", "Deployment"),  # pods of a missing ServiceAccount are refused
    ("ConfigMap", "Deployment"),  # mounted and read as environment
    ("Secret", "StatefulSet"),
    ("PersistentVolumeClaim", "StatefulSet"),
    ("Service", "Deployment"),  # a pod's environment lists the Services that existed when it was created
    ("Service", "Ingress"),
    ("Deployment", "APIService"),
    ("Widget", "ValidatingWebhookConfiguration"),  # webhooks last: they never block the release's own objects
    ("Service", "MutatingWebhookConfiguration"),
]

# kinds that need nothing of each other: one tier, applied at once
SAME_TIER = [
    ("ConfigMap", "Service"),
    ("Secret", "Service"),
    ("PersistentVolumeClaim", "NetworkPolicy"),
    ("Role", "RoleBinding"),
    ("Deployment", "StatefulSet"),
]


@pytest.mark.parametrize("needed,needs", NEEDED_BEFORE)
def test_a_kind_is_applied_in_a_tier_before_the_kinds_that_need_it(needed, needs):
    assert tier_of(obj(needed)) < tier_of(obj(needs))


@pytest.mark.parametrize("one,other", SAME_TIER)
def test_kinds_that_need_nothing_of_each_other_share_a_tier(one, other):
    assert tier_of(obj(one)) == tier_of(obj(other))


def test_namespaces_then_crds_come_first():
    assert tier_of(obj("Namespace")) == TIER_NAMESPACES
    assert tier_of(obj("CustomResourceDefinition", api_version="apiextensions.k8s.io/v1")) == TIER_CRDS
    assert min(tier_of(obj(k)) for k in ("ConfigMap", "Service", "ClusterRole", "Widget")) > TIER_CRDS


def test_tiers_group_in_order_and_deletion_reverses_the_apply_order():
    objects = [obj("Deployment", "web"), obj("Service", "web"), obj("ConfigMap", "web"), obj("ServiceAccount", "web"),
               obj("ConfigMap", "a"), obj("Namespace", "ns")]
    grouped = tiers(objects)
    numbers = [tier for tier, members in grouped]
    assert numbers == sorted(numbers)
    kinds = [[(o["kind"], o["metadata"]["name"]) for o in members] for tier, members in grouped]
    assert kinds == [[("Namespace", "ns")], [("ServiceAccount", "web")],
                     [("ConfigMap", "a"), ("ConfigMap", "web"), ("Service", "web")], [("Deployment", "web")]]
    assert sort_for_delete(objects) == list(reversed(sort_for_apply(objects)))
