# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one polling loop (:func:`poll`), and the rollout wait built on it (:func:`wait_for`).

:func:`poll` calls a check until it says done or the deadline passes; the rollout wait, the wait for CRDs
to be Established (crds.py) and the wait until a deleted object is gone (delete.py) all use it.

The rollout wait polls all workloads together, each round fetching only those not yet Current. A permanent
failure (a Deployment past its progress deadline, a failed Job) stops the wait at once; at the
deadline every workload still not ready is listed with its last status and what its pods report.
The clock, the sleep and the API calls are injected, so the loop is tested without a cluster or time.
"""

from __future__ import annotations

import time

from ansible_collections.manent.kubernetes.plugins.module_utils.engine import progress
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, NotFoundError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import annotations as annotations_of
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import group_of, key_of, namespace_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.status import (
    CURRENT, NOT_FOUND, UNKNOWN, Result, compute, is_permanent_failure, pod_problems)

WAIT_ANNOTATION = "manent.io/wait"
PROGRESS_EVERY = 10.0

# (group, kind) always waited for, and those waited for only with the annotation set to "true"
_ALWAYS = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"),
           ("extensions", "Deployment"), ("extensions", "DaemonSet")}
_ON_REQUEST = {("apiextensions.k8s.io", "CustomResourceDefinition"), ("batch", "Job")}
_NO_PODS = {"CustomResourceDefinition"}


def pods_of(kube, obj):
    """The pods selected by a workload's ``spec.selector.matchLabels`` ([] without one), to explain failures."""
    labels = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if not labels:
        return []
    query = {"labelSelector": ",".join("%s=%s" % item for item in sorted(labels.items()))}
    return kube.get_json("/api/v1/namespaces/%s/pods" % namespace_of(obj), query=query).get("items", [])


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

    def entry(self):
        return {"ref": self.ref, "status": self.result.status, "message": self.result.message,
                "seconds": round(self.seconds, 1)}


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
    if live is None:
        return None, Result(NOT_FOUND, "not found (applied but not visible yet)", "NotFound")
    return live, compute(live)


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
    out = []
    for item in items:
        live = found.get(key_of(item.obj))
        if live is None:
            out.append((None, Result(NOT_FOUND, "not found (applied but not visible yet)", "NotFound")))
        else:
            out.append((live, compute(live)))
    return out


def _problems(item, list_pods):
    if list_pods is None or item.obj.get("kind") in _NO_PODS:
        return []
    try:
        return pod_problems(list_pods(item.live or item.obj))
    except ApiError as err:
        return ["pods could not be listed: %s" % err]


def _describe(item, list_pods):
    text = "%s: %s: %s" % (item.ref, item.result.status, item.result.message)
    problems = _problems(item, list_pods)
    if problems:
        text = "%s [pods: %s]" % (text, "; ".join(problems))
    return text


def poll(check, timeout, interval=1.0, clock=time.monotonic, sleep=time.sleep, between=None):
    """The one polling loop: call ``check()`` until it returns True (then True), or until ``timeout`` seconds
    have passed (then False). ``check`` runs at least once, and once more at the deadline; errors it raises
    propagate. ``between(now)`` runs after each unsuccessful round that is not the last, before the sleep."""
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
             sleep=time.sleep, on_progress=None, select=needs_wait, fetch_many=None):
    """Wait until every object that ``needs_wait`` is Current; returns one status entry per waited object.

    ``fetch(obj)`` returns the live object or None; ``list_pods(obj)`` returns the pods of a workload
    (only used to explain failures). Raises WaitError: ``permanent=True`` at once for a failure that
    waiting cannot fix, ``permanent=False`` at the deadline. ``on_progress(workloads)`` gets, at most every
    10 seconds, a progress.Workload per waited object (status, message, seconds, pod problems, done).
    ``select(obj)`` picks the objects waited for (default :func:`needs_wait`; lifecycle stages also wait for
    Jobs and Pods, stages.py). ``fetch_many(objs)``, when given, reads all objects not yet Current at once each
    round (``{key_of(obj): live}``, absent: not found; LiveReader.read_many: one LIST per kind and namespace)
    instead of one ``fetch`` each.
    """
    tracked = [_Tracked(obj) for obj in objects if select(obj)]
    start = clock()
    last_progress = [start]

    def all_current():
        pending = [item for item in tracked if not item.done]
        polled = _poll_many(pending, fetch_many) if fetch_many is not None else None
        for i, item in enumerate(pending):
            item.live, item.result = polled[i] if polled is not None else _poll(item, fetch)
            item.seconds = clock() - start
            if item.result.status == CURRENT:
                item.done = True
            elif is_permanent_failure(item.live, item.result):
                raise _permanent(item, tracked, list_pods)
        return all(item.done for item in tracked)

    def report(now):
        if on_progress is not None and now - last_progress[0] >= PROGRESS_EVERY:
            on_progress(progress.snapshot(tracked, lambda item: _problems(item, list_pods)))
            last_progress[0] = now

    if not poll(all_current, timeout, interval=interval, clock=clock, sleep=sleep, between=report):
        raise _timeout([item for item in tracked if not item.done], tracked, timeout, list_pods)
    return [item.entry() for item in tracked]


def _permanent(item, tracked, list_pods):
    message = "rollout failed: %s" % item.result.message
    problems = _problems(item, list_pods)
    if problems:
        message = "%s; pods: %s" % (message, "; ".join(problems))
    return WaitError(message, subject=item.ref, permanent=True, statuses=[entry.entry() for entry in tracked],
                     hint="waiting longer cannot help: fix the cause above and deploy again, or roll back")


def _timeout(pending, tracked, timeout, list_pods):
    message = "%d of %d workloads not ready after %gs: %s" % (
        len(pending), len(tracked), timeout, "; ".join(_describe(item, list_pods) for item in pending))
    return WaitError(message, permanent=False, statuses=[item.entry() for item in tracked],
                     hint="check the pods' events (kubectl describe pod), or raise wait_timeout if the rollout is slow")
