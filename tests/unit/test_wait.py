# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wait.wait_for with a fake clock and scripted API answers: no cluster, no real sleeping."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import needs_wait, poll, wait_for
from tests.unit.fakes import FakeClock
from tests.unit.wait_fakes import Script, live_deployment


def statefulset(name, ready):
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "shop", "generation": 1},
        "spec": {"replicas": 2, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}},
        "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": ready, "updatedReplicas": 2,
                   "currentReplicas": 2},
    }


def crash_pod(name):
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop"},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}],
            "containerStatuses": [{
                "name": "web", "ready": False,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": "missing env DB_URL"}},
            }],
        },
    }


PDE = [
    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
    {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
     "message": 'ReplicaSet "web-7f5c4d9b8" has timed out progressing.'},
]
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "shop"}}


def run(objects, answers, clock=None, **kwargs):
    clock = clock or FakeClock()
    fetch = Script(answers)
    kwargs.setdefault("timeout", 300.0)
    result = wait_for(objects, fetch, clock=clock.clock, sleep=clock.sleep, **kwargs)
    return result, fetch, clock


@pytest.mark.parametrize("obj, expected", [
    (live_deployment("web"), True),
    (statefulset("db", 2), True),
    ({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}}, True),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"}}, False),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "m", "annotations": {"manent.io/wait": "true"}}},
     True),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "m", "annotations": {"manent.io/wait": "false"}}},
     False),
    ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"}}, False),
    ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "a.b", "annotations": {"manent.io/wait": "true"}}}, True),
    (CONFIGMAP, False),
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}, False),
    ({"apiVersion": "example.com/v1", "kind": "Deployment", "metadata": {"name": "x"}}, False),
])
def test_needs_wait(obj, expected):
    assert needs_wait(obj) is expected


def test_all_ready_at_once():
    web, db = live_deployment("web"), statefulset("db", 2)
    result, fetch, clock = run([CONFIGMAP, web, db], {ref(web): [web], ref(db): [db]})
    assert result == [
        {"ref": "Deployment/shop/web", "status": "Current", "message": "Deployment is available. Replicas: 2",
         "seconds": 0.0},
        {"ref": "StatefulSet/shop/db", "status": "Current", "message": "Partition rollout complete. updated: 2",
         "seconds": 0.0},
    ]
    assert fetch.calls == ["Deployment/shop/web", "StatefulSet/shop/db"]  # the ConfigMap is not polled
    assert clock.sleeps == []


def test_nothing_to_wait_for():
    result, fetch, clock = run([CONFIGMAP], {})
    assert (result, fetch.calls, clock.sleeps) == ([], [], [])


def test_becomes_ready_after_rounds_and_current_objects_are_not_fetched_again():
    web, db = live_deployment("web"), statefulset("db", 2)
    answers = {
        ref(web): [None, live_deployment("web", ready=0, updated=1), live_deployment("web", ready=1), web],
        ref(db): [statefulset("db", 1), db],
    }
    result, fetch, clock = run([web, db], answers, interval=2.0)
    assert [entry["status"] for entry in result] == ["Current", "Current"]
    assert [entry["seconds"] for entry in result] == [6.0, 2.0]
    assert fetch.calls == ["Deployment/shop/web", "StatefulSet/shop/db", "Deployment/shop/web",
                           "StatefulSet/shop/db", "Deployment/shop/web", "Deployment/shop/web"]
    assert clock.sleeps == [2.0, 2.0, 2.0]


def test_not_found_counts_as_in_progress_until_the_deadline():
    web = live_deployment("web")
    with pytest.raises(WaitError) as info:
        run([web], {ref(web): [None]}, timeout=5.0, interval=1.0)
    err = info.value
    assert err.permanent is False
    assert err.statuses == [{"ref": "Deployment/shop/web", "status": "NotFound",
                             "message": "not found (applied but not visible yet)", "seconds": 5.0}]


def test_permanent_failure_returns_at_once_with_pod_problems():
    web, db = live_deployment("web"), statefulset("db", 1)
    failing = live_deployment("web", ready=1, updated=1, generation=2, observed=2, conditions=PDE)
    answers = {ref(web): [live_deployment("web", ready=1, updated=1, generation=2, observed=1), failing],
               ref(db): [db]}
    pods = [crash_pod("web-7f5c4d9b8-a"), crash_pod("web-7f5c4d9b8-b")]
    clock = FakeClock()
    with pytest.raises(WaitError) as info:
        run([web, db], answers, clock=clock, timeout=300.0, list_pods=lambda obj: pods)
    err = info.value
    assert err.permanent is True
    assert clock.elapsed < 300.0
    assert clock.sleeps == [1.0]
    assert err.subject == "Deployment/shop/web"
    assert err.message == (
        'rollout failed: Progress deadline exceeded: ReplicaSet "web-7f5c4d9b8" has timed out progressing.; '
        "pods: 2 pods: CrashLoopBackOff: container web exit code 1 (Error): missing env DB_URL")
    assert str(err).startswith("Deployment/shop/web: rollout failed: Progress deadline exceeded")
    assert "waiting longer cannot help" in str(err)
    assert [(entry["ref"], entry["status"]) for entry in err.statuses] == [
        ("Deployment/shop/web", "Failed"), ("StatefulSet/shop/db", "InProgress")]


def test_failed_job_is_permanent():
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "migrate", "namespace": "shop", "annotations": {"manent.io/wait": "true"}},
           "spec": {"backoffLimit": 1}}
    live = dict(job, status={"startTime": "2024-05-02T10:00:00Z", "failed": 2, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
         "message": "Job has reached the specified backoff limit"}]})
    clock = FakeClock()
    with pytest.raises(WaitError) as info:
        run([job], {ref(job): [live]}, clock=clock)
    assert info.value.permanent is True
    assert info.value.subject == "Job/shop/migrate"
    assert clock.elapsed == 0.0


def test_timeout_lists_every_pending_workload_with_reasons():
    web, api, db = live_deployment("web"), live_deployment("api"), statefulset("db", 2)
    answers = {
        ref(web): [live_deployment("web", ready=1)],
        ref(api): [api],
        ref(db): [statefulset("db", 0)],
    }
    pods = {"web": [crash_pod("web-1"), crash_pod("web-2"), crash_pod("web-3")], "db": []}
    clock = FakeClock()
    with pytest.raises(WaitError) as info:
        run([web, api, db], answers, clock=clock, timeout=30.0, interval=4.0,
            list_pods=lambda obj: pods[obj["metadata"]["name"]])
    err = info.value
    assert err.permanent is False
    assert clock.elapsed == 30.0
    assert clock.sleeps == [4.0] * 7 + [2.0]  # the last sleep stops at the deadline
    assert err.message == (
        "2 of 3 workloads not ready after 30s: "
        "Deployment/shop/web: InProgress: Available: 1/2 "
        "[pods: 3 pods: CrashLoopBackOff: container web exit code 1 (Error): missing env DB_URL]; "
        "StatefulSet/shop/db: InProgress: Ready: 0/2")
    assert err.statuses == [
        {"ref": "Deployment/shop/web", "status": "InProgress", "message": "Available: 1/2", "seconds": 30.0},
        {"ref": "Deployment/shop/api", "status": "Current", "message": "Deployment is available. Replicas: 2",
         "seconds": 0.0},
        {"ref": "StatefulSet/shop/db", "status": "InProgress", "message": "Ready: 0/2", "seconds": 30.0},
    ]


def test_non_permanent_failure_keeps_waiting_and_can_recover():
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com", "annotations": {"manent.io/wait": "true"}}}
    conflict = dict(crd, status={"conditions": [
        {"type": "NamesAccepted", "status": "False", "reason": "ListKindConflict", "message": "in use"}]})
    established = dict(crd, status={"conditions": [{"type": "Established", "status": "True"}]})
    listed = []
    result, _fetch, clock = run([crd], {ref(crd): [conflict, conflict, established]},
                                list_pods=lambda obj: listed.append(obj) or [])
    assert result[0]["status"] == "Current"
    assert clock.elapsed == 2.0
    assert listed == []


def test_transient_api_error_is_retried_and_other_errors_propagate():
    web = live_deployment("web")
    flaky = ApiError("etcdserver: request timed out", status=500, transient=True)
    result, _fetch, clock = run([web], {ref(web): [flaky, web]})
    assert result[0]["status"] == "Current"
    assert clock.elapsed == 1.0

    forbidden = ApiError("deployments.apps is forbidden", status=403, reason="Forbidden")
    with pytest.raises(ApiError):
        run([web], {ref(web): [forbidden]})


def test_on_progress_is_called_at_most_every_ten_seconds_with_pending_refs():
    web, db = live_deployment("web"), statefulset("db", 2)
    slow = [live_deployment("web", ready=0)] * 25 + [web]
    calls = []
    clock = FakeClock()
    result, _fetch, _clock = run([web, db], {ref(web): slow, ref(db): [db]}, clock=clock, interval=1.0,
                                 on_progress=lambda workloads: calls.append(
                                     (clock.elapsed, [w.ref for w in workloads if not w.done])))
    assert result[0]["seconds"] == 25.0
    assert calls == [(10.0, ["Deployment/shop/web"]), (20.0, ["Deployment/shop/web"])]


def test_pod_listing_error_does_not_hide_the_timeout():
    web = live_deployment("web", ready=0)

    def list_pods(_obj):
        raise ApiError("pods is forbidden", status=403, reason="Forbidden")

    with pytest.raises(WaitError) as info:
        run([web], {ref(web): [web]}, timeout=2.0, list_pods=list_pods)
    assert "pods could not be listed: pods is forbidden" in info.value.message


# --------------------------------------------------------------------------- poll, the loop under every wait


def test_poll_returns_true_once_the_check_passes():
    clock, answers = FakeClock(), [False, False, True]
    assert poll(lambda: answers.pop(0), 10.0, interval=0.5, clock=clock.clock, sleep=clock.sleep) is True
    assert clock.sleeps == [0.5, 0.5] and answers == []


def test_poll_checks_once_more_at_the_deadline_then_gives_up():
    clock, calls, between = FakeClock(), [], []
    done = poll(lambda: calls.append(clock.elapsed) and False, 2.5, interval=1.0, clock=clock.clock,
                sleep=clock.sleep, between=between.append)
    assert done is False
    assert calls == [0.0, 1.0, 2.0, 2.5] and clock.sleeps == [1.0, 1.0, 0.5]
    assert between == [1000.0, 1001.0, 1002.0]  # before each sleep, never after the last check


# --------------------------------------------------------------------------- polled: objects that go away


def _job(state):
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "hook", "namespace": "shop", "annotations": {"manent.io/wait": "true"}},
           "spec": {"backoffLimit": 0}, "status": {"startTime": "2024-05-02T10:00:00Z", "active": 1}}
    if state == "deleting":
        job["metadata"]["deletionTimestamp"] = "2024-05-02T10:00:09Z"
        job["status"] = {"startTime": "2024-05-02T10:00:00Z", "succeeded": 1,
                         "conditions": [{"type": "Complete", "status": "True"}]}
    return job


def test_a_job_read_complete_while_its_ttl_deletes_it_is_complete():
    job = _job("running")
    result, _fetch, _clock = run([job], {ref(job): [job, _job("deleting"), None]})
    assert [(e["status"], e["message"]) for e in result] == [("Current", "Job Completed. succeeded: 1/1")]


def test_a_job_gone_between_two_polls_fails_at_once_and_is_never_called_not_visible_yet():
    job = _job("running")
    clock = FakeClock()
    with pytest.raises(WaitError) as info:
        run([job], {ref(job): [job, None]}, clock=clock, timeout=300.0)
    assert info.value.permanent and clock.elapsed == 1.0
    assert str(info.value).startswith(
        "Job/shop/hook: gone between two reads, so its last changes were not seen; last seen: InProgress: Job in "
        "progress. succeeded: 0/1, active: 1, failed: 0: its outcome was not observed")
    assert "not visible yet" not in str(info.value)


def test_a_workload_gone_after_it_was_seen_says_so_until_the_deadline():
    web = live_deployment("web", ready=0)
    with pytest.raises(WaitError) as info:
        run([web], {ref(web): [web, None]}, timeout=3.0)
    assert info.value.permanent is False
    assert info.value.statuses[0]["message"] == ("gone between two reads, so its last changes were not seen; last "
                                                 "seen: InProgress: Available: 0/2")
