# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one table of deprecated and removed Kubernetes API versions, and the checks built on it.

Kubernetes stops serving old API versions (``apps/v1beta1`` Deployment in 1.16, ``extensions/v1beta1``
Ingress in 1.22, ...). Helm cannot upgrade or roll back a release whose *stored* manifest uses a removed
version. manent checks new manifests and rendered charts against the target cluster before touching it
(:func:`check`), and knows under which served version an object stored under a removed one can still be
deleted (:func:`delete_api_version`). What a *stored* object becomes on a cluster that no longer serves its
version (renamed, converted, dropped or refused) is :mod:`apiconvert`'s job, built on this table.

An entry's ``rename`` is True only when the object applies unchanged under the replacement apiVersion
with the same meaning: no required field was added, no field renamed, no default changed. When it is
False, :mod:`apiconvert` has the conversion (or says why an object cannot be converted).

Sources (checked for every entry):

- Kubernetes "Deprecated API Migration Guide",
  https://kubernetes.io/docs/reference/using-api/deprecation-guide/ (removed_in, replacements and the
  notable changes for every removal 1.16 .. 1.32).
- ``zz_generated.prerelease-lifecycle.go`` in k8s.io/api, k8s.io/apiextensions-apiserver and
  k8s.io/kube-aggregator (``APILifecycleDeprecated`` / ``APILifecycleRemoved`` / ``APILifecycleReplacement``):
  deprecated_in is the release the API server names in its own warning
  ("<apiVersion> <Kind> is deprecated in v1.X+, unavailable in v1.Y+; use ...").
- CHANGELOG-1.23 (#104248): rbac.authorization.k8s.io/v1alpha1 and scheduling.k8s.io/v1alpha1 removed.
- "Workloads API changes in versions 1.8 and 1.9" (apps/v1beta2 promoted to apps/v1 in its entirety) and
  the "Core Workloads API GA" blog post (2018).
- Kubernetes v1.33 blog "Continuing the transition from Endpoints to EndpointSlices" / KEP-4974 (v1
  Endpoints deprecated in 1.33, no removal scheduled).

Not in the table on purpose: alpha APIs that were never enabled by default and changed shape between
versions (resource.k8s.io v1alpha1..v1alpha3) and admissionregistration.k8s.io/v1beta1
ValidatingAdmissionPolicy (no removal release could be verified). apps/v1beta1 never served ReplicaSet
(the migration guide lists it, the generated lifecycle does not), so no entry either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import split_api_version

LEVEL_ERROR = "error"
LEVEL_WARNING = "warning"


@dataclass(frozen=True)
class Entry:
    """One deprecated (and usually removed) API version of one kind."""

    group: str
    version: str
    kind: str
    replacement: Optional[str]  # apiVersion to use instead; None when there is no replacement
    deprecated_in: str  # "1.x"
    removed_in: Optional[str]  # "1.y"; None when deprecated without a scheduled removal
    rename: bool  # True: the object applies unchanged under the replacement apiVersion
    note: str  # what changes, or what to do when there is no replacement
    replacement_kind: Optional[str] = None  # when the replacement is a different kind

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def new_kind(self):
        return self.replacement_kind or self.kind

    @property
    def deprecated(self):
        return parse_version(self.deprecated_in)

    @property
    def removed(self):
        return parse_version(self.removed_in) if self.removed_in else None

    @property
    def replacement_text(self):
        """'apps/v1 Deployment', or a phrase saying there is none."""
        if not self.replacement:
            return "no replacement"
        return "%s %s" % (self.replacement, self.new_kind)


@dataclass(frozen=True)
class Finding:
    """Result of :func:`check`: ``level`` is "error" (not served) or "warning" (served but deprecated)."""

    level: str
    message: str
    replacement: Optional[str]
    rename: bool
    entry: Entry


def _e(api_version, kinds, replacement, deprecated_in, removed_in, rename, note, replacement_kind=None):
    group, version = split_api_version(api_version)
    return tuple(Entry(group, version, kind, replacement, deprecated_in, removed_in, rename, note, replacement_kind)
                 for kind in kinds)


_SELECTOR = ("spec.selector is required (the old version defaulted it from the pod template labels) and "
             "immutable: copy the template labels into spec.selector.matchLabels")
_PSP_GONE = ("delete the object and enforce pod security with "
             "Pod Security Admission (namespace labels pod-security.kubernetes.io/*) or a policy webhook")
_INGRESS = ("spec.backend becomes spec.defaultBackend; backend serviceName/servicePort become "
            "service.name and service.port.number or service.port.name; every path needs pathType "
            "(ImplementationSpecific keeps the v1beta1 behaviour)")
_WEBHOOKS = ("webhooks[].sideEffects (None or NoneOnDryRun) and webhooks[].admissionReviewVersions are "
             "required; defaults change: failurePolicy Fail (was Ignore), matchPolicy Equivalent (was Exact), "
             "timeoutSeconds 10 (was 30); webhook names must be unique")
_PLC_SHARES = ("PriorityLevelConfiguration spec.limited.assuredConcurrencyShares is renamed "
               "spec.limited.nominalConcurrencyShares")
_APPS_V1BETA2 = "apps/v1 is apps/v1beta2 promoted unchanged"

_TABLE = (
    # ---- removed in 1.16
    _e("extensions/v1beta1", ("Deployment",), "apps/v1", "1.8", "1.16", False,
       _SELECTOR + "; spec.rollbackTo is gone; defaults change: progressDeadlineSeconds 600 (was none), "
       "revisionHistoryLimit 10 (was unlimited), maxSurge/maxUnavailable 25% (was 1)")
    + _e("extensions/v1beta1", ("DaemonSet",), "apps/v1", "1.8", "1.16", False,
         _SELECTOR + "; spec.templateGeneration is gone; spec.updateStrategy.type defaults to RollingUpdate "
         "(was OnDelete)")
    + _e("extensions/v1beta1", ("ReplicaSet",), "apps/v1", "1.8", "1.16", False, _SELECTOR)
    + _e("extensions/v1beta1", ("NetworkPolicy",), "networking.k8s.io/v1", "1.9", "1.16", True,
         "same schema, moved to the networking.k8s.io group")
    + _e("extensions/v1beta1", ("PodSecurityPolicy",), None, "1.11", "1.16", False,
         "moved to policy/v1beta1 in 1.10, itself removed in 1.25; " + _PSP_GONE)
    + _e("apps/v1beta1", ("Deployment",), "apps/v1", "1.8", "1.16", False,
         _SELECTOR + "; spec.rollbackTo is gone; revisionHistoryLimit defaults to 10 (was 2)")
    + _e("apps/v1beta1", ("StatefulSet",), "apps/v1", "1.8", "1.16", False,
         _SELECTOR + "; spec.updateStrategy.type defaults to RollingUpdate (was OnDelete)")
    + _e("apps/v1beta2", ("Deployment", "DaemonSet", "ReplicaSet", "StatefulSet"), "apps/v1", "1.9", "1.16",
         True, _APPS_V1BETA2 + "; spec.selector was already required")
    # ---- removed in 1.22
    + _e("extensions/v1beta1", ("Ingress",), "networking.k8s.io/v1", "1.14", "1.22", False, _INGRESS)
    + _e("networking.k8s.io/v1beta1", ("Ingress",), "networking.k8s.io/v1", "1.19", "1.22", False, _INGRESS)
    + _e("networking.k8s.io/v1beta1", ("IngressClass",), "networking.k8s.io/v1", "1.19", "1.22", True,
         "no notable changes")
    + _e("admissionregistration.k8s.io/v1beta1",
         ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"),
         "admissionregistration.k8s.io/v1", "1.16", "1.22", False, _WEBHOOKS)
    + _e("apiextensions.k8s.io/v1beta1", ("CustomResourceDefinition",), "apiextensions.k8s.io/v1", "1.16", "1.22",
         False, "spec.scope is required; every version needs a structural schema in "
         "spec.versions[].schema.openAPIV3Schema; spec.version, spec.validation, spec.subresources and "
         "spec.additionalPrinterColumns move into spec.versions[] (JSONPath becomes jsonPath); conversion "
         "webhook settings move under spec.conversion.webhook; preserveUnknownFields: true is not allowed "
         "(use x-kubernetes-preserve-unknown-fields in the schema)")
    + _e("apiregistration.k8s.io/v1beta1", ("APIService",), "apiregistration.k8s.io/v1", "1.19", "1.22", True,
         "no notable changes")
    + _e("authentication.k8s.io/v1beta1", ("TokenReview",), "authentication.k8s.io/v1", "1.19", "1.22", True,
         "no notable changes")
    + _e("authorization.k8s.io/v1beta1", ("SubjectAccessReview", "LocalSubjectAccessReview"),
         "authorization.k8s.io/v1", "1.19", "1.22", False, "spec.group is renamed spec.groups")
    + _e("authorization.k8s.io/v1beta1", ("SelfSubjectAccessReview", "SelfSubjectRulesReview"),
         "authorization.k8s.io/v1", "1.19", "1.22", True, "no notable changes")
    + _e("certificates.k8s.io/v1beta1", ("CertificateSigningRequest",), "certificates.k8s.io/v1", "1.19", "1.22",
         False, "spec.signerName is required (kubernetes.io/legacy-unknown is not allowed) and spec.usages is "
         "required with known, unique values")
    + _e("coordination.k8s.io/v1beta1", ("Lease",), "coordination.k8s.io/v1", "1.19", "1.22", True,
         "no notable changes")
    + _e("rbac.authorization.k8s.io/v1beta1", ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"),
         "rbac.authorization.k8s.io/v1", "1.17", "1.22", True, "no notable changes")
    + _e("scheduling.k8s.io/v1beta1", ("PriorityClass",), "scheduling.k8s.io/v1", "1.14", "1.22", True,
         "no notable changes")
    + _e("storage.k8s.io/v1beta1", ("CSINode",), "storage.k8s.io/v1", "1.17", "1.22", True, "no notable changes")
    + _e("storage.k8s.io/v1beta1", ("CSIDriver", "StorageClass", "VolumeAttachment"), "storage.k8s.io/v1",
         "1.19", "1.22", True, "no notable changes")
    # ---- removed in 1.23 (alpha)
    + _e("rbac.authorization.k8s.io/v1alpha1", ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"),
         "rbac.authorization.k8s.io/v1", "1.17", "1.23", False,
         "binding subjects[].apiVersion becomes subjects[].apiGroup")
    + _e("scheduling.k8s.io/v1alpha1", ("PriorityClass",), "scheduling.k8s.io/v1", "1.14", "1.23", True,
         "no notable changes")
    # ---- removed in 1.25
    + _e("batch/v1beta1", ("CronJob",), "batch/v1", "1.21", "1.25", True, "no notable changes")
    + _e("discovery.k8s.io/v1beta1", ("EndpointSlice",), "discovery.k8s.io/v1", "1.21", "1.25", False,
         "per-endpoint topology is replaced by nodeName and zone; topology becomes the read-only "
         "deprecatedTopology")
    + _e("events.k8s.io/v1beta1", ("Event",), "events.k8s.io/v1", "1.22", "1.25", False,
         "type is Normal or Warning; involvedObject becomes regarding; action, reason, reportingController "
         "and reportingInstance are required; firstTimestamp/lastTimestamp/count/source are replaced by "
         "eventTime and series")
    + _e("autoscaling/v2beta1", ("HorizontalPodAutoscaler",), "autoscaling/v2", "1.22", "1.25", False,
         "metric targets change shape: targetAverageUtilization becomes target.type: Utilization with "
         "target.averageUtilization (likewise targetAverageValue/targetValue)")
    + _e("policy/v1beta1", ("PodDisruptionBudget",), "policy/v1", "1.21", "1.25", False,
         "an empty spec.selector ({}) selects every pod of the namespace in policy/v1 (none in v1beta1)")
    + _e("policy/v1beta1", ("PodSecurityPolicy",), None, "1.21", "1.25", False, _PSP_GONE)
    + _e("node.k8s.io/v1beta1", ("RuntimeClass",), "node.k8s.io/v1", "1.22", "1.25", True, "no notable changes")
    # ---- removed in 1.26
    + _e("autoscaling/v2beta2", ("HorizontalPodAutoscaler",), "autoscaling/v2", "1.23", "1.26", True,
         "autoscaling/v2 is v2beta2 promoted unchanged")
    + _e("flowcontrol.apiserver.k8s.io/v1beta1", ("FlowSchema",), "flowcontrol.apiserver.k8s.io/v1", "1.23",
         "1.26", True, "no notable changes")
    + _e("flowcontrol.apiserver.k8s.io/v1beta1", ("PriorityLevelConfiguration",),
         "flowcontrol.apiserver.k8s.io/v1", "1.23", "1.26", False, _PLC_SHARES)
    # ---- removed in 1.27
    + _e("storage.k8s.io/v1beta1", ("CSIStorageCapacity",), "storage.k8s.io/v1", "1.24", "1.27", True,
         "no notable changes")
    # ---- removed in 1.29
    + _e("flowcontrol.apiserver.k8s.io/v1beta2", ("FlowSchema",), "flowcontrol.apiserver.k8s.io/v1", "1.26",
         "1.29", True, "no notable changes")
    + _e("flowcontrol.apiserver.k8s.io/v1beta2", ("PriorityLevelConfiguration",),
         "flowcontrol.apiserver.k8s.io/v1", "1.26", "1.29", False, _PLC_SHARES)
    # ---- removed in 1.32
    + _e("flowcontrol.apiserver.k8s.io/v1beta3", ("FlowSchema",), "flowcontrol.apiserver.k8s.io/v1", "1.29",
         "1.32", True, "no notable changes")
    + _e("flowcontrol.apiserver.k8s.io/v1beta3", ("PriorityLevelConfiguration",),
         "flowcontrol.apiserver.k8s.io/v1", "1.29", "1.32", False,
         "spec.limited.nominalConcurrencyShares defaults to 30 only when unset: an explicit 0 stays 0 in v1")
    # ---- deprecated, no removal scheduled
    + _e("v1", ("Endpoints",), "discovery.k8s.io/v1", "1.33", None, False,
         "Endpoints is replaced by EndpointSlice objects (labelled kubernetes.io/service-name); a GA API is "
         "not removed, but the API server warns on every use", replacement_kind="EndpointSlice")
)

_BY_KEY = {(e.api_version, e.kind): e for e in _TABLE}


def entries():
    """Every table entry, in table order."""
    return _TABLE


def lookup(api_version, kind):
    """The table entry for apiVersion and kind, or None when that pair is not deprecated."""
    return _BY_KEY.get((api_version or "", kind or ""))


_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)")


def parse_version(value):
    """(major, minor) from (1, 34), "1.34", "v1.34.2" or "1.34+" (as some providers report it)."""
    if isinstance(value, (tuple, list)) and len(value) >= 2:
        return int(value[0]), int(value[1])
    match = _VERSION_RE.match(str(value or "").strip())
    if not match:
        raise ValueError("not a Kubernetes version: %r (expected e.g. 1.34)" % (value,))
    return int(match.group(1)), int(match.group(2))


def _fmt(version):
    return "%d.%d" % version


_API_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_STABILITY = {None: 2, "beta": 1, "alpha": 0}


def version_priority(version):
    """Sort key ordering versions as Kubernetes does: GA > beta > alpha, then higher numbers first.

    ``sorted(versions, key=version_priority, reverse=True)`` puts the preferred version first.
    Accepts "v1beta2" or "apps/v1beta2"; versions that do not follow the scheme sort last.
    """
    version = split_api_version(version)[1]
    match = _API_VERSION_RE.match(version)
    if not match:
        return (-1, 0, 0, version)
    return (_STABILITY[match.group(2)], int(match.group(1)), int(match.group(3) or 0), version)


def check(api_version, kind, cluster_version, served):
    """Check one apiVersion/kind against a cluster; None when the table has nothing to say.

    ``served`` is the cluster's discovery answer for that apiVersion and kind. Not served -> error;
    served and deprecated on this cluster's release -> warning. Pairs that are not in the table
    return None even when not served: checking that a kind exists at all (CRDs, aggregated APIs)
    is discovery's job, not this table's.
    """
    entry = lookup(api_version, kind)
    if entry is None:
        return None
    cluster = parse_version(cluster_version)
    what = "%s %s" % (entry.api_version, entry.kind)
    todo = _what_to_do(entry)
    if not served:
        if entry.removed and cluster >= entry.removed:
            message = ("%s was removed in Kubernetes %s (deprecated since %s); this cluster (%s) does not serve "
                       "it. %s" % (what, entry.removed_in, entry.deprecated_in, _fmt(cluster), todo))
        else:
            message = ("%s is not served by this cluster (%s)%s: the API version is disabled on the API server "
                       "(deprecated since Kubernetes %s). %s"
                       % (what, _fmt(cluster),
                          " although Kubernetes only removes it in %s" % entry.removed_in if entry.removed else "",
                          entry.deprecated_in, todo))
        return Finding(LEVEL_ERROR, message, entry.replacement, entry.rename, entry)
    if cluster < entry.deprecated:
        return None
    if entry.removed is None:
        message = ("%s is deprecated since Kubernetes %s (no removal scheduled). %s"
                   % (what, entry.deprecated_in, todo))
    elif cluster >= entry.removed:
        message = ("%s is still served by this cluster (%s) although Kubernetes removed it in %s (an extension "
                   "API server or a patched build serves it). %s" % (what, _fmt(cluster), entry.removed_in, todo))
    else:
        message = ("%s is deprecated since Kubernetes %s and will be removed in %s: migrate before the cluster "
                   "is upgraded to %s. %s" % (what, entry.deprecated_in, entry.removed_in, entry.removed_in, todo))
    return Finding(LEVEL_WARNING, message, entry.replacement, entry.rename, entry)


def _what_to_do(entry):
    if not entry.replacement:
        return "There is no replacement: %s." % entry.note
    if entry.rename:
        return ("Use %s: change apiVersion to %s in the manifest or chart, a pure rename (%s)."
                % (entry.replacement_text, entry.replacement, entry.note))
    return ("Use %s: change apiVersion%s in the manifest or chart and adapt the object: %s."
            % (entry.replacement_text, " and kind" if entry.replacement_kind else "", entry.note))


def delete_api_version(group, kind, served_versions):
    """The apiVersion to delete an object of ``kind`` stored under a removed version of ``group``.

    ``served_versions`` are the apiVersions ("apps/v1", "v1", ...) the cluster serves *for this kind*.
    The object lives in etcd once, whatever version wrote it, so any served version of the same
    group works; for kinds that moved group (extensions -> apps, extensions -> networking.k8s.io)
    the replacement's group is used. Returns the preferred such apiVersion, or None.
    """
    served = [v for v in served_versions or () if v]

    def best(candidates):
        return sorted(candidates, key=version_priority, reverse=True)[0] if candidates else None

    same_group = best([v for v in served if split_api_version(v)[0] == (group or "")])
    if same_group:
        return same_group
    for entry in _moves(group, kind):
        if entry.replacement in served:
            return entry.replacement
        moved = best([v for v in served if split_api_version(v)[0] == split_api_version(entry.replacement)[0]])
        if moved:
            return moved
    return None


def moved_groups(group, kind):
    """The other groups ``kind`` of ``group`` moved to (extensions -> apps, extensions -> networking.k8s.io):
    the same objects are served there. A kind replaced by another kind did not move."""
    out = []
    for entry in _moves(group, kind):
        moved = split_api_version(entry.replacement)[0]
        if moved != (group or "") and moved not in out:
            out.append(moved)
    return out


def _moves(group, kind):
    """The table entries of ``kind`` in ``group`` whose replacement is the same kind (possibly in another group)."""
    return [entry for entry in _TABLE if entry.group == (group or "") and entry.kind == kind and entry.replacement
            and not entry.replacement_kind]
