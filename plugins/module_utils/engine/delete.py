# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one delete path of the engine: recreate (delete policies), prune and rollback delete through it.

A delete sends its options in the DeleteOptions body (the API server ignores the query parameters when a
body is sent): the object's propagation (``werf.io/delete-propagation``, default Foreground), dryRun in
check mode, and with ``uid`` a precondition so that only the object that was read is deleted. With
``wait`` it polls (wait.poll) until the object is gone or replaced by a new one.

A delete policy that acts after a stage (``succeeded``, ``failed``) deletes an object as this deploy left it
(:meth:`Deleter.delete_applied`): the uid and resourceVersion of the apply's answer are the preconditions, so an
object that someone else replaced or changed since is left, saying why. Changed means more than what the server
and Kubernetes' own components write on their own: status, metadata bookkeeping, and annotations under a
``*kubernetes.io/`` prefix that the object does not set (``deployment.kubernetes.io/revision``).

An object stored under an apiVersion the cluster no longer serves is deleted through a served version of
the same kind: of its own group, or of the group the kind moved to (:func:`apiversions.moved_groups`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import writes
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import apiversions, lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApplyError, ConflictError, NotFoundError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import annotations as annotations_of
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import metadata, ref, split_api_version
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.diff import normalize
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.unchanged import holds
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import poll

DELETE_POLL = 0.25


@dataclass
class DeleteOptions:
    """``timeout``: how long a waited delete may take (finalizers); ``dry_run``: dryRun=All, never waits."""

    dry_run: bool = False
    timeout: float = 120.0


class Deleter:
    def __init__(self, kube, discovery, reader, options=None):
        self.kube = kube
        self.discovery = discovery
        self.reader = reader
        self.options = options or DeleteOptions()

    def delete(self, obj, wait=True, propagation=None, uid=None):
        """Delete one object (by its served apiVersion); absent is not an error. Returns True if it existed.

        ``propagation`` defaults to the object's own; ``wait`` waits until it is gone (or replaced by a new
        object), not in check mode."""
        policy = propagation or lifecycle.delete_propagation(obj)
        try:
            writes.delete(self.kube, self.reader.path(obj), ref(obj), propagation=policy, uid=uid,
                          dry_run=self.options.dry_run)
        except NotFoundError:
            return False
        if wait and not self.options.dry_run:
            self._wait_gone(obj, uid)
        return True

    def delete_applied(self, obj, applied=None, wait=True):
        """Delete ``obj`` as this deploy left it. ``applied``: the server's answer to this deploy's apply of it;
        None when the deploy found it unchanged and wrote nothing (then its live copy must still hold ``obj``).
        Returns (True, "") once deleted, (False, "") when it is gone or being deleted already, (False, why) when it
        is left: another object of its name replaced it, or someone else changed it since (only the server's own
        fields, such as status, may differ from the apply's answer)."""
        live = self.reader.get(obj)
        meta = metadata(live or {})
        if live is None or meta.get("deletionTimestamp"):
            return False, ""
        if applied is None:
            if not holds(obj, live):
                return False, "it no longer holds what this deploy found unchanged"
        elif meta.get("uid") != metadata(applied).get("uid"):
            return False, "another object of its name replaced the one this deploy applied"
        elif meta.get("resourceVersion") != metadata(applied).get("resourceVersion") and _changed(obj, applied, live):
            return False, "changed since this deploy applied it%s" % _writers(applied, live)
        try:
            writes.delete(self.kube, self.reader.path(obj), ref(obj), propagation=lifecycle.delete_propagation(obj),
                          uid=meta.get("uid"), resource_version=meta.get("resourceVersion"),
                          dry_run=self.options.dry_run)
        except NotFoundError:
            return False, ""
        except ConflictError:
            return False, "changed while it was being deleted"
        if wait and not self.options.dry_run:
            self._wait_gone(obj, meta.get("uid"))
        return True, ""

    def _wait_gone(self, obj, uid):
        def gone():
            live = self.reader.get(obj)
            return live is None or bool(uid and (live.get("metadata") or {}).get("uid") != uid)

        if not poll(gone, self.options.timeout, interval=DELETE_POLL):
            raise ApplyError("was not deleted within %ss (finalizers?)" % self.options.timeout,
                             subject=ref(obj), hint="check its finalizers and the controllers that own them")

    def served(self, obj):
        """``obj`` with an apiVersion the cluster serves for it: its own, or another version of its kind's
        group or of the group the kind moved to (stored history may hold a removed apiVersion)."""
        if self.discovery.served(obj["apiVersion"], obj["kind"]):
            return obj
        group = split_api_version(obj["apiVersion"])[0]
        groups = [group] + apiversions.moved_groups(group, obj["kind"])
        candidates = ["%s/%s" % (g, v) if g else v for g in groups for v in self.discovery.versions_of(g, obj["kind"])]
        chosen = apiversions.delete_api_version(group, obj["kind"], candidates)
        if not chosen:
            raise ApplyError("cannot delete: the cluster serves no version of %s %s"
                             % (obj["apiVersion"], obj["kind"]),
                             subject=ref(obj), hint="delete it by hand, or rewrite the stored history")
        out = dict(obj)
        out["apiVersion"] = chosen
        return out


def _writers(applied, live):
    """" (by m1, m2)": the field managers whose entries in ``live`` differ from those of ``applied``."""
    before = metadata(applied).get("managedFields") or []
    names = sorted({entry.get("manager") or "?" for entry in metadata(live).get("managedFields") or []
                    if entry not in before})
    return " (by %s)" % ", ".join(names) if names else ""


def _changed(obj, applied, live):
    """True when someone else changed ``live`` since the apply answered ``applied`` (see the module docstring)."""
    return _comparable(obj, applied) != _comparable(obj, live)


def _comparable(obj, copy):
    out = normalize(copy)
    meta = out.get("metadata") or {}
    own = annotations_of(obj)
    kept = {key: value for key, value in (meta.get("annotations") or {}).items()
            if key in own or not key.split("/", 1)[0].endswith("kubernetes.io") or "/" not in key}
    if kept:
        meta["annotations"] = kept
    else:
        meta.pop("annotations", None)
    return out
