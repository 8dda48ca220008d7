# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""manent_history's parameters become DeployOptions in one place; rewrite and unlock hold the lock in the
engine, not in the module (their behaviour on a real cluster: tests/integration/test_history_module.py)."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import apply_task, history_task
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

PARAMS = {"operation": "list", "rollback_to": None, "prune": True, "wait": False, "wait_timeout": "90s",
          "keep_releases": 3, "break_lock": True}
APPLY_PARAMS = {"bundle": "b.json", "wait": True, "wait_timeout": "5m", "prune": False, "keep_releases": 5,
                "force_conflicts": True, "concurrency": 8, "break_lock": False, "helm_migrate_release": None,
                "create_namespace": False, "adopt": False}


class FakeStore:
    def __init__(self, holder="", findings=()):
        self.calls = []
        self.holder = holder
        self.findings = list(findings)

    def acquire(self, break_lock=False):
        self.calls.append(("acquire", break_lock))

    def release_lock(self):
        self.calls.append(("release",))

    def rewrite_api_versions(self, served_fn, dry_run=False):
        self.calls.append(("rewrite", dry_run))
        return self.findings

    def unlock(self, dry_run=False):
        self.calls.append(("unlock", dry_run))
        return self.holder


class FakeDiscovery:
    @staticmethod
    def served(api_version, kind):
        return True


def test_parameters_become_deploy_options():
    options = history_task.deploy_options(PARAMS, check_mode=True, diff=True)
    assert (options.apply.dry_run, options.apply.diff) == (True, True)
    assert (options.wait, options.wait_timeout, options.prune, options.keep_releases, options.break_lock) == (
        False, 90, True, 3, True)


@pytest.mark.parametrize("build", [
    lambda keep: history_task.deploy_options(dict(PARAMS, keep_releases=keep), False, False),
    lambda keep: apply_task.deploy_options(dict(APPLY_PARAMS, keep_releases=keep), False, False),
], ids=["manent_history", "manent_apply"])
def test_both_modules_refuse_keep_releases_below_two_alike(build):
    with pytest.raises(InputError) as info:
        build(1)
    assert str(info.value).startswith("keep_releases: must be a whole number of at least 2, got 1")


@pytest.mark.parametrize("check_mode, findings, calls, changed", [
    (False, [{"action": "rewritten"}], [("acquire", True), ("rewrite", False), ("release",)], True),
    (False, [], [("acquire", True), ("rewrite", False), ("release",)], False),
    (False, [{"action": "error"}], [("acquire", True), ("rewrite", False), ("release",)], False),
    (True, [{"action": "would-rewrite"}], [("rewrite", True)], True),
])
def test_rewrite_holds_the_lock_unless_in_check_mode(check_mode, findings, calls, changed):
    store = FakeStore(findings=findings)
    out = history_task.operate(store, FakeDiscovery(), None, "rewrite", check_mode=check_mode, break_lock=True)
    assert store.calls == calls
    assert out == {"changed": changed, "findings": findings}


@pytest.mark.parametrize("holder, check_mode, expected", [
    ("killed@ci:1", False, {"changed": True, "unlocked": "killed@ci:1"}),
    ("killed@ci:1", True, {"changed": True, "unlocked": "killed@ci:1"}),
    ("", False, {"changed": False}),
])
def test_unlock_reports_the_holder_it_removed(holder, check_mode, expected):
    store = FakeStore(holder=holder)
    assert history_task.operate(store, FakeDiscovery(), None, "unlock", check_mode=check_mode) == expected
    assert store.calls == [("unlock", check_mode)]


def test_list_changes_nothing():
    store = FakeStore()
    assert history_task.operate(store, FakeDiscovery(), None, "list") == {"changed": False}
    assert store.calls == []
