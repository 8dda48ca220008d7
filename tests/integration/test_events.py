# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The story of a rollout in Kubernetes Events (docs/events.md), on a local cluster and the real Prometheus of the
test rig: after a full rollout through the playbooks (deploy, two analysed steps, promote, retire) and after an
aborted one, the namespace's events.k8s.io/v1 Events read, in order, what happened, with versions, slots, weights
and the analysis' check, value, condition and query; check mode records none; a failed deploy and its rollback
through the modules are told too; a token that may not create Events still deploys, with one warning."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.render import bundle as bundles
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import routes
from tests.integration.deploy_helpers import render_bundle
from tests.integration.kube import deployer_token
from tests.integration.module_helpers import run_module
from tests.integration.deploy_helpers import KEY
from tests.integration.playbook_helpers import run_history_module, run_playbook, traffic_vars
from tests.integration.prometheus_helpers import wait_until, within
from tests.integration.route_helpers import AutoController, create, httproute
from tests.objects import NEVER_READY, configmap, deployment

pytestmark = pytest.mark.integration
MANENT = "app.kubernetes.io/managed-by=manent"


def story(cluster, namespace):
    """manent's Events in ``namespace``, oldest first: [(reason, note)]."""
    items = [event for event in cluster.list("events.k8s.io/v1", "Event", namespace, selector=MANENT)
             if event.get("reportingController") == "manent"]
    items.sort(key=lambda event: event["eventTime"])
    return items


def reasons(items):
    return [event["reason"] for event in items]


def settled(prometheus, traffic, slot, until):
    query = traffic.error_ratio(slot).replace("${window}", "10s")
    wait_until(lambda: prometheus.client.scalar(query), until, timeout=120, what="error ratio of slot %s" % slot)


def test_the_events_tell_a_full_rollout_and_an_aborted_one(cluster, inventory_path, namespace, tmp_path, prometheus,
                                                           traffic):
    traffic.set("a", rps=20, error_ratio=0.0)
    traffic.set("b", rps=20, error_ratio=0.0)
    settled(prometheus, traffic, "b", within(-1, 0.01))
    provider = {"url": prometheus.url, "timeout": "5s"}
    analysis = {"interval": "1s", "count": 2, "min_window": "5s",
                "checks": [{"name": "error-ratio", "query": traffic.error_ratio(), "max": 0.05}]}
    create(cluster, httproute(namespace))
    with AutoController(cluster, routes.RouteRef("HTTPRoute", namespace, "shop")):
        def play(name, version, check=False, **extra):
            run = run_playbook(name, inventory_path, traffic_vars(tmp_path, namespace, version, **extra), tmp_path,
                               limit=cluster.name, check=check)
            return run

        promote = {"deploy_traffic_operation": "promote"}
        for name, version, extra in (("deploy", "1.0.0", {}), ("traffic", "1.0.0", promote), ("deploy", "2.0.0", {})):
            run = play(name, version, **extra)
            assert run.rc == 0, run.explain()
        assert reasons(story(cluster, namespace)) == ["Deployed", "Promoted", "Deployed"]

        steps = {"deploy_traffic_operation": "step", "deploy_traffic_steps": [{"percent": 10}, {"percent": 50}],
                 "deploy_analysis_provider": provider, "deploy_traffic_analysis": analysis}
        checked = play("traffic", "2.0.0", check=True, **steps)
        assert checked.rc == 0, checked.explain()
        assert len(story(cluster, namespace)) == 3, "check mode records no Event"

        run = play("traffic", "2.0.0", deploy_traffic_promote=True, **steps)
        assert run.rc == 0, run.explain()
        run = play("traffic", "2.0.0", deploy_traffic_operation="retire")
        assert run.rc == 0, run.explain()
        full = story(cluster, namespace)
        assert reasons(full) == ["Deployed", "Promoted", "Deployed", "TrafficStep", "AnalysisSuccessful",
                                 "TrafficStep", "AnalysisSuccessful", "Promoted", "Retired"]
        notes = [event["note"] for event in full]
        assert notes[2].startswith("version 2.0.0 deployed to slot b as the candidate, no traffic yet (in service: "
                                   "1.0.0)")
        assert notes[3].startswith("candidate 2.0.0 (slot b) at 10% of the traffic, 1.0.0 in service (weights: slot a "
                                   "90%, slot b 10%); route HTTPRoute/" + namespace + "/shop")
        assert notes[4].startswith("analysis of candidate slot b Successful after 2 measurements")
        assert "check error-ratio Successful: value 0, condition every series <= 0.05, query " in notes[4]
        assert 'slot="b"' in notes[4] and "${" not in notes[4]  # the rendered query
        assert notes[5].startswith("candidate 2.0.0 (slot b) at 50% of the traffic")
        assert notes[7].startswith("version 2.0.0 (slot b) promoted: all traffic, in service, replacing 1.0.0 "
                                   "(slot a")
        assert notes[8].startswith("version 1.0.0 (slot a) retired: scaled to zero; 2.0.0 in service in slot b")
        for event in full:
            assert event["metadata"]["namespace"] == namespace and event["regarding"]["kind"] == "ConfigMap"
            assert event["regarding"]["namespace"] == namespace and event["reportingInstance"]
            assert event["type"] == "Normal" and len(event["note"].encode()) <= 1024
        assert len({event["regarding"]["name"] for event in full[2:8]}) == 1  # all about the record of 2.0.0
        assert full[8]["regarding"]["name"] == full[0]["regarding"]["name"]  # 1.0.0 retired

        # The aborted rollout: 3.0.0 into slot a, whose errors the analysis catches at the first step.
        run = play("deploy", "3.0.0")
        assert run.rc == 0, run.explain()
        traffic.set("a", rps=20, error_ratio=0.3)
        settled(prometheus, traffic, "a", within(0.2, 0.4))
        run = play("traffic", "3.0.0", **steps)
        assert run.rc != 0, run.explain()
        aborted = story(cluster, namespace)[len(full):]
        assert reasons(aborted) == ["Deployed", "TrafficStep", "AnalysisFailed", "Aborted"], [
            (event["reason"], event["note"]) for event in aborted]
        failed = aborted[2]
        assert failed["type"] == "Warning" and failed["action"] == "Analyze"
        assert failed["note"].startswith("analysis of candidate slot a Failed after 1 measurements: check error-ratio "
                                         "Failed")
        assert "condition every series <= 0.05, query " in failed["note"]
        assert aborted[3]["note"].startswith("candidate 3.0.0 (slot a) aborted: all traffic back to 2.0.0 (slot b), "
                                             "the candidate scaled to zero (weights: slot a 0%, slot b 100%)")
        kubectl_story(cluster, namespace, tmp_path)


def kubectl_story(cluster, namespace, tmp_path):
    """What ``kubectl get events`` prints (docs/events.md shows it), when kubectl is installed: one line per Event."""
    kubectl = "/usr/bin/kubectl"
    if not os.path.exists(kubectl):
        return
    out = subprocess.run([kubectl, "--server", cluster.url, "--token", cluster.token, "--certificate-authority",
                          cluster.ca_file, "get", "events", "-n", namespace, "--sort-by=.eventTime"],
                         capture_output=True, text=True, check=False, timeout=60)
    with open(str(tmp_path / "kubectl-get-events.txt"), "w", encoding="utf-8") as handle:
        handle.write(out.stdout + out.stderr)
    assert out.returncode == 0, out.stderr
    assert "TrafficStep" in out.stdout and "AnalysisFailed" in out.stdout


def test_a_failed_deploy_and_its_rollback_are_told(cluster, namespace, tmp_path):
    def apply(version, objects, **args):
        path = str(tmp_path / ("bundle-%s.json" % version))
        bundles.write(render_bundle(cluster, tmp_path, objects, namespace, version=version), path)
        return run_module("manent_apply", tmp_path, api_server=cluster.url, token=cluster.token,
                          ca_file=cluster.ca_file, bundle=path, work_dir=str(tmp_path / "work"), **args)

    failed, _result = apply("1.0.0", [configmap("cfg", v="1")])
    assert not failed
    never_ready = deployment("web", deadline=5, template_annotations=NEVER_READY)
    failed, result = apply("2.0.0", [configmap("cfg", v="2"), never_ready], wait_timeout="60s")
    assert failed and result["status"] == "failed", json.dumps(result)[-3000:]
    rolled = run_history_module(cluster, namespace, KEY, operation="rollback", artifact_name=KEY.artifact,
                                prune=True)
    assert rolled.get("status") == "rolled-back", rolled
    told = story(cluster, namespace)
    assert reasons(told) == ["Deployed", "DeployFailed", "RolledBack"], [(e["reason"], e["note"]) for e in told]
    assert told[0]["note"] == "version 1.0.0 deployed: 1 objects (1 created)"
    assert told[1]["type"] == "Warning" and told[1]["note"].startswith(
        "version 2.0.0 failed; 1.0.0 stays in service: ") and "web" in told[1]["note"], told[1]["note"]
    assert told[2]["note"].startswith("rolled back from version 2.0.0 to 1.0.0: "), told[2]["note"]
    assert told[1]["regarding"]["name"] != told[2]["regarding"]["name"] == told[0]["regarding"]["name"]


def warning_text(warning):
    """A module's warning as text (ansible-core 2.19+ returns it as a WarningSummary)."""
    return warning if isinstance(warning, str) else (warning.get("event") or {}).get("msg", "")


def test_a_token_that_may_not_create_events_still_deploys_with_one_warning(cluster, namespace, tmp_path):
    token = deployer_token(cluster, namespace)  # no right on events
    for version in ("1.0.0", "2.0.0"):
        path = str(tmp_path / ("bundle-%s.json" % version))
        bundles.write(render_bundle(cluster, tmp_path, [configmap("cfg", v=version)], namespace, version=version),
                      path)
        failed, result = run_module("manent_apply", tmp_path, api_server=cluster.url, token=token,
                                    ca_file=cluster.ca_file, bundle=path, work_dir=str(tmp_path / "work"))
        assert not failed and result["status"] == "deployed", json.dumps(result)[-3000:]
        refused = [w for w in map(warning_text, result.get("warnings", [])) if "Kubernetes Event" in w]
        assert len(refused) == 1, result.get("warnings")
        assert refused[0].startswith("the Kubernetes Event Deployed could not be recorded in namespace %s"
                                     % namespace)
        assert 'cannot create resource "events" in API group "events.k8s.io"' in refused[0], refused[0]
        assert token not in json.dumps(result)
    assert cluster.get("v1", "ConfigMap", namespace, "cfg")["data"] == {"v": "2.0.0"}
    assert story(cluster, namespace) == []
