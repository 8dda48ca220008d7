# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy role's filters (plugins/filter/manent.py)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.manent.kubernetes.plugins.filter.manent import (
    FilterModule, manent_seconds, manent_table, manent_traffic_rows)


def test_table_aligns_columns_and_trims_the_end():
    assert manent_table([["host", "weights"], ["eu1a", "90/10"], ["a-longer-host", "-"]]) == [
        "host           weights",
        "eu1a           90/10",
        "a-longer-host  -",
    ]
    assert manent_table([]) == []


@pytest.mark.parametrize("text, seconds", [("0s", 0), ("90s", 90), ("5m", 300), ("1m30s", 90), ("1.2s", 2),
                                           (7, 7), ("1h", 3600)])
def test_seconds(text, seconds):
    assert manent_seconds(text) == seconds


def test_seconds_rejects_a_bad_duration_naming_it():
    with pytest.raises(AnsibleFilterError) as err:
        manent_seconds("soon", "pause")
    assert "pause" in str(err.value) and "soon" in str(err.value)


def test_traffic_rows():
    results = [
        {"host": "eu1a", "operation": "step", "status": "done",
         "outcome": {"changed": True, "weights": {"a": 90, "b": 10},
                     "history": {"in_service": {"version": "1.0.0", "slot": "a"},
                                 "candidate": {"version": "2.0.0", "slot": "b", "weight": "10"}}}},
        {"host": "us1a", "operation": "step", "status": "failed", "outcome": {}},
    ]
    assert manent_traffic_rows(results) == [
        ["host", "operation", "status", "in service", "candidate", "weights a/b", "changed"],
        ["eu1a", "step", "done", "1.0.0 (a)", "2.0.0 (b)", "90/10", "yes"],
        ["us1a", "step", "failed", "-", "-", "-", "no"],
    ]


def test_filters_are_registered():
    assert sorted(FilterModule().filters()) == ["manent_seconds", "manent_table", "manent_traffic_rows"]
