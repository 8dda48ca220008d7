# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Server-side apply of objects, one tier at a time, objects of a tier concurrently.

Per object: read the live object, apply with field manager ``manent`` (dry-run in check mode),
and decide the action from what the server returned: ``created`` (it did not exist),
``unchanged`` (same resourceVersion: the server wrote nothing; or the normalized result equals the
live object: only server-managed fields such as status differ, as in every dry-run of a no-op),
``configured`` otherwise, ``recreated`` when a delete policy deleted it first. Conflicts with other field managers are taken
over by default (``force``, like Flux and Argo CD) and reported per object; with ``force: false``
a conflict is an error naming the fields and managers. Delete policies (before-creation,
before-creation-if-immutable) recreate objects. The server's Warning headers are kept per object.

With ``force: false`` each tier is first applied with dryRun=All: a conflict (or any other refusal) of
one object fails the tier before any of its objects is written. CRDs are waited for until Established
*and* served by discovery, so the custom resources of the next tiers can be applied.

:meth:`Applier.read_live` reads the live copies of many objects before anything is written (one GET each,
or one metadata-only LIST per kind and namespace holding many of them).
"""

from __future__ import annotations

import re
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.diff import scrub_secret_values, diff_entry, same
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import (
    ApiError, ApplyError, ConflictError, ManentError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.module_utils.identity import FIELD_MANAGER
from ansible_collections.manent.kubernetes.plugins.module_utils.objects import key_of, name_of, namespace_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.status import CURRENT, compute

APPLY_PATCH = "application/apply-patch+yaml"
CREATED, CONFIGURED, UNCHANGED, DELETED, SKIPPED, RECREATED = (
    "created", "configured", "unchanged", "deleted", "skipped", "recreated")
CHANGING = (CREATED, CONFIGURED, DELETED, RECREATED)
_CONFLICT = re.compile(r'conflict with "([^"]+)"')
_NOT_IN_SCHEMA = "field not declared in schema"
# metadata only (no Secret data, no history payloads); a server without it answers plain JSON, also fine
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
LIST_FROM = 4  # objects of one kind in one namespace from which read_live LISTs instead of GETting each
LIST_PAGE = 500


def _random_salt():
    return secrets.token_hex(8)


@dataclass
class ApplyOptions:
    """``force``: take over fields of other managers; ``concurrency``: objects of a tier applied at once;
    ``salt``: keys the Secret fingerprints of diffs (random per run, so they cannot be compared across runs)."""

    force: bool = True
    concurrency: int = 8
    dry_run: bool = False
    diff: bool = False
    delete_timeout: float = 120.0
    established_timeout: float = 60.0
    salt: str = field(default_factory=_random_salt)


@dataclass
class Change:
    subject: str
    action: str
    warnings: list = field(default_factory=list)
    takeovers: list = field(default_factory=list)
    diff: dict = None
    reason: str = ""
    seconds: float = 0.0

    def to_dict(self):
        out = {"subject": self.subject, "action": self.action}
        if self.warnings:
            out["warnings"] = self.warnings
        if self.takeovers:
            out["takeovers"] = self.takeovers
        if self.reason:
            out["reason"] = self.reason
        out["seconds"] = round(self.seconds, 3)
        return out


def changed(changes):
    return any(c.action in CHANGING for c in changes)


class Applier:
    def __init__(self, kube, discovery, options=None):
        self.kube = kube
        self.discovery = discovery
        self.options = options or ApplyOptions()

    # ------------------------------------------------------------------ one object

    def _path(self, obj, with_name=True):
        return self.discovery.path(obj["apiVersion"], obj["kind"], namespace_of(obj) or None,
                                   name_of(obj) if with_name else None, subject=ref(obj))

    def get(self, obj):
        try:
            return self.kube.get_json(self._path(obj), subject=ref(obj))
        except NotFoundError:
            return None

    def read_live(self, objects, selector=None, list_from=LIST_FROM):
        """The live copies of ``objects``, ``{key_of(obj): live}``, read concurrently before any write.

        Objects of one kind in one namespace are read with one GET each, or, from ``list_from`` of them, with
        one LIST of their metadata (paged, ``selector`` as label selector: objects it does not match are left
        out). Left out too, as unknown: objects that do not exist, kinds the cluster does not serve yet (a CRD
        of the release defines them), and what the credentials may not read (403; a LIST refused falls back
        to GETs), so that a namespace-scoped token that may apply is not stopped by a read it may not do."""
        groups = {}
        for obj in objects:
            if self.discovery.served(obj.get("apiVersion"), obj.get("kind")):
                groups.setdefault((obj["apiVersion"], obj["kind"], namespace_of(obj)), []).append(obj)
        units = []
        for members in groups.values():
            if len(members) >= list_from:
                units.append((self._list_live, members, selector))
            else:
                units.extend((self._get_live, [obj], None) for obj in members)

        def read(unit):
            work, members, sel = unit
            try:
                return work(members, sel), None
            except ManentError as exc:
                return None, exc

        workers = max(1, min(self.options.concurrency, len(units)))
        if workers == 1:
            answers = [read(u) for u in units]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                answers = list(pool.map(read, units))
        out = {}
        for found, exc in answers:
            if exc is not None:
                raise exc
            out.update(found)
        return out

    def _get_live(self, members, _selector=None):
        out = {}
        for obj in members:
            try:
                live = self.get(obj)
            except ApiError as exc:
                if exc.status == 403:
                    continue
                raise
            if live is not None:
                out[key_of(obj)] = live
        return out

    def _list_live(self, members, selector=None):
        by_name = {name_of(obj): key_of(obj) for obj in members}
        path = self._path(members[0], with_name=False)
        subject = "/".join(p for p in (members[0]["kind"], namespace_of(members[0])) if p)
        query = {"limit": str(LIST_PAGE)}
        if selector:
            query["labelSelector"] = selector
        out = {}
        while True:
            try:
                page = self.kube.request("GET", path, query=query, accept=METADATA_LIST_ACCEPT,
                                         subject=subject).data or {}
            except ApiError as exc:
                if exc.status == 403:
                    return self._get_live(members)
                raise
            for item in page.get("items") or []:
                key = by_name.get((item.get("metadata") or {}).get("name"))
                if key is not None:
                    out[key] = item
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return out
            query["continue"] = token

    def _patch(self, obj, force):
        query = {"fieldManager": FIELD_MANAGER, "force": "true" if force else "false"}
        if self.options.dry_run:
            query["dryRun"] = "All"
        return self.kube.request("PATCH", self._path(obj), query=query, body=obj, content_type=APPLY_PATCH,
                                 subject=ref(obj))

    def _apply_with_conflicts(self, obj):
        """Apply; on a field-manager conflict report (or refuse) the takeover. Returns (response, takeovers)."""
        try:
            return self._patch(obj, force=False), []
        except ConflictError as exc:
            takeovers = conflicts(exc)
            if not takeovers:
                raise
            if not self.options.force:
                raise conflict_error(obj, takeovers) from exc
            return self._patch(obj, force=True), takeovers

    def apply_one(self, obj):
        started = time.monotonic()
        subject = ref(obj)
        live = before = self.get(obj)
        policies = lifecycle.delete_policies(obj)
        recreated = False
        if live is not None and lifecycle.BEFORE_CREATION in policies:
            if self.options.dry_run:
                return Change(subject, RECREATED, reason="delete-policy before-creation",
                              seconds=time.monotonic() - started)
            self.delete(live, wait=True, propagation=lifecycle.delete_propagation(obj), uid=_uid(live))
            live, recreated = None, True
        try:
            resp, takeovers = self._apply_with_conflicts(obj)
        except ApiError as exc:
            if _NOT_IN_SCHEMA in exc.message:
                raise ApiError(exc.message, status=exc.status, reason=exc.reason, subject=subject,
                               hint="the manifest has a field that %s %s does not define: fix its name or "
                                    "indentation, or the apiVersion" % (obj.get("apiVersion"), obj.get("kind"))
                               ) from exc
            if (exc.status == 422 and live is not None and lifecycle.BEFORE_CREATION_IF_IMMUTABLE in policies
                    and lifecycle.is_immutable_error(str(exc))):
                if self.options.dry_run:
                    return Change(subject, RECREATED, reason="immutable field changed: would recreate",
                                  seconds=time.monotonic() - started)
                self.delete(live, wait=True, propagation=lifecycle.delete_propagation(obj), uid=_uid(live))
                resp, takeovers = self._apply_with_conflicts(obj)
                live, recreated = None, True
            else:
                raise
        result = resp.data
        if recreated:
            action = RECREATED
        elif live is None:
            action = CREATED
        else:
            # the server wrote nothing (same resourceVersion), or only fields it manages itself changed since
            # the read (a controller wrote status in between): unchanged. Dry-run results carry no new version.
            same_rv = not self.options.dry_run and (live.get("metadata") or {}).get("resourceVersion") == \
                (result.get("metadata") or {}).get("resourceVersion")
            action = UNCHANGED if same_rv or same(live, result) else CONFIGURED
        change = Change(subject, action, warnings=list(resp.warnings), takeovers=takeovers)
        if takeovers:
            change.reason = "took over %s" % ", ".join("%(field)s from %(manager)s" % t for t in takeovers)
        if self.options.diff and action != UNCHANGED:
            change.diff = diff_entry(before, result, subject, self.options.salt)
        change.seconds = time.monotonic() - started
        return change

    def delete(self, obj, wait=True, propagation=None, uid=None):
        """Delete one object (by its served apiVersion); absent is not an error. Returns True if it existed.

        The options travel in the DeleteOptions body (the API server ignores the query parameters when a
        body is sent): propagation, dryRun in check mode, and with ``uid`` a precondition so that only the
        object that was read is deleted. ``wait`` waits until it is gone (or replaced by a new object).
        """
        subject = ref(obj)
        policy = propagation or lifecycle.delete_propagation(obj)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy}
        query = {"propagationPolicy": policy}
        if uid:
            body["preconditions"] = {"uid": uid}
        if self.options.dry_run:
            body["dryRun"] = ["All"]
            query["dryRun"] = "All"
        try:
            self.kube.request("DELETE", self._path(obj), query=query, subject=subject, body=body)
        except NotFoundError:
            return False
        if wait and not self.options.dry_run:
            deadline = time.monotonic() + self.options.delete_timeout
            while time.monotonic() < deadline:
                live = self.get(obj)
                if live is None or (uid and (live.get("metadata") or {}).get("uid") != uid):
                    return True
                time.sleep(0.25)
            raise ApplyError("was not deleted within %ss (finalizers?)" % self.options.delete_timeout,
                             subject=subject, hint="check its finalizers and the controllers that own them")
        return True

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

    def apply_tier(self, objects):
        """Apply independent objects concurrently; raise ApplyError with the partial change set on failure.

        Without ``force`` the tier is dry-run first and nothing of it is written when any object is refused.
        """
        if not objects:
            return []
        if not self.options.force and not self.options.dry_run:
            self.preflight(objects)
        results, errors = self._each(objects, self.apply_one)
        done = [r for r in results if r is not None]
        if errors:
            raise ApplyError("%d object(s) failed to apply:\n- %s" % (len(errors), "\n- ".join(errors)),
                             partial=done)
        return done

    def _check_one(self, obj):
        """Dry-run apply without force; None when the server would accept it (or a delete policy recreates it)."""
        policies = lifecycle.delete_policies(obj)
        if lifecycle.BEFORE_CREATION in policies:
            return None
        query = {"fieldManager": FIELD_MANAGER, "force": "false", "dryRun": "All"}
        try:
            self.kube.request("PATCH", self._path(obj), query=query, body=obj, content_type=APPLY_PATCH,
                              subject=ref(obj))
        except ConflictError as exc:
            takeovers = conflicts(exc)
            if takeovers:
                raise conflict_error(obj, takeovers) from exc
            raise
        except NotFoundError:
            return None  # e.g. a namespace of this tier's objects that does not exist: apply says it
        except ApiError as exc:
            if (exc.status == 422 and lifecycle.BEFORE_CREATION_IF_IMMUTABLE in policies
                    and lifecycle.is_immutable_error(str(exc))):
                return None
            raise
        return None

    def preflight(self, objects):
        """Dry-run every object of a tier; ApplyError naming each refused object before anything is written."""
        _results, errors = self._each(objects, self._check_one)
        if errors:
            raise ApplyError("%d object(s) refused, nothing of their tier was applied:\n- %s"
                             % (len(errors), "\n- ".join(errors)), partial=[],
                             hint="fix the objects named here and deploy again")

    def wait_established(self, crds, timeout=None):
        """Wait until CRDs are Established and every served version of theirs is in discovery."""
        if not crds or self.options.dry_run:
            return
        timeout = self.options.established_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        pending = list(crds)
        while pending and time.monotonic() < deadline:
            pending = [c for c in pending if compute(self.get(c)).status != CURRENT]
            if pending:
                time.sleep(0.2)
        if pending:
            raise ApplyError("CustomResourceDefinition(s) not Established within %ss: %s"
                             % (timeout, ", ".join(ref(c) for c in pending)),
                             hint="check the CRDs' conditions (kubectl describe crd) and the API server log")
        while True:
            self.discovery.refresh()
            missing = [api_version + " " + kind for api_version, kind in crd_kinds(crds)
                       if not self.discovery.served(api_version, kind)]
            if not missing:
                return
            if time.monotonic() >= deadline:
                raise ApplyError("CustomResourceDefinition(s) Established but not served by discovery within %ss: "
                                 "%s" % (timeout, ", ".join(missing)),
                                 hint="check the API server's aggregated discovery, then deploy again")
            time.sleep(0.2)


def crd_kinds(crds):
    """(apiVersion, kind) of every served version of the given CRDs."""
    out = []
    for crd in crds:
        spec = crd.get("spec") or {}
        kind = (spec.get("names") or {}).get("kind")
        for version in spec.get("versions") or []:
            if kind and version.get("served", True):
                out.append(("%s/%s" % (spec.get("group"), version.get("name")), kind))
    return out


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


def _uid(obj):
    return (obj.get("metadata") or {}).get("uid")


def _named(obj, exc):
    text = scrub_secret_values(obj, str(exc))
    return text if text.startswith(ref(obj)) else "%s apply failed: %s" % (ref(obj), text)
