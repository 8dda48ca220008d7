# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The traffic operation in progress of a release key: what step, promote, abort, retire and rollback write into the
locator (field ``inProgress``, a JSON object) before their first write and clear after their last, so that a run
killed in between (AWX's cancel, a lost runner, an OOM kill) leaves ``status`` and the next run what they need: the
operation, its target weights and replicas, who ran it and when. Pure functions; the writes are in state.py.

The record: ``{"operation": "step", "percent": 10, "version": "2.0.0", "slot": "b", "weights": {"a": 90, "b": 10},
"replicas": {"Deployment/shop-prod/shop-b": 1}, "by": "<lock holder>", "started": "<time>"}``, plus ``stopped`` and
``reason`` when the run could still say why it stopped (a signal, an error)."""

from __future__ import annotations

import json

FIELD = "inProgress"


def encode(record):
    """The locator value of ``record`` (compact JSON, keys sorted)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))


def decode(text):
    """The record kept in the locator value ``text``; None when there is none; ``{"unreadable": text}`` when it is
    not a JSON object (status says so, the next operation replaces it)."""
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    return record if isinstance(record, dict) else {"unreadable": str(text)}


def title(record):
    """``step to 10 %``, ``promote of 2.0.0``, ``abort of 2.0.0``, ``retire of 1.0.0``, ``rollback to 1.0.0``."""
    if "unreadable" in record:
        return "an operation (its record is unreadable: %s)" % record["unreadable"][:200]
    operation = record.get("operation") or "?"
    if operation == "step":
        return "step to %s %%" % record.get("percent", "?")
    return "%s %s %s" % (operation, "to" if operation == "rollback" else "of", record.get("version") or "?")


def same(record, other):
    """Whether two records are the same operation with the same targets (a rerun finishes the first)."""
    keys = ("operation", "percent", "version", "slot", "weights")
    return bool(record and other) and all(record.get(key) == other.get(key) for key in keys)


def weights_text(weights):
    return ", ".join("%s %s" % pair for pair in sorted((weights or {}).items())) or "-"


def describe(record, weights=None, workloads=None):
    """One sentence for ``status``: the operation that did not finish, who started it and when, how it ended when
    known, the route's weights now (``weights``, {slot: weight}, None when unread) against its target, and each
    workload (``workloads``: {ref: (spec.replicas or None when absent, ready replicas)}) not at its target."""
    text = "%s interrupted: started %s by %s, not finished" % (
        title(record), record.get("started") or "?", record.get("by") or "?")
    if record.get("stopped"):
        text += " (stopped %s: %s)" % (record["stopped"], record.get("reason") or "?")
    else:
        text += " (its run ended without a word: killed)"
    parts = []
    if weights is not None and record.get("weights"):
        parts.append("the route sends %s, target %s%s" % (
            weights_text(weights), weights_text(record["weights"]),
            "" if weights == record["weights"] else " (weights not written yet)"))
    for ref, wanted in sorted((record.get("replicas") or {}).items()):
        spec, ready = (workloads or {}).get(ref, (None, 0))
        lag = _workload_lag(ref, wanted, spec, ready)
        if lag:
            parts.append(lag)
    return text + ("; " + "; ".join(parts) if parts else "") + "; " + next_step(record)


def _workload_lag(ref, wanted, spec, ready):
    if spec is None:
        return "%s not found (target %s replicas)" % (ref, wanted) if wanted else ""
    if spec < wanted:
        return "scale-up of %s to %s replicas not finished (%s now)" % (ref, wanted, spec)
    if spec > wanted:
        return "scale-down of %s to %s replicas not done (%s now)" % (ref, wanted, spec)
    if wanted and (ready or 0) < wanted:
        return "%s at %s replicas, %s ready" % (ref, wanted, ready or 0)
    return ""


def next_step(record):
    """What the next run does about it."""
    operation = record.get("operation")
    if operation == "step":
        return "rerun the %s to finish it, step elsewhere, or abort" % title(record)
    if operation == "promote":
        return "rerun promote to finish it, or abort"
    if operation in ("abort", "retire", "rollback"):
        return "rerun %s to finish it" % operation
    return "rerun the operation, or abort"
