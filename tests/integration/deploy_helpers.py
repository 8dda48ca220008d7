# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render an inline list of objects as a real manifest artifact and deploy it with the engine.

The objects are written as a YAML file, its sha256 computed, rendered with ``render.render`` against the
cluster's own discovery (a fresh one per render, as each run has) and deployed with ``deploy.Deployer``:
the same path ``manent_render`` + ``manent_apply`` take, minus Ansible.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid

import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import locator_name, record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import record_meta
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.apply import ApplyOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.render.bundle import Bundle
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.deploy import Deployer, DeployOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery, resource_path
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import NotFoundError
from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import HelmOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.ordering import sort_key
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import (
    RenderOptions, default_deployment_id, render, stamp)
from tests.objects import NEVER_READY

KEY = ReleaseKey(application="shop", artifact="shop-api", environment="test")


# --------------------------------------------------------------------------- render + deploy


def write_artifact(tmp_path, objects, name=None):
    """(path, sha256) of a multi-document YAML manifest holding ``objects``."""
    path = tmp_path / (name or "artifact-%s.yaml" % uuid.uuid4().hex[:8])
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


def render_bundle(cluster, tmp_path, objects, namespace, version="1.0.0", key=KEY, variables=None):
    path, sha = write_artifact(tmp_path, objects)
    options = RenderOptions(namespace=namespace, variables=dict(variables or {}), artifact_sha256=sha)
    rel = Release(key, version, default_deployment_id(version, sha, options))
    return render(path, rel, options, Discovery(cluster.kube), cluster.kube.version())


def render_chart_bundle(cluster, chart, namespace, helm, version="0.1.0", key=KEY, **render_options):
    """Render a packaged chart with the pinned helm binary ``helm``."""
    options = RenderOptions(namespace=namespace, artifact_sha256=hashlib.sha256(open(chart, "rb").read()).hexdigest(),
                            **render_options)
    rel = Release(key, version, default_deployment_id(version, options.artifact_sha256, options))
    return render(chart, rel, options, Discovery(cluster.kube), cluster.kube.version(),
                  helm_options=HelmOptions(command=helm))


def make_bundle(objects, namespace, version="1.0.0", key=KEY, deployment="d-test", cluster_scoped=()):
    """A bundle built the way render builds one (namespace defaulted, release stamped, ordered) but without
    render's discovery checks; ``cluster_scoped`` lists the kinds that get no namespace."""
    rel = Release(key, version, deployment)
    out = []
    for obj in objects:
        obj = json.loads(json.dumps(obj))
        if obj["kind"] not in tuple(cluster_scoped) + ("Namespace", "CustomResourceDefinition"):
            obj["metadata"].setdefault("namespace", namespace)
        out.append(stamp(obj, rel))
    out.sort(key=sort_key)
    return Bundle(release=rel, namespace=namespace, objects=out, sources=["inline"] * len(out),
                  artifact={"name": key.artifact, "version": version, "sha256": "", "type": "manifests"})


def deployer(cluster, kube=None, **options):
    """A Deployer on a fresh discovery; ``apply=`` takes ApplyOptions fields as a dict."""
    apply_options = ApplyOptions(**options.pop("apply", {}))
    kube = kube or cluster.kube
    return Deployer(kube, Discovery(kube), DeployOptions(apply=apply_options, **options))


def deploy(cluster, tmp_path, objects, namespace, version="1.0.0", key=KEY, kube=None, **options):
    bundle = render_bundle(cluster, tmp_path, objects, namespace, version=version, key=key)
    return deployer(cluster, kube=kube, **options).deploy(bundle)


def actions(result):
    """{subject: action} of a DeployResult."""
    return {c.subject: c.action for c in result.changes}


# --------------------------------------------------------------------------- cluster state


SKIPPED_KINDS = {("", "Event"), ("events.k8s.io", "Event")}  # written by controllers all the time


# What the controllers add to every namespace, at any moment after it was created: never a write of a deploy.
CONTROLLER_MADE = ("ConfigMap/kube-root-ca.crt", "ServiceAccount/default")


def versions(cluster, namespace):
    """{Kind.group/name: resourceVersion} of every object of every listable namespaced kind in ``namespace``
    (events and CONTROLLER_MADE excepted), read through a fresh discovery so CRDs created meanwhile are included.
    Without that exception, a snapshot taken before the root CA publisher and the service account controller
    reached a new namespace differs from a later one although the deploy wrote nothing."""
    out = {}
    seen = set()
    for res in Discovery(cluster.kube).resources().values():
        if not res.namespaced or "list" not in res.verbs or (res.group, res.kind) in SKIPPED_KINDS:
            continue
        if (res.group, res.kind) in seen:
            continue
        seen.add((res.group, res.kind))
        path = resource_path(res, namespace)
        try:
            items = cluster.kube.get_json(path).get("items", [])
        except NotFoundError:  # a CRD of another test deleted between discovery and this LIST: its kind is gone
            continue
        for item in items:
            kind = "%s.%s" % (res.kind, res.group) if res.group else res.kind
            name = "%s/%s" % (kind, item["metadata"]["name"])
            if name not in CONTROLLER_MADE:
                out[name] = item["metadata"]["resourceVersion"]
    return out


def labelled_history(cluster, namespace, key=KEY):
    return {cm["metadata"]["name"]: cm for cm in cluster.list("v1", "ConfigMap", namespace)
            if cm["metadata"]["name"].startswith(locator_name(key))}


def locator(cluster, namespace, key=KEY):
    cm = cluster.get("v1", "ConfigMap", namespace, locator_name(key))
    return None if cm is None else cm["data"]


def record_status(cluster, namespace, version, key=KEY):
    cm = cluster.get("v1", "ConfigMap", namespace, record_name(key, version))
    return None if cm is None else record_meta(cm)["status"]


def mid_rollout(cluster, namespace, name, version, key=KEY):
    """True while the deploy of ``version`` of release ``key`` holds the history lock and Deployment ``name`` has
    that version's NEVER_READY pods (its pod template annotated ``release: <version>``, as app_objects writes it):
    the deploy saved its record and waits for a rollout that cannot end, the moment to stop it. A Deployment left
    never ready by an earlier stopped deploy does not count: the next deploy may still be before its record."""
    live = cluster.get("apps/v1", "Deployment", namespace, name) or {}
    annotations = live.get("spec", {}).get("template", {}).get("metadata", {}).get("annotations") or {}
    wanted = dict(NEVER_READY, release=version)
    return all(annotations.get(k) == v for k, v in wanted.items()) and \
        bool((locator(cluster, namespace, key) or {}).get("lockHolder"))


def dump(result):
    """The result as the module returns it (with the per-object diffs), JSON text."""
    out = result.to_dict()
    out["diff"] = [c.diff for c in result.changes if c.diff]
    return json.dumps(out, sort_keys=True)


# --------------------------------------------------------------------------- instrumentation


def reads_object(method, path, query, object_path):
    """True when a recorded request reads the object at ``object_path``: a GET of it, or a LIST of its collection
    that includes it (the whole collection, or selected by name as the waits' observer lists a single object)."""
    if method != "GET":
        return False
    collection, _sep, name = object_path.rpartition("/")
    selector = (query or {}).get("fieldSelector")
    return path == object_path or (path == collection and selector in (None, "metadata.name=%s" % name))


class Recording:
    """The real Kube with every request recorded in order, and the peak of concurrent PATCH requests.

    Nothing is faked: each call goes to the API server; ``patch_delay`` only holds a PATCH open a little
    longer so that concurrency is observable on a fast local server.
    """

    def __init__(self, kube, patch_delay=0.0):
        self._kube = kube
        self.patch_delay = patch_delay
        self.calls = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self._kube, name)

    def request(self, method, path, **kw):
        query = dict(kw.get("query") or {})
        body = kw.get("body")
        if method == "DELETE" and body:
            # with a DeleteOptions body the server reads dryRun from the body only, never from the query
            query.pop("dryRun", None)
            if isinstance(body, dict) and body.get("dryRun"):
                query["dryRun"] = body["dryRun"]
        with self._lock:
            self.calls.append((method, path, query))
            if method == "PATCH":
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
        try:
            if method == "PATCH" and self.patch_delay:
                time.sleep(self.patch_delay)
            return self._kube.request(method, path, **kw)
        finally:
            if method == "PATCH":
                with self._lock:
                    self.in_flight -= 1

    def get_json(self, path, **kw):
        return self.request("GET", path, **kw).data

    def writes(self):
        """(method, path) of every call that would write, dry-run calls excluded."""
        return [(m, p) for m, p, q in self.calls if m in ("POST", "PUT", "PATCH", "DELETE") and "dryRun" not in q
                and not p.startswith("/apis/authorization.k8s.io/")]
