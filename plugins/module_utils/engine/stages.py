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

Delete policies acting once a stage is done (Helm deletes its hooks by policy at the end of each event, after all
its hooks ran, in reverse order; Nelm's ``werf.io/delete-policy`` likewise applies to any resource):
``succeeded`` deletes every object of the stage, of any kind, whose outcome was success, ``failed`` one whose
outcome was failure (a Job or Pod that failed, after its failure with its pods' reasons was put in the error; a
workload found Failed); CustomResourceDefinitions never (lifecycle.py). When a wait fails, the objects applied
until then are judged as well: those that succeeded are deleted by ``succeeded``, as Helm deletes the hooks that
ran before the one that failed. Every delete goes through delete.py with the object's own delete propagation and
is recorded in the change set; an object that a later stage applies again (``pre-install,post-install``) is created
again there, as Helm re-creates it per event. Jobs and Pods are deleted with the uid of the live copy judged (not
waited for until gone); other kinds as this deploy left them, and waited for until gone. The wait observes
(wait.py): a Job that a controller deletes right after it finished (``ttlSecondsAfterFinished``) counts with the
outcome seen, and its delete policy has nothing left to delete; one gone before its outcome was seen fails the
stage, saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import DELETED, SKIPPED, Change
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ConflictError, ManentError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.status import CURRENT, compute, condition, pod_problems
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.status import FAILED as FAILED_STATUS
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


def apply_policies(deleter, ran, changes, applied=None, failing=()):
    """The delete policies that act once a stage is done, as Helm applies those of its hooks at the end of an event:
    each object of ``ran`` ([(object, waited)] in apply order) whose outcome was success and that has ``succeeded``,
    or whose outcome was failure and that has ``failed``, is deleted, in reverse apply order (:func:`outcome`;
    ``failing``: the objects of the group whose wait failed). A Job or Pod is deleted with the uid of the live
    copy that was judged; any other object as this deploy left it (delete.Deleter.delete_applied, ``applied``: the
    apply answers, Applier.applied): one replaced or changed by someone else since is left, and said so. A Change
    per object deleted or left; returns the refs deleted."""
    failing = {id(obj) for obj in failing}
    deleted = []
    for obj, waited in reversed(ran):
        policies = lifecycle.delete_policies(obj) & lifecycle.AFTER_STAGE
        if not policies:
            continue
        result, live = outcome(deleter.reader, obj, waited, id(obj) in failing)
        policy = lifecycle.SUCCEEDED if result is True else lifecycle.FAILED if result is False else None
        if policy not in policies:
            continue
        if runs_to_end(obj):
            try:
                gone, why = deleter.delete(obj, wait=False, uid=(live.get("metadata") or {}).get("uid")), ""
            except ConflictError:
                gone, why = False, "another object of its name replaced the one judged"
        else:
            gone, why = deleter.delete_applied(obj, (applied or {}).get(key_of(obj)))
        if gone:
            deleted.append(ref(obj))
            changes.append(Change(ref(obj), DELETED, reason="delete-policy %s" % policy))
        elif why:
            changes.append(Change(ref(obj), SKIPPED, reason="delete-policy %s: not deleted: %s" % (policy, why)))
    return deleted


def outcome(reader, obj, waited, in_failed_group=False):
    """(True: it succeeded, False: it failed, None: unknown; the live copy read, or None) of an object its stage
    applied. A Job or Pod waited for is judged by its live copy (a Pod that is only Ready is neither). Another kind
    waited for succeeded with its group's wait; in the group whose wait failed it is judged by its live status
    (Current or Failed). A kind that needs no wait succeeded once applied (as Helm's hook watch, which returns at
    once for it); one not waited for that needs a wait (the main stage of a deploy without wait) is unknown."""
    if runs_to_end(obj):
        if not waited:
            return None, None
        live = reader.get(obj)
        return (True if succeeded(live) else False if failed(live) else None), live
    if not waited:
        return (None if needs_wait(obj) else True), None
    if not in_failed_group:
        return True, None
    live = reader.get(obj)
    found = compute(live).status if live else None
    return (True if found == CURRENT else False if found == FAILED_STATUS else None), live


def would_delete(stage, changes):
    """Check mode: a Change per object of ``stage`` that its ``succeeded`` delete policy deletes once the stage has
    succeeded (nothing is deleted, and Jobs and Pods are counted as if they succeed)."""
    for obj in reversed(stage.objects):
        if lifecycle.SUCCEEDED in lifecycle.delete_policies(obj):
            changes.append(Change(ref(obj), DELETED, reason="delete-policy succeeded: once the %s stage succeeded "
                                                            "(check mode: not deleted)" % stage.name))


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


def run(stage, apply_group, wait_group, deleter, changes, wait=True, applied=None):
    """Run ``stage``: per weight group, ``apply_group(objects)`` then, when ``wait`` (always in the pre and post
    stages), ``wait_group(objects)`` for those :func:`waited_in` it. Once every group is done, or a wait failed, the
    delete policies act on what the stage applied (:func:`apply_policies`; ``applied``: Applier.applied). Returns
    the wait entries. A failure names the stage; the delete policies act before it is raised."""
    waits = wait or stage.when != MAIN
    entries, ran = [], []
    for _weight, objs in stage.groups:
        apply_group(objs)
        targets = [o for o in objs if waits and waited_in(o, stage.when)]
        waited = {id(o) for o in targets}
        ran.extend((o, id(o) in waited) for o in objs)
        if not targets:
            continue
        try:
            entries.extend(wait_group(targets))
        except WaitError as exc:
            _stopped(stage, exc)
            try:
                apply_policies(deleter, ran, changes, applied, failing=targets)
            except ManentError as delete_exc:
                exc.message = "%s; a delete policy could not delete: %s" % (exc.message, delete_exc)
            raise
    apply_policies(deleter, ran, changes, applied)
    return entries


def _stopped(stage, exc):
    """Say in ``exc`` which stage stopped the deploy."""
    if stage.when == PRE:
        exc.message = "%s stage failed, the main objects were not applied: %s" % (stage.name, exc.message)
    elif stage.when == POST:
        exc.message = "%s stage failed after the main rollout: %s" % (stage.name, exc.message)
