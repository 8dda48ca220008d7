# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Prometheus answer's ``data`` as series (labels, the value as written, the number): :func:`parse`.

- ``vector``: each sample; ``scalar``: one series without labels; ``matrix``: the last sample of each series (the
  value at the evaluation time); an empty vector or matrix: no series.
- A ``string`` result or a native histogram sample is a ResultError: there is no number to compare.
- Values are Prometheus' strings, ``NaN``, ``+Inf`` and ``-Inf`` included (:func:`parse_value`).
- An answer Prometheus never gives (an unknown result type, a result that is not a list of series, a malformed
  sample or value) is a ResultError marked ``foreign``: the preflight refuses it (run.py).
"""

from __future__ import annotations

import dataclasses
import math

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import text
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ManentError


NOT_PROMETHEUS_HINT = "provider.url must point at Prometheus (or an API compatible with it)"


class ResultError(ManentError):
    """An answer without a number to compare (a string, a native histogram, a malformed sample). ``permanent``: the
    query can never give one (it returns a string). ``foreign``: the answer is not one Prometheus gives (an unknown
    result type, a malformed result): the endpoint is not Prometheus."""

    kind = "result"

    def __init__(self, message, hint=None, permanent=False, foreign=False):
        self.permanent = permanent
        self.foreign = foreign
        super().__init__(message, hint=hint)


def _foreign(message):
    return ResultError("not a Prometheus query answer: %s" % message, hint=NOT_PROMETHEUS_HINT, foreign=True)


@dataclasses.dataclass(frozen=True)
class Series:
    labels: dict
    raw: str  # the value as Prometheus wrote it ("NaN", "+Inf", "0.25")
    value: float


@dataclasses.dataclass(frozen=True)
class Result:
    result_type: str
    series: tuple
    warnings: tuple = ()
    infos: tuple = ()

    def numbers(self):
        """The series that count: every one whose value is not NaN."""
        return [series for series in self.series if not math.isnan(series.value)]


def parse(answer):
    """The Result of a prometheus.Answer; ResultError when it has no number to compare."""
    result_type, result = answer.data.get("resultType"), answer.data.get("result")
    if result_type == "vector":
        series = [_series(item, "value", "histogram") for item in _items(result)]
    elif result_type == "matrix":
        series = [_last(item) for item in _items(result)]
        series = [item for item in series if item is not None]
    elif result_type == "scalar":
        series = [_sample({}, result)]
    elif result_type == "string":
        raise ResultError("the query returns a string, not a number", hint="the query must return numbers",
                          permanent=True)
    else:
        raise _foreign("unknown result type %r" % (result_type,))
    return Result(result_type, tuple(series), answer.warnings, answer.infos)


def _items(result):
    if not isinstance(result, list) or not all(isinstance(item, dict) for item in result):
        raise _foreign("malformed result: not a list of series")
    return result


def _series(item, key, histogram_key):
    labels = item.get("metric") or {}
    if key not in item and histogram_key in item:
        raise ResultError("series %s is a native histogram, not a number" % text.labels(labels),
                          hint="use histogram_quantile(), histogram_count() or histogram_sum() in the query")
    return _sample(labels, item.get(key))


def _last(item):
    values = item.get("values") or []
    if not values:
        if item.get("histograms"):
            raise ResultError("series %s is a native histogram, not a number" % text.labels(item.get("metric")),
                              hint="use histogram_quantile(), histogram_count() or histogram_sum() in the query")
        return None
    return _sample(item.get("metric") or {}, values[-1])


def _sample(labels, pair):
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise _foreign("malformed sample %r" % (pair,))
    return Series(dict(labels), str(pair[1]), parse_value(pair[1]))


def parse_value(raw):
    """A sample value: Prometheus writes numbers as strings, "NaN", "+Inf" and "-Inf" included."""
    if isinstance(raw, bool):
        raise _foreign("malformed value %r" % (raw,))
    try:
        return float(raw)
    except (TypeError, ValueError):
        raise _foreign("malformed value %r" % (raw,)) from None
