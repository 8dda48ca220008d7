# -*- coding: utf-8 -*-
# Copyright: manent developers
# Apache License 2.0 (see LICENSE)
"""Server-side apply of objects, one tier at a time, objects of a tier concurrently.

Per object: read the live object, apply with field manager ``manent`` (dry-run in check mode),
and decide the action from what the server returned: ``created`` (it did not exist),
``unchanged`` (same resourceVersion: the server wrote nothing; in dry-run, the normalized result
equals the live object), ``configured`` otherwise. Conflicts with other field managers are taken
over by default (``force``, like Flux and Argo CD) and reported per object; with ``force: false``
a conflict is an error naming the fields and managers. Delete policies (before-creation,
before-creation-if-immutable) recreate objects. The server's Warning headers are kept per object.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.diff import diff_entry, same
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import (
    ApiError, ApplyError, ConflictError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.module_utils.identity import FIELD_MANAGER
from ansible_collections.manent.kubernetes.plugins.module_utils.objects import name_of, namespace_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.status import CURRENT, compute

APPLY_PATCH = "application/apply-patch+yaml"
CREATED, CONFIGURED, UNCHANGED, DELETED, SKIPPED, RECREATED = (
    "created", "configured", "unchanged", "deleted", "skipped", "recreated")
CHANGING = (CREATED, CONFIGURED, DELETED, RECREATED)
_CONFLICT = re.compile(r'conflict with "([^"]+)"')


@dataclass
class ApplyOptions:
    force: bool = True
    concurrency: int = 8
    dry_run: bool = False
    diff: bool = False
    delete_timeout: float = 120.0
    salt: str = ""


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
                raise ConflictError("server-side apply conflict: %s" % "; ".join(takeovers), status=409,
                                    reason="Conflict", subject=ref(obj),
                                    hint="another field manager owns these fields: remove them from the manifest, "
                                         "or allow manent to take them over (force: true)")
            return self._patch(obj, force=True), takeovers

    def apply_one(self, obj, phase="upgrade"):
        started = time.monotonic()
        subject = ref(obj)
        live = self.get(obj)
        policies = lifecycle.delete_policies(obj)
        recreated = False
        if live is not None and lifecycle.BEFORE_CREATION in policies:
            if self.options.dry_run:
                return Change(subject, RECREATED, reason="delete-policy before-creation",
                              seconds=time.monotonic() - started)
            self.delete(live, wait=True)
            live, recreated = None, True
        try:
            resp, takeovers = self._apply_with_conflicts(obj)
        except ApiError as exc:
            if (exc.status == 422 and live is not None and lifecycle.BEFORE_CREATION_IF_IMMUTABLE in policies
                    and lifecycle.is_immutable_error(str(exc))):
                if self.options.dry_run:
                    return Change(subject, RECREATED, reason="immutable field changed: would recreate",
                                  seconds=time.monotonic() - started)
                self.delete(live, wait=True)
                resp, takeovers = self._apply_with_conflicts(obj)
                live, recreated = None, True
            else:
                raise
        result = resp.data
        if recreated:
            action = RECREATED
        elif live is None:
            action = CREATED
        elif self.options.dry_run:
            action = UNCHANGED if same(live, result) else CONFIGURED
        else:
            same_rv = (live.get("metadata") or {}).get("resourceVersion") == \
                (result.get("metadata") or {}).get("resourceVersion")
            action = UNCHANGED if same_rv else CONFIGURED
        change = Change(subject, action, warnings=list(resp.warnings), takeovers=takeovers)
        if self.options.diff and action != UNCHANGED:
            change.diff = diff_entry(live, result, subject, self.options.salt)
        change.seconds = time.monotonic() - started
        return change

    def delete(self, obj, wait=True, propagation=None):
        """Delete one object (by its served apiVersion); absent is not an error. Returns True if it existed."""
        subject = ref(obj)
        policy = propagation or lifecycle.delete_propagation(obj)
        query = {"propagationPolicy": policy}
        if self.options.dry_run:
            query["dryRun"] = "All"
        try:
            self.kube.request("DELETE", self._path(obj), query=query, subject=subject,
                              body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy})
        except NotFoundError:
            return False
        if wait and not self.options.dry_run:
            deadline = time.monotonic() + self.options.delete_timeout
            while time.monotonic() < deadline:
                if self.get(obj) is None:
                    return True
                time.sleep(0.25)
            raise ApplyError("was not deleted within %ss (finalizers?)" % self.options.delete_timeout,
                             subject=subject, hint="check its finalizers and the controllers that own them")
        return True

    # ------------------------------------------------------------------ a tier

    def apply_tier(self, objects, phase="upgrade"):
        """Apply independent objects concurrently; raise ApplyError with the partial change set on failure."""
        if not objects:
            return []
        workers = max(1, min(self.options.concurrency, len(objects)))
        results, errors = [None] * len(objects), []
        if workers == 1:
            for i, obj in enumerate(objects):
                try:
                    results[i] = self.apply_one(obj, phase)
                except ApiError as exc:
                    errors.append(_named(obj, exc))
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [(i, obj, pool.submit(self.apply_one, obj, phase)) for i, obj in enumerate(objects)]
                for i, obj, fut in futures:
                    try:
                        results[i] = fut.result()
                    except ApiError as exc:
                        errors.append(_named(obj, exc))
        done = [r for r in results if r is not None]
        if errors:
            raise ApplyError("%d object(s) failed to apply:\n- %s" % (len(errors), "\n- ".join(errors)),
                             partial=done)
        return done

    def wait_established(self, crds, timeout=60.0):
        """Wait until CRDs are Established and their kinds are served by discovery."""
        if not crds or self.options.dry_run:
            return
        deadline = time.monotonic() + timeout
        pending = list(crds)
        while pending and time.monotonic() < deadline:
            pending = [c for c in pending if compute(self.get(c)).status != CURRENT]
            if pending:
                time.sleep(0.2)
        if pending:
            raise ApplyError("CustomResourceDefinition(s) not Established within %ss: %s"
                             % (timeout, ", ".join(ref(c) for c in pending)))
        self.discovery.refresh()


def conflicts(exc):
    """'field .spec.replicas (owned by kubectl-client-side-apply)' lines from a 409 apply conflict."""
    out = []
    for cause in (exc.body.get("details") or {}).get("causes") or []:
        if cause.get("reason") != "FieldManagerConflict":
            continue
        m = _CONFLICT.search(cause.get("message") or "")
        out.append("field %s (owned by %s)" % (cause.get("field"), m.group(1) if m else cause.get("message")))
    return out


def _named(obj, exc):
    text = str(exc)
    return text if text.startswith(ref(obj)) else "%s apply failed: %s" % (ref(obj), text)
