# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The writes of one deploy, in order: Namespaces, a dry run of everything that will be written, the release saved
in history under the lock, the stages (pre, main with the rollout wait, post), prune, the release marked in service
and history trimmed (:class:`Writer`). A failure after the record was saved marks it failed; the lock is released
whatever happens."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError, Interrupted, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import MANAGED_BY, MANAGER
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import stages
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import CREATED, change_warnings
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.plan import ROLLBACK, INSTALL, crd_kinds
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import pods_of, wait_for
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.ordering import TIER_NAMESPACES, tier_of


class Writer:
    """Writes planned deploys with the connection, reader, applier, deleter and options of a DeployContext
    (context.py)."""

    def __init__(self, context):
        self.context = context

    def write(self, plan):
        result, timings = plan.result, {"apply": 0.0, "wait": 0.0}
        try:
            timed(timings, "apply", self._open_release, plan)
            self._run_stages(plan, timings)
            t = time.monotonic()
            if self.context.options.prune:
                result.pruned = self.context.prune(plan.previous_objects, plan.bundle.objects, plan.bundle.release.key,
                                                   result)
            timings["prune"] = time.monotonic() - t
            self._finish_history(plan)
            result.status = "deployed" if plan.phase != ROLLBACK else "rolled-back"
        except (ManentError, Interrupted) as exc:  # stopped (SIGTERM): the record failed, the lock released too
            self._failed(plan, exc)
            raise
        finally:
            self._close(plan, timings)
        return result

    def _open_release(self, plan):
        """Namespaces (of every stage), then the record saved in history (under the lock)."""
        bundle, store, changes = plan.bundle, plan.store, plan.result.changes
        ns_objects = [o for o in plan.selected if tier_of(o) == TIER_NAMESPACES]
        if plan.create_ns:
            ns_objects.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": bundle.namespace, "labels": {MANAGED_BY: MANAGER}}})
        self.context.applier.apply_tier(ns_objects, changes)
        if plan.create_ns and any(c.subject == "Namespace/%s" % bundle.namespace and c.action == CREATED
                                  for c in changes):
            plan.result.namespace_created = bundle.namespace
        # every object that will be written, dry-run at once: a refusal stops the deploy before history or any
        # other object is written (a half-applied upgrade is what a failed deploy must not leave)
        others = [o for o in plan.selected if tier_of(o) != TIER_NAMESPACES]
        served = self.context.discovery.served
        unverifiable = crd_kinds(plan.selected) | {(o.get("apiVersion"), o.get("kind")) for o in others
                                                   if not served(o.get("apiVersion"), o.get("kind"))}
        self.context.applier.verify(others, unverifiable=unverifiable)
        if not plan.noop:
            locked = store.acquire(break_lock=self.context.options.break_lock)
            plan.locked = True
            check_unchanged_since_plan(plan, locked)
            # The records to move to the current format are listed while this one is written (one round trip);
            # the record counts as saved as soon as save_record returns. A redeploy of the version in service only
            # notes the objects it adds: its record changes once the rollout succeeded.
            with ThreadPoolExecutor(max_workers=1) as pool:
                pending = pool.submit(store.migration_pending)
                if plan.redeploy:
                    if store.note_strays(bundle.release, bundle.objects):
                        plan.strays_noted = True
                        plan.result.history["written"] = True
                else:
                    plan.saving = True
                    store.save_record(bundle.release, bundle.objects, plan.meta)
                    plan.saved = True
                    plan.result.history["written"] = True
                store.migrate(pending.result(), skip={plan.result.record})

    def _run_stages(self, plan, timings):
        """The stages in order (stages.py); the main rollout is waited for when a post stage follows it."""
        result = plan.result
        post = any(stage.when == stages.POST for stage in plan.stages)
        for stage in plan.stages:
            wait = self.context.options.wait or (stage.when == stages.MAIN and post)
            result.stages.append(stage.summary("running"))
            try:
                result.waited.extend(stages.run(
                    stage,
                    lambda objs: timed(timings, "apply", self.context.applier.apply_group, objs, result.changes),
                    lambda objs, when=stage.when: timed(timings, "wait", self._wait, objs, when),
                    self.context.deleter, result.changes, wait=wait, applied=self.context.applier.applied))
            except ManentError:
                result.stages[-1]["status"] = "failed"
                raise
            result.stages[-1]["status"] = "done"

    def _wait(self, objects, when=stages.MAIN):
        """Wait for the objects of a stage group that stages.waited_in selects; the pods of running Jobs are
        remembered, so that a failed Job is explained even when its pods are gone."""
        self.context.applier.known.forget_snapshot()  # the objects applied after this wait are read again
        # each round reads all objects together: one LIST per kind and namespace (LiveReader.read_many)
        reader, kube, options = self.context.reader, self.context.kube, self.context.options
        witness = stages.PodWitness(reader.get, lambda obj: pods_of(kube, obj), reader.read_many)
        return wait_for(objects, witness.fetch, list_pods=witness.list_pods, timeout=options.wait_timeout,
                        on_progress=options.on_progress, select=lambda obj: stages.waited_in(obj, when),
                        fetch_many=witness.fetch_many, watch=reader)

    def _finish_history(self, plan):
        """The release in service (or, for traffic, the candidate: in service only after manent_traffic
        promote), history trimmed, Helm's release Secrets deleted on a migrating install."""
        if plan.noop:
            return
        store, bundle, history = plan.store, plan.bundle, plan.result.history
        if bundle.slot:
            store.set_candidate(bundle.release, bundle.slot)
            history["candidate"] = bundle.slot
        else:
            if plan.redeploy:  # its rollout succeeded: the record in service now holds this deploy
                store.save_record(bundle.release, bundle.objects, plan.meta)
                history["written"] = True
            store.promote(bundle.release, plan.replaced)
        history["deleted"] = store.cleanup(self.context.options.keep_releases)
        if self.context.options.helm_migrate_release and plan.phase == INSTALL:
            history["helm_secrets_deleted"] = store.delete_helm_release_secrets(
                self.context.options.helm_migrate_release)

    def _failed(self, plan, exc):
        result = plan.result
        if plan.redeploy and plan.locked:
            result.warnings.append(
                "version %s stays in service as deploy %s: its record was not replaced by this failed redeploy "
                "(deploy %s)%s" % (plan.bundle.release.version, (plan.located or {}).get("deployment") or "-",
                                   plan.bundle.release.deployment or "-",
                                   "; the objects it added are listed there, for the next deploy to prune"
                                   if plan.strays_noted else ""))
        deployment = plan.bundle.release.deployment
        if plan.saved or (plan.saving and deployment):
            # stopped while saving (plan.saving): the record, if written, is this deploy's (its deploy id)
            version = plan.bundle.release.version
            unsure = {} if plan.saved else {"missing_ok": True, "of_deployment": deployment}
            try:
                plan.store.mark(version, "failed", **unsure)
            except Exception as mark_exc:  # pylint: disable=broad-except  # keep the original error; say why
                result.warnings.append("could not mark release %s failed, its record still says pending: %s"
                                       % (version, _said(mark_exc)))
        result.status = "failed"
        exc.partial = result

    def _close(self, plan, timings):
        result = plan.result
        if plan.locked:
            try:
                plan.store.release_lock()
            except Exception as exc:  # pylint: disable=broad-except  # keep the deploy's own outcome or error
                result.warnings.append("could not release the history lock (it expires by itself; or deploy with "
                                       "break_lock: true once no other deploy runs): %s" % _said(exc))
        timings["total"] = time.monotonic() - plan.started
        result.timings = timings
        result.warnings.extend(change_warnings(result.changes))
        result.warnings.extend(plan.store.notes)


def _said(exc):
    """What a warning says of ``exc``: a ManentError's own text (subject and hint included); for any other
    exception its type and first line, so that an unexpected error of the clean-up after a failure or a stop
    neither replaces the deploy's own error nor passes unexplained."""
    if isinstance(exc, ManentError):
        return str(exc)
    first = str(exc).strip().splitlines()[:1]
    return "%s%s" % (type(exc).__name__, (": " + first[0][:300]) if first else "")


def timed(timings, name, work, *args):
    """``work(*args)``, its seconds added to ``timings[name]``."""
    started = time.monotonic()
    try:
        return work(*args)
    finally:
        timings[name] = timings.get(name, 0.0) + time.monotonic() - started


# What a deploy decides from the locator (what it replaces and may prune, its slot rules); the lock fields and
# timestamps are not among them.
PLANNED_FIELDS = ("version", "deployment", "slot", "candidate", "candidateDeployment", "candidateSlot", "weight")


def check_unchanged_since_plan(plan, locked):
    """The locator was read before the lock (with the other reads, in one round trip); once the lock is held,
    another deploy may have put a release in service meanwhile. What this deploy replaces and may prune was
    decided from the earlier read, so it stops (HistoryError, before the record or any object but the Namespaces
    is written) rather than record the wrong predecessor or leave the other release's objects unpruned."""
    def fields(data):
        return {name: str((data or {}).get(name) or "") for name in PLANNED_FIELDS}

    before, now = fields(plan.located), fields(locked)
    if before != now:
        changed = ", ".join("%s %s -> %s" % (name, before[name] or "-", now[name] or "-")
                            for name in PLANNED_FIELDS if before[name] != now[name])
        raise HistoryError("another deploy changed the release in service while this one prepared (%s)" % changed,
                           subject="release %s" % plan.bundle.release.version,
                           hint="run it again: it plans from the release now in service; nothing but the "
                                "Namespaces was written")
