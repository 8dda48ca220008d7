# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""verdict.decide and verdict.overall: the rules of docs/analysis.md#verdicts, one sequence of outcomes at a time."""

from __future__ import annotations

import types

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.evaluate import (
    ERROR, FAILED, INCONCLUSIVE, SKIPPED, SUCCESSFUL)
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.model import Check
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.verdict import Counters, decide, overall

S, F, I, E, K = SUCCESSFUL, FAILED, INCONCLUSIVE, ERROR, SKIPPED


def play(check, outcomes):
    """The (verdict, reason) after each outcome in turn, stopping at the first verdict; and the counters. Errors
    are numbered (error #1, error #2, ...)."""
    counters = Counters()
    for number, outcome in enumerate(outcomes, 1):
        counters.add(outcome, "error #%d" % (counters.errors + 1) if outcome == E else "")
        verdict, reason = decide(check, counters)
        if verdict is not None:
            return verdict, reason, number, counters
    return None, "", len(outcomes), counters


@pytest.mark.parametrize("limits, outcomes, verdict, after", [
    ({}, [S, S, S], S, 3),
    ({}, [S, F], F, 2),
    ({"failure_limit": 1}, [F, S, S], S, 3),
    ({"failure_limit": 1}, [F, S, F], F, 3),
    ({}, [S, I], I, 2),
    ({"inconclusive_limit": 1}, [I, S, S], S, 3),
    ({"inconclusive_limit": 1}, [I, I], I, 2),
    # an error is never a success: not counted, and a run of them longer than the limit is the verdict
    ({}, [E, E, E, E, E], E, 5),
    ({}, [E, E, E, E, S, S, S], S, 7),
    ({}, [E, S, E, E, E, E, E], E, 7),
    ({"consecutive_error_limit": 0}, [E], E, 1),
    # skipped (no data, retry) measurements are not counted either
    ({}, [K, S, K, S, S], S, 5),
    # count decided measurements out of reach within max_measurements: Inconclusive as soon as it is known
    ({"max_measurements": 4}, [K, K], I, 2),
    ({"max_measurements": 4}, [S, K], S, None),
    ({"max_measurements": 4}, [S, K, S, K], I, 4),
    # ... Error when errors are why: at least as many of the measurements not counted were errors as were skipped
    ({"max_measurements": 4}, [S, E, E], E, 3),
    ({"max_measurements": 4}, [E, K], E, 2),
    ({"max_measurements": 5}, [S, E, E, E], E, 4),
    ({"max_measurements": 5}, [S, E, K, K], I, 4),
    ({"max_measurements": 5}, [K, E, S, E], E, 4),
    ({}, [E, E, E, E, K, K, K, K, K, K], E, 8),
    ({}, [K, K, K, K, E, E, E, E, K, K], E, 8),
    ({}, [E, E, E, K, K, K, K, K, K, K], I, 8),
    ({}, [E, K, K, K, K, K, K, K], I, 8),
    # a run of errors longer than consecutive_error_limit comes first
    ({"max_measurements": 10}, [S] + [E] * 9, E, 6),
])
def test_rules(limits, outcomes, verdict, after):
    check = Check("c", "q", max=1.0, count=3, **limits)
    got, reason, number, _counters = play(check, outcomes)
    if after is None:
        assert got is None, reason
        return
    assert (got, number) == (verdict, after), reason


def test_reasons_say_which_limit():
    check = Check("c", "q", max=1.0, count=3, failure_limit=1)
    assert play(check, [F, S, F])[1] == "2 of 3 measurements failed (failure_limit 1)"
    assert play(check, [F, S, S])[1] == "2 of 3 measurements successful; 1 failed (failure_limit 1)"
    assert play(Check("c", "q", max=1.0, count=3), [E] * 5)[1] == "5 consecutive errors (consecutive_error_limit 4)"
    assert play(Check("c", "q", max=1.0, count=3), [S, I])[1] == \
        "1 of 2 measurements inconclusive (inconclusive_limit 0)"
    assert play(Check("c", "q", max=1.0, count=2, max_measurements=3), [K, K])[1] == \
        "0 of count 2 measurements decided and max_measurements 3 cannot reach it (2 skipped for lack of data, " \
        "0 errors, of 2 measurements)"
    assert play(Check("c", "q", max=1.0, count=2), [E, S, K, S])[1] == \
        "2 of 2 measurements successful; 1 errors not counted, 1 skipped for lack of data"


@pytest.mark.parametrize("limits, outcomes, reason", [
    # the outage: a step judged once, then Prometheus gone (count 2 of max_measurements 5, 4 errors)
    ({"count": 2, "max_measurements": 5}, [S, E, E, E, E],
     "1 of count 2 measurements decided and max_measurements 5 cannot reach it: 4 of 5 measurements were errors "
     "(0 skipped for lack of data)"),
    # the last measurement was no error: the reason names the last error (else the check's reason ends with it)
    ({"count": 3, "max_measurements": 5}, [E, S, E, K],
     "1 of count 3 measurements decided and max_measurements 5 cannot reach it: 2 of 4 measurements were errors "
     "(1 skipped for lack of data); last error: error #2"),
    ({"count": 2, "max_measurements": 5}, [S, K, K, K, E],
     "1 of count 2 measurements decided and max_measurements 5 cannot reach it (3 skipped for lack of data, "
     "1 errors, of 5 measurements)"),
])
def test_out_of_reach_reasons(limits, outcomes, reason):
    assert play(Check("c", "q", max=1.0, **limits), outcomes)[1] == reason


def test_counters_keep_the_last_error_out_of_the_report():
    counters = Counters()
    counters.add(E, "Prometheus at http://p:9090: unreachable: connection refused")
    counters.add(S)
    assert counters.last_error == "Prometheus at http://p:9090: unreachable: connection refused"
    assert "last_error" not in counters.to_dict()


def test_a_permanent_error_decides_at_once():
    counters = Counters()
    counters.add(ERROR)
    assert decide(Check("c", "q", max=1.0), counters, permanent=True)[0] == ERROR


def test_the_default_budget():
    assert Check("c", "q", count=5, consecutive_error_limit=4).budget == 14
    assert Check("c", "q", count=5, max_measurements=6).budget == 6


def test_counters():
    counters = Counters()
    for outcome in (S, E, E, F, K, I, E):
        counters.add(outcome)
    assert counters.to_dict() == {"measurements": 7, "successful": 1, "failed": 1, "inconclusive": 1, "errors": 3,
                                  "consecutive_errors": 1, "skipped": 1, "decided": 3}


def _check(name, verdict, enforce=True, stopped=False):
    return types.SimpleNamespace(name=name, verdict=verdict, enforce=enforce, stopped=stopped, reason="r-" + name)


@pytest.mark.parametrize("checks, verdict, deciding", [
    ([("a", S), ("b", S)], S, None),
    ([("a", S), ("b", I), ("c", E), ("d", F)], F, "d"),
    ([("a", I), ("b", E)], E, "b"),
    ([("a", S), ("b", I)], I, "b"),
    # not enforced: reported, never deciding
    ([("a", S), ("b", F, False)], S, None),
    ([("a", I), ("b", F, False)], I, "a"),
    # a check stopped by another check's verdict does not take its place
    ([("a", I, True, True), ("b", I)], I, "b"),
])
def test_overall(checks, verdict, deciding):
    got, reason, check = overall([_check(*item) for item in checks])
    assert got == verdict
    assert (check.name if check else None) == deciding
    if deciding:
        assert reason == "check %s %s: r-%s" % (deciding, verdict, deciding)


def test_overall_without_an_enforced_check():
    assert overall([_check("a", F, enforce=False)])[:2] == (S, "no check enforced: 1 reported only")
    assert overall([_check("a", S), _check("b", S)])[1] == "2 of 2 enforced checks successful"
