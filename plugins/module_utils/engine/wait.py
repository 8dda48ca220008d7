# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one waiting loop (:func:`poll`), and the rollout wait built on it (:func:`wait_for`).

:func:`poll` calls a check until it says done or the deadline passes, sleeping in between; the rollout wait, the
wait for CRDs to be Established (crds.py) and the wait until a deleted object is gone (delete.py) all use it.

The rollout wait observes: given a ``watch`` (the LiveReader), it reads the objects with one LIST per kind and
namespace and then follows their WATCH (cluster/watch.py), and its "sleep" returns as soon as one of them changed.
So it sees every outcome, also that of a Job deleted right after it finished (``ttlSecondsAfterFinished: 0``, a
delete policy): its last state is its outcome. A Job or Pod that went away without an outcome seen (deleted before
it finished, or during an interruption of the watch) fails the wait at once, saying so with what was last seen.
Without ``watch``, or for more collections than the observer follows, it polls: each round reads the objects not
yet Current. Either way a permanent failure (a Deployment past its progress deadline, a failed Job) stops the wait
at once; at the deadline every workload still not ready is listed with its last status and what its pods report
now. The clock, the sleep and the API calls are injected, so the loop is tested without a cluster or time.
"""

from __future__ import annotations

import time

from ansible_collections.manent.kubernetes.plugins.module_utils.engine import progress
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, NotFoundError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import annotations as annotations_of
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import (
    group_of, key_of, metadata, namespace_of, ref)
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.watch import DELETED, VANISHED, Observer
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.status import (
    CURRENT, FAILED, NOT_FOUND, UNKNOWN, Result, compute, finished, is_permanent_failure, pod_problems)

WAIT_ANNOTATION = "manent.io/wait"
PROGRESS_EVERY = 10.0

# (group, kind) always waited for, and those waited for only with the annotation set to "true"
_ALWAYS = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
           ("extensions", "Deployment"), ("extensions", "DaemonSet")}
_ON_REQUEST = {("apiextensions.k8s.io", "CustomResourceDefinition"), ("batch", "Job")}
_NO_PODS = {"CustomResourceDefinition"}
_RUN_TO_END = {("batch", "Job"), ("", "Pod")}  # kinds that finish: their outcome is final, also once deleted
# Reasons of the Result of an object that no longer exists (or, observed, never did): for a Job or Pod, its outcome
# can no longer be seen
ABSENT, GONE_DELETED, GONE_UNSEEN = "Absent", "DeletedUnfinished", "Vanished"
_GONE = (ABSENT, GONE_DELETED, GONE_UNSEEN)


def pods_of(kube, obj):
    """The pods selected by a workload's ``spec.selector.matchLabels`` ([] without one), to explain failures."""
    labels = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if not labels:
        return []
    query = {"labelSelector": ",".join("%s=%s" % item for item in sorted(labels.items()))}
    return kube.get_json("/api/v1/namespaces/%s/pods" % namespace_of(obj), query=query).get("items", [])


def runs_to_end(obj):
    """Jobs and Pods: they finish (succeed or fail), so a wait waits for that and delete policies act on it."""
    return (group_of(obj), obj.get("kind") or "") in _RUN_TO_END


def needs_wait(obj):
    """True for Deployments, StatefulSets, DaemonSets; CRDs and Jobs only with ``manent.io/wait: "true"``."""
    key = (group_of(obj), obj.get("kind") or "")
    if key in _ALWAYS:
        return True
    if key in _ON_REQUEST:
        return str(annotations_of(obj).get(WAIT_ANNOTATION, "")).lower() == "true"
    return False


class _Tracked:
    """One waited object: its last live state and status."""

    def __init__(self, obj):
        self.obj = obj
        self.ref = ref(obj)
        self.live = None
        self.result = Result(NOT_FOUND, "not fetched yet", "NotFetched")
        self.seconds = 0.0
        self.done = False
        self.key = key_of(obj)

    def entry(self):
        return {"ref": self.ref, "status": self.result.status, "message": self.result.message,
                "seconds": round(self.seconds, 1)}


def _status(live):
    """The Result of a live object: a finished Job's or Pod's outcome (kept while it is deleted), else kstatus'."""
    return finished(live) or compute(live)


def _poll(item, fetch):
    """Fetch and compute one object; a transient API error only makes this round's status Unknown."""
    try:
        live = fetch(item.obj)
    except NotFoundError:
        live = None
    except ApiError as err:
        if not err.transient:
            raise
        return item.live, Result(UNKNOWN, "could not read the object: %s" % err, "ApiError")
    return _read(item, live)


def _read(item, live):
    """(live, Result) of one polled object: not found is "not visible yet" only while it was never seen."""
    if live is not None:
        return live, _status(live)
    if item.live is not None:
        return _gone(item.live, VANISHED)
    return None, Result(NOT_FOUND, "not found (applied but not visible yet)", "NotFound")


def _poll_many(items, fetch_many):
    """(live, Result) of each of ``items``, read together; a transient API error makes this round Unknown."""
    if not items:
        return []
    try:
        found = fetch_many([item.obj for item in items])
    except ApiError as err:
        if not err.transient:
            raise
        return [(item.live, Result(UNKNOWN, "could not read the object: %s" % err, "ApiError")) for item in items]
    return [_read(item, found.get(key_of(item.obj))) for item in items]


def _observed_status(seen, trouble):
    """(live or last state, Result) of an observed object from what its collection knows (cluster/watch.py Seen)."""
    if seen.live is not None:
        result = _status(seen.live)
        if trouble and result.status != CURRENT:  # what was last seen may have changed meanwhile
            return seen.live, Result(UNKNOWN, "could not read the object: %s; last seen: %s: %s" % (
                trouble, result.status, result.message), "ApiError")
        return seen.live, result
    if not seen.listed:
        return None, Result(UNKNOWN, "could not read the object: %s" % (trouble or "not read yet"), "ApiError")
    if seen.last is None:
        return None, Result(NOT_FOUND, "not found", ABSENT)
    return _gone(seen.last, seen.gone)


def _gone(last, how):
    """(last state, Result) of an object that existed and went away: a finished Job's or Pod's outcome stays;
    otherwise what was last seen, and whether its deletion was seen (DELETED) or only its absence (VANISHED)."""
    outcome = finished(last)
    if outcome is not None:
        return last, outcome._replace(message="%s (deleted since)" % outcome.message)
    before = compute(dict(last, metadata={k: v for k, v in metadata(last).items() if k != "deletionTimestamp"}))
    if how == DELETED:
        text = "deleted before it finished" if runs_to_end(last) else "deleted while it was waited for"
        reason = GONE_DELETED
    else:
        text, reason = "gone between two reads, so its last changes were not seen", GONE_UNSEEN
    return last, Result(NOT_FOUND, "%s; last seen: %s: %s" % (text, before.status, before.message), reason)


def _lost_outcome(item):
    """True for a Job or Pod that no longer exists and whose outcome was not seen: waiting cannot bring it."""
    return runs_to_end(item.obj) and item.result.status == NOT_FOUND and item.result.reason in _GONE


def _problems(item, list_pods, observer=None):
    """What the pods of ``item`` report now: the observed pods of a Job (with what the pods a failed Job lost last
    reported), else ``list_pods``'s."""
    if item.obj.get("kind") in _NO_PODS:
        return []
    observed = _job_problems(item, observer)
    if observed is not None:
        return observed
    if list_pods is None or item.result.reason in _GONE:
        return []
    try:
        return pod_problems(list_pods(item.live or item.obj))
    except ApiError as err:
        return ["pods could not be listed: %s" % err]


def _job_problems(item, observer):
    """The problems of a Job's pods as observed, None when they are not; a Job that failed after its pods were
    deleted (``activeDeadlineSeconds``) is explained by what those pods reported before."""
    if observer is None or item.obj.get("kind") != "Job" or not item.live:
        return None
    pods = observer.pods(item.live)
    if pods is None:
        return None
    problems = pod_problems(pods)
    if problems or item.result.status != FAILED:
        return problems
    return ["before their deletion: %s" % p for p in pod_problems(observer.pods(item.live, departed=True))]


def _describe(item, problems_of):
    text = "%s: %s: %s" % (item.ref, item.result.status, item.result.message)
    problems = problems_of(item)
    if problems:
        text = "%s [pods: %s]" % (text, "; ".join(problems))
    return text


def poll(check, timeout, interval=1.0, clock=time.monotonic, sleep=time.sleep, between=None):
    """The one waiting loop: call ``check()`` until it returns True (then True), or until ``timeout`` seconds
    have passed (then False). ``check`` runs at least once, and once more at the deadline; errors it raises
    propagate. ``between(now)`` runs after each unsuccessful round that is not the last, before the sleep.
    ``sleep(seconds)`` may return early: an observed wait's sleep returns as soon as something changed."""
    deadline = clock() + timeout
    while True:
        if check():
            return True
        now = clock()
        if now >= deadline:
            return False
        if between is not None:
            between(now)
        sleep(max(0.0, min(interval, deadline - now)))


def wait_for(objects, fetch, list_pods=None, timeout=300.0, interval=1.0, clock=time.monotonic,
             sleep=time.sleep, on_progress=None, select=needs_wait, fetch_many=None, watch=None):
    """Wait until every object that ``needs_wait`` is Current; returns one status entry per waited object.

    ``watch`` (cluster/live.py's LiveReader, or a cluster/watch.py Observer) makes the wait observe the objects
    (one LIST and one WATCH per kind and namespace, the pods of Jobs too) instead of polling them. Without it, or
    when the objects span more collections than an observer follows, each round reads the objects not yet
    Current: ``fetch_many(objs)``, when given, all at once (``{key_of(obj): live}``, absent: not found;
    LiveReader.read_many: one LIST per kind and namespace), else ``fetch(obj)`` (the live object or None) each.
    ``list_pods(obj)`` returns the pods of a workload (only used to explain failures). Raises WaitError:
    ``permanent=True`` at once for a failure that waiting cannot fix (a Job or Pod gone without an outcome seen
    is one), ``permanent=False`` at the deadline. ``on_progress(workloads)`` gets, at most every 10 seconds, a
    progress.Workload per waited object (status, message, seconds, pod problems, done). ``select(obj)`` picks the
    objects waited for (default :func:`needs_wait`; lifecycle stages also wait for Jobs and Pods, stages.py).
    """
    tracked = [_Tracked(obj) for obj in objects if select(obj)]
    observer = None
    if tracked and watch is not None:
        observer = watch if isinstance(watch, Observer) else Observer(watch, interval=interval)
    try:
        if observer is not None and observer.open([item.obj for item in tracked]):
            return _observe(tracked, observer, list_pods, timeout, clock, on_progress)
    finally:
        if observer is not None:
            observer.close()
    return _poll_all(tracked, fetch, fetch_many, list_pods, timeout, interval, clock, sleep, on_progress)


def _poll_all(tracked, fetch, fetch_many, list_pods, timeout, interval, clock, sleep, on_progress):
    """The rollout wait by polling: each round reads the objects not yet Current."""
    start = clock()

    def all_current():
        pending = [item for item in tracked if not item.done]
        polled = _poll_many(pending, fetch_many) if fetch_many is not None else None
        for i, item in enumerate(pending):
            item.live, item.result = polled[i] if polled is not None else _poll(item, fetch)
            _judge(item, clock() - start, tracked, lambda it: _problems(it, list_pods))
        return all(item.done for item in tracked)

    return _loop(tracked, all_current, lambda it: _problems(it, list_pods), timeout, interval, clock, sleep,
                 on_progress)


def _observe(tracked, observer, list_pods, timeout, clock, on_progress):
    """The rollout wait by observing: each round evaluates the objects whose observed state changed, the observer's
    threads follow only the collections of those still pending, and the sleep ends at the next change."""
    start = clock()
    followed = [None]

    def problems_of(item):
        return _problems(item, list_pods, observer)

    def all_current():
        changed, now = observer.changed(), clock()
        pending = [item for item in tracked if not item.done]
        for item in pending:
            if item.key in changed or followed[0] is None:
                item.live, item.result = _observed_status(observer.seen(item.key), observer.trouble(item.key))
                _judge(item, now - start, tracked, problems_of)
            else:
                item.seconds = now - start
        still = [item.key for item in pending if not item.done]
        if followed[0] != len(still):
            observer.follow(still)
            followed[0] = len(still)
        return not still

    return _loop(tracked, all_current, problems_of, timeout, PROGRESS_EVERY, clock, observer.wait, on_progress)


def _judge(item, seconds, tracked, problems_of):
    """Record ``item``'s round: done once Current; a failure that waiting cannot fix raises at once."""
    item.seconds = seconds
    if item.result.status == CURRENT:
        item.done = True
    elif _lost_outcome(item) or is_permanent_failure(item.live, item.result):
        raise _permanent(item, tracked, problems_of)


def _loop(tracked, all_current, problems_of, timeout, interval, clock, sleep, on_progress):
    last_progress = [clock()]

    def report(now):
        if on_progress is not None and now - last_progress[0] >= PROGRESS_EVERY:
            on_progress(progress.snapshot(tracked, problems_of))
            last_progress[0] = now

    if not poll(all_current, timeout, interval=interval, clock=clock, sleep=sleep, between=report):
        raise _timeout([item for item in tracked if not item.done], tracked, timeout, problems_of)
    return [item.entry() for item in tracked]


def _permanent(item, tracked, problems_of):
    if _lost_outcome(item):
        message = "%s: its outcome was not observed" % item.result.message
        hint = "waiting cannot bring it back: see its events (kubectl get events --field-selector " \
               "involvedObject.name=%s), then deploy again" % item.obj["metadata"]["name"]
    else:
        message = "rollout failed: %s" % item.result.message
        hint = "waiting longer cannot help: fix the cause above and deploy again, or roll back"
    problems = problems_of(item)
    if problems:
        message = "%s; pods: %s" % (message, "; ".join(problems))
    return WaitError(message, subject=item.ref, permanent=True, statuses=[entry.entry() for entry in tracked],
                     hint=hint)


def _timeout(pending, tracked, timeout, problems_of):
    message = "%d of %d workloads not ready after %gs: %s" % (
        len(pending), len(tracked), timeout, "; ".join(_describe(item, problems_of) for item in pending))
    return WaitError(message, permanent=False, statuses=[item.entry() for item in tracked],
                     hint="check the pods' events (kubectl describe pod), or raise wait_timeout if the rollout is slow")
