# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One deploy of one bundle to one cluster (SPEC §7 steps 3-6, §10), and rollback (§8).

Order: validate (credentials, version, record size, objects of another release: see owners.py) ->
Namespaces -> save the release in history (pending, under a lock) -> remaining tiers (CRDs Established
before their resources) -> wait for all workloads at once -> prune -> mark the release in service,
clean up history. A failure after the record was saved marks it failed; the in-service pointer only
moves after a successful rollout. A rerun of the release in service (same version and deploy id)
writes no history at all.

In check mode (dry_run) every object is applied with dryRun=All and nothing, history included,
is written; objects in Namespaces that the bundle itself would create are counted as skipped.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils import apiversions, lifecycle, owners, slots
from ansible_collections.manent.kubernetes.plugins.module_utils.apply import (
    CHANGING, DELETED, SKIPPED, Applier, ApplyOptions, Change, crd_kinds)
from ansible_collections.manent.kubernetes.plugins.module_utils.diff import diff_entry
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import (
    ApiError, ApplyError, InputError, ManentError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.module_utils.history_codec import is_secret
from ansible_collections.manent.kubernetes.plugins.module_utils.history_store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.identity import (
    ANNOTATION_DEPLOYMENT, ANNOTATION_VERSION, MANAGED_BY, MANAGER, other_owner, owner_of)
from ansible_collections.manent.kubernetes.plugins.module_utils.objects import (
    key_of, namespace_of, ref, split_api_version)
from ansible_collections.manent.kubernetes.plugins.module_utils.ordering import (
    TIER_CRDS, TIER_NAMESPACES, sort_for_delete, tiers)
from ansible_collections.manent.kubernetes.plugins.module_utils.wait import needs_wait, pods_of, wait_for

INSTALL, UPGRADE, ROLLBACK = lifecycle.INSTALL, lifecycle.UPGRADE, lifecycle.ROLLBACK


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
            "counts": _counts(self.changes),
            "warnings": self.warnings,
            "waited": self.waited,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "history": self.history,
            "adopted": self.adopted,
        }


def _counts(changes):
    out = {}
    for c in changes:
        out[c.action] = out.get(c.action, 0) + 1
    return out


def default_holder():
    return "%s@%s:%d" % (os.environ.get("USER", "manent"), socket.gethostname(), os.getpid())


class Deployer:
    def __init__(self, kube, discovery, options=None):
        self.kube = kube
        self.discovery = discovery
        self.options = options or DeployOptions()
        self.applier = Applier(kube, discovery, self.options.apply)

    @property
    def dry_run(self):
        return self.options.apply.dry_run

    def store(self, namespace, key):
        return HistoryStore(self.kube, namespace, key, holder=self.options.holder or default_holder())

    # ------------------------------------------------------------------ deploy

    def deploy(self, bundle, phase=None, objects=None, previous_objects=None, replaced=None):
        """Deploy ``bundle`` (or ``objects`` in its place, for rollback). ``replaced`` overrides the release
        recorded as replaced (default: the one in service)."""
        t0 = time.monotonic()
        timings = {}
        self.kube.version()  # credentials and reachability, before anything else
        create_ns = self._release_namespace(bundle, objects if objects is not None else bundle.objects)
        store = self.store(bundle.namespace, bundle.release.key)
        current = store.in_service()
        located = store.locator() or {}
        phase = phase or (INSTALL if current is None else UPGRADE)
        version = bundle.release.version
        result = DeployResult(status="pending", namespace=bundle.namespace, release=version,
                              previous=(current or {}).get("version", ""), phase=phase,
                              warnings=list(bundle.warnings), slot=bundle.slot)
        if previous_objects is None:
            previous_objects = self._prune_candidates(
                store, current, secrets=any(is_secret(o) for o in (objects if objects is not None else bundle.objects)),
                candidate=located.get("candidate"))
        if bundle.slot:  # a candidate's deploy never prunes the stable slot's (or an un-slotted release's) workloads
            previous_objects = slots.prunable_by(previous_objects, bundle.slot)
        carry_release_annotations(objects if objects is not None else bundle.objects, previous_objects)
        selected, skipped = [], []
        for obj in (objects if objects is not None else bundle.objects):
            (selected if lifecycle.applies_in(obj, phase) else skipped).append(obj)
        result.skipped = ["%s (deploy-on: not in %s)" % (ref(o), phase) for o in skipped]
        result.changes.extend(Change(ref(o), SKIPPED, reason="deploy-on excludes %s" % phase) for o in skipped)
        noop = _same_release(current, located, bundle) and phase != ROLLBACK
        replaced = result.previous if replaced is None else replaced
        try:  # before any write, in check mode too
            result.adopted = owners.check(self.applier, selected, bundle.release.key, adopt=self.options.adopt,
                                          rollback=phase == ROLLBACK)
        except ManentError as exc:
            result.status = "failed"
            exc.partial = result
            raise
        result.warnings.extend(owners.warnings(result.adopted, bundle.release.key, self.dry_run))
        meta = {"artifactSha256": bundle.artifact.get("sha256", ""), "replaced": replaced, "slot": bundle.slot}
        if not self.dry_run and not noop:
            store.prepare_record(bundle.release, bundle.objects, meta)  # size check before the first write
        if self.dry_run:
            return self._dry_run(bundle, selected, result, timings, t0, previous_objects)

        groups = tiers(selected)
        ns_objects = [o for t, objs in groups if t == TIER_NAMESPACES for o in objs]
        if create_ns:
            ns_objects.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": bundle.namespace, "labels": {MANAGED_BY: MANAGER}}})
        locked = False
        saved = False
        try:
            t = time.monotonic()
            result.changes.extend(self.applier.apply_tier(ns_objects))
            if not noop:
                store.acquire(break_lock=self.options.break_lock)
                locked = True
                store.migrate()
                store.save_record(bundle.release, bundle.objects, meta)
                saved = True
                result.history["written"] = True
            for tier, objs in groups:
                if tier == TIER_NAMESPACES:
                    continue
                result.changes.extend(self.applier.apply_tier(objs))
                if tier == TIER_CRDS:
                    self.applier.wait_established(objs)
            timings["apply"] = time.monotonic() - t
            t = time.monotonic()
            if self.options.wait:
                result.waited = self._wait(selected)
            timings["wait"] = time.monotonic() - t
            t = time.monotonic()
            if self.options.prune:
                result.pruned = self.prune(previous_objects, bundle.objects, result)
            timings["prune"] = time.monotonic() - t
            if not noop and bundle.slot:  # traffic: in service only after manent_traffic promote
                store.set_candidate(bundle.release, bundle.slot)
                result.history["candidate"] = bundle.slot
            elif not noop:
                store.promote(bundle.release, replaced)
            if not noop:
                result.history["deleted"] = store.cleanup(self.options.keep_releases)
                if self.options.helm_migrate_release and phase == INSTALL:
                    result.history["helm_secrets_deleted"] = store.delete_helm_release_secrets(
                        self.options.helm_migrate_release)
            result.status = "deployed" if phase != ROLLBACK else "rolled-back"
        except ManentError as exc:
            if saved:
                try:
                    store.mark(version, "failed")
                except ManentError as mark_exc:  # keep the original error; say history may need a look
                    result.warnings.append("could not mark release %s failed: %s" % (version, mark_exc))
            if exc.partial is not None and isinstance(exc.partial, list):
                result.changes.extend(exc.partial)
            result.status = "failed"
            exc.partial = result
            raise
        finally:
            if locked:
                try:
                    store.release_lock()
                except ManentError as exc:
                    result.warnings.append("could not release the history lock: %s" % exc)
            timings["total"] = time.monotonic() - t0
            result.timings = timings
            result.warnings.extend(change_warnings(result.changes))
            result.warnings.extend(store.notes)
        return result

    def _release_namespace(self, bundle, objects):
        """True when the release namespace must be created (create_namespace); a missing namespace that
        neither the bundle nor the options create is an error before any write."""
        if any(o.get("kind") == "Namespace" and o.get("apiVersion") == "v1" and
               (o.get("metadata") or {}).get("name") == bundle.namespace for o in objects):
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

    def _dry_run(self, bundle, selected, result, timings, t0, previous_objects):
        t = time.monotonic()
        new_namespaces = set()
        if self.options.create_namespace:
            try:
                self.kube.get_json("/api/v1/namespaces/%s" % bundle.namespace)
            except NotFoundError:
                new_namespaces.add(bundle.namespace)
            except ApiError:
                pass  # not allowed to read Namespaces: the dry run of each object will tell
        for obj in selected:
            if obj.get("kind") == "Namespace" and obj.get("apiVersion") == "v1":
                try:
                    self.kube.get_json("/api/v1/namespaces/%s" % obj["metadata"]["name"])
                except NotFoundError:
                    new_namespaces.add(obj["metadata"]["name"])
        new_kinds = {(api_version, kind) for api_version, kind in crd_kinds(
            [o for o in selected if o.get("kind") == "CustomResourceDefinition"])
            if not self.discovery.served(api_version, kind)}
        checkable, skipped = [], []
        for obj in selected:
            if namespace_of(obj) in new_namespaces:
                skipped.append((obj, "namespace %s does not exist yet" % namespace_of(obj)))
            elif (obj.get("apiVersion"), obj.get("kind")) in new_kinds:
                skipped.append((obj, "kind %s %s is defined by a CustomResourceDefinition of this release that "
                                     "does not exist yet" % (obj.get("apiVersion"), obj.get("kind"))))
            else:
                checkable.append(obj)
        try:
            for _tier, objs in tiers(checkable):
                result.changes.extend(self.applier.apply_tier(objs))
            for obj, why in skipped:
                result.changes.append(Change(ref(obj), SKIPPED, reason="not verifiable in check mode: %s" % why))
            result.objects_skipped = len(skipped)
            if self.options.prune:
                result.pruned = self.prune(previous_objects, bundle.objects, result)
            result.status = "checked"
        except ManentError as exc:
            if isinstance(exc.partial, list):
                result.changes.extend(exc.partial)
            result.status = "failed"
            exc.partial = result
            raise
        finally:
            timings["apply"] = time.monotonic() - t
            timings["total"] = time.monotonic() - t0
            result.timings = timings
            result.warnings.extend(change_warnings(result.changes))
        return result

    def _wait(self, objects):
        waiting = [o for o in objects if needs_wait(o)]
        return wait_for(waiting, self.applier.get, list_pods=lambda obj: pods_of(self.kube, obj),
                        timeout=self.options.wait_timeout, on_progress=self.options.on_progress)

    # ------------------------------------------------------------------ prune

    def prune(self, old_objects, new_objects, result=None):
        """Delete objects of the previous release that the new one no longer has (SPEC §7 step 5)."""
        keep = {key_of(o) for o in new_objects}
        pruned = []
        for obj in sort_for_delete([o for o in old_objects or [] if key_of(o) not in keep]):
            ok, why = lifecycle.prunable(obj)
            if not ok:
                if result is not None:
                    result.changes.append(Change(ref(obj), SKIPPED, reason="not pruned: %s" % why))
                continue
            target = self._served_for_delete(obj)
            live = self.applier.get(target)
            if live is None:
                continue  # already gone: not an error, nothing to report
            owner = other_owner(live, owner_of(obj))  # the stored object names the release that pruning
            if owner is not None:
                if result is not None:
                    result.changes.append(Change(ref(obj), SKIPPED,
                                                 reason="not pruned: now belongs to %s" % owner.describe()))
                continue
            if self.applier.delete(target, wait=False):
                pruned.append(ref(obj))
                if result is not None:
                    change = Change(ref(obj), DELETED, reason="pruned")
                    if self.options.apply.diff:
                        change.diff = diff_entry(live, None, ref(obj), self.options.apply.salt)
                    result.changes.append(change)
        return pruned

    def _served_for_delete(self, obj):
        """Deleting works through a served version of the same group/kind (stored history may hold a
        removed apiVersion)."""
        if self.discovery.served(obj["apiVersion"], obj["kind"]):
            return obj
        group = split_api_version(obj["apiVersion"])[0]
        entry = apiversions.lookup(obj["apiVersion"], obj["kind"])
        groups = [group]
        if entry and entry.replacement and not entry.replacement_kind:  # a moved kind is the same object
            moved = split_api_version(entry.replacement)[0]
            if moved != group:
                groups.append(moved)
        candidates = ["%s/%s" % (g, v) if g else v for g in groups for v in self.discovery.versions_of(g, obj["kind"])]
        chosen = apiversions.delete_api_version(group, obj["kind"], candidates)
        if not chosen:
            raise ApplyError("cannot delete: the cluster serves no version of %s %s"
                             % (obj["apiVersion"], obj["kind"]),
                             subject=ref(obj), hint="delete it by hand, or rewrite the stored history")
        out = dict(obj)
        out["apiVersion"] = chosen
        return out

    # ------------------------------------------------------------------ rollback

    def rollback(self, namespace, key, to_version=None, bundle_factory=None):
        """Re-apply the stored objects of the previous release (or ``to_version``), SPEC §8.

        After a failed deploy (the newest record failed; the release in service is untouched) the previous
        release is the one in service: it is re-applied and what only the failed release created is pruned.
        Otherwise the previous release is the one the release in service replaced, and the release in
        service is the one rolled back. The failed or rolled-back release stays in history, marked."""
        store = self.store(namespace, key)
        current = store.in_service()
        if current is None:
            raise ManentError("no release in service to roll back to", subject="history in %s" % namespace,
                              hint="deploy first; rollback needs a successful release in history")
        if current.get("slot"):
            raise InputError("version %s is in service in traffic slot %s: traffic releases are not rolled back by "
                             "re-applying stored objects" % (current["version"], current["slot"]),
                             subject="history in %s" % namespace,
                             hint="use manent_traffic: operation=abort before promote, operation=rollback after it "
                                  "(until the replaced slot is retired); see docs/traffic.md")
        unfinished = _unfinished_release(store, current)
        if unfinished:
            default_target, rolled_back = current["version"], unfinished
        else:
            default_target, rolled_back = (store.locator() or {}).get("replaced"), current["version"]
        target = to_version or default_target
        if not target:
            raise ManentError("release %s replaced nothing: there is no previous release" % current["version"],
                              subject="history in %s" % namespace, hint="name a version with rollback_to")
        if target == rolled_back:
            rolled_back = current["version"] if target != current["version"] else ""
        meta, objects = store.load(target)
        mapped, notes = [], []
        for obj in objects:  # before any change: a non-rename stops here
            new, note = apiversions.map_for_cluster(obj, self.discovery.served)
            mapped.append(new)
            if note:
                notes.append(note)
        failed_objects = store.load(rolled_back, secrets=False)[1] if rolled_back else []
        bundle = bundle_factory(target, meta, mapped)
        result = self.deploy(bundle, phase=ROLLBACK, objects=mapped, previous_objects=failed_objects,
                             replaced=meta.get("replaced", ""))
        result.previous = rolled_back or current["version"]
        result.warnings.extend(notes)
        if not self.dry_run and rolled_back:
            store.mark(rolled_back, "rolled-back")
        return result

    def _prune_candidates(self, store, current, secrets=False, candidate=""):
        """Objects the new release may prune: those of the release in service, plus those of a newer
        release that failed (its objects may be on the cluster although it never went into service).
        Secrets come with their values only when ``secrets`` (the new release has Secrets, whose unchanged
        ones keep their release annotations): pruning needs names, labels and annotations alone."""
        objects = list(store.previous_objects(secrets=secrets)) if current else []
        for other in (_unfinished_release(store, current) if current else "", candidate):
            if other and other != (current or {}).get("version"):
                seen = {key_of(o) for o in objects}
                objects.extend(o for o in store.load(other, secrets=secrets)[1] if key_of(o) not in seen)
        return objects


def _same_release(current, located, bundle):
    """True when ``bundle`` is already deployed: the release in service or, for traffic, the candidate."""
    deployment = bundle.release.deployment
    if bundle.slot:
        return located.get("candidate") == bundle.release.version and \
            located.get("candidateDeployment") == deployment
    return bool(current) and current.get("version") == bundle.release.version and \
        current.get("deployment") == deployment


def _unfinished_release(store, current):
    """The version of the newest record when it failed (or never finished) after the release in service,
    else "": its objects may be on the cluster although it never went into service."""
    newest = next(iter(store.records()), None)
    if newest and newest.get("status") in ("failed", "pending", "aborted") and newest.get("version") != current["version"]:
        return newest["version"]
    return ""


def carry_release_annotations(objects, previous_objects):
    """Objects whose content did not change since the previous release keep that release's
    ``manent.io/version`` and ``manent.io/deployment`` annotations: the annotations name the release that
    last changed the object, and an unchanged object is not rewritten (its resourceVersion stays)."""
    if not previous_objects:
        return
    before = {key_of(o): o for o in previous_objects}
    for obj in objects:
        old = before.get(key_of(obj))
        if old is None:
            continue
        old_ann = (old.get("metadata") or {}).get("annotations") or {}
        if _without_release_annotations(old) == _without_release_annotations(obj):
            ann = obj["metadata"].setdefault("annotations", {})
            for k in (ANNOTATION_VERSION, ANNOTATION_DEPLOYMENT):
                if k in old_ann:
                    ann[k] = old_ann[k]


def _without_release_annotations(obj):
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    ann = dict(meta.get("annotations") or {})
    ann.pop(ANNOTATION_VERSION, None)
    ann.pop(ANNOTATION_DEPLOYMENT, None)
    meta["annotations"] = ann
    out["metadata"] = meta
    return out


def change_warnings(changes):
    """Ansible warnings from a change set: the server's Warning headers and the fields taken over from other
    field managers, each naming its object."""
    out = []
    for c in changes:
        out.extend("%s: %s" % (c.subject, w) for w in c.warnings)
        if c.takeovers:
            out.append("%s: took over fields from other field managers: %s" % (
                c.subject, ", ".join("%(field)s (from %(manager)s)" % t for t in c.takeovers)))
    return out
