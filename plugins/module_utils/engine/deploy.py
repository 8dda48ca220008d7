# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One deploy of one bundle to one cluster (docs/requirements.md §7 steps 3-6, §10); :class:`Deployer` is the public entry,
for rollback (rollback.py) and prune (prune.py) too.

Order: validate (credentials, version, record size, objects of another release: see owners.py) ->
Namespaces -> a dry run of every object that will be written (Applier.verify: a refusal stops the deploy
here) -> save the release in history (pending, under a lock) -> the pre stage (objects with
``deploy-on: pre-<phase>``, applied and waited for; stages.py) -> remaining tiers of the main objects (CRDs
Established before their resources) -> wait for all workloads at once -> the post stage -> prune -> mark the
release in service, clean up history. Inside a stage objects go in groups of ascending weight. A failure
after the record was saved marks it failed; the in-service pointer only moves after a successful rollout. A
rerun of the release in service (same version and deploy id) writes no history at all, unless objects rendered
differently from their stored copies (then the record is rewritten). The version in service deployed again
(another deploy id, or such a rendering) keeps its record, objects and status until its rollout succeeded:
before the first write the record lists the objects the redeploy adds (prunable if it fails), and only a
success replaces it. It also keeps the version it replaced: a rollback returns to that one, never to itself. A
traffic release (``bundle.slot``) becomes the candidate, not the release in service, and prunes nothing of the
other slot.

In check mode (dry_run) every object is applied with dryRun=All and nothing, history included,
is written; objects in Namespaces that the bundle itself would create are counted as skipped.

Every error raised once the deploy has a result carries it as ``partial`` (a :class:`DeployResult`, status
failed), so modules report what was done before the failure.
"""

from __future__ import annotations

import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import access
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import crds, owners, prune, rollback, stages, unchanged
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.apply import Applier, ApplyOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.carry import carry_release_annotations
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import (
    CHANGING, CONFIGURED, CREATED, RECREATED, SKIPPED, UNCHANGED, Change, change_warnings, counts)
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.delete import DeleteOptions, Deleter
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ApiError, HistoryError, InputError, Interrupted, ManentError, NotFoundError, listing)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.codec import is_secret, record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import MANAGED_BY, MANAGER
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import together
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import LiveReader
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import is_crd, namespace_of, ref, served_kinds
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.ordering import (
    TIER_CRDS, TIER_NAMESPACES, tier_of, tiers)
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import pods_of, wait_for

INSTALL, UPGRADE, ROLLBACK = lifecycle.INSTALL, lifecycle.UPGRADE, lifecycle.ROLLBACK
APPLIED = (CREATED, CONFIGURED, UNCHANGED, RECREATED)
__all__ = ("Deployer", "DeployOptions", "DeployResult", "carry_release_annotations", "change_warnings",
           "default_holder")


@dataclass
class DeployOptions:
    apply: ApplyOptions = field(default_factory=ApplyOptions)
    wait: bool = True
    wait_timeout: float = 300.0
    prune: bool = False
    keep_releases: int = 5
    break_lock: bool = False
    holder: str = ""
    helm_migrate_release: str = ""
    create_namespace: bool = False
    adopt: bool = False
    on_progress: object = None


@dataclass
class DeployResult:
    """What a deploy did. ``release`` is the version deployed, ``record`` its history record's name; ``to_dict``
    is manent_apply's result (docs/requirements.md §11: ``details.release`` is the record's name, ``details.version`` the
    version)."""

    status: str
    namespace: str
    release: str
    previous: str
    changes: list = field(default_factory=list)
    pruned: list = field(default_factory=list)
    objects_skipped: int = 0
    skipped: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    waited: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    history: dict = field(default_factory=dict)
    adopted: list = field(default_factory=list)
    phase: str = UPGRADE
    slot: str = ""
    record: str = ""
    host: str = ""
    hooks_skipped: list = field(default_factory=list)
    stages: list = field(default_factory=list)

    @property
    def changed(self):
        return any(c.action in CHANGING for c in self.changes) or bool(self.pruned) or bool(
            self.history.get("written"))

    @property
    def objects(self):
        """Objects of the release applied (or dry-run), each once: not those pruned, skipped or only deleted."""
        return len({c.subject for c in self.changes if c.action in APPLIED})

    def to_dict(self):
        return {
            "host": self.host,
            "status": self.status,
            "changed": self.changed,
            "details": {
                "namespace": self.namespace, "objects": self.objects, "release": self.record,
                "version": self.release, "previous": self.previous, "pruned": self.pruned,
                "helm_hooks_skipped": self.hooks_skipped, "objects_skipped": self.objects_skipped,
                "phase": self.phase, "slot": self.slot,
            },
            "stages": self.stages,
            "changes": [c.to_dict() for c in self.changes],
            "counts": counts(self.changes),
            "warnings": self.warnings,
            "waited": self.waited,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "history": self.history,
            "adopted": self.adopted,
        }


@dataclass
class _Plan:
    """One deploy, decided before any write: the bundle, its history, the objects of this phase, what it may
    prune, whether it is a rerun of the deployed release (``noop``), and how far the writes got."""

    bundle: object
    store: object
    phase: str
    result: DeployResult
    selected: list
    stages: list
    previous_objects: list
    noop: bool
    replaced: str
    create_ns: bool
    started: float
    locked: bool = False
    saved: bool = False
    slot_rerun: bool = False  # the traffic release in service deployed again (same deploy id) to its own slot
    # the version in service deployed again (other deploy id, or a changed rendering): its record keeps what is in
    # service until the redeploy succeeded (note_strays before the first write, the record at the end)
    redeploy: bool = False
    strays_noted: bool = False  # the redeploy listed objects it adds in the record in service
    located: dict = None  # the locator as planned from (compared again once the lock is held)

    @property
    def meta(self):
        return {"artifactSha256": self.bundle.artifact.get("sha256", ""), "replaced": self.replaced,
                "slot": self.bundle.slot}


def default_holder():
    return "%s@%s:%d" % (os.environ.get("USER", "manent"), socket.gethostname(), os.getpid())


class Deployer:
    def __init__(self, kube, discovery, options=None):
        self.kube = kube
        self.discovery = discovery
        self.options = options or DeployOptions()
        apply_options = self.options.apply
        self.reader = LiveReader(kube, discovery, apply_options.concurrency)
        self.deleter = Deleter(kube, discovery, self.reader, DeleteOptions(
            dry_run=apply_options.dry_run, timeout=apply_options.delete_timeout))
        self.applier = Applier(kube, discovery, apply_options, reader=self.reader, deleter=self.deleter)

    @property
    def dry_run(self):
        return self.options.apply.dry_run

    def store(self, namespace, key):
        return HistoryStore(self.kube, namespace, key, holder=self.options.holder or default_holder())

    # ------------------------------------------------------------------ deploy

    def deploy(self, bundle, phase=None, previous_objects=None, replaced=None, anchor=True):
        """Deploy ``bundle``. ``previous_objects`` overrides what it may prune (default: from history),
        ``replaced`` the release recorded as replaced (default: the one in service); without ``anchor`` its record
        is written without anchoring it (history_anchor.py: a rollback of a record the anchor did not vouch for)."""
        plan = self._plan(bundle, phase, previous_objects, replaced)
        plan.store.anchor_records(anchor)
        if plan.slot_rerun:
            return _slot_rerun(plan, self.dry_run)
        try:
            # before any write, in check mode too. All three only read (LISTs, access reviews), so they are sent
            # together; an object of another release is reported before a missing permission. The third learns
            # which objects do not exist yet, for every tier at once (Applier.list_absent).
            candidates = self.applier.candidates(plan.selected)  # objects that may be unchanged, decided once
            together(lambda: self._check_owners(plan, candidates), lambda: self._check_access(plan),
                     lambda: self._list_absent(plan, candidates))
            if not self.dry_run and not plan.noop:
                plan.store.prepare_record(bundle.release, bundle.objects, plan.meta)  # size check before writing
            if self.dry_run:
                return self._dry_run(plan)
            return self._write(plan)
        finally:
            self.applier.forget_snapshot()
            self.applier.forget_absent()

    def _plan(self, bundle, phase, previous_objects, replaced):
        started = time.monotonic()
        store = self.store(bundle.namespace, bundle.release.key)
        # Three independent reads sent together (one round trip, not three, over a distant link). Their errors
        # come in this order: the version's first (credentials and reachability), then the namespace's, then
        # history's. The locator is one read: the release in service and the traffic candidate.
        _version, create_ns, located = together(self.kube.version, lambda: self._release_namespace(bundle, store),
                                                store.locator)
        located = located or {}
        current = store.in_service(located)
        same = _same_release(current, located, bundle) and phase != ROLLBACK
        if not same:
            _check_traffic_release(bundle, current, located)
        phase = phase or (INSTALL if current is None else UPGRADE)
        result = DeployResult(status="pending", namespace=bundle.namespace, release=bundle.release.version,
                              previous=(current or {}).get("version", ""), phase=phase,
                              warnings=list(bundle.warnings) + _hook_warnings(bundle), slot=bundle.slot,
                              record=record_name(bundle.release.key, bundle.release.version),
                              hooks_skipped=list(bundle.hooks_skipped), host=getattr(self.kube, "url", ""))
        if previous_objects is None:
            previous_objects = prune.candidates(store, current, secrets=any(is_secret(o) for o in bundle.objects),
                                                candidate=located.get("candidate"))
        if bundle.slot:  # a candidate's deploy never prunes the stable slot's (or an un-slotted release's) workloads
            previous_objects = slots.prunable_by(previous_objects, bundle.slot)
        carry_release_annotations(bundle.objects, previous_objects)
        self.applier.use_baseline(previous_objects)  # objects equal to these may need no apply (unchanged.py)
        # A rerun of the release in service writes no history, unless it rendered objects differently from their
        # stored copies: those are applied again, and the record must hold what is live, or a rollback to this
        # version would restore the first rendering.
        slot_rerun = same and _in_its_slot(current, bundle)
        regenerated = unchanged.rendered_differently(bundle.objects, previous_objects) \
            if same and not slot_rerun else None
        if regenerated:
            result.warnings.append(_unstable_render_warning(regenerated))
        if replaced is None:
            replaced = _replaced(current, located, bundle)
        selected = _select(bundle.objects, phase, result)
        return _Plan(bundle=bundle, store=store, phase=phase, result=result, selected=selected,
                     stages=stages.plan(selected, phase), previous_objects=previous_objects,
                     noop=slot_rerun or regenerated == [], replaced=replaced, create_ns=create_ns, started=started,
                     slot_rerun=slot_rerun, located=located,
                     redeploy=_version_in_service(current, bundle) and not bundle.slot)

    def _release_namespace(self, bundle, store):
        """True when the release namespace must be created (create_namespace); a missing namespace that
        neither the bundle nor the options create is an error before any write. The Namespace read goes to
        ``store`` (whether the release key has anchors: history_anchor.py)."""
        if any(o.get("kind") == "Namespace" and o.get("apiVersion") == "v1" and
               (o.get("metadata") or {}).get("name") == bundle.namespace for o in bundle.objects):
            return False
        try:
            store.know_namespace(self.kube.get_json("/api/v1/namespaces/%s" % bundle.namespace,
                                                    subject="Namespace/%s" % bundle.namespace))
            return False
        except ApiError as exc:
            if exc.status != 404:  # e.g. 403 for a namespace-scoped Role: it cannot tell, so it goes on
                return False
            if self.options.create_namespace:
                return True
            raise InputError("the release namespace %s does not exist" % bundle.namespace,
                             subject="Namespace/%s" % bundle.namespace,
                             hint="add a Namespace object to the artifact, create the namespace, or set "
                                  "create_namespace: true; nothing was written")

    def _check_access(self, plan):
        """Every object of this phase may be written by these credentials (access.py), before the first write."""
        try:
            access.check(self.kube, self.discovery, plan.selected)
        except ManentError as exc:
            plan.result.status = "failed"
            exc.partial = plan.result
            raise

    def _check_owners(self, plan, candidates):
        """No object belongs to another release (owners.py). The live copies of the objects that may be
        unchanged are read first, all kinds at once (unchanged.py): the owner check need not read again those
        listed with this release's labels, and the tiers decide from them until the first write."""
        result, key = plan.result, plan.bundle.release.key
        try:
            snapshot = self.applier.take_snapshot(candidates)
            result.adopted = owners.check(self.reader, plan.selected, key, adopt=self.options.adopt,
                                          rollback=plan.phase == ROLLBACK, known=snapshot.live if snapshot else None)
        except ManentError as exc:
            result.status = "failed"
            exc.partial = result
            raise
        result.warnings.extend(owners.warnings(result.adopted, key, self.dry_run))

    def _list_absent(self, plan, candidates):
        """Which objects of the tiers after the Namespaces do not exist yet (Applier.list_absent)."""
        self.applier.list_absent([o for o in plan.selected if tier_of(o) != TIER_NAMESPACES], candidates)

    # ------------------------------------------------------------------ write

    def _write(self, plan):
        result, timings = plan.result, {"apply": 0.0, "wait": 0.0}
        try:
            _timed(timings, "apply", self._open_release, plan)
            self._run_stages(plan, timings)
            t = time.monotonic()
            if self.options.prune:
                result.pruned = self.prune(plan.previous_objects, plan.bundle.objects, plan.bundle.release.key, result)
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
        self.applier.apply_tier(ns_objects, changes)
        # every object that will be written, dry-run at once: a refusal stops the deploy before history or any
        # other object is written (a half-applied upgrade is what a failed deploy must not leave)
        others = [o for o in plan.selected if tier_of(o) != TIER_NAMESPACES]
        unverifiable = _crd_kinds(plan.selected) | {(o.get("apiVersion"), o.get("kind")) for o in others
                                                    if not self.discovery.served(o.get("apiVersion"), o.get("kind"))}
        self.applier.verify(others, unverifiable=unverifiable)
        if not plan.noop:
            locked = store.acquire(break_lock=self.options.break_lock)
            plan.locked = True
            _check_unchanged_since_plan(plan, locked)
            # Under the lock: which records of the earlier format need their Secrets moved (one LIST) is read
            # while the new record is written. The record of this version, which save_record rewrites in the
            # current format when it existed, is left out of the move. Not live.together: the record must count as
            # saved (for the failure handling) as soon as save_record returns, even if the listing then fails.
            # The version in service deployed again: its record keeps the objects, deploy id and status of what is
            # in service (a rollback to this version, or a failure, must find them), and lists the objects the
            # redeploy adds, which a failure would leave (prunable); the record takes this deploy once it succeeded.
            with ThreadPoolExecutor(max_workers=1) as pool:
                pending = pool.submit(store.migration_pending)
                if plan.redeploy:
                    if store.note_strays(bundle.release, bundle.objects):
                        plan.strays_noted = True
                        plan.result.history["written"] = True
                else:
                    store.save_record(bundle.release, bundle.objects, plan.meta)
                    plan.saved = True
                    plan.result.history["written"] = True
                store.migrate(pending.result(), skip={plan.result.record})

    def _run_stages(self, plan, timings):
        """The stages in order (stages.py); the main rollout is waited for when a post stage follows it."""
        result = plan.result
        post = any(stage.when == stages.POST for stage in plan.stages)
        for stage in plan.stages:
            wait = self.options.wait or (stage.when == stages.MAIN and post)
            result.stages.append(stage.summary("running"))
            try:
                result.waited.extend(stages.run(
                    stage, lambda objs: _timed(timings, "apply", self._apply_group, objs, result.changes),
                    lambda objs, when=stage.when: _timed(timings, "wait", self._wait, objs, when),
                    self.deleter, result.changes, wait=wait))
            except ManentError:
                result.stages[-1]["status"] = "failed"
                raise
            result.stages[-1]["status"] = "done"

    def _apply_group(self, objects, changes):
        """One weight group of a stage, tier by tier (Namespaces were applied first); CRDs until Established."""
        for tier, objs in tiers(objects):
            if tier == TIER_NAMESPACES:
                continue
            self.applier.apply_tier(objs, changes)
            if tier == TIER_CRDS and not self.dry_run:
                crds.wait_established(self.reader, self.discovery, objs, self.options.apply.established_timeout)

    def _wait(self, objects, when=stages.MAIN):
        """Wait for the objects of a stage group that stages.waited_in selects; the pods of running Jobs are
        remembered, so that a failed Job is explained even when its pods are gone."""
        self.applier.forget_snapshot()  # the objects applied after this wait are read again
        # each round reads all objects together: one LIST per kind and namespace (LiveReader.read_many)
        witness = stages.PodWitness(self.reader.get, lambda obj: pods_of(self.kube, obj), self.reader.read_many)
        return wait_for(objects, witness.fetch, list_pods=witness.list_pods, timeout=self.options.wait_timeout,
                        on_progress=self.options.on_progress, select=lambda obj: stages.waited_in(obj, when),
                        fetch_many=witness.fetch_many, watch=self.reader)

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
        history["deleted"] = store.cleanup(self.options.keep_releases)
        if self.options.helm_migrate_release and plan.phase == INSTALL:
            history["helm_secrets_deleted"] = store.delete_helm_release_secrets(self.options.helm_migrate_release)

    def _failed(self, plan, exc):
        result = plan.result
        if plan.redeploy and plan.locked:
            result.warnings.append(
                "version %s stays in service as deploy %s: its record was not replaced by this failed redeploy "
                "(deploy %s)%s" % (plan.bundle.release.version, (plan.located or {}).get("deployment") or "-",
                                   plan.bundle.release.deployment or "-",
                                   "; the objects it added are listed there, for the next deploy to prune"
                                   if plan.strays_noted else ""))
        if plan.saved:
            version = plan.bundle.release.version
            try:
                plan.store.mark(version, "failed")
            except ManentError as mark_exc:  # keep the original error; say history may need a look
                result.warnings.append("could not mark release %s failed: %s" % (version, mark_exc))
        result.status = "failed"
        exc.partial = result

    def _close(self, plan, timings):
        result = plan.result
        if plan.locked:
            try:
                plan.store.release_lock()
            except ManentError as exc:
                result.warnings.append("could not release the history lock: %s" % exc)
        timings["total"] = time.monotonic() - plan.started
        result.timings = timings
        result.warnings.extend(change_warnings(result.changes))
        result.warnings.extend(plan.store.notes)

    # ------------------------------------------------------------------ check mode

    def _dry_run(self, plan):
        result, timings = plan.result, {}
        t = time.monotonic()
        checkable, skipped = self._verifiable(plan.bundle, plan.selected)
        verifiable = {id(obj) for obj in checkable}
        try:
            self.applier.apply_tier([o for o in checkable if tier_of(o) == TIER_NAMESPACES], result.changes)
            for stage in plan.stages:
                for _weight, objs in stage.groups:
                    self._apply_group([o for o in objs if id(o) in verifiable], result.changes)
            for obj, why in skipped:
                result.changes.append(Change(ref(obj), SKIPPED, reason="not verifiable in check mode: %s" % why))
            result.objects_skipped = len(skipped)
            if self.options.prune:
                result.pruned = self.prune(plan.previous_objects, plan.bundle.objects, plan.bundle.release.key, result)
            result.status = "checked"
        except ManentError as exc:
            result.status = "failed"
            exc.partial = result
            raise
        finally:
            timings["apply"] = time.monotonic() - t
            timings["total"] = time.monotonic() - plan.started
            result.timings = timings
            result.warnings.extend(change_warnings(result.changes))
        return result

    def _verifiable(self, bundle, selected):
        """(objects a dry run can check, [(object, why not)]): not those in Namespaces or of kinds (CRDs) that
        the release itself creates."""
        new_namespaces = self._new_namespaces(bundle, selected)
        new_kinds = {kind for kind in _crd_kinds(selected) if not self.discovery.served(*kind)}
        checkable, skipped = [], []
        for obj in selected:
            if namespace_of(obj) in new_namespaces:
                skipped.append((obj, "namespace %s does not exist yet" % namespace_of(obj)))
            elif (obj.get("apiVersion"), obj.get("kind")) in new_kinds:
                skipped.append((obj, "kind %s %s is defined by a CustomResourceDefinition of this release that "
                                     "does not exist yet" % (obj.get("apiVersion"), obj.get("kind"))))
            else:
                checkable.append(obj)
        return checkable, skipped

    def _new_namespaces(self, bundle, selected):
        """Namespaces the deploy would create (create_namespace, Namespace objects) that do not exist yet."""
        out = set()
        if self.options.create_namespace:
            try:
                self.kube.get_json("/api/v1/namespaces/%s" % bundle.namespace)
            except NotFoundError:
                out.add(bundle.namespace)
            except ApiError:
                pass  # not allowed to read Namespaces: the dry run of each object will tell
        for obj in selected:
            if obj.get("kind") == "Namespace" and obj.get("apiVersion") == "v1":
                try:
                    self.kube.get_json("/api/v1/namespaces/%s" % obj["metadata"]["name"])
                except NotFoundError:
                    out.add(obj["metadata"]["name"])
        return out

    # ------------------------------------------------------------------ prune, rollback

    def prune(self, old_objects, new_objects, key, result=None):
        """Delete objects of the previous release that the new one no longer has (prune.py), those whose live copy
        carries the labels of release ``key``; their refs."""
        return prune.prune(self.deleter, old_objects, new_objects, key, changes=result.changes if result else None,
                           diff=self.options.apply.diff, salt=self.options.apply.salt)

    def rollback(self, namespace, key, to_version=None):
        """Re-apply the stored objects of the previous release (or ``to_version``): rollback.py, docs/requirements.md §8."""
        return rollback.rollback(self, namespace, key, to_version=to_version)


def _crd_kinds(objects):
    """{(apiVersion, kind)} that the CustomResourceDefinitions among ``objects`` define."""
    return {(served.api_version, served.kind) for crd in objects if is_crd(crd) for served in served_kinds(crd)}


def _select(objects, phase, result):
    """The objects applied in ``phase``; the others are recorded in ``result`` as skipped."""
    selected, skipped = [], []
    for obj in objects:
        (selected if lifecycle.applies_in(obj, phase) else skipped).append(obj)
    result.skipped = ["%s (deploy-on: not in %s)" % (ref(o), phase) for o in skipped]
    result.changes.extend(Change(ref(o), SKIPPED, reason="deploy-on excludes %s" % phase) for o in skipped)
    return selected


def _hook_warnings(bundle):
    """One warning per Helm hook the renderer left out (helm_hooks: skip, or a test hook)."""
    return ["Helm hook not applied: %s; set helm_hooks: apply to run hooks as lifecycle stages (test hooks never "
            "apply)" % hook for hook in bundle.hooks_skipped]


def _timed(timings, name, work, *args):
    """``work(*args)``, its seconds added to ``timings[name]``."""
    started = time.monotonic()
    try:
        return work(*args)
    finally:
        timings[name] = timings.get(name, 0.0) + time.monotonic() - started


def _unstable_render_warning(regenerated):
    """The warning for a rerun of the release in service (same deploy id: same artifact, version and parameters)
    that rendered ``regenerated`` (objects) differently from their stored copies: each such rerun changes them
    again."""
    return ("%d object(s) rendered differently from the release in service although artifact, version and "
            "parameters are the same (%s): the artifact makes values when it is rendered (random strings, "
            "generated certificates or keys, or helm's lookup, which answers empty when manent renders), so every "
            "rerun changes them again (and rewrites the release's record with them); give such values explicitly "
            "(chart values, variables) to make a rerun a no-op"
            % (len(regenerated), listing([ref(o) for o in regenerated], 5)))


# What a deploy decides from the locator (what it replaces and may prune, its slot rules); the lock fields and
# timestamps are not among them.
PLANNED_FIELDS = ("version", "deployment", "slot", "candidate", "candidateDeployment", "candidateSlot", "weight")


def _check_unchanged_since_plan(plan, locked):
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


def _check_traffic_release(bundle, current, located=None):
    """What a traffic release (``bundle.slot``) that is not a rerun must respect, before anything is written:
    - a version of its own: history keeps one record per version, so a candidate of the version in service would
      replace that release's record with the other slot's objects, and abort, rollback and prune would then work
      from the wrong slot;
    - the slot not in service: a bundle made for the slot in service (rendered before another release took that
      slot, or given that slot) would replace the serving objects under the route's weight;
    - no candidate receiving traffic (the weight its last step set, in the locator ``located``) replaced by another
      version: the new one would serve the share the old one was given, unchecked (slots.py, the rule
      manent_render's slot choice applies too)."""
    if not bundle.slot:
        return
    slots.refuse_replacing_a_live_candidate(located, bundle.release.version)
    in_service = _version_in_service(current, bundle)
    if current and current.get("slot") == bundle.slot and not in_service:
        raise InputError("rendered for traffic slot %s, where version %s is in service now: a traffic release goes to "
                         "the slot not in service" % (bundle.slot, current["version"]),
                         subject="version %s" % bundle.release.version,
                         hint="render it again (manent_render chooses the slot from the history it reads), or give "
                              "the other slot; nothing was written")
    if in_service:
        raise InputError("version %s is already in service%s: a traffic release needs a version of its own (history "
                         "keeps one record per version, and the candidate's would replace the record of the release "
                         "in service)" % (bundle.release.version,
                                          " in slot %s" % current["slot"] if current.get("slot") else ""),
                         subject="version %s" % bundle.release.version,
                         hint="give this release a new version (e.g. a build suffix: %s-2), or deploy it with the "
                              "rolling strategy; nothing was written" % bundle.release.version)


def _replaced(current, located, bundle):
    """The version the deployed ``bundle`` replaces (what a rollback returns to): the release in service, or,
    when ``bundle`` deploys the version in service again (other parameters, or a rendering that changed), the
    version that one replaced: a version never replaces itself."""
    if _version_in_service(current, bundle):  # traffic: only a rerun in its own slot (_check_traffic_release)
        return located.get("replaced", "") or ""
    return (current or {}).get("version", "")


def _same_release(current, located, bundle):
    """True when ``bundle`` is already deployed: the release in service or, for traffic, the candidate."""
    deployment = bundle.release.deployment
    if bundle.slot:
        return (located.get("candidate") == bundle.release.version and
                located.get("candidateDeployment") == deployment) or \
            (_in_its_slot(current, bundle) and current.get("deployment") == deployment)
    return _version_in_service(current, bundle) and current.get("deployment") == deployment


def _slot_rerun(plan, dry_run):
    """The result of a rerun of the traffic release in service (same version and deploy id, its own slot): nothing
    is applied. Its slot's replicas and the route's weights belong to manent_traffic since the promotion (with
    proportional replicas the rendering starts workloads at 1 replica); applying the rendering again would undo
    them in production."""
    result = plan.result
    result.status = "checked" if dry_run else "deployed"
    reason = "in service in traffic slot %s: a rerun applies nothing" % plan.bundle.slot
    result.changes.extend(Change(ref(o), SKIPPED, reason=reason) for o in plan.selected)
    result.warnings.append("version %s (deploy %s) is already in service in traffic slot %s: nothing was applied; "
                           "deploy a new version to change it" % (plan.bundle.release.version,
                                                                  plan.bundle.release.deployment, plan.bundle.slot))
    result.timings = {"total": time.monotonic() - plan.started}
    return result


def _in_its_slot(current, bundle):
    """True when ``bundle`` is the version in service, rendered for the slot it is in service in (manent_render
    chooses that slot for a rerun of the release in service: traffic.choose_slot)."""
    return bool(bundle.slot) and _version_in_service(current, bundle) and current.get("slot") == bundle.slot


def _version_in_service(current, bundle):
    """True when ``bundle`` deploys the version in service (``current``: as HistoryStore.in_service gives it)."""
    return bool(current) and current.get("version") == bundle.release.version
