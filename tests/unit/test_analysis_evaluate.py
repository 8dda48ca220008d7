# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""evaluate.judge, the outcome of one measurement: errors, warnings, no data under each on_no_data policy, each
reducer over two series (the labels of the series named in the reason), absolute and relative conditions, NaN and
infinities, the traffic floor."""

from __future__ import annotations

import math

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import evaluate
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.evaluate import (
    ERROR, FAILED, INCONCLUSIVE, SKIPPED, SUCCESSFUL, Side, judge)
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.model import (
    Baseline, Check, TrafficFloor)
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.prometheus import QueryError, decode
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.results import ResultError, parse
from tests.unit.analysis_fakes import answer, fixture, series


def side(role, reply):
    """The Side of ``reply``, a fixture name or a (status, body) pair."""
    status, body = fixture(reply) if isinstance(reply, str) else reply
    try:
        return Side(role, "q", result=parse(decode(status, "", body)))
    except (QueryError, ResultError) as exc:
        return Side(role, "q", error=exc)


def query(reply):
    return side("query", reply)


# -- reducers over the two series of vector_two_series: code 500 at 0.062, code 503 at 0.004 ----------------

@pytest.mark.parametrize("reducer, limit, outcome, reason", [
    ("all", 0.05, FAILED, '1 of 2 series fail, e.g. 0.062 > 0.05 (max) at {code="500", service="shop-b", slot="b"}'),
    ("all", 0.1, SUCCESSFUL, 'all 2 series hold, nearest 0.062 <= 0.1 (max) at {code="500", service="shop-b", '
                             'slot="b"}'),
    ("any", 0.05, SUCCESSFUL, '1 of 2 series hold, e.g. 0.004 <= 0.05 (max) at {code="503", service="shop-b", '
                              'slot="b"}'),
    ("any", 0.001, FAILED, 'none of 2 series holds, nearest 0.004 > 0.001 (max) at {code="503", '
                           'service="shop-b", slot="b"}'),
    ("max", 0.05, FAILED, 'max of 2 series 0.062 > 0.05 (max) at {code="500", service="shop-b", slot="b"}'),
    ("max", 0.1, SUCCESSFUL, 'max of 2 series 0.062 <= 0.1 (max) at {code="500"'),
    ("min", 0.005, SUCCESSFUL, 'min of 2 series 0.004 <= 0.005 (max) at {code="503"'),
    ("min", 0.001, FAILED, 'min of 2 series 0.004 > 0.001 (max) at {code="503"'),
    ("avg", 0.05, SUCCESSFUL, "avg of 2 series 0.033 <= 0.05 (max)"),
    ("avg", 0.03, FAILED, "avg of 2 series 0.033 > 0.03 (max)"),
    ("sum", 0.07, SUCCESSFUL, "sum of 2 series 0.066 <= 0.07 (max)"),
    ("sum", 0.06, FAILED, "sum of 2 series 0.066 > 0.06 (max)"),
])
def test_each_reducer_over_two_series(reducer, limit, outcome, reason):
    judged = judge(Check("c", "q", max=limit, reducer=reducer), [query("vector_two_series")])
    assert judged.outcome == outcome
    assert judged.reason.startswith(reason), judged.reason


def test_all_names_the_failing_series_first():
    judged = judge(Check("c", "q", max=0.01), [query(series("0.001", "0.2", "0.3"))])
    assert judged.outcome == FAILED
    assert [s.labels["pod"] for s in judged.failing] == ["p1", "p2"]
    assert judged.reason == '2 of 3 series fail, e.g. 0.2 > 0.01 (max) at {pod="p1"}'


def test_min_and_max_together_name_the_bound_broken():
    check = Check("c", "q", min=0.9, max=1.0, reducer="avg")
    assert judge(check, [query(answer("0.95"))]).reason == "value 0.95 >= 0.9 (min) and 0.95 <= 1 (max)"
    assert judge(check, [query(answer("0.5"))]).reason == "value 0.5 < 0.9 (min)"
    assert judge(check, [query(answer("1.5"))]).reason == "value 1.5 > 1 (max)"


def test_bounds_are_inclusive():
    assert judge(Check("c", "q", max=0.05), [query(answer("0.05"))]).outcome == SUCCESSFUL
    assert judge(Check("c", "q", min=0.05), [query(answer("0.05"))]).outcome == SUCCESSFUL


def test_every_result_type_is_judged():
    check = Check("c", "q", max=200, reducer="max")
    assert judge(check, [query("scalar")]).outcome == SUCCESSFUL
    judged = judge(check, [query("matrix")])
    assert judged.outcome == SUCCESSFUL and judged.value == 175.0
    assert judge(Check("c", "q", max=100, reducer="max"), [query("matrix")]).outcome == FAILED


# -- no data -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy, outcome", [("fail", FAILED), ("inconclusive", INCONCLUSIVE), ("pass", SUCCESSFUL),
                                             ("retry", SKIPPED)])
@pytest.mark.parametrize("reply", ["vector_empty", "matrix_empty", "vector_all_nan"])
def test_no_data_is_what_on_no_data_says(policy, outcome, reply):
    judged = judge(Check("c", "q", max=0.05, on_no_data=policy), [query(reply)])
    assert judged.outcome == outcome and judged.no_data
    assert judged.reason.startswith("no data: ") and "(on_no_data: %s" % policy in judged.reason


@pytest.mark.parametrize("reducer", ["all", "any", "max", "min", "avg", "sum"])
def test_an_empty_vector_is_never_true(reducer):
    """An `all` over no series would be vacuously true; here it is no data, and no data is not a pass."""
    judged = judge(Check("c", "q", max=1e9, min=-1e9, reducer=reducer), [query("vector_empty")])
    assert judged.outcome == INCONCLUSIVE
    assert judged.reason == "no data: the query returned no series (empty vector) (on_no_data: inconclusive)"


def test_nan_is_no_data_for_that_series_only():
    check = Check("c", "q", max=0.01, reducer="all")
    judged = judge(check, [query(series("NaN", "0.001"))])
    assert judged.outcome == SUCCESSFUL and judged.reason == 'value 0.001 <= 0.01 (max) at {pod="p1"}'
    assert judge(check, [query("vector_all_nan")]).reason.startswith(
        "no data: the query returned 1 series, all NaN (NaN counts as no data)")


def test_infinities_compare_as_numbers():
    check = Check("c", "q", max=1.0)
    assert judge(check, [query(answer("+Inf"))]).reason == "value +Inf > 1 (max)"
    assert judge(check, [query(answer("-Inf"))]).outcome == SUCCESSFUL
    # +Inf and -Inf summed is NaN: no data
    judged = judge(Check("c", "q", max=1.0, reducer="sum"), [query(series("+Inf", "-Inf"))])
    assert judged.no_data and "the sum of the series is NaN" in judged.reason
    assert judge(Check("c", "q", max=1.0, reducer="max"), [query("vector_special_values")]).reason.startswith(
        "max of 3 series +Inf > 1 (max)")


# -- errors and warnings -------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, permanent", [("error_bad_data", True), ("error_execution", False),
                                              ("error_timeout", False), ("string", True),
                                              ("native_histogram", False)])
def test_a_failed_query_is_an_error(reply, permanent):
    judged = judge(Check("c", "q", max=1.0, on_no_data="pass"), [query(reply)])
    assert judged.outcome == ERROR and judged.permanent is permanent
    assert judged.reason.startswith("query: ")


def test_an_error_wins_over_everything_else():
    unreachable = Side("baseline", "q", error=QueryError("unreachable: refused", "unreachable"))
    judged = judge(Check("c", "q", baseline=Baseline(max_factor=2.0)), [query(answer("0.1")), unreachable])
    assert judged.outcome == ERROR and judged.reason.startswith("baseline query: unreachable: refused")


def test_warnings_are_inconclusive_unless_allowed():
    judged = judge(Check("c", "q", max=0.05), [query("warnings")])
    assert judged.outcome == INCONCLUSIVE
    assert judged.reason == ("Prometheus warned that the data may be partial: remote read: store eu-2 unreachable, "
                             "the result may be partial (allow_warnings: false)")
    assert judge(Check("c", "q", max=0.05, allow_warnings=True), [query("warnings")]).outcome == SUCCESSFUL
    # a warning on the baseline counts as well, and is judged before no data
    judged = judge(Check("c", "q", baseline=Baseline(max_factor=1.0), on_no_data="fail"),
                   [query("vector_empty"), side("baseline", "warnings")])
    assert judged.outcome == INCONCLUSIVE


def test_infos_change_nothing():
    assert judge(Check("c", "q", max=0.05), [query("infos")]).outcome == SUCCESSFUL


# -- relative to the stable slot -----------------------------------------------------------------------------

def test_relative_pass_and_fail():
    check = Check("c", "q", baseline=Baseline(max_factor=1.5, max_offset=0.001))
    passed = judge(check, [query(answer("0.015")), side("baseline", answer("0.01"))])
    assert passed.outcome == SUCCESSFUL and passed.baseline == 0.01
    assert passed.reason == "value 0.015 <= 0.016 (stable 0.01 * 1.5 + 0.001)"
    failed = judge(check, [query(answer("0.02")), side("baseline", answer("0.01"))])
    assert failed.outcome == FAILED and failed.reason == "value 0.02 > 0.016 (stable 0.01 * 1.5 + 0.001)"


def test_relative_min_form_with_a_negative_offset():
    check = Check("c", "q", baseline=Baseline(min_factor=0.95, min_offset=-0.01))
    assert judge(check, [query(answer("0.935")), side("baseline", answer("0.99"))]).reason == \
        "value 0.935 >= 0.9305 (stable 0.99 * 0.95 - 0.01)"
    assert judge(check, [query(answer("0.93")), side("baseline", answer("0.99"))]).reason == \
        "value 0.93 < 0.9305 (stable 0.99 * 0.95 - 0.01)"


def test_relative_and_absolute_together():
    check = Check("c", "q", max=0.05, baseline=Baseline(max_factor=2.0))
    judged = judge(check, [query(answer("0.06")), side("baseline", answer("0.1"))])
    assert judged.outcome == FAILED and judged.reason == "value 0.06 > 0.05 (max)"


def test_a_baseline_of_zero_with_an_offset_still_has_a_bound():
    check = Check("c", "q", baseline=Baseline(max_factor=1.5, max_offset=0.001))
    assert judge(check, [query(answer("0.0005")), side("baseline", answer("0"))]).outcome == SUCCESSFUL
    assert judge(check, [query(answer("0.002")), side("baseline", answer("0"))]).outcome == FAILED


@pytest.mark.parametrize("baseline_reply", ["vector_empty", "vector_all_nan"])
def test_a_baseline_without_data_leaves_no_reference(baseline_reply):
    check = Check("c", "q", baseline=Baseline(max_factor=1.5), on_no_data="fail")
    judged = judge(check, [query(answer("0.01")), side("baseline", baseline_reply)])
    assert judged.outcome == FAILED and judged.no_data
    assert "the relative condition has no reference" in judged.reason


def test_a_baseline_of_several_series_needs_a_reducer():
    check = Check("c", "q", baseline=Baseline(max_factor=1.5))
    judged = judge(check, [query(answer("0.01")), side("baseline", series("0.01", "0.02"))])
    assert judged.outcome == ERROR
    assert "returned 2 series; with reducer all it must return one" in judged.reason
    # the check's aggregating reducer applies to the baseline, or baseline.reducer says
    assert judge(Check("c", "q", reducer="max", baseline=Baseline(max_factor=1.0)),
                 [query(answer("0.02")), side("baseline", series("0.01", "0.02"))]).outcome == SUCCESSFUL
    judged = judge(Check("c", "q", baseline=Baseline(max_factor=1.0, reducer="avg")),
                   [query(answer("0.02")), side("baseline", series("0.01", "0.02"))])
    assert judged.outcome == FAILED and judged.baseline == pytest.approx(0.015)


def test_a_nan_bound_is_no_data():
    check = Check("c", "q", baseline=Baseline(max_factor=0.0))
    judged = judge(check, [query(answer("1")), side("baseline", answer("+Inf"))])
    assert judged.no_data and "the relative bound is NaN" in judged.reason


# -- traffic floor -------------------------------------------------------------------------------------------

def test_traffic_below_the_floor_is_no_data():
    check = Check("c", "q", max=0.05, traffic_floor=TrafficFloor("t", 1.0), on_no_data="retry")
    judged = judge(check, [side("traffic_floor", series("0.2", "0.3"))])
    assert judged.outcome == SKIPPED and judged.traffic == 0.5
    assert judged.reason == ("no data: traffic 0.5 < traffic_floor.min 1 (on_no_data: retry), not counted; "
                             "measured again at the next interval")
    judged = judge(check, [side("traffic_floor", "vector_empty")])
    assert judged.no_data and "traffic none < traffic_floor.min 1" in judged.reason


def test_traffic_at_the_floor_is_judged():
    check = Check("c", "q", max=0.05, traffic_floor=TrafficFloor("t", 1.0))
    judged = judge(check, [side("traffic_floor", answer("1")), query(answer("0.2"))])
    assert judged.outcome == FAILED and judged.traffic == 1.0


def test_below_floor_decides_whether_the_other_queries_are_sent():
    check = Check("c", "q", max=0.05, traffic_floor=TrafficFloor("t", 1.0))
    assert evaluate.below_floor(check, side("traffic_floor", answer("0.5")))
    assert evaluate.below_floor(check, side("traffic_floor", "error_timeout"))
    assert not evaluate.below_floor(check, side("traffic_floor", answer("1.5")))


def test_aggregate():
    assert evaluate.aggregate([], "max") is None
    assert evaluate.aggregate([1.0, 3.0], "avg") == 2.0
    assert evaluate.aggregate([math.inf, 1.0], "max") == math.inf
    assert evaluate.aggregate([math.inf, -math.inf], "avg") is None
    with pytest.raises(ValueError):
        evaluate.aggregate([1.0], "all")
