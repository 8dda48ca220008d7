# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manent_render task: its argument spec, its parameters mapped to the rendering options in one place, and the
run of one rendering for one cluster (the release in service read once, Helm's upgrade or install decided, the
traffic slot chosen, the bundle written).

Used by the module (``plugins/modules/manent_render.py``) and by its action plugin, which renders in the
controller's worker process when the connection is local.
"""

from __future__ import annotations

import json
import os

from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import sha256_file, sha256_text
from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.history.helm_migration import helm_release_exists
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.render.bundle import write
from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import HelmOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import (
    RenderOptions, choose_traffic_slot, default_deployment_id, render)
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common

RENDER_SPEC = {
    "artifact": {"type": "path", "required": True},
    "artifact_sha256": {"type": "str"},
    "allow_unverified": {"type": "bool", "default": False},
    "version": {"type": "str", "required": True},
    "deployment": {"type": "str"},
    "variables": {"type": "dict", "default": {}},
    "helm_release": {"type": "str"},
    "helm_migrate_release": {"type": "str"},
    "helm_values_files": {"type": "list", "elements": "str", "default": []},
    "helm_values": {"type": "str"},
    "helm_value": {"type": "dict", "default": {}},
    "helm_hooks": {"type": "str", "choices": ["skip", "apply"], "default": "skip"},
    "helm_skip_crds": {"type": "bool", "default": False},
    "helm_command": {"type": "str", "default": "helm"},
    "helm_sha256": {"type": "str"},
    "helm_timeout": {"type": "str", "default": "2m"},
    "require_image_digest": {"type": "bool", "default": False},
    "slot": {"type": "str", "default": ""},
    "strategy": {"type": "str", "choices": ["rolling", "traffic"], "default": "rolling"},
    "traffic_rename": {"type": "bool", "default": True},
    "traffic_router": {"type": "str", "choices": ["gateway-api", "istio"], "default": "gateway-api"},
    "traffic_replicas": {"type": "str", "choices": ["manifest", "proportional"], "default": "manifest"},
    "traffic_migrate": {"type": "bool", "default": False},
    "bundle": {"type": "path"},
}


def argument_spec():
    return common.argument_spec(common.RELEASE_SPEC, RENDER_SPEC)


def render_options(params):
    return RenderOptions(
        namespace=params["namespace"], variables=params["variables"] or {},
        helm_release=params.get("helm_release") or "", helm_values_files=params["helm_values_files"] or [],
        helm_values=params.get("helm_values") or "", helm_value=params["helm_value"] or {},
        helm_hooks=params["helm_hooks"], helm_skip_crds=params["helm_skip_crds"],
        require_image_digest=params["require_image_digest"], slot=params["slot"] or "",
        traffic_rename=params["traffic_rename"], traffic_router=params["traffic_router"],
        traffic_proportional=params["traffic_replicas"] == "proportional",
        artifact_sha256=params.get("artifact_sha256") or "", allow_unverified=params["allow_unverified"],
        artifact_label=os.path.basename(params["artifact"]))


def helm_options(params):
    return HelmOptions(command=params["helm_command"], sha256=params.get("helm_sha256") or "",
                       timeout=parse_duration(params["helm_timeout"], name="helm_timeout"))


def run(params, check_mode=False, diff=False, on_progress=None):  # pylint: disable=unused-argument
    """Render the artifact of ``params`` for its cluster and write the bundle; the task's result (``warnings``: the
    rendering's warnings). Check mode renders too: rendering writes nothing to the cluster."""
    options = render_options(params)
    kube, discovery = common.open_cluster(params)
    try:
        sha = options.artifact_sha256 or (
            sha256_file(params["artifact"]) if os.path.exists(params["artifact"]) else "")
        # One read of the release in service: returned (the role's checkpoint compares it across clusters) and,
        # for traffic, where the slot comes from.
        store = HistoryStore(kube, params["namespace"], common.release_key(params))
        locator = store.locator()
        in_service = store.in_service(locator or {})  # {}: nothing deployed yet, no second read
        options.helm_upgrade = _renders_as_upgrade(kube, params, in_service)
        if params["strategy"] == "traffic" and not options.slot:
            options.slot, deployment = choose_traffic_slot(locator, params["version"], sha, options,
                                                           migrate=params["traffic_migrate"],
                                                           deployment=params.get("deployment") or "")
        else:
            deployment = params.get("deployment") or default_deployment_id(params["version"], sha, options)
        release = common.release(params, params["version"], deployment)
        major, minor, git_version = discovery.version()
        bundle = render(params["artifact"], release, options, discovery, (major, minor, git_version),
                        helm_options=helm_options(params), cluster_url=kube.url)
    finally:
        kube.close()
    if not bundle.artifact.get("sha256"):
        bundle.artifact["sha256"] = sha
    path = params.get("bundle") or bundle_path(common.work_dir(params), kube.url, params["namespace"], release,
                                               bundle.slot)
    write(bundle, path)
    summary = bundle.summary()
    return dict(changed=False, bundle=path, deployment=deployment, slot=bundle.slot, objects=summary["objects"],
                kinds=summary["kinds"], hooks_skipped=bundle.hooks_skipped, warnings_list=bundle.warnings,
                deprecated_apis=bundle.deprecations, cluster_version=git_version, in_service=in_service,
                warnings=list(bundle.warnings))


def _renders_as_upgrade(kube, params, in_service):
    """A chart renders as ``helm upgrade --install`` would: as an upgrade once a release is in service, or, before
    manent's first deploy of a release taken over from Helm, while Helm keeps state for it."""
    if in_service:
        return True
    migrated = params.get("helm_migrate_release")
    return bool(migrated and helm_release_exists(kube, params["namespace"], migrated))


def bundle_path(work_dir, cluster_url, namespace, release, slot=""):
    """The default bundle file of ``release`` in ``namespace`` of the cluster at ``cluster_url``: named by
    everything that makes one rendering differ from another (cluster, namespace, release key, version, deploy id,
    slot), so that inventory hosts reaching one API server for several namespaces never share a file."""
    identity = json.dumps([cluster_url, namespace, release.key.tenant, release.key.application,
                           release.key.artifact, release.key.environment, release.version, release.deployment,
                           slot])
    name = "%s-%s-%s-%s.json" % (_safe(cluster_url)[:60], _safe(namespace)[:63],
                                 _safe(release.version)[:40], sha256_text(identity)[:16])
    return os.path.join(work_dir, "bundles", name)


def _safe(text):
    return "".join(ch if ch.isalnum() or ch in "-." else "-" for ch in text.replace("https://", ""))
