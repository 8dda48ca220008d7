# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The traffic state of one release key in one namespace, read from its history: the locator (the release in
service and its slot, the candidate and its slot and weight, the replaced and retired releases, the operation in
progress and the lock) and the stored slot objects of a version; and the record of the operation in progress
(pending.py), written before an operation's first write and cleared after its last."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.history import locator_format, times
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import pending


class ReleaseState:
    """Reads of the history ``store`` (history/store.py HistoryStore) of one release key in ``namespace``."""

    def __init__(self, store, namespace, dry_run=False, now=None):
        self.store = store
        self.namespace = namespace
        self.dry_run = dry_run
        self.now = now or times.utcnow
        self.last = {}  # the locator as read last
        self.begun = None  # the record of the operation in progress this run wrote

    def read(self):
        """The locator with the release in service and the candidate (InputError when nothing is in service and
        there is no candidate)."""
        data = self.store.locator()
        self.last = data or {}
        if not data or not (data.get("version") or data.get("candidate")):
            raise InputError("no release of this key in namespace %s" % self.namespace, subject=self.subject(),
                             hint="deploy a release with the traffic strategy first")
        return data

    def begin(self, operation, result, version, slot, weights, replicas, percent=None):
        """Record ``operation`` in progress before its first write (not in check mode): its ``version`` and
        ``slot``, the target ``weights`` ({slot: weight}) and ``replicas`` ({ref: replicas}), who and when. An
        earlier operation that did not finish is named in the result's warnings: this one finishes or replaces it."""
        record = {"operation": operation, "version": version, "slot": slot, "weights": weights,
                  "replicas": replicas, "by": self.store.holder, "started": times.format_time(self.now())}
        if percent is not None:
            record["percent"] = percent
        earlier = pending.decode(self.last.get(pending.FIELD))
        if earlier:
            result.warnings.append("the %s started %s by %s did not finish: this %s %s it" % (
                pending.title(earlier), earlier.get("started", "?"), earlier.get("by", "?"), pending.title(record),
                "finishes" if pending.same(earlier, record) else "replaces"))
        if self.dry_run:
            return
        self.store.update_locator("record the %s in progress" % pending.title(record),
                                  **{pending.FIELD: pending.encode(record)})
        self.begun = record

    def finish(self):
        """Clear the record of the operation this run began (it ended)."""
        if self.begun is not None:
            self.store.update_locator("clear the %s in progress" % pending.title(self.begun), **{pending.FIELD: ""})
            self.begun = None

    def stopped(self, reason):
        """Add to the record of the operation this run began when and why it stopped (best effort: a failure to
        write it leaves the record as it was, which says the operation did not finish)."""
        if self.begun is None:
            return
        record = dict(self.begun, stopped=times.format_time(self.now()), reason=reason[:300])
        try:
            self.store.update_locator("note where the %s stopped" % pending.title(record),
                                      **{pending.FIELD: pending.encode(record)})
        except ManentError:
            pass

    def lock(self, data):
        """The lock of the locator ``data``: {holder, since, expires, state: free|held|expired}."""
        try:
            state = locator_format.lock_state(data, self.now())[0]
        except ManentError:
            state = "unreadable"
        return {"holder": data.get("lockHolder") or "", "since": data.get("lockSince") or "",
                "expires": data.get("lockExpires") or "", "state": state}

    def subject(self):
        return "traffic of %s in %s" % (self.store.locator_name, self.namespace)

    def candidate(self, data):
        """(version, slot) of the candidate; InputError when there is none."""
        if not data.get("candidate"):
            raise InputError("there is no candidate release to move traffic to", subject=self.subject(),
                             hint="deploy a new version with the traffic strategy; it becomes the candidate")
        return data["candidate"], data["candidateSlot"]

    def slot_objects(self, version, slot):
        """The stored objects of ``version`` that belong to ``slot`` (values of Secrets are not needed)."""
        objects = self.store.load(version, secrets=False)[1]
        return [obj for obj in objects if slots.slot_of(obj) == slot and slots.is_slot_kind(obj)]

    def view(self, data=None):
        """The result's ``history``: in service, candidate, replaced, retired, promoted (``data``: the locator,
        read again when not given)."""
        data = (self.store.locator() or {}) if data is None else data
        return {"in_service": {"version": data.get("version", ""), "slot": data.get("slot", "")},
                "candidate": {"version": data.get("candidate", ""), "slot": data.get("candidateSlot", ""),
                              "weight": data.get("weight", "")},
                "replaced": data.get("replaced", ""), "retired": data.get("retired", ""),
                "promoted": data.get("promoted", "")}
