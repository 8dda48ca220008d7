# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Change sets: what a deploy did to each object (Flux's ``ssa`` change set entries).

Every mutating step (apply, recreate, prune) records one :class:`Change` per object: its subject
(``Kind/namespace/name``), the action, the server's warnings, the fields taken over from other field
managers, the diff in diff mode and why it was skipped or deleted. ``changed``, counts and Ansible
warnings derive from the change set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CREATED, CONFIGURED, UNCHANGED, DELETED, SKIPPED, RECREATED = (
    "created", "configured", "unchanged", "deleted", "skipped", "recreated")
CHANGING = (CREATED, CONFIGURED, DELETED, RECREATED)


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


def counts(changes):
    """{action: number of changes with it}."""
    out = {}
    for c in changes:
        out[c.action] = out.get(c.action, 0) + 1
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
