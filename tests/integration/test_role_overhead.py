# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's own cost on a redeploy (docs/performance.md, "Through ansible-playbook and the role"): the artifact
cache is checked on the controller by a filter, so a run whose artifact is cached starts no builtin module process
(no stat, file or copy task runs); a cached copy that does not match its sha256 is fetched again; the plan play
runs one task for the waves instead of three. Against the real local clusters (one namespace on each)."""

from __future__ import annotations

import os
import re

import pytest

from tests.integration.playbook_helpers import SHOP, run_playbook, sha256, shop_vars

FETCH_TASKS = ("Artifact | Create the cache directory", "Artifact | Read the sha256 of the controller file",
               "Artifact | Copy it into the cache", "Artifact | Verify the cached copy")
TASK = re.compile(r"^TASK \[manent\.kubernetes\.deploy : (.*?)\] \*+$", re.MULTILINE)


def _tasks(run):
    return TASK.findall(run.output)


def _cached_file(extra):
    return os.path.join(extra["deploy_cache_dir"], sha256(SHOP), os.path.basename(SHOP))


@pytest.mark.integration
def test_cached_artifact_starts_no_module_and_damaged_cache_is_fetched_again(clusters, inventory_path, namespaces,
                                                                             tmp_path):
    extra = shop_vars(tmp_path, namespaces, "1.0.0", "hello")

    first = run_playbook("deploy", inventory_path, extra, tmp_path)
    assert first.rc == 0, first.explain()
    tasks = _tasks(first)
    for name in FETCH_TASKS:
        assert tasks.count(name) == 1, (name, first.explain())  # fetched once, by the plan play only
    assert sha256(_cached_file(extra)) == sha256(SHOP)

    again = run_playbook("deploy", inventory_path, extra, tmp_path)
    assert again.rc == 0, again.explain()
    assert all(r["changed"] == 0 for r in again.recap.values()), again.explain()
    tasks = _tasks(again)
    for name in FETCH_TASKS:
        assert name not in tasks, (name, again.explain())
    # The artifact include was evaluated and skipped: nothing under it was even listed.
    assert tasks.count("Waves | Keep the wave sizes for the deploy play") == 1
    assert "2 wave(s) by region: eu-1: eu1a, eu1b -> us-1: us1a" in again.output
    # How many tasks a nothing-changed redeploy runs (14 in the plan play, 14 in each of the 2 waves; 52 before
    # issue 13's role work): each task costs every run about 0.05 to 0.3 s, so a new one should be worth it.
    assert len(tasks) <= 42, tasks

    with open(_cached_file(extra), "a", encoding="utf-8") as handle:
        handle.write("# damaged\n")
    repaired = run_playbook("deploy", inventory_path, extra, tmp_path)
    assert repaired.rc == 0, repaired.explain()
    assert _tasks(repaired).count("Artifact | Copy it into the cache") == 1, repaired.explain()
    assert sha256(_cached_file(extra)) == sha256(SHOP)
