# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster/watch.py and the observed rollout wait (wait.wait_for with ``watch``) on scripted LIST answers and WATCH
streams: resourceVersion-continuous resumption after a broken or ended stream, re-list after 410 Gone, the last
state of deleted objects, the outcome of a Job deleted right after it finished, and a Job gone without an outcome
seen. The same behaviour against real API servers: tests/integration/test_wait_watch.py."""

from __future__ import annotations

import copy
import threading
from types import SimpleNamespace

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Stream
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import watch
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.watch import Collection, Observer
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import wait_for

JOBS = "/apis/batch/v1/namespaces/n/jobs"
DEPLOYMENTS = "/apis/apps/v1/namespaces/n/deployments"
PODS = "/api/v1/namespaces/n/pods"
PATHS = {"Job": JOBS, "Deployment": DEPLOYMENTS, "Pod": PODS}
UID = "6b1c"


class FakeStream:
    """One scripted WATCH: its events (an exception in the list is raised there, a function is called), then the end
    of the answer; with ``hold`` (no script left) it stays open without events until closed, as a quiet watch
    does."""

    def __init__(self, events, hold):
        self.script = list(events)
        self.hold = hold
        self.closed = threading.Event()

    def events(self):
        for event in self.script:
            if self.closed.is_set():
                return
            if isinstance(event, Exception):
                raise event
            if callable(event):  # a step of the test's own between two events (orders two streams)
                event()
                continue
            yield copy.deepcopy(event)
        if self.hold:
            self.closed.wait(30)

    def close(self):
        self.closed.set()


class FakeKube:
    """LIST answers per path (``(items, resourceVersion)`` or an exception; the last one repeats) and WATCH scripts
    per path (lists of events, or an exception to raise on connecting; once used up, a quiet watch). Records every
    request as (verb, path, query)."""

    def __init__(self, lists, watches=None):
        self.lists = {path: list(answers) for path, answers in lists.items()}
        self.watches = {path: list(scripts) for path, scripts in (watches or {}).items()}
        self.requests = []
        self._lock = threading.Lock()

    def request(self, method, path, query=None, **_kw):
        with self._lock:
            self.requests.append(("LIST", path, dict(query or {})))
            answers = self.lists[path]
            answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        items, version = answer
        return SimpleNamespace(data={"items": copy.deepcopy(items), "metadata": {"resourceVersion": version}})

    def stream(self, path, query=None, **_kw):
        with self._lock:
            self.requests.append(("WATCH", path, dict(query or {})))
            scripts = self.watches.get(path) or []
            script = scripts.pop(0) if scripts else None
        if isinstance(script, Exception):
            raise script
        return FakeStream(script or [], hold=script is None)

    def watched_from(self, path):
        return [q.get("resourceVersion") for verb, p, q in self.requests if verb == "WATCH" and p == path]


class FakeReader:
    def __init__(self, kube, verbs=("get", "list", "watch")):
        self.kube = kube
        self.discovery = SimpleNamespace(find=lambda api_version, kind: SimpleNamespace(verbs=list(verbs)))

    def path(self, obj, with_name=True):
        base = PATHS[obj["kind"]]
        return "%s/%s" % (base, obj["metadata"]["name"]) if with_name else base


def job(name, version="1", state="running", deleting=False):
    status = {"startTime": "2026-12-04T10:00:00Z"}
    if state == "running":
        status["active"] = 1
    elif state == "complete":
        status.update(succeeded=1, conditions=[{"type": "Complete", "status": "True"}])
    elif state == "failed":
        status.update(failed=1, conditions=[{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                                             "message": "Job was active longer than specified deadline"}])
    meta = {"name": name, "namespace": "n", "resourceVersion": version, "uid": "uid-" + name,
            "annotations": {"manent.io/wait": "true"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-04T10:00:05Z"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}}, "status": status}


def deployment(name, version="1", ready=True):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "n", "generation": 1, "resourceVersion": version},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                       "readyReplicas": 1 if ready else 0, "availableReplicas": 1 if ready else 0,
                       "conditions": [{"type": "Available", "status": "True" if ready else "False"}]}}


def pod(name, version="1", waiting=None, deleting=False):
    meta = {"name": name, "namespace": "n", "resourceVersion": version,
            "labels": {"batch.kubernetes.io/controller-uid": UID}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-04T10:00:05Z"
    status = {"phase": "Pending"}
    if waiting:
        status["containerStatuses"] = [{"name": "job", "state": {"waiting": {"reason": waiting, "message": "x"}}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": status}


def event(kind, obj):
    return {"type": kind, "object": obj}


def gone():
    return event("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"})


def observe(kube, objects, timeout=5.0, verbs=("get", "list", "watch")):
    """wait_for observing ``objects`` (every one waited for); the observer's counts with the entries."""
    observer = Observer(FakeReader(kube, verbs), interval=0.01)
    entries = wait_for(objects, None, timeout=timeout, watch=observer, select=lambda obj: True)
    return entries, observer.counts()


# --------------------------------------------------------------------------- the stream of a WATCH


class FakeResponse:
    """A urllib3 answer being read: its chunks as they arrive (an exception is raised there)."""

    def __init__(self, chunks):
        self.chunks = chunks
        self.calls = []

    def stream(self, amt=None, decode_content=None):
        for chunk in self.chunks:
            if isinstance(chunk, Exception):
                raise chunk
            yield chunk

    def close(self):
        self.calls.append("close")

    def release_conn(self):
        self.calls.append("release")

    def shutdown(self):
        self.calls.append("shutdown")


def test_a_stream_yields_one_event_per_line_as_the_chunks_arrive_and_gives_its_connection_back():
    response = FakeResponse([b'{"type": "ADDED", "object"', b': {"a": 1}}\n{"type": "BOOK', b'MARK"}\n\n'])
    assert list(Stream(response, "Job/n", "https://x").events()) == [
        {"type": "ADDED", "object": {"a": 1}}, {"type": "BOOKMARK"}]
    assert response.calls == ["release"]  # read to its end: the connection can serve the next request


def test_a_broken_stream_is_a_transient_error_and_its_connection_is_closed():
    import urllib3  # pylint: disable=import-outside-toplevel
    response = FakeResponse([b'{"type": "ADDED"}\n', urllib3.exceptions.ProtocolError("Connection reset by peer")])
    stream = Stream(response, "Job/n", "https://x")
    events = stream.events()
    assert next(events) == {"type": "ADDED"}
    with pytest.raises(ApiError) as err:
        next(events)
    assert err.value.transient and str(err.value).startswith("Job/n: the stream from https://x broke")
    assert response.calls == ["close", "release"]


def test_a_stream_closed_before_it_is_read_releases_its_connection_closed_and_yields_nothing():
    response = FakeResponse([b'{"type": "ADDED"}\n'])
    stream = Stream(response, "Job/n", "https://x")
    stream.close()
    assert list(stream.events()) == [] and response.calls == ["close", "release"]


# --------------------------------------------------------------------------- one collection


def _collection(kube, path=JOBS, kind="Job", names=None):
    return Collection(kube, path, "Job/n", "batch/v1", kind, names=names)


def test_events_keep_each_objects_last_state_and_the_version_to_resume_from():
    collection = _collection(FakeKube({JOBS: [([job("a")], "10")]}))
    collection.relist()
    assert collection.version == "10" and collection.seen("a").live["metadata"]["resourceVersion"] == "1"
    assert collection.handle(event("MODIFIED", job("a", "11", "complete")))
    assert collection.handle(event("BOOKMARK", {"kind": "Job", "metadata": {"resourceVersion": "15"}}))
    assert collection.version == "15"
    assert collection.handle(event("DELETED", job("a", "16", "complete", deleting=True)))
    seen = collection.seen("a")
    assert seen.live is None and seen.gone == watch.DELETED and seen.last["status"]["succeeded"] == 1
    assert collection.version == "16"
    assert collection.seen("never").last is None and collection.seen("never").listed


def test_410_asks_for_a_relist_and_what_went_away_meanwhile_is_vanished_with_its_last_state():
    kube = FakeKube({JOBS: [([job("a"), job("b")], "10"), ([job("b", "30")], "30")]})
    collection = _collection(kube)
    collection.relist()
    assert collection.handle(gone()) is False
    collection.relist()
    seen = collection.seen("a")
    assert (seen.live, seen.gone, seen.last["status"]["active"]) == (None, watch.VANISHED, 1)
    assert collection.seen("b").live["metadata"]["resourceVersion"] == "30"
    collection.replace([job("a", "31")], "31")  # created again: it exists, nothing is gone
    assert collection.seen("a").gone == "" and collection.seen("a").live is not None


def test_an_error_event_other_than_410_is_raised_as_the_servers_error():
    collection = _collection(FakeKube({JOBS: [([], "1")]}))
    with pytest.raises(ApiError) as err:
        collection.handle(event("ERROR", {"kind": "Status", "code": 500, "message": "etcd leader changed"}))
    assert err.value.transient and "etcd leader changed" in str(err.value)


def test_a_broken_or_ended_watch_resumes_from_the_last_version_and_a_gone_one_relists():
    broken = ApiError("the stream from https://x broke: reset", transient=True)
    kube = FakeKube({JOBS: [([job("a")], "10"), ([job("a", "40")], "40")]},
                    {JOBS: [[event("MODIFIED", job("a", "12")), broken],
                            [event("BOOKMARK", {"metadata": {"resourceVersion": "20"}})],
                            [gone()],
                            ApiError("too old resource version", status=410), []]})
    collection = _collection(kube)
    with pytest.raises(ApiError):
        collection.watch_once()  # lists, watches from 10, breaks after 12
    assert collection.watch_once() == 1  # from 12 (the last event), ends after a bookmark at 20
    assert collection.watch_once() == 1  # from 20: 410 as an event
    assert collection.version is None
    collection.watch_once()  # lists again (40), then the server answers 410 at once
    collection.watch_once()  # lists again
    assert kube.watched_from(JOBS) == ["10", "12", "20", "40", "40"]
    assert [verb for verb, _p, _q in kube.requests].count("LIST") == 3
    assert collection.counts == {"lists": 3, "watches": 5, "resumed": 2, "relisted": 2, "polls": 0}


def test_a_watch_not_allowed_is_polled_with_lists_and_a_list_not_allowed_with_gets():
    forbidden = ApiError("forbidden", status=403)
    kube = FakeKube({JOBS: [([job("a")], "10"), ([job("a", "11", "complete")], "11")], PODS: [([], "10")]},
                    {JOBS: [forbidden]})
    entries, counts = observe(kube, [job("a")])
    assert entries[0]["status"] == "Current" and counts["polls"] >= 1

    class Gets(FakeKube):
        def get_json(self, path, **_kw):
            self.requests.append(("GET", path, {}))
            return job("a", "12", "complete")

    kube = Gets({JOBS: [forbidden], PODS: [forbidden]})
    entries, _counts = observe(kube, [job("a")])
    assert entries[0]["status"] == "Current"
    assert ("GET", JOBS + "/a", {}) in kube.requests and not kube.watched_from(JOBS)


# --------------------------------------------------------------------------- the observed wait


def test_a_job_deleted_right_after_it_completed_counts_as_completed():
    kube = FakeKube({JOBS: [([job("hook")], "10")], PODS: [([pod("hook-x")], "10")]},
                    {JOBS: [[event("MODIFIED", job("hook", "11", "complete")),
                             event("MODIFIED", job("hook", "12", "complete", deleting=True)),
                             event("DELETED", job("hook", "13", "complete", deleting=True))]]})
    entries, counts = observe(kube, [job("hook")])
    assert [(e["ref"], e["status"]) for e in entries] == [("Job/n/hook", "Current")]
    assert entries[0]["message"].startswith("Job Completed. succeeded: 1/1")
    assert counts["lists"] >= 1 and counts["watches"] >= 1


def test_a_failed_job_deleted_by_its_ttl_fails_with_its_reason_and_what_its_pods_last_said():
    kube = FakeKube({JOBS: [([job("hook")], "10")], PODS: [([pod("hook-x", waiting="ImagePullBackOff")], "10")]},
                    {PODS: [[event("MODIFIED", pod("hook-x", "11", "ImagePullBackOff", deleting=True)),
                             event("DELETED", pod("hook-x", "12", "ImagePullBackOff", deleting=True))]],
                     JOBS: [[event("MODIFIED", job("hook", "13", "failed")),
                             event("DELETED", job("hook", "14", "failed", deleting=True))]]})
    with pytest.raises(WaitError) as err:
        observe(kube, [job("hook")])
    message = str(err.value)
    assert err.value.permanent and message.startswith("Job/n/hook: rollout failed: Job Failed"), message
    assert "DeadlineExceeded" in message and "(deleted since)" in message
    assert "ImagePullBackOff: container job" in message


def test_a_job_failed_while_its_pods_are_being_deleted_is_explained_by_what_they_said_before():
    terminating = threading.Event()  # the Job fails once the pods' watch has seen its pod's deletion begin
    kube = FakeKube({JOBS: [([job("hook")], "10")], PODS: [([pod("hook-x", waiting="ImagePullBackOff")], "10")]},
                    {PODS: [[event("MODIFIED", pod("hook-x", "11", "ImagePullBackOff", deleting=True)),
                             terminating.set]],
                     JOBS: [[lambda: terminating.wait(5), event("MODIFIED", job("hook", "13", "failed"))]]})
    with pytest.raises(WaitError) as err:
        observe(kube, [job("hook")])
    assert "before their deletion: pod hook-x: ImagePullBackOff: container job" in str(err.value), str(err.value)


def test_a_job_deleted_before_it_finished_fails_at_once_with_what_was_last_seen():
    kube = FakeKube({JOBS: [([job("hook")], "10")], PODS: [([], "10")]},
                    {JOBS: [[event("DELETED", job("hook", "11", deleting=True))]]})
    with pytest.raises(WaitError) as err:
        observe(kube, [job("hook")], timeout=30)
    assert err.value.permanent
    assert str(err.value).startswith(
        "Job/n/hook: deleted before it finished; last seen: InProgress: Job in progress. succeeded: 0/1, active: 1, "
        "failed: 0: its outcome was not observed"), str(err.value)
    assert "not visible yet" not in str(err.value)


def test_a_job_gone_while_the_watch_was_interrupted_says_so():
    kube = FakeKube({JOBS: [([job("hook")], "10"), ([], "50")], PODS: [([], "10")]}, {JOBS: [[gone()]]})
    with pytest.raises(WaitError) as err:
        observe(kube, [job("hook")], timeout=30)
    assert err.value.permanent and "gone between two reads, so its last changes were not seen; last seen: " \
        "InProgress" in str(err.value)


def test_a_job_absent_at_the_first_read_fails_at_once():
    kube = FakeKube({JOBS: [([], "10")]})
    with pytest.raises(WaitError) as err:
        observe(kube, [job("hook")], timeout=30)
    assert err.value.permanent and str(err.value).startswith("Job/n/hook: not found: its outcome was not observed")


def test_a_deleted_workload_is_waited_for_until_the_deadline_with_its_last_state():
    kube = FakeKube({DEPLOYMENTS: [([deployment("web", ready=False)], "10")]},
                    {DEPLOYMENTS: [[event("DELETED", deployment("web", "11", ready=False))]]})
    with pytest.raises(WaitError) as err:
        observe(kube, [deployment("web")], timeout=0.5)
    assert not err.value.permanent
    assert err.value.statuses[0]["message"] == "deleted while it was waited for; last seen: InProgress: Available: 0/1"


def test_workloads_current_at_the_first_list_cost_one_list_and_no_watch():
    kube = FakeKube({DEPLOYMENTS: [([deployment("a"), deployment("b")], "10")]})
    entries, counts = observe(kube, [deployment("a"), deployment("b")])
    assert [e["status"] for e in entries] == ["Current", "Current"]
    assert kube.requests == [("LIST", DEPLOYMENTS, {"limit": "500"})]
    assert counts["watches"] == 0


def test_one_object_of_its_kind_is_listed_and_watched_by_name():
    kube = FakeKube({DEPLOYMENTS: [([deployment("web", ready=False)], "10")]},
                    {DEPLOYMENTS: [[event("MODIFIED", deployment("web", "11"))]]})
    entries, _counts = observe(kube, [deployment("web")])
    assert entries[0]["status"] == "Current"
    assert kube.requests[0] == ("LIST", DEPLOYMENTS, {"fieldSelector": "metadata.name=web", "limit": "500"})
    assert kube.requests[1][2]["fieldSelector"] == "metadata.name=web"
    assert kube.requests[1][2]["resourceVersion"] == "10" and kube.requests[1][2]["watch"] == "1"


def test_more_collections_than_an_observer_follows_are_polled():
    deployments = [dict(deployment("web"), metadata=dict(deployment("web")["metadata"], namespace="ns%d" % i))
                   for i in range(3)]
    observer = Observer(FakeReader(FakeKube({})), max_collections=2)
    polled = []
    entries = wait_for(deployments, None, timeout=5.0, watch=observer, fetch_many=lambda objs: polled.append(
        len(objs)) or {("apps", "Deployment", o["metadata"]["namespace"], "web"): o for o in objs})
    assert polled == [3] and [e["status"] for e in entries] == ["Current"] * 3


def test_while_its_kind_cannot_be_read_an_object_is_unknown_with_what_was_last_seen():
    down = ApiError("cannot reach https://x (3 attempts over 2s): connection refused", transient=True)
    kube = FakeKube({DEPLOYMENTS: [([deployment("web", ready=False)], "10")]},
                    {DEPLOYMENTS: [down, down, down, down, down, down]})
    with pytest.raises(WaitError) as err:
        observe(kube, [deployment("web")], timeout=1.0)
    assert err.value.statuses[0]["status"] == "Unknown"
    assert err.value.statuses[0]["message"] == (
        "could not read the object: cannot reach https://x (3 attempts over 2s): connection refused; last seen: "
        "InProgress: Available: 0/1")
