# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Server-side apply of objects, one tier at a time, objects of a tier concurrently.

Per object: read the live object, apply with field manager ``manent`` (dry-run in check mode),
and decide the action from what the server returned: ``created`` (it did not exist),
``unchanged`` (same resourceVersion: the server wrote nothing; or the normalized result equals the
live object: only server-managed fields such as status differ, as in every dry-run of a no-op),
``configured`` otherwise, ``recreated`` when a delete policy deleted it first (before-creation: on every
deploy; before-creation-if-immutable: when the apply failed on an immutable field). Conflicts with other field
managers are taken over by default (``force``, like Flux and Argo CD) and reported per object; with
``force: false`` a conflict is an error naming the fields and managers. The server's Warning headers are
kept per object.

Before a deploy's first write (after its Namespaces), every object it will write is applied with dryRun=All
(``verify``): an object the server refuses stops the deploy before anything else is written. With ``force: false``
each tier is also dry-run first: a conflict (or any other refusal) of one object fails the tier before any of its
objects is written.

Objects equal to the stored copy of the release in service (``Known.use_baseline``) whose live copy still holds
every desired value, owned by ``manent``, are reported ``unchanged`` without a PATCH: unchanged.py decides, from
one LIST per kind and namespace (read for all tiers at once before the deploy's first write, ``Known.take_snapshot``,
and per tier again once something was written); anything uncertain is applied. What is known of the live copies
is known.py's.

Reading live objects is live.py's job, deleting delete.py's, the CRD wait crds.py's; the change set
entries are changeset.py's.
"""

from __future__ import annotations

import re
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.ordering import TIER_CRDS, TIER_NAMESPACES, tiers
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import crds
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import (
    CREATED, CONFIGURED, RECREATED, SKIPPED, UNCHANGED, Change)
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.delete import DeleteOptions, Deleter
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.diff import scrub_secret_values, diff_entry, same
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ApiError, ApplyError, ConflictError, ManentError, NotFoundError, group_failures)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import FIELD_MANAGER
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import CONCURRENCY
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import writes
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import LiveReader
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.known import RECREATING, Known

_READ = object()  # apply_one: read the live object itself
_CONFLICT = re.compile(r'conflict with "([^"]+)"')
_NOT_IN_SCHEMA = "field not declared in schema"
# Dry-run refusals that say nothing about the object: an admission webhook with side effects cannot run in a dry run
# (the real apply calls it).
_UNTOLD = ("does not support dry run",)


def _random_salt():
    return secrets.token_hex(8)


@dataclass
class ApplyOptions:
    """``force``: take over fields of other managers; ``concurrency``: objects of a tier applied at once;
    ``salt``: keys the Secret fingerprints of diffs (random per run, so they cannot be compared across runs)."""

    force: bool = True
    concurrency: int = CONCURRENCY
    dry_run: bool = False
    diff: bool = False
    delete_timeout: float = 120.0
    established_timeout: float = 60.0
    salt: str = field(default_factory=_random_salt)


class Applier:
    """Applies objects; reads them through ``reader`` and deletes them (delete policies) through ``deleter``."""

    def __init__(self, kube, discovery, options=None, reader=None, deleter=None):
        self.kube = kube
        self.discovery = discovery
        self.options = options or ApplyOptions()
        self.reader = reader or LiveReader(kube, discovery, self.options.concurrency)
        self.deleter = deleter or Deleter(kube, discovery, self.reader, DeleteOptions(
            dry_run=self.options.dry_run, timeout=self.options.delete_timeout))
        # what is known of the live copies before writing: unchanged objects, absent ones (known.py)
        self.known = Known(self.reader)
        # {key: the server's answer to this deploy's last apply} of the objects that a succeeded or failed delete
        # policy deletes once their stage is done: the copy delete.Deleter.delete_applied compares the live one with
        self.applied = {}

    # ------------------------------------------------------------------ one object

    def _patch(self, obj, force, dry_run=False):
        return writes.apply(self.kube, self.reader.path(obj), obj, ref(obj), FIELD_MANAGER, force=force,
                            dry_run=self.options.dry_run or dry_run)

    def _apply(self, obj):
        """Apply; on a field-manager conflict report (or refuse) the takeover. Returns (response, takeovers).
        A field the kind does not define fails with a hint."""
        try:
            try:
                return self._patch(obj, force=False), []
            except ConflictError as exc:
                takeovers = conflicts(exc)
                if not takeovers:
                    raise
                if not self.options.force:
                    raise conflict_error(obj, takeovers) from exc
                return self._patch(obj, force=True), takeovers
        except ApiError as exc:
            explained = _explained(obj, exc)
            if explained is None:
                raise
            raise explained from exc

    def apply_one(self, obj, live=_READ):
        """Apply one object (recreating it when a delete policy says so); its Change. ``live``: the live object
        when the caller just read it (None: it does not exist)."""
        started = time.monotonic()
        if live is _READ:
            live = self.reader.get(obj)
        policies = lifecycle.delete_policies(obj)
        if live is not None and lifecycle.BEFORE_CREATION in policies:
            return self._recreate(obj, live, "delete-policy before-creation", started)
        try:
            resp, takeovers = self._apply(obj)
        except ApiError as exc:
            if (live is None or lifecycle.BEFORE_CREATION_IF_IMMUTABLE not in policies
                    or _NOT_IN_SCHEMA in exc.message or not _immutable(exc)):
                raise
            return self._recreate(obj, live, "immutable field changed: would recreate", started)
        if live is None:
            # 201: the apply created it. 200: it existed although it was listed absent (created by someone else
            # since): it was configured, from a state this deploy did not see.
            action = CREATED if resp.status != 200 else CONFIGURED
        else:
            # the server wrote nothing (same resourceVersion), or only fields it manages itself changed since
            # the read (a controller wrote status in between): unchanged. Dry-run results carry no new version.
            same_rv = not self.options.dry_run and (live.get("metadata") or {}).get("resourceVersion") == \
                (resp.data.get("metadata") or {}).get("resourceVersion")
            action = UNCHANGED if same_rv or same(live, resp.data) else CONFIGURED
        change = self._change(obj, live, resp, takeovers, action, started)
        if live is None and action == CONFIGURED:
            note = ("it existed although it was listed absent (another client created it meanwhile); its state "
                    "before this apply was not read")
            change.reason = "%s; %s" % (change.reason, note) if change.reason else note
        return change

    def _recreate(self, obj, live, why, started):
        """Delete ``live`` (the object that was read: uid precondition), wait until it is gone, apply again.
        In check mode only says so (``why``)."""
        if self.options.dry_run:
            return Change(ref(obj), RECREATED, reason=why, seconds=time.monotonic() - started)
        self.deleter.delete(live, wait=True, propagation=lifecycle.delete_propagation(obj),
                            uid=(live.get("metadata") or {}).get("uid"))
        resp, takeovers = self._apply(obj)
        return self._change(obj, live, resp, takeovers, RECREATED, started)

    def _change(self, obj, before, resp, takeovers, action, started):
        if not self.options.dry_run and lifecycle.AFTER_STAGE & lifecycle.delete_policies(obj):
            self.applied[key_of(obj)] = resp.data
        change = Change(ref(obj), action, warnings=list(resp.warnings), takeovers=takeovers)
        if takeovers:
            change.reason = "took over %s" % ", ".join("%(field)s from %(manager)s" % t for t in takeovers)
        if self.options.diff and action != UNCHANGED:
            change.diff = diff_entry(before, resp.data, ref(obj), self.options.salt)
        change.seconds = time.monotonic() - started
        return change

    # ------------------------------------------------------------------ a tier

    def _each(self, objects, work):
        """Run ``work(obj)`` for every object, at most ``concurrency`` at once; (results, errors) in order."""
        workers = max(1, min(self.options.concurrency, len(objects)))
        results, errors = [None] * len(objects), []
        if workers == 1:
            for i, obj in enumerate(objects):
                try:
                    results[i] = work(obj)
                except ManentError as exc:
                    errors.append(_named(obj, exc))
            return results, errors
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [(i, obj, pool.submit(work, obj)) for i, obj in enumerate(objects)]
            for i, obj, fut in futures:
                try:
                    results[i] = fut.result()
                except ManentError as exc:
                    errors.append(_named(obj, exc))
        return results, errors

    def apply_tier(self, objects, changes):
        """Apply independent objects concurrently, appending each object's Change to ``changes`` (those applied
        before a failure too); ApplyError naming every object that failed.

        Without ``force`` the tier is dry-run first and nothing of it is written when any object is refused.
        """
        if not objects:
            return
        started = time.monotonic()
        if any(c.action not in (UNCHANGED, SKIPPED) for c in changes):
            self.known.forget_snapshot()  # something was created, changed or deleted since the snapshot
        same, known = self.known.find(objects)
        seconds = time.monotonic() - started
        pending = [o for o in objects if key_of(o) not in same]
        if pending and not self.options.dry_run:
            self.known.forget_snapshot()  # this tier writes: the next tiers read what the cluster holds then
        if pending and not self.options.force and not self.options.dry_run:
            self.preflight(pending)
        # the others are read before their apply, except those one LIST per kind and namespace shows absent
        # (listed for all tiers before the first write, list_absent, else now for this tier)
        unknown = [o for o in pending if key_of(o) not in known]
        if self.known.existence is not None:
            absent, listed = self.known.existence
            for key in absent.intersection(key_of(o) for o in unknown):
                known[key] = None
            unknown = [o for o in unknown if key_of(o) not in listed]
        for key in self.reader.absent(unknown):
            known[key] = None
        results, errors = self._each(pending, lambda obj: self.apply_one(obj, known.get(key_of(obj), _READ)))
        applied = {key_of(o): r for o, r in zip(pending, results)}
        for obj in objects:
            key = key_of(obj)
            if key in same:
                changes.append(Change(ref(obj), UNCHANGED, seconds=seconds))
            elif applied.get(key) is not None:
                changes.append(applied[key])
        if errors:
            raise ApplyError("%d object(s) failed to apply:\n- %s" % (len(errors), "\n- ".join(group_failures(errors))))

    def apply_group(self, objects, changes):
        """One weight group of a stage, tier by tier, as :meth:`apply_tier` (the Namespaces are applied before the
        stages, so that tier is left out); the CRDs of a group are waited for until Established and served
        (crds.py), unless in check mode, before the tiers that may hold their resources."""
        for tier, objs in tiers(objects):
            if tier == TIER_NAMESPACES:
                continue
            self.apply_tier(objs, changes)
            if tier == TIER_CRDS and not self.options.dry_run:
                crds.wait_established(self.reader, self.discovery, objs, self.options.established_timeout)

    def _check_one(self, obj, force=False):
        """Dry-run apply (without force unless ``force``); None when the server would accept it, when a delete
        policy recreates it, or when the dry run cannot tell (see :data:`_UNTOLD`)."""
        policies = lifecycle.delete_policies(obj)
        if lifecycle.BEFORE_CREATION in policies:
            return None
        try:
            self._patch(obj, force=force, dry_run=True)
        except ConflictError as exc:
            takeovers = conflicts(exc)
            if takeovers:
                raise conflict_error(obj, takeovers) from exc
            raise
        except NotFoundError:
            return None  # e.g. a namespace of this tier's objects that does not exist: apply says it
        except ApiError as exc:
            if lifecycle.BEFORE_CREATION_IF_IMMUTABLE in policies and _immutable(exc):
                return None
            if any(text in exc.message for text in _UNTOLD):
                return None
            explained = _explained(obj, exc)
            if explained is None:
                raise
            raise explained from exc
        return None

    def verify(self, objects, unverifiable=frozenset()):
        """Before a deploy's first write (after its Namespaces): dry-run every object of ``objects`` that the deploy
        would write, all at once (``concurrency``); ApplyError naming each object the server refuses (an immutable
        field changed, a value its validation or an admission webhook or policy rejects), nothing written.

        Left out: objects the unchanged check clears (as their tier will), kinds in ``unverifiable`` ((apiVersion,
        kind) that a CRD of the release defines: the server may not know their new schema yet), objects a delete
        policy recreates, Pods (their admission reads the service account and priority class, which the release
        may create in an earlier tier). Nothing is sent when none of the remaining objects exists (a first install,
        or only new objects: nothing running can be disturbed, and each would cost a second request), as the LISTs
        before the first write tell (list_absent, and here one LIST per kind and namespace for the objects it did
        not list)."""
        same, _known = self.known.find(objects)
        wanted = [o for o in objects if key_of(o) not in same and (o.get("apiVersion"), o.get("kind")) not in
                  unverifiable and o.get("kind") != "Pod" and lifecycle.BEFORE_CREATION not in
                  lifecycle.delete_policies(o)]
        absent, listed = self.known.existence if self.known.existence is not None else (set(), set())
        seen = self.known.snapshot.live if self.known.snapshot is not None else {}  # live copies of the baseline's objects
        if not any(seen.get(key_of(o)) is not None or (key_of(o) in listed and key_of(o) not in absent)
                   for o in wanted):
            # none is known to exist: one metadata-only LIST per kind and namespace of those not listed yet tells
            # whether any does; their tiers then need not read the absent ones (as list_absent)
            unknown = [o for o in wanted if key_of(o) not in listed and not RECREATING & lifecycle.delete_policies(o)]
            if unknown:
                more_absent, more_listed = self.reader.existence(unknown, list_from=1)
                absent, listed = absent | more_absent, listed | more_listed
                self.known.existence = (absent, listed)
            if all(key_of(o) in absent for o in wanted):
                return 0
        _results, errors = self._each(wanted, lambda obj: self._check_one(obj, force=self.options.force))
        if errors:
            raise ApplyError("%d object(s) refused by the API server's dry run; nothing was written:\n- %s"
                             % (len(errors), "\n- ".join(group_failures(errors))),
                             hint="fix the objects named here and deploy again")
        return len(wanted)

    def preflight(self, objects):
        """Dry-run every object of a tier; ApplyError naming each refused object before anything is written."""
        _results, errors = self._each(objects, self._check_one)
        if errors:
            raise ApplyError("%d object(s) refused, nothing of their tier was applied:\n- %s"
                             % (len(errors), "\n- ".join(group_failures(errors))),
                             hint="fix the objects named here and deploy again")


def conflicts(exc):
    """[{"field": ".spec.replicas", "manager": "kubectl-client-side-apply"}] from a 409 apply conflict."""
    out = []
    for cause in (exc.body.get("details") or {}).get("causes") or []:
        if cause.get("reason") != "FieldManagerConflict":
            continue
        m = _CONFLICT.search(cause.get("message") or "")
        entry = {"field": cause.get("field") or "", "manager": m.group(1) if m else cause.get("message") or ""}
        if entry not in out:
            out.append(entry)
    return sorted(out, key=lambda t: (t["field"], t["manager"]))


def conflict_error(obj, takeovers):
    """The error for a conflict manent may not take over: each field with the manager that owns it."""
    return ConflictError("server-side apply conflict: %s" % "; ".join(
        "field %(field)s is owned by field manager %(manager)s" % t for t in takeovers),
        status=409, reason="Conflict", subject=ref(obj),
        hint="another field manager owns these fields: remove them from the manifest, change them with their "
             "owner, or let manent take them over (force_conflicts: true)")


def _explained(obj, exc):
    """``exc`` with a hint when the server says the object has a field its kind does not define; else None."""
    if _NOT_IN_SCHEMA not in exc.message:
        return None
    return ApiError(exc.message, status=exc.status, reason=exc.reason, subject=ref(obj),
                    hint="the manifest has a field that %s %s does not define: fix its name or indentation, or the "
                         "apiVersion" % (obj.get("apiVersion"), obj.get("kind")))


def _immutable(exc):
    """True for a 422 saying an immutable field changed."""
    return exc.status == 422 and lifecycle.is_immutable_error(str(exc))


def _named(obj, exc):
    text = scrub_secret_values(obj, str(exc))
    return text if text.startswith(ref(obj)) else "%s apply failed: %s" % (ref(obj), text)
