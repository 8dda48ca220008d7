# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the deploy role: aligned tables and durations, in Python rather than Jinja.

``manent_table(rows)``: rows (the first is the header) as lines whose columns are aligned.
``manent_seconds(duration)``: whole seconds (rounded up) of a duration such as "90s", "5m", "1m30s".
``manent_traffic_rows(results)``: the rows of the traffic summary from the per-cluster results.
"""

from __future__ import annotations

import math

from ansible.errors import AnsibleFilterError

from ansible_collections.manent.kubernetes.plugins.module_utils.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.helm import parse_duration

TRAFFIC_HEADER = ["host", "operation", "status", "in service", "candidate", "weights a/b", "changed"]


def manent_table(rows):
    """Aligned lines: each column as wide as its widest cell, two spaces between columns."""
    rows = [[str(cell) for cell in row] for row in rows or []]
    if not rows:
        return []
    widths = [max(len(row[index]) if index < len(row) else 0 for row in rows) for index in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[index]) for index, cell in enumerate(row)).rstrip() for row in rows]


def manent_seconds(duration, name="duration"):
    try:
        return int(math.ceil(parse_duration(duration, name=name)))
    except InputError as err:
        raise AnsibleFilterError(str(err)) from err


def _slot_text(part):
    part = part or {}
    if not part.get("version"):
        return "-"
    return "%s (%s)" % (part["version"], part.get("slot") or "-")


def manent_traffic_rows(results):
    """Header plus one row per cluster result (dicts with host, operation, status, outcome)."""
    rows = [TRAFFIC_HEADER]
    for result in results or []:
        outcome = result.get("outcome") or {}
        history = outcome.get("history") or {}
        weights = outcome.get("weights") or {}
        rows.append([result.get("host", "?"), result.get("operation", "-"), result.get("status", "-"),
                     _slot_text(history.get("in_service")), _slot_text(history.get("candidate")),
                     "%s/%s" % (weights.get("a", "-"), weights.get("b", "-")) if weights else "-",
                     "yes" if outcome.get("changed") else "no"])
    return rows


class FilterModule:
    def filters(self):
        return {"manent_table": manent_table, "manent_seconds": manent_seconds,
                "manent_traffic_rows": manent_traffic_rows}
