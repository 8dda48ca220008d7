# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The first half of a deploy (docs/requirements.md §1-4, §7 steps 1-2): artifact -> validated, ordered bundle for one cluster.

Steps: verify the artifact's sha256; read manifests and substitute variables, or render the chart
with the cluster's capabilities; validate every object (structure, apiVersion/kind served by the
cluster, removed/deprecated API table, namespace scope, image digests, lifecycle annotations,
duplicates); stamp the release labels and annotations; order with the shared ordering table; write
the bundle file. Every problem found is reported at once (up to a limit), each naming its source
(file, document, line), object and field. Nothing is written to any cluster.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import apiversions, lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.render.artifact import (
    CHART, detect, read_manifests, verified_copy)
from ansible_collections.manent.kubernetes.plugins.module_utils.render.bundle import Bundle
from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import sha256_text
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Resource
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, ManentError, RenderError, listing
from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import HelmOptions, render_chart
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import is_label_value
from ansible_collections.manent.kubernetes.plugins.module_utils.render.manifests import parse_files, validate_object
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import is_crd, key_of, namespace_of, ref, served_kinds
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.ordering import sort_key
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import choose_slot
from ansible_collections.manent.kubernetes.plugins.module_utils.render.variables import builtin_values, substitute

MAX_REPORTED = 25
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_NAMESPACE = re.compile(r"(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?")
POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


@dataclass
class RenderOptions:
    """Deploy parameters that shape the objects (docs/requirements.md §6)."""

    namespace: str = "default"
    variables: dict = field(default_factory=dict)
    helm_release: str = ""
    helm_values_files: list = field(default_factory=list)
    helm_values: str = ""
    helm_value: dict = field(default_factory=dict)
    helm_hooks: str = "skip"
    helm_skip_crds: bool = False
    require_image_digest: bool = False
    slot: str = ""
    traffic_rename: bool = True
    traffic_router: str = "gateway-api"
    traffic_proportional: bool = False
    artifact_sha256: str = ""
    allow_unverified: bool = False
    artifact_label: str = ""
    # Render a chart as `helm upgrade` does (.Release.IsUpgrade, not .Release.IsInstall); manent_render sets it
    # (a release of this key in service on the cluster, or a Helm release being taken over). Not part of the
    # deploy id: a rerun of the release in service stays the same deploy.
    helm_upgrade: bool = False


def validate_identity(key):
    """Release key parts become label values: check them before anything else."""
    for name, option in (("application", "application"), ("artifact", "artifact_name"),
                         ("environment", "environment"), ("tenant", "tenant")):
        value = getattr(key, name)
        if not value or not is_label_value(value):
            raise InputError("%r is not a valid label value" % (value,), subject=option,
                             hint="use at most 63 letters, digits, '-', '_' or '.', starting and ending "
                                  "with a letter or digit")


def validate_namespace(namespace):
    """The release namespace holds the objects and the history: a DNS-1123 label, checked before anything else."""
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace or ""):
        raise InputError("%r is not a valid namespace name" % (namespace,), subject="namespace",
                         hint="use at most 63 lower-case letters, digits and '-', starting and ending with a letter "
                              "or digit")


def default_deployment_id(version, artifact_sha256, options):
    """Deterministic deploy id: the same artifact, version and parameters give the same id, so a rerun
    is a no-op (nothing changes on the cluster)."""
    material = json.dumps({"version": version, "sha256": artifact_sha256, "namespace": options.namespace,
                           "variables": options.variables, "values_files": options.helm_values_files,
                           "values": options.helm_values, "value": options.helm_value,
                           "release": options.helm_release, "slot": options.slot,
                           "traffic": _traffic_shape(options)}, sort_keys=True, default=str)
    return "d" + sha256_text(material)[:12]


def choose_traffic_slot(locator, version, artifact_sha256, options, migrate=False, deployment=""):
    """(slot, deploy id) of a traffic release of ``version`` rendered with ``options`` (slot not set), from the
    ``locator`` of its history: the slot not in service, or the slot in service for a rerun of the release in
    service (slots.choose_slot). ``deployment``: a deploy id given by the user, else derived for the slot."""
    def deployment_in(slot):
        return deployment or default_deployment_id(version, artifact_sha256, dataclasses.replace(options, slot=slot))

    slot = choose_slot(locator, migrate=migrate, version=version, deployment_in=deployment_in)
    return slot, deployment_in(slot)


def _traffic_shape(options):
    """The traffic options that change the objects ('' outside traffic rollouts, so ids stay as before)."""
    if not options.slot:
        return ""
    return [options.traffic_rename, options.traffic_router, options.traffic_proportional]


class _Problems:
    def __init__(self):
        self.items = []

    def add(self, message):
        self.items.append(message)

    def raise_if_any(self, what):
        if not self.items:
            return
        shown = self.items[:MAX_REPORTED]
        more = len(self.items) - len(shown)
        text = "%d problem(s) in %s:\n- %s%s" % (len(self.items), what, "\n- ".join(shown),
                                                 "\n- ... and %d more" % more if more > 0 else "")
        raise RenderError(text, hint="nothing was written to any cluster; fix the manifests or parameters and "
                                     "run again")


def load_documents(path, release, options, cluster_version, discovery, helm_options=None):
    """(docs, hooks_skipped, warnings, is_chart): docs are (object, source) tuples before validation.

    The artifact is read once, into a private copy verified against its sha256 while it is written; only that
    copy is parsed (or given to helm), so a file replaced after the check is never used."""
    label = options.artifact_label or os.path.basename(path)
    with verified_copy(path, options.artifact_sha256, allow_unverified=options.allow_unverified,
                       name=label) as (copy, _digest):
        return _load_verified(copy, label, release, options, cluster_version, discovery, helm_options)


def _load_verified(path, label, release, options, cluster_version, discovery, helm_options):
    if detect(path) == CHART:
        git_version = cluster_version[2] if cluster_version and len(cluster_version) > 2 else ""
        if not git_version and cluster_version:
            git_version = "v%d.%d.0" % tuple(cluster_version[:2])
        rendered = render_chart(
            path, options.helm_release or release.key.artifact, options.namespace, git_version,
            discovery.api_versions(), values_files=options.helm_values_files, values_yaml=options.helm_values,
            set_values=options.helm_value, slot=options.slot, options=helm_options or HelmOptions(),
            include_crds=not options.helm_skip_crds, hooks=options.helm_hooks, upgrade=options.helm_upgrade)
        return rendered.docs, rendered.hooks_skipped, rendered.warnings, True
    values = builtin_values(release.key.application, release.key.environment, release.version, options.namespace,
                            release.deployment, options.variables)
    files = [(name, substitute(text, values)) for name, text in read_manifests(path, name=label)]
    return [(d.obj, d.source) for d in parse_files(files)], [], [], False


def render(path, release, options, discovery, cluster_version, helm_options=None, cluster_url=""):
    """Render one artifact for one cluster. ``cluster_version`` is (major, minor[, gitVersion]).
    Returns a :class:`Bundle` (not yet written)."""
    validate_identity(release.key)
    validate_namespace(options.namespace)
    docs, hooks_skipped, warnings, is_chart = load_documents(path, release, options, cluster_version, discovery,
                                                             helm_options)
    problems = _Problems()
    seen = {}
    objects, sources, deprecations = [], [], []
    defined = BundleKinds(discovery, [obj for obj, _source in docs])
    for obj, source in docs:
        if not _checked(obj, source, defined, options, cluster_version, problems, deprecations, warnings):
            continue
        key = key_of(obj)
        if key in seen:
            problems.add("%s is defined twice: in %s and in %s; keep one" % (ref(obj), seen[key], source))
            continue
        seen[key] = source
        stamp(obj, release)
        objects.append(obj)
        sources.append(source)
    for message in _field_problems(discovery, defined, objects, sources, warnings):
        problems.add(message)
    if options.slot:
        try:
            objects = slots.apply_slot(objects, options.slot, rename=options.traffic_rename,
                                       router=options.traffic_router, proportional=options.traffic_proportional)
        except ManentError as exc:
            problems.add(str(exc))
    problems.raise_if_any(options.artifact_label or os.path.basename(path))
    warnings.extend(deprecations)
    warnings.extend(outside_namespace_warning(objects, options.namespace))
    order = sorted(range(len(objects)), key=lambda i: sort_key(objects[i]))
    return Bundle(release=release, namespace=options.namespace, objects=[objects[i] for i in order],
                  sources=[sources[i] for i in order], cluster=cluster_url, slot=options.slot,
                  artifact={"name": release.key.artifact, "version": release.version,
                            "sha256": options.artifact_sha256,
                            "type": "chart" if is_chart else "manifests"},
                  hooks_skipped=list(hooks_skipped), warnings=warnings, deprecations=deprecations)


def _checked(obj, source, defined, options, cluster_version, problems, deprecations, warnings):
    """Check one rendered object (shape, apiVersion against the cluster, namespace by scope, image digests,
    lifecycle annotations), adding what is wrong to ``problems``; False when it is not an object at all. A
    namespaced object without a namespace gets the release's."""
    try:
        validate_object(obj, source)
    except ManentError as exc:
        problems.add(str(exc))
        return False
    subject = "%s %s" % (source, ref(obj))
    _check_api(obj, subject, defined, cluster_version, problems, deprecations)
    res = defined.find(obj["apiVersion"], obj["kind"])
    if res is not None:
        meta = obj["metadata"]
        if res.namespaced and not meta.get("namespace"):
            meta["namespace"] = options.namespace
        elif not res.namespaced and meta.get("namespace"):
            problems.add("%s: metadata.namespace is set on a cluster-scoped %s; remove it" % (subject, obj["kind"]))
    if options.require_image_digest:
        _check_digests(obj, subject, problems)
    try:
        warnings.extend("%s: %s" % (subject, w) for w in lifecycle.lint(obj))
        lifecycle.deploy_on(obj)
        lifecycle.delete_propagation(obj)
        lifecycle.delete_policies(obj)
    except ManentError as exc:
        problems.add("%s: %s" % (subject, exc))
    return True


def outside_namespace_warning(objects, namespace):
    """[a warning] when namespaced objects of the release live outside its namespace: they deploy, but the
    history kept in the release namespace does not restore them (history/record_check.py), so a rollback has
    to deploy the previous artifact again. Said at render time, before it matters."""
    outside = [ref(obj) for obj in objects if namespace_of(obj) and namespace_of(obj) != namespace]
    if not outside:
        return []
    return ["%d object(s) outside the release namespace %s (%s): deployed and pruned like the others, but a "
            "rollback from the release history refuses a release with them (the history in %s is not trusted to "
            "write elsewhere); roll back by deploying the previous version's artifact again"
            % (len(outside), namespace, listing(outside, 3), namespace)]


def _field_problems(discovery, defined, objects, sources, warnings):
    """Field types of the objects against the cluster's published schemas (schemas.py): what the API server would
    refuse at apply, found before anything is written. Kinds that a CRD of this release defines (or redefines)
    are left to the server: the schema published now may not be theirs."""
    schemas = discovery.schemas() if hasattr(discovery, "schemas") else None
    if schemas is None:
        return []
    checked = [(obj, source) for obj, source in zip(objects, sources)
               if (obj.get("apiVersion"), obj.get("kind")) not in defined.crd_kinds]  # unserved kinds: no schema

    def found():
        return [(obj, source, schemas.problems(obj)) for obj, source in checked]

    results = found()
    if any(p for _o, _s, p in results) and schemas.index_source == "cache" and schemas.refresh():
        results = found()  # a CRD may have changed since the index was cached
    warnings.extend(schemas.notes)
    return ["%s %s: %s" % (source, ref(obj), "; ".join(p)) for obj, source, p in results if p]


class BundleKinds:
    """Discovery plus the kinds that the bundle's own CustomResourceDefinitions will serve (a CRD and its
    resources may come in one artifact: the CRD is applied and Established first)."""

    def __init__(self, discovery, objects):
        self.discovery = discovery
        self.crd_kinds = {}
        for obj in objects:
            if is_crd(obj):
                for served in served_kinds(obj):
                    self.crd_kinds[(served.api_version, served.kind)] = Resource(
                        served.group, served.version, served.kind, served.plural, served.namespaced, [])

    def find(self, api_version, kind):
        return self.discovery.find(api_version, kind) or self.crd_kinds.get((api_version, kind))

    def versions_of(self, group, kind):
        found = set(self.discovery.versions_of(group, kind))
        found.update(r.version for r in self.crd_kinds.values() if r.group == group and r.kind == kind)
        return sorted(found)


def _check_api(obj, subject, discovery, cluster_version, problems, deprecations):
    api_version, kind = obj["apiVersion"], obj["kind"]
    served = discovery.find(api_version, kind) is not None
    finding = apiversions.check(api_version, kind, tuple(cluster_version[:2]), served)
    if finding is not None and finding.level == apiversions.LEVEL_ERROR:
        problems.add("%s: %s" % (subject, finding.message))
        return
    if finding is not None:
        deprecations.append("%s: %s" % (subject, finding.message))
    if not served:
        group = api_version.split("/")[0] if "/" in api_version else ""
        others = discovery.versions_of(group, kind)
        hint = ("served versions of %s: %s" % (kind, ", ".join("%s/%s" % (group, v) if group else v for v in others))
                if others else "install the CRD that defines it, or fix apiVersion/kind")
        problems.add("%s: the cluster does not serve apiVersion %s kind %s (%s)" % (subject, api_version, kind, hint))


def _pod_spec(obj):
    path = POD_SPEC_PATHS.get(obj.get("kind"))
    node = obj
    for part in path or ():
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) and path else None


def _check_digests(obj, subject, problems):
    spec = _pod_spec(obj)
    if spec is None:
        return
    where = ".".join(POD_SPEC_PATHS[obj["kind"]])
    for field_name in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(spec.get(field_name) or []):
            image = (c or {}).get("image") or ""
            if not _DIGEST.search(image):
                problems.add("%s: %s.%s[%d].image %r is not pinned by digest; use image@sha256:<digest> "
                             "(require_image_digest is on)" % (subject, where, field_name, i, image))


def stamp(obj, release):
    """Add the release labels and annotations (docs/requirements.md §7 step 2); pod templates get the labels only
    (never the selector, never per-version annotations, which would restart pods at every release)."""
    meta = obj.setdefault("metadata", {})
    labels = meta.get("labels") or {}
    labels.update(release.labels())
    meta["labels"] = labels
    annotations = meta.get("annotations") or {}
    annotations.update(release.annotations())
    meta["annotations"] = annotations
    path = POD_SPEC_PATHS.get(obj.get("kind"))
    if path and len(path) > 1:
        node = obj
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            tmeta = node.get("metadata") or {}
            tlabels = tmeta.get("labels") or {}
            tlabels.update(release.labels())
            tmeta["labels"] = tlabels
            node["metadata"] = tmeta
    return obj
