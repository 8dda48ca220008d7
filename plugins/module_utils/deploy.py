# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One deploy of one bundle to one cluster (SPEC §7 steps 3-6, §10); :class:`Deployer` is the public entry,
for rollback (rollback.py) and prune (prune.py) too.

Order: validate (credentials, version, record size, objects of another release: see owners.py) ->
Namespaces -> save the release in history (pending, under a lock) -> remaining tiers (CRDs Established
before their resources) -> wait for all workloads at once -> prune -> mark the release in service,
clean up history. A failure after the record was saved marks it failed; the in-service pointer only
moves after a successful rollout. A rerun of the release in service (same version and deploy id)
writes no history at all. A traffic release (``bundle.slot``) becomes the candidate, not the release in
service, and prunes nothing of the other slot.

In check mode (dry_run) every object is applied with dryRun=All and nothing, history included,
is written; objects in Namespaces that the bundle itself would create are counted as skipped.

Every error raised once the deploy has a result carries it as ``partial`` (a :class:`DeployResult`, status
failed), so modules report what was done before the failure.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils import crds, lifecycle, owners, prune, rollback, slots
from ansible_collections.manent.kubernetes.plugins.module_utils.apply import Applier, ApplyOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.carry import carry_release_annotations
from ansible_collections.manent.kubernetes.plugins.module_utils.changeset import (
    CHANGING, SKIPPED, Change, change_warnings, counts)
from ansible_collections.manent.kubernetes.plugins.module_utils.delete import DeleteOptions, Deleter
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import (
    ApiError, InputError, ManentError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.module_utils.history_codec import is_secret
from ansible_collections.manent.kubernetes.plugins.module_utils.history_store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.identity import MANAGED_BY, MANAGER
from ansible_collections.manent.kubernetes.plugins.module_utils.live import LiveReader
from ansible_collections.manent.kubernetes.plugins.module_utils.objects import is_crd, namespace_of, ref, served_kinds
from ansible_collections.manent.kubernetes.plugins.module_utils.ordering import TIER_CRDS, TIER_NAMESPACES, tiers
from ansible_collections.manent.kubernetes.plugins.module_utils.wait import needs_wait, pods_of, wait_for

INSTALL, UPGRADE, ROLLBACK = lifecycle.INSTALL, lifecycle.UPGRADE, lifecycle.ROLLBACK
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

    @property
    def changed(self):
        return any(c.action in CHANGING for c in self.changes) or bool(self.pruned) or bool(
            self.history.get("written"))

    def to_dict(self):
        return {
            "status": self.status,
            "changed": self.changed,
            "details": {
                "namespace": self.namespace, "objects": len([c for c in self.changes if c.action != SKIPPED]),
                "release": self.release, "previous": self.previous, "pruned": self.pruned,
                "objects_skipped": self.objects_skipped, "phase": self.phase, "slot": self.slot,
            },
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
    previous_objects: list
    noop: bool
    replaced: str
    create_ns: bool
    started: float
    locked: bool = False
    saved: bool = False

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

    def deploy(self, bundle, phase=None, previous_objects=None, replaced=None):
        """Deploy ``bundle``. ``previous_objects`` overrides what it may prune (default: from history),
        ``replaced`` the release recorded as replaced (default: the one in service)."""
        plan = self._plan(bundle, phase, previous_objects, replaced)
        self._check_owners(plan)  # before any write, in check mode too
        if not self.dry_run and not plan.noop:
            plan.store.prepare_record(bundle.release, bundle.objects, plan.meta)  # size check before the first write
        if self.dry_run:
            return self._dry_run(plan)
        return self._write(plan)

    def _plan(self, bundle, phase, previous_objects, replaced):
        started = time.monotonic()
        self.kube.version()  # credentials and reachability, before anything else
        create_ns = self._release_namespace(bundle)
        store = self.store(bundle.namespace, bundle.release.key)
        current = store.in_service()
        located = store.locator() or {}
        phase = phase or (INSTALL if current is None else UPGRADE)
        result = DeployResult(status="pending", namespace=bundle.namespace, release=bundle.release.version,
                              previous=(current or {}).get("version", ""), phase=phase,
                              warnings=list(bundle.warnings), slot=bundle.slot)
        if previous_objects is None:
            previous_objects = prune.candidates(store, current, secrets=any(is_secret(o) for o in bundle.objects),
                                                candidate=located.get("candidate"))
        if bundle.slot:  # a candidate's deploy never prunes the stable slot's (or an un-slotted release's) workloads
            previous_objects = slots.prunable_by(previous_objects, bundle.slot)
        carry_release_annotations(bundle.objects, previous_objects)
        return _Plan(bundle=bundle, store=store, phase=phase, result=result,
                     selected=_select(bundle.objects, phase, result), previous_objects=previous_objects,
                     noop=_same_release(current, located, bundle) and phase != ROLLBACK,
                     replaced=result.previous if replaced is None else replaced, create_ns=create_ns,
                     started=started)

    def _release_namespace(self, bundle):
        """True when the release namespace must be created (create_namespace); a missing namespace that
        neither the bundle nor the options create is an error before any write."""
        if any(o.get("kind") == "Namespace" and o.get("apiVersion") == "v1" and
               (o.get("metadata") or {}).get("name") == bundle.namespace for o in bundle.objects):
            return False
        try:
            self.kube.get_json("/api/v1/namespaces/%s" % bundle.namespace, subject="Namespace/%s" % bundle.namespace)
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

    def _check_owners(self, plan):
        result, key = plan.result, plan.bundle.release.key
        try:
            result.adopted = owners.check(self.reader, plan.selected, key, adopt=self.options.adopt,
                                          rollback=plan.phase == ROLLBACK)
        except ManentError as exc:
            result.status = "failed"
            exc.partial = result
            raise
        result.warnings.extend(owners.warnings(result.adopted, key, self.dry_run))

    # ------------------------------------------------------------------ write

    def _write(self, plan):
        result, timings = plan.result, {}
        try:
            t = time.monotonic()
            self._apply_tiers(plan)
            timings["apply"] = time.monotonic() - t
            t = time.monotonic()
            if self.options.wait:
                result.waited = self._wait(plan.selected)
            timings["wait"] = time.monotonic() - t
            t = time.monotonic()
            if self.options.prune:
                result.pruned = self.prune(plan.previous_objects, plan.bundle.objects, result)
            timings["prune"] = time.monotonic() - t
            self._finish_history(plan)
            result.status = "deployed" if plan.phase != ROLLBACK else "rolled-back"
        except ManentError as exc:
            self._failed(plan, exc)
            raise
        finally:
            self._close(plan, timings)
        return result

    def _apply_tiers(self, plan):
        """Namespaces, then the record saved in history (under the lock), then the other tiers in order."""
        bundle, store, changes = plan.bundle, plan.store, plan.result.changes
        groups = tiers(plan.selected)
        ns_objects = [o for t, objs in groups if t == TIER_NAMESPACES for o in objs]
        if plan.create_ns:
            ns_objects.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": bundle.namespace, "labels": {MANAGED_BY: MANAGER}}})
        self.applier.apply_tier(ns_objects, changes)
        if not plan.noop:
            store.acquire(break_lock=self.options.break_lock)
            plan.locked = True
            store.migrate()
            store.save_record(bundle.release, bundle.objects, plan.meta)
            plan.saved = True
            plan.result.history["written"] = True
        for tier, objs in groups:
            if tier == TIER_NAMESPACES:
                continue
            self.applier.apply_tier(objs, changes)
            if tier == TIER_CRDS:
                crds.wait_established(self.reader, self.discovery, objs, self.options.apply.established_timeout)

    def _wait(self, objects):
        waiting = [o for o in objects if needs_wait(o)]
        return wait_for(waiting, self.reader.get, list_pods=lambda obj: pods_of(self.kube, obj),
                        timeout=self.options.wait_timeout, on_progress=self.options.on_progress)

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
            store.promote(bundle.release, plan.replaced)
        history["deleted"] = store.cleanup(self.options.keep_releases)
        if self.options.helm_migrate_release and plan.phase == INSTALL:
            history["helm_secrets_deleted"] = store.delete_helm_release_secrets(self.options.helm_migrate_release)

    def _failed(self, plan, exc):
        result = plan.result
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
        try:
            for _tier, objs in tiers(checkable):
                self.applier.apply_tier(objs, result.changes)
            for obj, why in skipped:
                result.changes.append(Change(ref(obj), SKIPPED, reason="not verifiable in check mode: %s" % why))
            result.objects_skipped = len(skipped)
            if self.options.prune:
                result.pruned = self.prune(plan.previous_objects, plan.bundle.objects, result)
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
        new_kinds = {(served.api_version, served.kind) for crd in selected if is_crd(crd)
                     for served in served_kinds(crd) if not self.discovery.served(served.api_version, served.kind)}
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

    def prune(self, old_objects, new_objects, result=None):
        """Delete objects of the previous release that the new one no longer has (prune.py); their refs."""
        return prune.prune(self.deleter, old_objects, new_objects, changes=result.changes if result else None,
                           diff=self.options.apply.diff, salt=self.options.apply.salt)

    def rollback(self, namespace, key, to_version=None):
        """Re-apply the stored objects of the previous release (or ``to_version``): rollback.py, SPEC §8."""
        return rollback.rollback(self, namespace, key, to_version=to_version)


def _select(objects, phase, result):
    """The objects applied in ``phase``; the others are recorded in ``result`` as skipped."""
    selected, skipped = [], []
    for obj in objects:
        (selected if lifecycle.applies_in(obj, phase) else skipped).append(obj)
    result.skipped = ["%s (deploy-on: not in %s)" % (ref(o), phase) for o in skipped]
    result.changes.extend(Change(ref(o), SKIPPED, reason="deploy-on excludes %s" % phase) for o in skipped)
    return selected


def _same_release(current, located, bundle):
    """True when ``bundle`` is already deployed: the release in service or, for traffic, the candidate."""
    deployment = bundle.release.deployment
    if bundle.slot:
        return located.get("candidate") == bundle.release.version and \
            located.get("candidateDeployment") == deployment
    return bool(current) and current.get("version") == bundle.release.version and \
        current.get("deployment") == deployment
