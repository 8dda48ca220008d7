# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The story of a rollout as Kubernetes Events (cluster/events.py): the events.k8s.io/v1 body the API server's
validation accepts, the note masked before it is cut to 1 KiB, a refused write warned once and never raised, nothing
in a dry run; the reasons and notes of deploys, rollbacks, traffic operations and analysis verdicts."""

from __future__ import annotations

import json
import types

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import events
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import Change
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.result import DeployResult
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import analysis_task
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import story
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.options import TrafficResult
from tests.unit.analysis_fakes import START, TOKEN, FakePrometheus, answer, params
from tests.unit.fakes import FakeClock, FakeKube

RECORD = events.record_ref("shop-prod", "manent-untenanted-shop-shop-prod-1a2b3c4d-1-2-4")
EPOCH = 1_733_306_400.123456


def body(reason="Deployed", note="version 1.2.4 deployed", secrets=()):
    return events.event(RECORD, reason, note, "ctl-1", EPOCH, secrets)


def test_the_event_has_every_field_events_k8s_io_v1_requires():
    event = body()
    assert event["apiVersion"] == "events.k8s.io/v1" and event["kind"] == "Event"
    assert event["metadata"]["namespace"] == "shop-prod"
    assert event["metadata"]["name"] == "%s.%x" % (RECORD["name"], int(EPOCH * 1e9))
    assert event["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "manent"}
    assert event["eventTime"] == "2024-12-04T10:00:00.123456Z"
    assert (event["reportingController"], event["reportingInstance"]) == ("manent", "ctl-1")
    assert (event["action"], event["reason"], event["type"]) == ("Deploy", "Deployed", "Normal")
    assert event["regarding"] == {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop-prod",
                                  "name": RECORD["name"]}
    assert event["note"] == "version 1.2.4 deployed"
    for banned in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount", "series"):
        assert banned not in event


@pytest.mark.parametrize("reason, action, kind", [
    ("Deployed", "Deploy", "Normal"), ("DeployFailed", "Deploy", "Warning"), ("RolledBack", "Rollback", "Normal"),
    ("RollbackFailed", "Rollback", "Warning"), ("TrafficStep", "Step", "Normal"), ("Promoted", "Promote", "Normal"),
    ("Aborted", "Abort", "Normal"), ("Retired", "Retire", "Normal"), ("AnalysisSuccessful", "Analyze", "Normal"),
    ("AnalysisFailed", "Analyze", "Warning"), ("AnalysisInconclusive", "Analyze", "Warning"),
    ("AnalysisError", "Analyze", "Warning")])
def test_each_reason_has_its_action_and_type(reason, action, kind):
    event = body(reason)
    assert (event["action"], event["type"]) == (action, kind)


def test_names_and_fields_stay_within_the_api_limits():
    long = events.record_ref("shop-prod", "m" * 253)
    event = events.event(long, "Deployed", "x", "h" * 300, EPOCH)
    assert len(event["metadata"]["name"]) <= 253 and event["metadata"]["name"].endswith("%x" % int(EPOCH * 1e9))
    assert len(event["reportingInstance"]) <= 128


@pytest.mark.parametrize("text", ["x" * 5000, "é" * 1000, "€" * 700, "a" + "😀" * 400])
def test_a_long_note_is_cut_to_1024_bytes_of_valid_utf8(text):
    note = body(note=text)["note"]
    data = note.encode("utf-8")
    assert len(data) <= 1024 and note.endswith("...")
    assert text.startswith(note[:-3])
    assert len(data) > 1024 - 8  # cut at the limit, not far before it


def test_a_short_note_is_kept_whole_on_one_line():
    assert body(note="line one\n  line two\t end")["note"] == "line one line two end"


def test_the_note_is_masked_before_it_is_cut():
    secret = "S3cr3t-" + "k" * 600
    note = body(note="x" * 700 + " Authorization: Bearer " + secret, secrets=[secret, "short"])["note"]
    assert len(note.encode()) <= 1024
    assert not any(secret[i:i + 8] in note for i in range(len(secret) - 7))
    assert "Bearer ********" in note


class Closing(FakeKube):
    closed = False

    def close(self):
        self.closed = True


class Refusing(Closing):
    def answer(self, method, path, **kwargs):
        raise ApiError('events.events.k8s.io is forbidden: User "system:serviceaccount:shop-prod:deployer" cannot '
                       'create resource "events" in API group "events.k8s.io" in the namespace "shop-prod"',
                       status=403)


def test_the_recorder_posts_through_the_one_write_path():
    kube = FakeKube()
    recorder = events.Recorder(kube, instance="ctl-1", clock=lambda: EPOCH)
    assert recorder.record(RECORD, "Deployed", "version 1.2.4 deployed") is True
    ((method, path, kwargs),) = kube.calls
    assert (method, path) == ("POST", "/apis/events.k8s.io/v1/namespaces/shop-prod/events")
    assert kwargs["body"] == body() and recorder.posted == [body()]


def test_a_refused_event_warns_once_and_raises_nothing():
    kube, warnings = Refusing(), []
    recorder = events.Recorder(kube, instance="ctl-1")
    assert recorder.record(RECORD, "TrafficStep", "a", warnings) is False
    assert recorder.record(RECORD, "Promoted", "b", warnings) is False
    assert len(kube.calls) == 2 and len(warnings) == 1
    assert "TrafficStep could not be recorded in namespace shop-prod" in warnings[0]
    assert "cannot create resource \"events\"" in warnings[0] and "docs/events.md" in warnings[0]


def test_any_error_is_a_warning_too():
    class Broken(FakeKube):
        def answer(self, method, path, **kwargs):
            raise ValueError("boom " + TOKEN)
    warnings = []
    events.Recorder(Broken(), secrets=[TOKEN]).record(RECORD, "Deployed", "x", warnings)
    assert len(warnings) == 1 and "boom ********" in warnings[0] and TOKEN not in warnings[0]


def test_a_dry_run_or_a_missing_object_posts_nothing():
    kube = FakeKube()
    assert events.Recorder(kube, dry_run=True).record(RECORD, "Deployed", "x") is False
    assert events.Recorder(kube).record(events.record_ref("shop-prod", ""), "Deployed", "x") is False
    assert kube.calls == []


def result(**fields):
    base = dict(status="deployed", namespace="shop-prod", release="1.2.4", previous="1.2.3", record=RECORD["name"],
                changes=[Change("Deployment/shop-prod/web", "configured"), Change("Service/shop-prod/web", "unchanged"),
                         Change("ConfigMap/shop-prod/web", "created")], history={"written": True})
    base.update(fields)
    return DeployResult(**base)


def test_the_story_of_a_deploy():
    assert result().story() == ("Deployed", "version 1.2.4 deployed, replacing 1.2.3: 3 objects (1 created, "
                                            "1 configured, 1 unchanged)")
    assert result(slot="b", pruned=["ConfigMap/shop-prod/old"]).story() == (
        "Deployed", "version 1.2.4 deployed to slot b as the candidate, no traffic yet (in service: 1.2.3): 3 objects "
                    "(1 created, 1 configured, 1 unchanged), 1 pruned")
    assert result(phase=lifecycle.ROLLBACK, release="1.2.3", previous="1.2.4").story() == (
        "RolledBack", "rolled back from version 1.2.4 to 1.2.3: 3 objects (1 created, 1 configured, 1 unchanged)")


def test_a_deploy_that_changed_nothing_tells_nothing():
    assert result(changes=[Change("Service/shop-prod/web", "unchanged")], history={}).story() == (None, None)


def test_the_story_of_a_failed_deploy_and_rollback():
    error = ManentError("rollout failed: ProgressDeadlineExceeded", subject="Deployment/shop-prod/web")
    assert result(status="failed").story(error) == (
        "DeployFailed", "version 1.2.4 failed; 1.2.3 stays in service: Deployment/shop-prod/web: rollout failed: "
                        "ProgressDeadlineExceeded")
    assert result(status="failed", phase=lifecycle.ROLLBACK).story(error)[0] == "RollbackFailed"


def test_told_records_the_outcome_of_a_deploy_and_its_failure():
    kube = FakeKube()
    assert common.told(kube, False, result).release == "1.2.4"
    failed = result(status="failed")

    def failing():
        raise ManentError("rollout failed", partial=failed)
    with pytest.raises(ManentError):
        common.told(kube, False, failing)
    reasons = [kwargs["body"]["reason"] for _m, _p, kwargs in kube.calls]
    assert reasons == ["Deployed", "DeployFailed"]
    assert kube.calls[1][2]["body"]["type"] == "Warning"
    common.told(kube, True, result)  # check mode
    assert len(kube.calls) == 2


def test_a_refused_event_leaves_the_deploy_successful_with_one_warning():
    deployed = common.told(Refusing(), False, result)
    assert deployed.status == "deployed" and len(deployed.warnings) == 1


def traffic(kube=None):
    store = types.SimpleNamespace(namespace="shop-prod", key=types.SimpleNamespace(
        tenant="untenanted", application="shop", artifact="shop", environment="prod"))
    return types.SimpleNamespace(state=types.SimpleNamespace(store=store), router=types.SimpleNamespace(
        ref="HTTPRoute/shop-prod/shop"), events=events.Recorder(kube or FakeKube(), instance="ctl-1"))


def told(context, tell, *args):
    out = TrafficResult(operation="step", weights={"a": 90, "b": 10})
    out.wrote("HTTPRoute/shop-prod/shop", "weights a 90, b 10")
    tell(context, out, {"version": "1.2.3", "slot": "a"}, *args)
    ((_method, _path, kwargs),) = context.events.kube.calls
    return kwargs["body"]


def test_the_story_of_the_traffic_operations():
    step = told(traffic(), story.step, "1.2.4", "b", 10)
    assert step["reason"] == "TrafficStep" and "-1-2-4-" in step["regarding"]["name"]
    assert step["note"] == ("candidate 1.2.4 (slot b) at 10% of the traffic, 1.2.3 in service (weights: slot a 90%, "
                            "slot b 10%); route HTTPRoute/shop-prod/shop")
    assert told(traffic(), story.promote, "1.2.4", "b")["note"].startswith(
        "version 1.2.4 (slot b) promoted: all traffic, in service, replacing 1.2.3 (slot a")
    assert told(traffic(), story.abort, "1.2.4", "b")["note"].startswith(
        "candidate 1.2.4 (slot b) aborted: all traffic back to 1.2.3 (slot a), the candidate scaled to zero")
    retired = told(traffic(), story.retire, "1.2.2", "b")
    assert retired["reason"] == "Retired" and "-1-2-2-" in retired["regarding"]["name"]
    assert told(traffic(), story.rollback, "1.2.2", "b")["reason"] == "RolledBack"


def test_an_operation_that_wrote_nothing_tells_nothing():
    context = traffic()
    story.step(context, TrafficResult(operation="step"), {"version": "1.2.3"}, "1.2.4", "b", 10)
    assert context.events.kube.calls == []


def analysed(monkeypatch, script, check_mode=False, kube=None, **extra):
    kube = kube or Closing()
    monkeypatch.setattr(analysis_task, "Kube", lambda _options: kube)
    parameters = dict(params(extra.pop("checks", None)), port=6443, token=TOKEN, client_cert=None,
                      client_key=None, ca=None, ca_file=None, insecure_skip_tls_verify=False, request_timeout=30.0,
                      work_dir=None, events={"namespace": "shop-prod", "regarding": {
                          "api_version": "v1", "kind": "ConfigMap", "name": RECORD["name"]}})
    parameters.update(dict({"api_server": "https://api.example"}, **extra))
    parameters["provider"]["bearer_token"] = TOKEN
    clock = FakeClock(START)
    try:
        out = analysis_task.run(parameters, check_mode=check_mode, clock=clock, sleep=clock.sleep,
                                transport=FakePrometheus(script))
    except analysis_task.AnalysisFailed as err:
        out = err.partial.to_dict()
    return out, kube


def test_the_verdict_is_told_with_the_check_value_condition_and_query(monkeypatch):
    out, kube = analysed(monkeypatch, lambda _q, _at: answer("0.9", {"service": "shop-b"}))
    assert out["verdict"] == "Failed"
    ((method, path, kwargs),) = kube.calls
    event = kwargs["body"]
    assert (method, path) == ("POST", "/apis/events.k8s.io/v1/namespaces/shop-prod/events")
    assert (event["reason"], event["type"], event["action"]) == ("AnalysisFailed", "Warning", "Analyze")
    assert event["regarding"]["name"] == RECORD["name"] and event["metadata"]["namespace"] == "shop-prod"
    note = event["note"]
    assert note.startswith("analysis of candidate slot b Failed after 1 measurements: check errors Failed")
    assert "check errors Failed: value 0.9, condition every series <= 0.05, query " \
           "sum(rate(errors{service=\"shop-b\"}[60s]))" in note
    assert TOKEN not in json.dumps(event) and kube.closed


def test_a_successful_verdict_is_told_too(monkeypatch):
    out, kube = analysed(monkeypatch, lambda _q, _at: answer("0.01"))
    assert out["verdict"] == "Successful" and kube.calls[0][2]["body"]["reason"] == "AnalysisSuccessful"


def test_a_credential_in_a_query_is_masked_in_the_note(monkeypatch):
    checks = [{"name": "errors", "query": 'sum(rate(errors{key="%s"}[${window}]))' % TOKEN, "max": 0.05}]
    out, kube = analysed(monkeypatch, lambda _q, _at: answer("0.9"), checks=checks)
    assert out["verdict"] == "Failed"
    note = kube.calls[0][2]["body"]["note"]
    assert 'query sum(rate(errors{key="********"}[60s]))' in note
    assert not any(TOKEN[i:i + 8] in json.dumps(kube.calls) for i in range(len(TOKEN) - 7))


def test_no_event_in_check_mode_or_without_a_cluster(monkeypatch):
    _out, kube = analysed(monkeypatch, lambda _q, _at: answer("0.9"), check_mode=True)
    assert kube.calls == []
    out, kube = analysed(monkeypatch, lambda _q, _at: answer("0.01"), api_server=None)
    assert kube.calls == [] and out["warnings"] == []


def test_a_refused_verdict_event_is_one_warning(monkeypatch):
    out, _kube = analysed(monkeypatch, lambda _q, _at: answer("0.01"), kube=Refusing())
    assert out["verdict"] == "Successful" and len(out["warnings"]) == 1
    assert "AnalysisSuccessful could not be recorded" in out["warnings"][0]


def test_a_cluster_that_cannot_be_reached_leaves_the_verdict_alone(monkeypatch):
    def unreachable_cluster(_options):
        raise ManentError("CA file /nope does not exist", subject="connection")
    monkeypatch.setattr(analysis_task, "Kube", unreachable_cluster)
    parameters = dict(params(), api_server="https://api.example", port=6443, token=None, client_cert=None,
                      client_key=None, ca=None, ca_file=None, insecure_skip_tls_verify=False, request_timeout=30.0,
                      work_dir=None, events={"namespace": "shop-prod", "regarding": {
                          "api_version": "v1", "kind": "ConfigMap", "name": RECORD["name"]}})
    clock = FakeClock(START)
    out = analysis_task.run(parameters, clock=clock, sleep=clock.sleep, transport=FakePrometheus(
        lambda _q, _at: answer("0.01")))
    assert out["verdict"] == "Successful"
    assert out["warnings"] == ["the Kubernetes Event AnalysisSuccessful was not recorded: connection: CA file /nope "
                               "does not exist"]
