# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``status`` operation: the slots, their versions, weights and readiness; reads only."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.status import compute
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.scaler import is_workload


def status(traffic, result, _percent=None):
    """Fill ``result`` (TrafficResult) with the state of the release key of ``traffic`` (operations.py Traffic)."""
    data = traffic.state.read()
    result.weights = traffic.router.weights()
    result.route = traffic.router.describe()
    result.history = traffic.state.view(data)
    result.history["slots"] = {}
    for version, slot in ((data.get("version"), data.get("slot")),
                          (data.get("candidate"), data.get("candidateSlot"))):
        if version and slot:
            result.history["slots"][slot] = _slot_status(traffic, version, slot, result.weights.get(slot, 0))


def _slot_status(traffic, version, slot, weight):
    states = {}
    for obj in traffic.state.slot_objects(version, slot):
        if is_workload(obj):
            live = traffic.scaler.get(obj)
            states[ref(obj)] = {"status": compute(live).status,
                                "replicas": ((live or {}).get("spec") or {}).get("replicas")}
    ready = bool(states) and all(state["status"] == "Current" for state in states.values())
    return {"version": version, "weight": weight, "ready": ready, "workloads": states}
