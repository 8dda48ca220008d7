# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The traffic state of one release key in one namespace, read from its history: the locator (the release in
service and its slot, the candidate and its slot and weight, the replaced and retired releases) and the stored
slot objects of a version."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots


class ReleaseState:
    """Reads of the history ``store`` (history/store.py HistoryStore) of one release key in ``namespace``."""

    def __init__(self, store, namespace):
        self.store = store
        self.namespace = namespace

    def read(self):
        """The locator with the release in service and the candidate (InputError when nothing is in service and
        there is no candidate)."""
        data = self.store.locator()
        if not data or not (data.get("version") or data.get("candidate")):
            raise InputError("no release of this key in namespace %s" % self.namespace, subject=self.subject(),
                             hint="deploy a release with the traffic strategy first")
        return data

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
