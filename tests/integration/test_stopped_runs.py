# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ansible-playbook stopped in the middle of a deploy, as a cancelled CI job (SIGTERM) or Ctrl-C (SIGINT) stops it:
the signal to its process group. The deploy stops at once: nothing more is written, its record is marked failed,
the release in service stays, the history lock is released, and every process of the run ends; the next run
converges without break_lock (plugin_utils/stopping.py). AWX's cancel, which kills ansible-playbook instead, is in
test_awx_runner.py."""

from __future__ import annotations

import os
import secrets
import signal

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import locator_name, record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import STATUS_FAILED
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from tests.integration.deploy_helpers import labelled_history, locator, mid_rollout, record_status
from tests.integration.playbook_helpers import (
    app_objects, artifact, base_vars, run_playbook, start_playbook, write_manifest)
from tests.integration.process_helpers import kill_all, new_marker, tail, wait_for_moment, wait_gone

pytestmark = pytest.mark.integration

KEY = ReleaseKey(application="shop", artifact="shop", environment="test")
STOP_TIMEOUT = 120  # seconds a stopped run gets to clean up and end
MOMENT_TIMEOUT = 300  # seconds until the stopped run reaches its rollout wait


def _vars(tmp_path, namespace, version, secret, **options):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = write_manifest(str(tmp_path / ("shop-%s.yaml" % version)), app_objects(version, secret, **options))
    return base_vars(tmp_path, namespace, deploy_application="shop", deploy_artifact=artifact("shop", version, path),
                     deploy_wait_timeout="10m")


def test_a_run_stopped_by_sigterm_or_sigint_mid_apply_releases_the_lock(cluster, inventory_path, namespace, tmp_path):
    secret = secrets.token_hex(16)
    first = run_playbook("deploy", inventory_path, _vars(tmp_path / "1", namespace, "1.0.0", secret), tmp_path / "1",
                         limit=cluster.name)
    assert first.rc == 0, first.explain()

    for signum, version in ((signal.SIGTERM, "2.0.0"), (signal.SIGINT, "3.0.0")):
        marker = new_marker()
        log = str(tmp_path / ("stopped-%s.log" % version))
        run = start_playbook("deploy", inventory_path, _vars(tmp_path / version, namespace, version, secret,
                                                             never_ready=True),
                             tmp_path / version, log, limit=cluster.name, env=marker)
        try:
            wait_for_moment(lambda: mid_rollout(cluster, namespace, "shop", version, KEY), run, log, MOMENT_TIMEOUT,
                            "its rollout wait")
            os.killpg(run.pid, signum)
            run.wait(STOP_TIMEOUT)
            left = wait_gone(marker, STOP_TIMEOUT)
            assert not left, "%s: processes of the run still alive (pids %s)" % (signum.name, left)
        finally:
            kill_all(marker)
        loc = locator(cluster, namespace, KEY)
        assert (loc["version"], loc["lockHolder"]) == ("1.0.0", ""), "%s: %r" % (signum.name, loc)
        status = record_status(cluster, namespace, version, KEY)
        assert status == STATUS_FAILED, "%s: the record of %s says %r; the stopped run's output ends:\n%s" % (
            signum.name, version, status, tail(log))

    again = run_playbook("deploy", inventory_path, _vars(tmp_path / "4", namespace, "4.0.0", secret), tmp_path / "4",
                         limit=cluster.name)
    assert again.rc == 0, again.explain()
    assert "broke the release lock" not in again.output
    loc = locator(cluster, namespace, KEY)
    assert (loc["version"], loc["lockHolder"]) == ("4.0.0", ""), loc
    assert sorted(labelled_history(cluster, namespace, KEY)) == sorted(
        [locator_name(KEY)] + [record_name(KEY, v) for v in ("1.0.0", "2.0.0", "3.0.0", "4.0.0")])
