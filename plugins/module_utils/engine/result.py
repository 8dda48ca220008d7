# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one deploy did (:class:`DeployResult`): the change set, pruned objects, waits, history writes, timings; its
``to_dict`` is manent_apply's result (docs/requirements.md §11)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import (
    CHANGING, CONFIGURED, CREATED, DELETED, RECREATED, UNCHANGED, counts)
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle

APPLIED = (CREATED, CONFIGURED, UNCHANGED, RECREATED)


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
    phase: str = lifecycle.UPGRADE
    slot: str = ""
    record: str = ""
    host: str = ""
    hooks_skipped: list = field(default_factory=list)
    stages: list = field(default_factory=list)
    namespace_created: str = ""  # the release namespace that create_namespace created: not an object of the release
    application: str = ""  # the release key's application and environment: the deploy role's summary names them
    environment: str = ""

    @property
    def changed(self):
        return any(c.action in CHANGING for c in self.changes) or bool(self.pruned) or bool(
            self.history.get("written"))

    @property
    def objects(self):
        """Objects of the release applied (or dry-run), each once: not those pruned, skipped or only deleted, nor the
        release namespace that create_namespace created (the same count on the first deploy and on the next)."""
        created = "Namespace/%s" % self.namespace_created if self.namespace_created else None
        return len({c.subject for c in self.changes if c.action in APPLIED and c.subject != created})

    def story(self, error=None):
        """(reason, note) of the Event that tells what this deploy or rollback did (cluster/events.py), or (None,
        None) when it changed nothing; ``error``: the error it failed with."""
        rollback = self.phase == lifecycle.ROLLBACK
        if error is not None:
            what = "rollback to version %s" % self.release if rollback else "version %s" % self.release
            stays = "; %s stays in service" % self.previous if self.previous and not rollback else ""
            return ("RollbackFailed" if rollback else "DeployFailed"), "%s failed%s: %s" % (what, stays, error)
        if not self.changed:
            return None, None
        done = counts(self.changes)
        objects = ", ".join("%d %s" % (done[action], action) for action in APPLIED + (DELETED,) if done.get(action))
        tail = "%d objects (%s)%s" % (self.objects, objects or "none written",
                                      ", %d pruned" % len(self.pruned) if self.pruned else "")
        if rollback:
            return "RolledBack", "rolled back from version %s to %s: %s" % (self.previous or "-", self.release, tail)
        if self.slot:
            return "Deployed", ("version %s deployed to slot %s as the candidate, no traffic yet (in service: %s): %s"
                                % (self.release, self.slot, self.previous or "none", tail))
        replacing = ", replacing %s" % self.previous if self.previous and self.previous != self.release else ""
        return "Deployed", "version %s deployed%s: %s" % (self.release, replacing, tail)

    def to_dict(self):
        return {
            "host": self.host,
            "status": self.status,
            "changed": self.changed,
            "details": {
                "namespace": self.namespace, "objects": self.objects, "release": self.record,
                "version": self.release, "previous": self.previous, "pruned": self.pruned,
                "helm_hooks_skipped": self.hooks_skipped, "objects_skipped": self.objects_skipped,
                "phase": self.phase, "slot": self.slot, "namespace_created": self.namespace_created,
                "application": self.application, "environment": self.environment,
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
