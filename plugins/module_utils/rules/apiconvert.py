# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Conversion of stored objects from removed API versions to the versions a cluster serves.

The one home of what the stored-history rewrite (``manent_history operation=rewrite``), the rollback and the
history audit do with an object whose apiVersion the cluster no longer serves:

- a **rename** (the table in :mod:`apiversions` says the object applies unchanged under the replacement, or a
  user mapping file says so) changes ``apiVersion`` only;
- a **conversion** changes the object the way the Kubernetes migration guide describes, keeping what the
  object meant under the old version: fields renamed or moved, the defaults of the old version made explicit
  where the new version defaults differently, fields the new version has no place for removed (each change
  is named in the note). One small function per kind below; a conversion that cannot keep the meaning
  (a webhook whose ``sideEffects`` is Unknown, a CertificateSigningRequest without ``signerName``...)
  refuses, naming the field;
- a kind with **no replacement** (PodSecurityPolicy) is dropped from the release only when the caller asks
  for it (``drop_removed``), and listed;
- the user's mapping file (:mod:`apimappings`) adds pure renames, or overrides the table with them.

Objects are never modified: every result is a copy. ``status`` is removed from converted objects (the
server owns it).

Sources: the Kubernetes "Deprecated API Migration Guide" (notable changes per removal), the API server's
own conversion and defaulting of the removed versions (k8s.io/kubernetes pkg/apis/*/v1beta1 defaults.go and
conversion.go, as of 1.15 .. 1.31), Helm's "Deprecated Kubernetes APIs" guide and helm-mapkubeapis
(``Map.yaml``, whose idea the user mapping file follows).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Optional

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import apiversions
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.apimappings import MAPPINGS_OPTION
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref

RENAME = "rename"
CONVERT = "convert"
DROP = "drop"
KEEP = "keep"

MAX_INT32 = 2147483647
PDB_V1BETA1_LABEL = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match"
DROP_OPTION = "drop_removed"


class Unsound(Exception):
    """A conversion that cannot keep the object's meaning: ``str()`` names the field and what is wrong."""


# ------------------------------------------------------------------ small helpers

def _spec(obj):
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
        obj["spec"] = spec
    return spec


def _child(parent, key):
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _items(parent, key):
    value = parent.get(key)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _default(parent, key, value, path, old, changes):
    """Make the old version's default explicit when the field is absent."""
    if parent.get(key) is None:
        parent[key] = value
        changes.append("%s %s (the %s default) made explicit" % (path, _show(value), old))


def _show(value):
    return value if isinstance(value, str) else repr(value).replace("'", "")


def _drop(parent, key, path, changes, why="not in the new version"):
    if key in parent:
        del parent[key]
        changes.append("%s removed (%s)" % (path, why))


# ------------------------------------------------------------------ workloads

def _selector_from_template(obj, changes):
    """apps/v1 requires spec.selector; the old versions defaulted it (and empty metadata.labels) from the pod
    template labels."""
    spec = _spec(obj)
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not spec.get("selector"):
        if not labels:
            raise Unsound("spec.selector is missing and spec.template.metadata.labels is empty: apps/v1 requires a "
                          "selector matching the template labels")
        spec["selector"] = {"matchLabels": dict(labels)}
        changes.append("spec.selector set to the pod template labels (what the old version defaulted)")
    meta = _child(obj, "metadata")
    if not meta.get("labels") and labels:
        meta["labels"] = dict(labels)
        changes.append("metadata.labels set to the pod template labels (what the old version defaulted)")


def _deployment(old, revision_history, progress_deadline=None, surge=None):
    def convert(obj, changes):
        _selector_from_template(obj, changes)
        spec = _spec(obj)
        _drop(spec, "rollbackTo", "spec.rollbackTo", changes)
        _default(spec, "revisionHistoryLimit", revision_history, "spec.revisionHistoryLimit", old, changes)
        if progress_deadline is not None:
            _default(spec, "progressDeadlineSeconds", progress_deadline, "spec.progressDeadlineSeconds", old, changes)
        strategy = spec.get("strategy") or {}
        if surge is not None and strategy.get("type", "RollingUpdate") == "RollingUpdate":
            strategy = _child(spec, "strategy")
            rolling = _child(strategy, "rollingUpdate")
            for key in ("maxSurge", "maxUnavailable"):
                _default(rolling, key, surge, "spec.strategy.rollingUpdate." + key, old, changes)
    return convert


def _daemonset(obj, changes):
    _selector_from_template(obj, changes)
    spec = _spec(obj)
    _drop(spec, "templateGeneration", "spec.templateGeneration", changes)
    _default(_child(spec, "updateStrategy"), "type", "OnDelete", "spec.updateStrategy.type", "extensions/v1beta1",
             changes)


def _replicaset(obj, changes):
    _selector_from_template(obj, changes)


def _statefulset(obj, changes):
    _selector_from_template(obj, changes)
    _default(_child(_spec(obj), "updateStrategy"), "type", "OnDelete", "spec.updateStrategy.type", "apps/v1beta1",
             changes)


# ------------------------------------------------------------------ networking

def _backend(backend, path, changes):
    """v1beta1 IngressBackend {serviceName, servicePort} -> v1 {service: {name, port: {number|name}}}."""
    if not isinstance(backend, dict):
        return backend
    out = {k: v for k, v in backend.items() if k not in ("serviceName", "servicePort")}
    if "serviceName" in backend or "servicePort" in backend:
        port = backend.get("servicePort")
        service = {"name": backend.get("serviceName")}
        if isinstance(port, bool) or port is None:
            raise Unsound("%s.servicePort is missing or not a number or a name" % path)
        service["port"] = {"number": port} if isinstance(port, int) else {"name": str(port)}
        out["service"] = service
        changes.append("%s.serviceName/servicePort moved to %s.service.name/port.%s"
                       % (path, path, "number" if isinstance(port, int) else "name"))
    return out


def _ingress(obj, changes):
    spec = _spec(obj)
    if "backend" in spec:
        spec["defaultBackend"] = _backend(spec.pop("backend"), "spec.backend", changes)
        changes.append("spec.backend renamed spec.defaultBackend")
    for i, rule in enumerate(_items(spec, "rules")):
        for j, path in enumerate(_items(rule.get("http") or {}, "paths")):
            where = "spec.rules[%d].http.paths[%d]" % (i, j)
            if "backend" in path:
                path["backend"] = _backend(path["backend"], where + ".backend", changes)
            if not path.get("pathType"):
                path["pathType"] = "ImplementationSpecific"
                changes.append("%s.pathType ImplementationSpecific (the v1beta1 behaviour) made explicit" % where)


def _pdb(obj, changes):
    spec = _spec(obj)
    if spec.get("selector") == {}:
        # An empty selector selected no pod in policy/v1beta1 and selects every pod in policy/v1; the API server
        # itself converts it to this selector, which matches no pod.
        spec["selector"] = {"matchExpressions": [{"key": PDB_V1BETA1_LABEL, "operator": "Exists"}]}
        changes.append("empty spec.selector (no pod in policy/v1beta1) replaced by the selector that matches no pod "
                       "in policy/v1")


# ------------------------------------------------------------------ autoscaling

_TARGETS = {  # v2beta1 target fields per metric source, in the order the API server's conversion tries them
    "resource": (("targetAverageUtilization", "Utilization", "averageUtilization"),
                 ("targetAverageValue", "AverageValue", "averageValue")),
    "pods": (("targetAverageValue", "AverageValue", "averageValue"),),
    "object": (("averageValue", "AverageValue", "averageValue"), ("targetValue", "Value", "value")),
    "external": (("targetValue", "Value", "value"), ("targetAverageValue", "AverageValue", "averageValue")),
}
_TARGETS["containerResource"] = _TARGETS["resource"]


def _hpa_target(source, key, path, changes):
    """The v2 ``target`` of a v2beta1 metric source (``key``: resource, pods, object, external...)."""
    for old, kind, new in _TARGETS[key]:
        if source.get(old) is not None:
            changes.append("%s.%s became %s.target.%s (type %s)" % (path, old, path, new, kind))
            return {"type": kind, new: source[old]}
    raise Unsound("%s has no target (%s)" % (path, " or ".join(t[0] for t in _TARGETS[key])))


def _hpa_metric_id(source, name_key, selector_key):
    metric = {"name": source.get(name_key)}
    if source.get(selector_key) is not None:
        metric["selector"] = source[selector_key]
    return metric


def _hpa(obj, changes):
    spec = _spec(obj)
    out = []
    for i, metric in enumerate(_items(spec, "metrics")):
        kind = metric.get("type")
        path = "spec.metrics[%d]" % i
        key = {"Resource": "resource", "ContainerResource": "containerResource", "Pods": "pods", "Object": "object",
               "External": "external"}.get(kind)
        source = metric.get(key) if key else None
        if not isinstance(source, dict):
            raise Unsound("%s.type %r has no %s metric source" % (path, kind, key or "known"))
        where = "%s.%s" % (path, key)
        if kind in ("Resource", "ContainerResource"):
            new = {k: source[k] for k in ("name", "container") if k in source}
            new["target"] = _hpa_target(source, key, where, changes)
        elif kind == "Pods":
            new = {"metric": _hpa_metric_id(source, "metricName", "selector"),
                   "target": _hpa_target(source, key, where, changes)}
        elif kind == "Object":
            new = {"describedObject": source.get("target"), "metric": _hpa_metric_id(source, "metricName", "selector"),
                   "target": _hpa_target(source, key, where, changes)}
        else:
            new = {"metric": _hpa_metric_id(source, "metricName", "metricSelector"),
                   "target": _hpa_target(source, key, where, changes)}
        out.append({"type": kind, key: new})
    if out:
        spec["metrics"] = out
        if any(m["type"] in ("Pods", "Object", "External") for m in out):
            changes.append("spec.metrics: metricName and its selector became metric.name and metric.selector")


# ------------------------------------------------------------------ flow control, RBAC, authorization

def _plc_shares(rename):
    def convert(obj, changes):
        limited = (_spec(obj).get("limited") or {})
        if not limited:
            return
        if rename and "assuredConcurrencyShares" in limited:
            limited["nominalConcurrencyShares"] = limited.pop("assuredConcurrencyShares")
            changes.append("spec.limited.assuredConcurrencyShares renamed spec.limited.nominalConcurrencyShares")
        if limited.get("nominalConcurrencyShares") == 0:
            # The beta versions read an explicit 0 as "unset" and defaulted it to 30; v1 keeps 0.
            limited["nominalConcurrencyShares"] = 30
            changes.append("spec.limited.nominalConcurrencyShares 0 (30 in the beta versions) made 30")
    return convert


def _rbac_binding(obj, changes):
    for i, subject in enumerate(_items(obj, "subjects")):
        if "apiVersion" in subject:
            subject.pop("apiVersion")
            if subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = "rbac.authorization.k8s.io"
            changes.append("subjects[%d].apiVersion became subjects[%d].apiGroup" % (i, i))


def _no_change(obj, changes):
    """Same schema; the table lists the entry as a non-rename only because of its siblings."""


def _access_review(obj, changes):
    spec = _spec(obj)
    if "group" in spec:
        spec["groups"] = spec.pop("group")
        changes.append("spec.group renamed spec.groups")


# ------------------------------------------------------------------ refused unless the object already fits

def _csr(obj, changes):
    spec = _spec(obj)
    if not spec.get("signerName") or spec.get("signerName") == "kubernetes.io/legacy-unknown":
        raise Unsound("spec.signerName is %s: certificates.k8s.io/v1 requires a known signer (not "
                      "kubernetes.io/legacy-unknown)" % (spec.get("signerName") or "missing"))
    if not spec.get("usages"):
        raise Unsound("spec.usages is missing: certificates.k8s.io/v1 requires it")


def _event(obj, changes):
    for key in ("deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"):
        if obj.get(key):
            raise Unsound("%s is set: events.k8s.io/v1 does not accept it in a new Event" % key)
    for key in ("action", "reason", "reportingController", "reportingInstance"):
        if not obj.get(key):
            raise Unsound("%s is missing: events.k8s.io/v1 requires it" % key)
    if obj.get("type") not in ("Normal", "Warning"):
        raise Unsound("type is %r: events.k8s.io/v1 allows Normal or Warning" % (obj.get("type"),))


def _endpointslice(obj, changes):
    for i, endpoint in enumerate(_items(obj, "endpoints")):
        topology = endpoint.pop("topology", None)
        if not isinstance(topology, dict):
            continue
        where = "endpoints[%d]" % i
        for key, field in (("kubernetes.io/hostname", "nodeName"), ("topology.kubernetes.io/zone", "zone")):
            if key in topology:
                value = topology.pop(key)
                if not endpoint.get(field):
                    endpoint[field] = value
                changes.append("%s.topology[%s] became %s.%s" % (where, key, where, field))
        if topology:
            changes.append("%s.topology keys %s removed (discovery.k8s.io/v1 has no writable place for them)"
                           % (where, ", ".join(sorted(topology))))


def _webhooks(obj, changes):
    names = set()
    for i, hook in enumerate(_items(obj, "webhooks")):
        where = "webhooks[%d]" % i
        if hook.get("name") in names:
            raise Unsound("%s.name %r is not unique: admissionregistration.k8s.io/v1 requires unique names"
                          % (where, hook.get("name")))
        names.add(hook.get("name"))
        if hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise Unsound("%s.sideEffects is %s: admissionregistration.k8s.io/v1 allows None or NoneOnDryRun only; "
                          "only the webhook's author can say which holds"
                          % (where, hook.get("sideEffects") or "missing (Unknown in v1beta1)"))
        old = "admissionregistration.k8s.io/v1beta1"
        _default(hook, "admissionReviewVersions", ["v1beta1"], where + ".admissionReviewVersions", old, changes)
        _default(hook, "failurePolicy", "Ignore", where + ".failurePolicy", old, changes)
        _default(hook, "matchPolicy", "Exact", where + ".matchPolicy", old, changes)
        _default(hook, "timeoutSeconds", 30, where + ".timeoutSeconds", old, changes)


# ------------------------------------------------------------------ CustomResourceDefinition

def _preserve_unknown(schema):
    """x-kubernetes-preserve-unknown-fields on every object node: v1beta1's preserveUnknownFields: true kept
    unknown fields at every level."""
    if not isinstance(schema, dict):
        return
    if schema.get("type", "object") == "object" and "x-kubernetes-int-or-string" not in schema:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    for child in (schema.get("properties") or {}).values():
        _preserve_unknown(child)
    _preserve_unknown(schema.get("items"))
    _preserve_unknown(schema.get("additionalProperties"))


def _printer_columns(columns, where, changes):
    out = []
    for column in columns or []:
        column = dict(column)
        if "JSONPath" in column:
            column["jsonPath"] = column.pop("JSONPath")
            changes.append("%s JSONPath renamed jsonPath" % where)
        out.append(column)
    return out


def _crd(obj, changes):
    spec = _spec(obj)
    _default(spec, "scope", "Namespaced", "spec.scope", "apiextensions.k8s.io/v1beta1", changes)
    versions = [dict(v) for v in _items(spec, "versions")]
    if not versions:
        if not spec.get("version"):
            raise Unsound("neither spec.version nor spec.versions is set")
        versions = [{"name": spec["version"], "served": True, "storage": True}]
        changes.append("spec.version became spec.versions[0]")
    spec.pop("version", None)
    validation = spec.pop("validation", None)
    subresources = spec.pop("subresources", None)
    columns = spec.pop("additionalPrinterColumns", None)
    preserve = spec.pop("preserveUnknownFields", True) is not False
    for i, version in enumerate(versions):
        where = "spec.versions[%d]" % i
        if validation and "schema" not in version:
            version["schema"] = copy.deepcopy(validation)
            changes.append("spec.validation moved to %s.schema" % where)
        if subresources and "subresources" not in version:
            version["subresources"] = copy.deepcopy(subresources)
            changes.append("spec.subresources moved to %s.subresources" % where)
        if columns and "additionalPrinterColumns" not in version:
            version["additionalPrinterColumns"] = columns
        if version.get("additionalPrinterColumns"):
            version["additionalPrinterColumns"] = _printer_columns(version["additionalPrinterColumns"],
                                                                   where + ".additionalPrinterColumns", changes)
        schema = _child(_child(version, "schema"), "openAPIV3Schema")
        if "type" not in schema:
            schema["type"] = "object"
            changes.append("%s.schema.openAPIV3Schema.type object made explicit" % where)
        if preserve:
            _preserve_unknown(schema)
            changes.append("%s.schema: x-kubernetes-preserve-unknown-fields on every object (v1beta1 "
                           "preserveUnknownFields: true)" % where)
    spec["versions"] = versions
    conversion = spec.get("conversion") or {}
    if conversion.get("strategy") == "Webhook":
        webhook = {"clientConfig": conversion.pop("webhookClientConfig", None),
                   "conversionReviewVersions": conversion.pop("conversionReviewVersions", None) or ["v1beta1"]}
        conversion["webhook"] = webhook
        changes.append("spec.conversion.webhookClientConfig/conversionReviewVersions moved to spec.conversion.webhook")
    elif conversion:
        conversion.pop("webhookClientConfig", None)
        conversion.pop("conversionReviewVersions", None)


# ------------------------------------------------------------------ the table of conversions

_CONVERSIONS = {
    ("extensions/v1beta1", "Deployment"): _deployment("extensions/v1beta1", MAX_INT32, MAX_INT32, 1),
    ("apps/v1beta1", "Deployment"): _deployment("apps/v1beta1", 2),
    ("extensions/v1beta1", "DaemonSet"): _daemonset,
    ("extensions/v1beta1", "ReplicaSet"): _replicaset,
    ("apps/v1beta1", "StatefulSet"): _statefulset,
    ("extensions/v1beta1", "Ingress"): _ingress,
    ("networking.k8s.io/v1beta1", "Ingress"): _ingress,
    ("policy/v1beta1", "PodDisruptionBudget"): _pdb,
    ("autoscaling/v2beta1", "HorizontalPodAutoscaler"): _hpa,
    ("flowcontrol.apiserver.k8s.io/v1beta1", "PriorityLevelConfiguration"): _plc_shares(rename=True),
    ("flowcontrol.apiserver.k8s.io/v1beta2", "PriorityLevelConfiguration"): _plc_shares(rename=True),
    ("flowcontrol.apiserver.k8s.io/v1beta3", "PriorityLevelConfiguration"): _plc_shares(rename=False),
    ("rbac.authorization.k8s.io/v1alpha1", "RoleBinding"): _rbac_binding,
    ("rbac.authorization.k8s.io/v1alpha1", "ClusterRoleBinding"): _rbac_binding,
    ("rbac.authorization.k8s.io/v1alpha1", "Role"): _no_change,
    ("rbac.authorization.k8s.io/v1alpha1", "ClusterRole"): _no_change,
    ("authorization.k8s.io/v1beta1", "SubjectAccessReview"): _access_review,
    ("authorization.k8s.io/v1beta1", "LocalSubjectAccessReview"): _access_review,
    ("certificates.k8s.io/v1beta1", "CertificateSigningRequest"): _csr,
    ("events.k8s.io/v1beta1", "Event"): _event,
    ("discovery.k8s.io/v1beta1", "EndpointSlice"): _endpointslice,
    ("admissionregistration.k8s.io/v1beta1", "MutatingWebhookConfiguration"): _webhooks,
    ("admissionregistration.k8s.io/v1beta1", "ValidatingWebhookConfiguration"): _webhooks,
    ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"): _crd,
}


def convert_object(obj, entry):
    """A copy of ``obj`` under ``entry``'s replacement (an :class:`apiversions.Entry`) and the list of changes made
    beside the apiVersion. Raises :class:`Unsound` when the object cannot be converted keeping its meaning."""
    new = copy.deepcopy(obj)
    changes = []
    if not entry.rename:
        convert = _CONVERSIONS.get((entry.api_version, entry.kind))
        if convert is None:
            raise Unsound("manent has no conversion for it")
        convert(new, changes)
        if "status" in new:
            del new["status"]
    new["apiVersion"] = entry.replacement
    if entry.replacement_kind:
        new["kind"] = entry.replacement_kind
    return new, changes


# ------------------------------------------------------------------ the converter

@dataclass
class Outcome:
    """What happens to one stored object: ``action`` keep|rename|convert|drop, the object to use (None when
    dropped) and the note saying so (None for keep)."""

    action: str
    obj: Optional[dict]
    note: Optional[str]


class Converter:
    """Stored objects against one cluster: ``served_fn(api_version, kind) -> bool`` (discovery), the user's
    ``mappings`` (pure renames that add to or override the table) and ``drop_removed`` (drop kinds without
    replacement instead of refusing them)."""

    def __init__(self, served_fn, mappings=(), drop_removed=False):
        self.served_fn = served_fn
        self.mappings = tuple(mappings)
        self.drop_removed = drop_removed

    def served(self, api_version, kind):
        return self.served_fn(api_version, kind)

    def mapping(self, api_version, kind):
        """The user mapping for a stored apiVersion and kind (a kind-specific one first), or None."""
        found = [m for m in self.mappings if m.matches(api_version, kind)]
        return sorted(found, key=lambda m: m.kind is None)[0] if found else None

    def convert(self, obj):
        """The :class:`Outcome` of ``obj`` on this cluster; InputError (naming the object, the removed version and
        what to do) when it can be neither used, converted nor dropped. ``obj`` is never modified."""
        api_version = obj.get("apiVersion") or ""
        kind = obj.get("kind") or ""
        if self.served(api_version, kind):
            return Outcome(KEEP, obj, None)
        subject = ref(obj)
        mapping = self.mapping(api_version, kind)
        if mapping is not None:
            return self._by_mapping(obj, mapping, subject)
        entry = apiversions.lookup(api_version, kind)
        if entry is None:
            raise InputError("stored with apiVersion %s, which this cluster does not serve for kind %s, and manent "
                             "knows no replacement for it" % (api_version, kind), subject=subject,
                             hint="install the API (CRD or aggregated API) again, or map it to a served apiVersion "
                                  "in a mapping file (%s, see docs/history.md)" % MAPPINGS_OPTION)
        removed = ("removed in Kubernetes %s" % entry.removed_in) if entry.removed_in else "not served by this cluster"
        if not entry.replacement:
            if self.drop_removed:
                return Outcome(DROP, None, "%s: stored as %s %s (%s), which has no replacement; dropped from the "
                                           "release (%s)" % (subject, api_version, kind, removed, DROP_OPTION))
            raise InputError("stored with apiVersion %s %s (%s), which has no replacement"
                             % (api_version, kind, removed), subject=subject,
                             hint="%s; to drop it from the stored release, run again with %s: true"
                             % (entry.note, DROP_OPTION))
        if not self.served(entry.replacement, entry.new_kind):
            raise InputError("stored with apiVersion %s %s (%s), and this cluster does not serve the replacement %s "
                             "either" % (api_version, kind, removed, entry.replacement_text), subject=subject,
                             hint="check the cluster's version and --runtime-config")
        try:
            new, changes = convert_object(obj, entry)
        except Unsound as err:
            raise InputError("stored with apiVersion %s %s (%s) and cannot be converted to %s: %s"
                             % (api_version, kind, removed, entry.replacement_text, err), subject=subject,
                             hint="edit the object in the chart or manifest and deploy it, then never roll back past "
                                  "that release; or map it as a pure rename in a mapping file (%s)" % MAPPINGS_OPTION
                             ) from err
        head = "%s: stored as %s, which this cluster no longer serves (%s); " % (subject, api_version, removed)
        if entry.rename:
            return Outcome(RENAME, new, head + "using %s instead, a pure rename" % entry.replacement)
        return Outcome(CONVERT, new, head + "converted to %s%s" % (
            entry.replacement_text, ": " + "; ".join(changes) if changes else " (no field changes)"))

    def _by_mapping(self, obj, mapping, subject):
        kind = obj.get("kind") or ""
        if not self.served(mapping.target, kind):
            raise InputError("stored with apiVersion %s, which this cluster does not serve, and the mapping %s names "
                             "%s %s, which it does not serve either"
                             % (obj.get("apiVersion"), mapping.origin, mapping.target, kind), subject=subject,
                             hint="fix the mapping file (%s)" % MAPPINGS_OPTION)
        new = copy.deepcopy(obj)
        new["apiVersion"] = mapping.target
        return Outcome(RENAME, new, "%s: stored as %s, which this cluster does not serve; using %s instead, a pure "
                                    "rename (mapping %s)" % (subject, obj.get("apiVersion"), mapping.target,
                                                             mapping.origin))

    def convert_all(self, objects):
        """``(objects, notes, dropped)`` for a release's stored ``objects``: converted where needed, those dropped
        left out (``dropped``: their references). One InputError listing every object that cannot be used."""
        out, notes, dropped, errors = [], [], [], []
        for obj in objects:
            try:
                outcome = self.convert(obj)
            except InputError as err:
                errors.append(err)
                continue
            if outcome.note:
                notes.append(outcome.note)
            if outcome.action == DROP:
                dropped.append(ref(obj))
            else:
                out.append(outcome.obj)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise InputError("%d stored objects cannot be used on this cluster: %s"
                             % (len(errors), "; ".join(str(e) for e in errors)))
        return out, notes, dropped


def converter_for(cluster):
    """``cluster`` as a :class:`Converter`: itself, or a served function wrapped with no mappings."""
    return cluster if isinstance(cluster, Converter) else Converter(cluster)
