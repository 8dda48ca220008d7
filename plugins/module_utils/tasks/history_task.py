# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manent_history task: its argument spec, how its parameters become DeployOptions (in one place), and
the operations that read or repair history (list, audit, rewrite, unlock), and rollback.

Used by the module (``plugins/modules/manent_history.py``) and by its action plugin."""

from __future__ import annotations

import dataclasses

from ansible_collections.manent.kubernetes.plugins.module_utils.history import retention_rule
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.apiconvert import Converter
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.apimappings import load_mappings
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.apply import ApplyOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import rollback as engine_rollback
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.deploy import Deployer, DeployOptions, default_holder
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import apply_task
from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.history.audit import audit
from ansible_collections.manent.kubernetes.plugins.module_utils.history.rewrite import rewrite_locked
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore

HISTORY_SPEC = {
    "operation": {"type": "str", "choices": ["list", "rollback", "audit", "rewrite", "unlock"], "default": "list"},
    "rollback_to": {"type": "str"},
    "prune": {"type": "bool", "default": False},
    "wait": {"type": "bool", "default": True},
    "wait_timeout": {"type": "str", "default": "5m"},
    "keep_releases": {"type": "int", "default": 5},
    "break_lock": {"type": "bool", "default": False},
    "api_mappings": {"type": "path"},
    "drop_removed": {"type": "bool", "default": False},
    "restore_cluster_scoped": {"type": "bool", "default": False},
}


def argument_spec():
    return common.argument_spec(common.RELEASE_SPEC, HISTORY_SPEC)


def run(params, check_mode=False, diff=False, on_progress=None):
    """One operation of the task on the release key of ``params``; its result (raises ManentError)."""
    if params["operation"] == "rollback":
        return rollback(params, check_mode, diff, on_progress=on_progress)
    kube, discovery = common.open_cluster(params)
    try:
        store = HistoryStore(kube, params["namespace"], common.release_key(params), holder=default_holder())
        out = operate(store, discovery, kube, params["operation"], check_mode, params["break_lock"],
                      convert=converter(params, discovery))
        out.update(listing(store))
        return out
    finally:
        kube.close()


def rollback(params, check_mode, diff, on_progress=None):
    """Roll the release key of ``params`` back (engine/rollback.py); the result: the DeployResult, the per-object
    diffs in diff mode, then the release in service and the records. Raises ManentError."""
    options = dataclasses.replace(deploy_options(params, check_mode, diff), on_progress=on_progress)
    key = common.release_key(params)
    kube, discovery = common.open_cluster(params)
    try:
        deployer = Deployer(kube, discovery, options)
        result = common.told(kube, check_mode, lambda: engine_rollback.rollback(
            deployer, params["namespace"], key, to_version=params.get("rollback_to"),
            converter=converter(params, discovery), restore_cluster_scoped=bool(params.get("restore_cluster_scoped"))))
        out = apply_task.result_dict(result, diff)
        out.update(listing(deployer.context.store(params["namespace"], key)))
        return out
    finally:
        kube.close()


def deploy_options(params, check_mode, diff):
    """The DeployOptions of ``params`` (InputError for a keep_releases below 2 or an unreadable wait_timeout)."""
    return DeployOptions(
        apply=ApplyOptions(dry_run=check_mode, diff=diff), wait=params["wait"],
        wait_timeout=parse_duration(params["wait_timeout"], name="wait_timeout"), prune=params["prune"],
        keep_releases=retention_rule.check_keep_releases(params["keep_releases"]), break_lock=params["break_lock"])


def converter(params, discovery):
    """How stored objects become usable on the cluster of ``discovery`` (rewrite, rollback, audit): the mapping file
    of ``api_mappings`` (read before anything is changed; InputError names the file and entry) and
    ``drop_removed``."""
    return Converter(discovery.served, mappings=load_mappings(params.get("api_mappings")),
                     drop_removed=bool(params.get("drop_removed")))


def operate(store, discovery, kube, operation, check_mode=False, break_lock=False, convert=None):
    """The result of ``operation`` (list, audit, rewrite or unlock) on ``store`` (a HistoryStore): ``changed``,
    plus ``findings`` (audit, rewrite) or ``unlocked`` (unlock, the holder of the removed lock). ``convert`` (a
    :class:`apiconvert.Converter`, default: discovery alone) is what audit and rewrite use."""
    out = {"changed": False}
    if operation == "audit":
        out["findings"] = audit(store, discovery, kube.version()[:2], convert)
    elif operation == "rewrite":
        out["findings"], out["changed"] = rewrite_locked(store, convert or discovery.served, dry_run=check_mode,
                                                         break_lock=break_lock)
    elif operation == "unlock":
        holder = store.unlock(dry_run=check_mode)
        if holder:
            out.update(changed=True, unlocked=holder)
    elif operation != "list":
        raise ValueError("operation %r is not one of list, audit, rewrite, unlock" % (operation,))
    return out


def listing(store):
    """What every manent_history run returns: the release in service and the records, newest first."""
    return {"in_service": store.in_service(), "records": store.records()}
