# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run summaries through ansible-playbook: deploy 1.0.0, deploy 2.0.0 and roll back in ONE run. Each operation's
summary file and set_stats export report only that operation's counts (set_stats used to merge the deploy's
``created`` into the rollback's counts), in docs/requirements.md §11's shape ``{"plugin": "kubernetes", "targets": [...]}``."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from tests.integration.playbook_helpers import PLAYBOOKS, SHOP, artifact, run_playbook

SPEC_DETAILS = {"namespace", "objects", "release", "previous", "pruned", "helm_hooks_skipped"}


def _custom_stats(output):
    """The run's set_stats data, from the default callback's CUSTOM STATS (ANSIBLE_SHOW_CUSTOM_STATS)."""
    for line in output.splitlines():
        if line.strip().startswith("RUN: "):
            return json.loads(line.strip()[len("RUN: "):])
    return {}


def _operation(name, namespace, summary_file, **variables):
    play_vars = {"deploy_application": "shop", "deploy_environment": "test", "deploy_namespace": namespace,
                 "deploy_wait_timeout": "60s", "deploy_summary_file": summary_file}
    play_vars.update(variables)
    return {"name": name, "ansible.builtin.import_playbook": os.path.join(PLAYBOOKS, name.split()[0] + ".yml"),
            "vars": play_vars}


@pytest.mark.integration
def test_each_operation_of_a_run_reports_only_its_own_results(clusters, inventory_path, namespaces, tmp_path):
    ns = namespaces
    files = {step: str(tmp_path / ("%s.json" % step)) for step in ("deploy1", "deploy2", "rollback")}
    common = {"deploy_cache_dir": str(tmp_path / "cache"), "deploy_work_dir": str(tmp_path / "work")}
    playbook = [
        _operation("deploy 1.0.0", ns, files["deploy1"], deploy_artifact=artifact("shop", "1.0.0", SHOP),
                   deploy_variables={"REPLICAS": "1", "GREETING": "one"}, **common),
        _operation("deploy 2.0.0", ns, files["deploy2"], deploy_artifact=artifact("shop", "2.0.0", SHOP),
                   deploy_variables={"REPLICAS": "1", "GREETING": "two"}, **common),
        _operation("rollback", ns, files["rollback"], **common),
    ]
    path = tmp_path / "run.yml"
    path.write_text(yaml.safe_dump(playbook, sort_keys=False))

    run = run_playbook(str(path)[:-len(".yml")], inventory_path, {}, tmp_path, limit="eu1a",
                       env={"ANSIBLE_SHOW_CUSTOM_STATS": "1"})
    assert run.rc == 0, run.explain()

    def written(step):
        with open(files[step], encoding="utf-8") as handle:
            return json.load(handle)

    deploy1, deploy2, rollback = written("deploy1"), written("deploy2"), written("rollback")
    for result, operation in ((deploy1, "deploy"), (deploy2, "deploy"), (rollback, "rollback")):
        assert (result["plugin"], result["operation"]) == ("kubernetes", operation)
        assert [t["host"] for t in result["targets"]] == ["eu1a"]
        assert SPEC_DETAILS <= set(result["targets"][0]["details"]), result
    first, second, back = (r["targets"][0] for r in (deploy1, deploy2, rollback))
    assert (first["status"], first["counts"]) == ("deployed", {"created": 4})
    assert (second["status"], second["version"], second["previous"]) == ("deployed", "2.0.0", "1.0.0")
    assert second["counts"] == {"configured": 1, "unchanged": 3}, second
    assert (back["status"], back["version"], back["previous"]) == ("rolled-back", "1.0.0", "2.0.0")
    assert back["counts"] == {"configured": 1, "unchanged": 3}, back  # no "created" carried over from deploy 1
    assert back["details"]["namespace"] == ns and back["details"]["objects"] == 4
    assert back["details"]["helm_hooks_skipped"] == []

    stats = _custom_stats(run.output)
    assert stats, run.explain()
    assert stats["manent_result"] == rollback, stats["manent_result"]  # the last operation, as in its file
    assert stats["manent_deploy_summary"]["eu1a"]["counts"] == back["counts"]
    assert [r["operation"] for r in stats["manent_results"]] == ["deploy", "deploy", "rollback"]
    assert stats["manent_results"] == [deploy1, deploy2, rollback]
