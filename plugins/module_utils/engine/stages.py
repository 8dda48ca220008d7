# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lifecycle stages of one deploy: the one home of stage and weight ordering, and of the delete policies
that act after a wait (``succeeded``, ``failed``).

A phase (install, upgrade, rollback) runs up to three stages, each only when it has objects:

- ``pre-<phase>``: objects annotated ``deploy-on: pre-<phase>`` (or Helm hooks ``pre-<phase>`` with
  ``helm_hooks: apply``). Applied and waited for before the main objects are touched: Jobs until they
  complete, Pods until they succeed (or are Ready), Deployments, StatefulSets and DaemonSets until Current.
  A failure stops the deploy here.
- ``<phase>``: the main objects, tier by tier (ordering.py); workloads waited for when the deploy waits.
- ``post-<phase>``: applied once the main rollout is Current (the main objects are then waited for even
  with ``wait: false``), waited for as the pre stage.

Inside a stage objects are applied in groups of equal weight (``werf.io/weight``, ``manent.io/weight``, or
``helm.sh/hook-weight``; default 0), lowest first; each group is applied tier by tier, and waited for before
the next group starts. An object listed for two stages (``pre-upgrade,post-upgrade``) is applied in both.

Delete policies acting after a wait: ``succeeded`` deletes a Job or Pod that completed, ``failed`` one
that failed, after its failure (with its pods' reasons) was put in the error; both through delete.py with
the object's own delete propagation, each recorded in the change set. The wait observes (wait.py): a Job that a
controller deletes right after it finished (``ttlSecondsAfterFinished``) counts with the outcome seen, and its
delete policy has nothing left to delete; one gone before its outcome was seen fails the stage, saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import DELETED, Change
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ManentError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.status import condition, pod_problems
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import needs_wait, runs_to_end

PRE, MAIN, POST = lifecycle.PRE, lifecycle.MAIN, lifecycle.POST


@dataclass
class Stage:
    """One stage of a phase: ``name`` (e.g. ``pre-upgrade``), ``when`` (PRE, MAIN or POST) and its objects in
    ``groups``, [(weight, [objects])] in ascending weight."""

    name: str
    when: str
    groups: list = field(default_factory=list)

    @property
    def objects(self):
        return [obj for _weight, objs in self.groups for obj in objs]

    def summary(self, status):
        return {"stage": self.name, "objects": len(self.objects), "status": status}


def stage_name(phase, when):
    return phase if when == MAIN else "%s-%s" % (when, phase)


def plan(objects, phase):
    """The stages of ``phase`` for ``objects`` (those applied in it), in order, only those with objects.
    The main stage is always there (it may be empty): history, waits and prune hang on it."""
    members = {PRE: [], MAIN: [], POST: []}
    for obj in objects:
        for when in lifecycle.stages_in(obj, phase):
            members[when].append(obj)
    return [Stage(stage_name(phase, when), when, weight_groups(members[when]))
            for when in (PRE, MAIN, POST) if members[when] or when == MAIN]


def weight_groups(objects):
    """[(weight, [objects])]: objects of equal weight together, ascending, each group in the given order."""
    grouped = {}
    for obj in objects:
        grouped.setdefault(lifecycle.weight(obj), []).append(obj)
    return sorted(grouped.items(), key=lambda item: item[0])


def waited_in(obj, when):
    """True when a stage waits for obj: workloads always (as the rollout wait), Jobs and Pods in the pre and
    post stages, and in the main stage too when a ``succeeded`` or ``failed`` delete policy must act on them."""
    if needs_wait(obj):
        return True
    if not runs_to_end(obj):
        return False
    return when != MAIN or bool(lifecycle.delete_policies(obj) & {lifecycle.SUCCEEDED, lifecycle.FAILED})


def succeeded(live):
    """True when a live Job completed or a live Pod succeeded."""
    if not live:
        return False
    if live.get("kind") == "Pod":
        return (live.get("status") or {}).get("phase") == "Succeeded"
    return (condition(live, "Complete") or {}).get("status") == "True"


def failed(live):
    """True when a live Job failed (or is about to: FailureTarget) or a live Pod failed."""
    if not live:
        return False
    if live.get("kind") == "Pod":
        return (live.get("status") or {}).get("phase") == "Failed"
    return any((condition(live, kind) or {}).get("status") == "True" for kind in ("Failed", "FailureTarget"))


def apply_policies(deleter, objects, policy, done, changes):
    """Delete each Job/Pod of ``objects`` that has delete ``policy`` and whose live object ``done(live)``
    says so (through delete.py, its own propagation); a Change per deleted object. Returns their refs."""
    deleted = []
    for obj in objects:
        if not runs_to_end(obj) or policy not in lifecycle.delete_policies(obj):
            continue
        live = deleter.reader.get(obj)
        if not done(live):
            continue
        if deleter.delete(obj, wait=False, uid=(live.get("metadata") or {}).get("uid")):
            deleted.append(ref(obj))
            changes.append(Change(ref(obj), DELETED, reason="delete-policy %s" % policy))
    return deleted


class PodWitness:
    """Remembers what the pods of running Jobs reported, so that a Job that fails after its pods are gone
    (``activeDeadlineSeconds``: the Job controller deletes them) is still explained by their last reasons; any
    other Job is explained by its pods as they are now.

    ``fetch``, ``fetch_many`` and ``list_pods`` wrap a polled rollout wait's own (wait.wait_for without a watch,
    which observes the pods of Jobs itself): while a Job runs, its pods are listed once per round."""

    def __init__(self, fetch, list_pods, fetch_many=None):
        self._fetch = fetch
        self._fetch_many = fetch_many
        self._list_pods = list_pods
        self._seen = {}

    def fetch(self, obj):
        return self._watch(self._fetch(obj))

    def fetch_many(self, objects):
        found = self._fetch_many(objects)
        for live in found.values():
            self._watch(live)
        return found

    def _watch(self, live):
        if live and live.get("kind") == "Job" and runs_to_end(live) and not succeeded(live) and not failed(live):
            self.list_pods(live)
        return live

    def list_pods(self, obj):
        pods = self._list_pods(obj)
        if pod_problems(pods):
            self._seen[ref(obj)] = pods
            return pods
        return self._seen.get(ref(obj), pods) if failed(obj) else pods


def run(stage, apply_group, wait_group, deleter, changes, wait=True):
    """Run ``stage``: per weight group, ``apply_group(objects)`` then, when ``wait`` (always in the pre and post
    stages), ``wait_group(objects)`` for those :func:`waited_in` it, then the delete policies. Returns the wait
    entries. A failure names the stage; ``failed`` delete policies act before it is raised."""
    entries = []
    for _weight, objs in stage.groups:
        apply_group(objs)
        targets = [o for o in objs if waited_in(o, stage.when)]
        if not targets or not (wait or stage.when != MAIN):
            continue
        try:
            entries.extend(wait_group(targets))
        except WaitError as exc:
            _stopped(stage, exc)
            try:
                apply_policies(deleter, targets, lifecycle.FAILED, failed, changes)
            except ManentError as delete_exc:
                exc.message = "%s; delete-policy failed could not delete: %s" % (exc.message, delete_exc)
            raise
        apply_policies(deleter, targets, lifecycle.SUCCEEDED, succeeded, changes)
    return entries


def _stopped(stage, exc):
    """Say in ``exc`` which stage stopped the deploy."""
    if stage.when == PRE:
        exc.message = "%s stage failed, the main objects were not applied: %s" % (stage.name, exc.message)
    elif stage.when == POST:
        exc.message = "%s stage failed after the main rollout: %s" % (stage.name, exc.message)
