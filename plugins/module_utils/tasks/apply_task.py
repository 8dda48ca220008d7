# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manent_apply task: its argument spec and how its parameters become a deploy, in one place.

Used by the module (``plugins/modules/manent_apply.py``) and by its action plugin, which runs the same
deploy in the controller process when the connection is local so that it can print which workloads are
still rolling out while it waits.
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.apply import ApplyOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.render.bundle import read
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.deploy import Deployer, DeployOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.retention_rule import check_keep_releases
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import CONCURRENCY

APPLY_SPEC = {
    "bundle": {"type": "path", "required": True},
    "wait": {"type": "bool", "default": True},
    "wait_timeout": {"type": "str", "default": "5m"},
    "prune": {"type": "bool", "default": False},
    "keep_releases": {"type": "int", "default": 5},
    "force_conflicts": {"type": "bool", "default": True},
    "concurrency": {"type": "int", "default": CONCURRENCY},
    "break_lock": {"type": "bool", "default": False},
    "helm_migrate_release": {"type": "str"},
    "create_namespace": {"type": "bool", "default": False},
    "adopt": {"type": "bool", "default": False},
}


def argument_spec():
    return common.argument_spec(APPLY_SPEC)


def deploy_options(params, check_mode, diff, on_progress=None):
    check_keep_releases(params["keep_releases"])
    if params["concurrency"] < 1:
        raise InputError("must be at least 1", subject="concurrency")
    return DeployOptions(
        apply=ApplyOptions(force=params["force_conflicts"], concurrency=params["concurrency"], dry_run=check_mode,
                           diff=diff),
        wait=params["wait"], wait_timeout=parse_duration(params["wait_timeout"], name="wait_timeout"),
        prune=params["prune"], keep_releases=params["keep_releases"], break_lock=params["break_lock"],
        helm_migrate_release=params.get("helm_migrate_release") or "", create_namespace=params["create_namespace"],
        adopt=params["adopt"], on_progress=on_progress)


def run(params, check_mode, diff, on_progress=None):
    """Deploy the bundle named by ``params``; the task's result (raises ManentError)."""
    return result_dict(deploy(params, check_mode, diff, on_progress), diff)


def deploy(params, check_mode, diff, on_progress=None):
    """Deploy the bundle named by ``params``; its DeployResult (raises ManentError)."""
    options = deploy_options(params, check_mode, diff, on_progress)
    bundle = read(params["bundle"])
    kube, discovery = common.open_cluster(params)
    try:
        return common.told(kube, check_mode, lambda: Deployer(kube, discovery, options).deploy(bundle))
    finally:
        kube.close()


def result_dict(result, diff):
    """The module's result: the DeployResult plus the per-object diffs in diff mode."""
    out = result.to_dict()
    if diff:
        out["diff"] = [c.diff for c in result.changes if c.diff]
    return out
