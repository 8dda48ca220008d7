# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module's parameters as checks, context and settings (params.py), and the query placeholders
(template.py): defaults, and every refusal naming the check and field and saying what to write."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import template
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.model import Baseline, Context, Settings
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.params import (
    checks_from_params, context_from_params, settings_from_params)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from tests.unit.analysis_fakes import START, check

CONTEXT = Context(namespace="shop", candidate_slot="b", stable_slot="a", candidate_service="shop-b",
                  stable_service="shop-a", start=START)
SETTINGS = Settings(interval=30.0, count=4, min_window=60)


def build(*items, context=CONTEXT):
    return checks_from_params(list(items), SETTINGS, context)


def test_defaults():
    (got,) = build(check())
    assert (got.interval, got.count, got.reducer, got.on_no_data, got.failure_limit, got.inconclusive_limit,
            got.consecutive_error_limit, got.initial_delay, got.enforce, got.allow_warnings) == \
        (30.0, 4, "all", "inconclusive", 0, 0, 4, 0.0, True, False)
    assert got.budget == 12 and got.baseline is None and got.traffic_floor is None


def test_the_values_ansible_gives_for_options_not_set_are_defaults():
    """AnsibleModule fills every suboption not given with None."""
    item = dict.fromkeys(["min", "baseline", "reducer", "interval", "count", "initial_delay", "failure_limit",
                          "inconclusive_limit", "consecutive_error_limit", "max_measurements", "on_no_data",
                          "traffic_floor", "allow_warnings", "enforce"])
    item.update(name="c", query="q", max=1.0)
    (got,) = build(item)
    assert got.count == 4 and got.reducer == "all" and got.enforce is True


def test_a_full_check():
    (got,) = build(check(reducer="max", interval="2m", count="3", initial_delay="30s", failure_limit=1,
                         baseline={"max_factor": "1.5", "max_offset": 0.001, "reducer": None},
                         traffic_floor={"query": "sum(t)", "min": 2}, on_no_data="retry", enforce=False))
    assert got.interval == 120.0 and got.count == 3 and got.initial_delay == 30.0
    assert got.baseline == Baseline(max_factor=1.5, max_offset=0.001) and got.baseline_reducer == "max"
    assert got.traffic_floor.min == 2.0 and got.enforce is False


@pytest.mark.parametrize("item, subject, text, hint", [
    (check(name=""), "checks[0].name", "is missing", "non-empty string"),
    (check(query=None), "checks[0] (c).query", "is missing", "non-empty string"),
    (check(max=None), "checks[0] (c)", "has no condition", "give min and/or max"),
    (check(max="abc"), "checks[0] (c).max", "'abc' is not a number", "0.05"),
    (check(max=float("nan")), "checks[0] (c).max", "is not a number", "0.05"),
    (check(min=2, max=1), "checks[0] (c).min", "2 is greater than max 1: no value can pass", "swap"),
    (check(reducer="median"), "checks[0] (c).reducer", "'median' is not one of all, any", "choose one"),
    (check(on_no_data="ignore"), "checks[0] (c).on_no_data", "'ignore' is not one of fail, inconclusive", ""),
    (check(count=0), "checks[0] (c).count", "0 is less than 1", "at least 1"),
    (check(count="x"), "checks[0] (c).count", "'x' is not a whole number", ""),
    (check(failure_limit=-1), "checks[0] (c).failure_limit", "is not a whole number", "at least 0"),
    (check(interval="0s"), "checks[0] (c).interval", "must be longer than zero", "30s"),
    (check(interval="soon"), "checks[0] (c).interval", "invalid duration 'soon'", "1m30s"),
    (check(max_measurements=2), "checks[0] (c).max_measurements", "2 is less than 4", ""),
    (check(on_no_data="retry", max_measurements=4), "checks[0] (c).max_measurements",
     "leaves no room to retry (4 for count 4)", "raise max_measurements"),
    (check(enforce="maybe"), "checks[0] (c).enforce", "'maybe' is not a boolean", "true or false"),
    (check(thresold=1), "checks[0] (c)", "unknown field thresold", "use name, query"),
    (check(baseline={}), "checks[0] (c).baseline.max_factor", "sets neither max_factor nor min_factor",
     "max_factor: 1.5"),
    (check(baseline={"max_factor": -1}), "checks[0] (c).baseline.max_factor", "not a finite number of at least 0",
     ""),
    (check(baseline={"max_factor": 1, "factor": 2}), "checks[0] (c).baseline", "unknown field factor", ""),
    (check(baseline={"max_factor": 1, "reducer": "all"}), "checks[0] (c).baseline.reducer",
     "'all' is not one of max, min, avg, sum", ""),
    (check(baseline="stable"), "checks[0] (c).baseline", "must be a mapping", ""),
    (check(traffic_floor={"query": "t"}), "checks[0] (c).traffic_floor.min", "must be a finite number",
     "least traffic"),
    (check(traffic_floor={"min": 1}), "checks[0] (c).traffic_floor.query", "is missing", ""),
    (check(query="rate(x[${windw}])"), "checks[0] (c).query", "unknown placeholder ${windw}", "${window}"),
    (check(baseline={"max_factor": 1, "query": "x{a='${nope}'}"}), "checks[0] (c).baseline.query",
     "unknown placeholder ${nope}", ""),
    ("c", "checks[0]", "must be a mapping", ""),
])
def test_refusals_name_check_and_field(item, subject, text, hint):
    with pytest.raises(InputError) as err:
        build(item)
    assert err.value.subject == subject
    assert text in err.value.message, err.value.message
    assert hint in (err.value.hint or "")


def test_names_are_unique():
    with pytest.raises(InputError, match="two checks are named 'c'") as err:
        build(check(), check())
    assert err.value.subject == "checks[1].name"


def test_no_checks():
    with pytest.raises(InputError, match="no checks given"):
        checks_from_params([], SETTINGS, CONTEXT)


def test_a_placeholder_needs_its_context_value():
    context = Context(candidate_service="shop-b", start=START)
    build(check(), context=context)
    with pytest.raises(InputError) as err:
        build(check(baseline={"max_factor": 1.0}), context=context)
    assert err.value.subject == "checks[0] (c).baseline.query"
    assert err.value.message == "uses ${service} but context.stable_service is not set"
    with pytest.raises(InputError, match=r"uses \$\{namespace\} but context.namespace is not set"):
        build(check(traffic_floor={"query": 'sum(t{namespace="${namespace}"})', "min": 1}), context=context)


# -- context and settings ------------------------------------------------------------------------------------

@pytest.mark.parametrize("start, seconds", [
    (START, START), (str(START), START), ("1733306400.5", START + 0.5), ("2024-12-04T10:00:00Z", START),
    ("2024-12-04T11:00:00+01:00", START), ("2024-12-04T10:00:00.250Z", START + 0.25), (None, START + 5),
    ("", START + 5),
])
def test_context_start(start, seconds):
    assert context_from_params({"start": start}, START + 5).start == seconds


@pytest.mark.parametrize("start, text", [
    ("yesterday", "'yesterday' is not a time"), ("2024-12-04T10:00:00", "has no time zone"), (True, "is not a time"),
    (-5, "is not a time"), (START + 3600, "is in the future"),
])
def test_context_start_refused(start, text):
    with pytest.raises(InputError, match=text) as err:
        context_from_params({"start": start}, START)
    assert err.value.subject == "context.start"


def test_context_values_cannot_break_out_of_a_label_matcher():
    with pytest.raises(InputError, match="has characters a PromQL label value cannot take") as err:
        context_from_params({"namespace": 'shop"} or vector(1) #'}, START)
    assert err.value.subject == "context.namespace"
    with pytest.raises(InputError, match="unknown field slot"):
        context_from_params({"slot": "b"}, START)


def test_settings():
    assert settings_from_params({"interval": "2m", "count": 3, "min_window": "90.5s"}) == \
        Settings(interval=120.0, count=3, min_window=91)
    assert settings_from_params({}) == Settings(interval=60.0, count=5, min_window=60)
    with pytest.raises(InputError, match="must be longer than zero") as err:
        settings_from_params({"min_window": "0"})
    assert err.value.subject == "min_window"


# -- placeholders --------------------------------------------------------------------------------------------

def test_rendering_for_each_side():
    query = ('${namespace} ${slot} ${service} ${candidate_slot} ${stable_slot} ${candidate_service} '
             '${stable_service} ${window} ${window_seconds} ${start}')
    at = START + 95.7
    assert template.render(query, template.values(CONTEXT, template.CANDIDATE, at, 60)) == \
        "shop b shop-b b a shop-b shop-a 95s 95 1733306400"
    assert template.render(query, template.values(CONTEXT, template.STABLE, at, 60)).startswith("shop a shop-a ")


def test_the_window_never_goes_below_min_window_nor_before_the_start():
    assert template.window_seconds(START, START + 10, 60) == 60
    assert template.window_seconds(START, START + 125.9, 60) == 125
    context = Context(start=START + 0.5)
    assert template.values(context, template.CANDIDATE, START + 100, 60)["start"] == "1733306400.5"


def test_an_escaped_placeholder_is_written_as_is():
    values = template.values(CONTEXT, template.CANDIDATE, START + 60, 60)
    assert template.render('x{a=~"$${b}"} ${window}', values) == 'x{a=~"${b}"} 60s'
    assert template.used('$${nope} ${window} ${window}') == ["window"]
    template.check('$${nope}', CONTEXT, template.CANDIDATE, "q")


def test_dollar_signs_without_braces_are_left_alone():
    values = template.values(CONTEXT, template.CANDIDATE, START + 60, 60)
    assert template.render('x{a=~"^api$"} $window {{ jinja }}', values) == 'x{a=~"^api$"} $window {{ jinja }}'
