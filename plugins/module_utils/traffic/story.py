# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Event each traffic operation records when it completed (cluster/events.py, docs/events.md): TrafficStep,
Promoted, Aborted, Retired and RolledBack, regarding the history record of the version it moved, with the versions,
slots and weights in its note. Nothing when the operation wrote nothing (a rerun) or in check mode; a refused
write is a warning of the operation, never its failure."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.events import record_ref
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name


def _tell(traffic, result, version, reason, note):
    if not result.written:
        return
    store = traffic.state.store
    regarding = record_ref(store.namespace, record_name(store.key, version))
    traffic.events.record(regarding, reason, "%s; route %s" % (note, traffic.router.ref), result.warnings)


def _weights(result):
    return ", ".join("slot %s %s%%" % pair for pair in sorted(result.weights.items())) or "unknown"


def step(traffic, result, data, version, slot, percent):
    stable = data.get("version") or "none"
    _tell(traffic, result, version, "TrafficStep",
          "candidate %s (slot %s) at %s%% of the traffic, %s in service (weights: %s)"
          % (version, slot, percent, stable, _weights(result)))


def promote(traffic, result, data, version, slot):
    replaced = data.get("version")
    _tell(traffic, result, version, "Promoted",
          "version %s (slot %s) promoted: all traffic, in service%s (weights: %s)"
          % (version, slot, ", replacing %s (slot %s, retired after scale_down_delay)" % (replaced, data.get("slot"))
             if replaced else "", _weights(result)))


def abort(traffic, result, data, version, slot):
    _tell(traffic, result, version, "Aborted",
          "candidate %s (slot %s) aborted: all traffic back to %s (slot %s), the candidate scaled to zero (weights: %s)"
          % (version, slot, data.get("version"), data.get("slot"), _weights(result)))


def retire(traffic, result, data, version, slot):
    _tell(traffic, result, version, "Retired",
          "version %s (slot %s) retired: scaled to zero; %s in service in slot %s (weights: %s)"
          % (version, slot, data.get("version"), data.get("slot"), _weights(result)))


def rollback(traffic, result, data, version, slot):
    _tell(traffic, result, version, "RolledBack",
          "traffic rolled back from %s (slot %s) to %s (slot %s): all traffic, in service again (weights: %s)"
          % (data.get("version"), data.get("slot"), version, slot, _weights(result)))
