# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One measurement of a check, judged: pure functions, no I/O (the answers are parsed by results.py).

- ``NaN`` makes that series count as absent (0/0 is no data, not a pass or a failure); ``+Inf`` and ``-Inf``
  compare as numbers.
- :func:`judge`, in this order: a query that failed -> Error (``bad_data`` marked permanent); warnings (partial
  data) -> Inconclusive unless the check allows them; traffic below the floor, no series, a baseline without data or
  a NaN bound -> no data, which ``on_no_data`` turns into Failed, Inconclusive, Successful or Skipped (``retry``:
  not counted); then the condition over the series with the check's reducer -> Successful or Failed.
- Reducers: ``all`` (every series holds; never true without series), ``any`` (at least one holds), ``max``,
  ``min``, ``avg``, ``sum`` (the condition holds for that one number).
"""

from __future__ import annotations

import dataclasses
import math

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import text
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.results import Result, Series

SUCCESSFUL, FAILED, INCONCLUSIVE, ERROR, SKIPPED = "Successful", "Failed", "Inconclusive", "Error", "Skipped"
NO_DATA_OUTCOMES = {"fail": FAILED, "inconclusive": INCONCLUSIVE, "pass": SUCCESSFUL, "retry": SKIPPED}
ROLE_TEXT = {"query": "query", "baseline": "baseline query", "traffic_floor": "traffic floor query"}


def aggregate(values, reducer):
    """max, min, avg or sum of ``values``; None without values or when the result is NaN (+Inf plus -Inf)."""
    if not values:
        return None
    if reducer == "max":
        out = max(values)
    elif reducer == "min":
        out = min(values)
    elif reducer == "sum":
        out = sum(values)
    elif reducer == "avg":
        out = sum(values) / len(values)
    else:
        raise ValueError("reducer %r does not aggregate" % (reducer,))
    return None if math.isnan(out) else out


@dataclasses.dataclass(frozen=True)
class Limit:
    """One side of a condition: ``value <op> bound``; ``origin`` says where the bound comes from."""

    op: str  # "<=" or ">="
    bound: float
    origin: str

    def holds(self, value):
        return value <= self.bound if self.op == "<=" else value >= self.bound

    def describe(self, value):
        """'0.062 > 0.05 (max)' or '0.01 <= 0.05 (max)'."""
        op = self.op if self.holds(value) else {"<=": ">", ">=": "<"}[self.op]
        return "%s %s %s (%s)" % (text.number(value), op, text.number(self.bound), self.origin)


def limits(check, baseline_value):
    """The Limits of ``check`` for a measurement whose baseline (stable) value is ``baseline_value``."""
    out = []
    if check.min is not None:
        out.append(Limit(">=", check.min, "min"))
    if check.max is not None:
        out.append(Limit("<=", check.max, "max"))
    if check.baseline is not None and baseline_value is not None:
        base = check.baseline
        if base.max_factor is not None:
            out.append(_relative("<=", baseline_value, base.max_factor, base.max_offset))
        if base.min_factor is not None:
            out.append(_relative(">=", baseline_value, base.min_factor, base.min_offset))
    return out


def _relative(op, baseline_value, factor, offset):
    bound = baseline_value * factor + offset
    origin = "stable %s * %s %s %s" % (text.number(baseline_value), text.number(factor), "-" if offset < 0 else "+",
                                       text.number(abs(offset)))
    return Limit(op, bound, origin)


@dataclasses.dataclass(frozen=True)
class Side:
    """One query of a measurement: its role (query, baseline, traffic_floor), the query sent, and its Result or
    the error (a prometheus.QueryError or ResultError)."""

    role: str
    query: str
    result: Result | None = None
    error: Exception | None = None


@dataclasses.dataclass(frozen=True)
class Judgement:
    outcome: str
    reason: str
    value: float | None = None  # the number the condition was applied to (the reported series' for all/any)
    series: Series | None = None  # the series the reason names (max, min, all, any, or the only one)
    baseline: float | None = None
    traffic: float | None = None
    limits: tuple = ()
    failing: tuple = ()  # series that do not hold (all, any)
    no_data: bool = False
    permanent: bool = False


def judge(check, sides):
    """The Judgement of one measurement of ``check`` from its Sides (the traffic floor alone when it was below
    the floor: the other queries are then not sent)."""
    by_role = {side.role: side for side in sides}
    for side in sides:
        if side.error is not None:
            return Judgement(ERROR, "%s: %s" % (ROLE_TEXT[side.role], side.error),
                             permanent=bool(getattr(side.error, "permanent", False)))
    warnings = [warning for side in sides for warning in side.result.warnings]
    if warnings and not check.allow_warnings:
        return Judgement(INCONCLUSIVE, "Prometheus warned that the data may be partial: %s (allow_warnings: false)"
                         % "; ".join(warnings))
    traffic = None
    if "traffic_floor" in by_role:
        traffic = traffic_value(by_role["traffic_floor"])
        if below_floor(check, by_role["traffic_floor"]):
            why = "traffic %s < traffic_floor.min %s" % (text.number(traffic), text.number(check.traffic_floor.min))
            return no_data(check, why, traffic=traffic)
    main = by_role["query"].result
    numbers = main.numbers()
    if not numbers:
        return no_data(check, _empty(main, "the query"), traffic=traffic)
    baseline = None
    if check.baseline is not None:
        baseline, problem = baseline_value(check, by_role["baseline"].result)
        if problem is not None:
            return problem if isinstance(problem, Judgement) else no_data(check, problem, traffic=traffic)
    bounds = limits(check, baseline)
    if any(math.isnan(limit.bound) for limit in bounds):
        return no_data(check, "the relative bound is NaN (%s)" % ", ".join(limit.origin for limit in bounds),
                       traffic=traffic, baseline=baseline)
    judged = compare(check.reducer, numbers, bounds)
    if judged is None:
        return no_data(check, "the %s of the series is NaN (+Inf and -Inf)" % check.reducer, traffic=traffic,
                       baseline=baseline)
    return dataclasses.replace(judged, baseline=baseline, traffic=traffic)


def traffic_value(side):
    """The traffic of a traffic floor Side: the sum of its series; None without any (or on an error)."""
    if side.result is None:
        return None
    return aggregate([series.value for series in side.result.numbers()], "sum")


def below_floor(check, side):
    """Whether the traffic floor Side ``side`` stops the measurement: it failed, or its traffic is below the floor.
    The check's other queries are then not sent."""
    traffic = traffic_value(side)
    return side.error is not None or traffic is None or traffic < check.traffic_floor.min


def no_data(check, why, **values):
    """The Judgement of a measurement without data, as ``on_no_data`` decides."""
    outcome = NO_DATA_OUTCOMES[check.on_no_data]
    reason = "no data: %s (on_no_data: %s)" % (why, check.on_no_data)
    if outcome == SKIPPED:
        reason += ", not counted; measured again at the next interval"
    return Judgement(outcome, reason, no_data=True, **values)


def _empty(result, what):
    if result.series:
        return "%s returned %d series, all NaN (NaN counts as no data)" % (what, len(result.series))
    return "%s returned no series (empty %s)" % (what, result.result_type)


def baseline_value(check, result):
    """(value, None), or (None, why there is no reference: a text for no data, a Judgement for an error)."""
    numbers = result.numbers()
    if not numbers:
        return None, _empty(result, "the baseline (stable) query") + ": the relative condition has no reference"
    reducer = check.baseline_reducer
    if not reducer:
        if len(numbers) > 1:
            return None, Judgement(ERROR, "the baseline (stable) query returned %d series; with reducer %s it must "
                                   "return one: aggregate it in the query (sum(...)) or set baseline.reducer"
                                   % (len(numbers), check.reducer))
        return numbers[0].value, None
    value = aggregate([series.value for series in numbers], reducer)
    if value is None:
        return None, "the %s of the baseline (stable) series is NaN" % reducer
    return value, None


def compare(reducer, numbers, bounds):
    """Successful or Failed: the condition (``bounds``, all of which must hold) over the series ``numbers`` (at
    least one, none NaN) with ``reducer``; None when the aggregate is NaN (+Inf and -Inf summed)."""
    if reducer == "all":
        return _every(numbers, bounds)
    if reducer == "any":
        return _some(numbers, bounds)
    if reducer in ("max", "min"):
        series = (max if reducer == "max" else min)(numbers, key=lambda item: item.value)
        value = series.value
    else:
        series, value = None, aggregate([item.value for item in numbers], reducer)
    if len(numbers) == 1:
        subject, series = "value", numbers[0]
    else:
        subject = "%s of %d series" % (reducer, len(numbers))
    if value is None:
        return None
    return _verdict(subject, value, series, bounds)


def _verdict(subject, value, series, bounds, failing=()):
    broken = [limit for limit in bounds if not limit.holds(value)]
    shown = broken[:1] if broken else bounds
    reason = "%s %s" % (subject, " and ".join(limit.describe(value) for limit in shown))
    if series is not None and series.labels:
        reason += " at %s" % text.labels(series.labels)
    return Judgement(FAILED if broken else SUCCESSFUL, reason, value=value, series=series, limits=tuple(bounds),
                     failing=tuple(failing))


def _holds(series, bounds):
    return all(limit.holds(series.value) for limit in bounds)


def _extreme(numbers, bounds):
    """The series nearest to breaking the first limit: the highest under a max, the lowest over a min."""
    pick = max if bounds[0].op == "<=" else min
    return pick(numbers, key=lambda item: item.value)


def _every(numbers, bounds):
    failing = [series for series in numbers if not _holds(series, bounds)]
    if not failing:
        subject = "all %d series hold, nearest" % len(numbers) if len(numbers) > 1 else "value"
        worst = _extreme(numbers, bounds)
        return _verdict(subject, worst.value, worst, bounds)
    subject = "%d of %d series fail, e.g." % (len(failing), len(numbers)) if len(numbers) > 1 else "value"
    return _verdict(subject, failing[0].value, failing[0], bounds, failing=failing)


def _some(numbers, bounds):
    holding = [series for series in numbers if _holds(series, bounds)]
    if holding:
        subject = "%d of %d series hold, e.g." % (len(holding), len(numbers)) if len(numbers) > 1 else "value"
        return _verdict(subject, holding[0].value, holding[0], bounds)
    best = max(numbers, key=lambda item: item.value) if bounds[0].op == ">=" else \
        min(numbers, key=lambda item: item.value)
    subject = "none of %d series holds, nearest" % len(numbers) if len(numbers) > 1 else "value"
    return _verdict(subject, best.value, best, bounds, failing=numbers)
