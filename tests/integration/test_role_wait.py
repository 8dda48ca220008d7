# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""deploy_wait: with false the role records the release once it is applied, without waiting for a rollout that
cannot finish; with the default (true) the same release fails on its rollout wait. Against a real cluster: the
Deployment's pod asks for a node label no kwok node has, so it stays Pending."""

from __future__ import annotations

import pytest

from tests.integration.playbook_helpers import PAUSE, artifact, base_vars, run_playbook, write_manifest


def _stuck(path, version):
    return write_manifest(path, [{
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "stuck"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "stuck"}},
                 "template": {"metadata": {"labels": {"app": "stuck", "version": version}},
                              "spec": {"nodeSelector": {"manent.io/test-nowhere": "true"},
                                       "containers": [{"name": "main", "image": PAUSE}]}}}}])


@pytest.mark.integration
def test_deploy_wait_false_records_an_unfinished_rollout_and_true_waits_for_it(clusters, inventory_path, namespaces,
                                                                               tmp_path):
    by_name = {c.name: c for c in clusters}
    v1 = _stuck(str(tmp_path / "stuck-1.yaml"), "1")
    extra = base_vars(tmp_path, namespaces, deploy_application="stuck", deploy_wait=False, deploy_wait_timeout="8s",
                      deploy_artifact=artifact("stuck", "1", v1))
    run = run_playbook("deploy", inventory_path, extra, tmp_path, limit="eu1a")
    assert run.rc == 0, run.explain()
    assert run.summary["eu1a"]["status"] == "deployed", run.explain()
    assert "still rolling out" not in run.output, run.explain()
    deployment = by_name["eu1a"].get("apps/v1", "Deployment", namespaces, "stuck")
    assert deployment and not deployment.get("status", {}).get("availableReplicas"), deployment

    v2 = _stuck(str(tmp_path / "stuck-2.yaml"), "2")
    extra.update(deploy_wait=True, deploy_artifact=artifact("stuck", "2", v2))
    run = run_playbook("deploy", inventory_path, extra, tmp_path, limit="eu1a")
    assert run.rc != 0, run.explain()
    assert run.summary["eu1a"]["status"] == "failed", run.explain()
    assert "Deployment/%s/stuck" % namespaces in run.output, run.explain()
