# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``status`` operation: the slots, their versions, weights and readiness, every rule of the route that sends to
a slot, the operation that did not finish (if one) and the release lock; reads only."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.status import compute
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import pending
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.scaler import is_workload
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.weights import (
    OTHER, WEIGHTED, describe_share)


def status(traffic, result, _percent=None):
    """Fill ``result`` (TrafficResult) with the state of the release key of ``traffic`` (operations.py Traffic); what
    needs a look (an operation that did not finish, a held lock, rules that disagree) is also in its warnings."""
    data = traffic.state.read()
    route = traffic.router.read()
    result.weights = traffic.router.weights(route)
    found = traffic.router.shares(route)
    result.route = traffic.router.describe(rules=[
        {"rule": share.name, "weights": share.weights, "role": share.role} for share in found])
    result.warnings.extend(_rule_warnings(found))
    result.history = traffic.state.view(data)
    result.history["slots"] = {}
    live = {}
    for version, slot in ((data.get("version"), data.get("slot")),
                          (data.get("candidate"), data.get("candidateSlot"))):
        if version and slot:
            result.history["slots"][slot] = _slot_status(traffic, version, slot, result.weights.get(slot, 0), live)
    result.history["lock"] = lock = traffic.state.lock(data)
    if lock["holder"]:
        result.warnings.append("the release lock is %s by %s since %s, until %s%s" % (
            lock["state"], lock["holder"], lock["since"] or "?", lock["expires"] or "?",
            ": the next operation takes it over" if lock["state"] == "expired" else
            " (it expires by itself; break_lock: true takes it at once, only if that run is gone)"))
    record = pending.decode(data.get(pending.FIELD))
    if record:
        for name in (record.get("replicas") or {}):
            if name not in live:
                live[name] = _replicas(traffic, name)
        record["summary"] = pending.describe(record, result.weights, live)
        result.warnings.append(record["summary"])
    result.history["in_progress"] = record or {}


def _rule_warnings(found):
    """The rules manent does not weigh that send to a slot, and weighted rules that disagree."""
    out = []
    weighted = {tuple(sorted(share.weights.items())) for share in found if share.role == WEIGHTED}
    if len(weighted) > 1:
        out.append("the weighted rules of the route disagree (changed by hand?): %s; the next step writes them all"
                   % "; ".join(describe_share(share) for share in found if share.role == WEIGHTED))
    for share in found:
        if share.role == OTHER and any(share.weights.values()):
            out.append("%s sends to a slot but does not list both: manent leaves it as it is, and retire refuses to "
                       "scale down a slot it sends to" % describe_share(share))
    return out


def _slot_status(traffic, version, slot, weight, live):
    states = {}
    for obj in traffic.state.slot_objects(version, slot):
        if is_workload(obj):
            current = traffic.scaler.get(obj)
            spec = ((current or {}).get("spec") or {})
            live[ref(obj)] = (None if current is None else spec.get("replicas"),
                              ((current or {}).get("status") or {}).get("readyReplicas") or 0)
            states[ref(obj)] = {"status": compute(current).status, "replicas": spec.get("replicas")}
    ready = bool(states) and all(state["status"] == "Current" for state in states.values())
    return {"version": version, "weight": weight, "ready": ready, "workloads": states}


def _replicas(traffic, name):
    """(spec.replicas, ready replicas) of the workload ``Kind/namespace/name`` (None, 0 when absent)."""
    kind, namespace, obj_name = name.split("/", 2)
    current = traffic.scaler.get({"apiVersion": "apps/v1", "kind": kind,
                                  "metadata": {"namespace": namespace, "name": obj_name}})
    if current is None:
        return None, 0
    return (current.get("spec") or {}).get("replicas"), (current.get("status") or {}).get("readyReplicas") or 0
