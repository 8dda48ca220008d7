# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The explanation of an analysis, as the module returns it: per check the condition, the rendered queries, the
evaluation time and window, the values with their labels (the series that broke the condition first), the
counters, every measurement's outcome and reason, and a one-line reason; for the analysis the verdict and the
reason of the check that decided it. Numbers are strings as Prometheus writes them (``0.25``, ``NaN``, ``+Inf``),
times UTC ISO 8601."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import text
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.evaluate import traffic_value
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.run import ACCEPTED, WARNED
from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import format_duration

MAX_SERIES = 20
_REDUCER_TEXT = {"all": "every series", "any": "at least one series", "max": "the max of the series",
                 "min": "the min of the series", "avg": "the avg of the series", "sum": "the sum of the series"}


def condition_text(check):
    """'every series <= 0.05 and <= stable * 1.5 + 0.001', as the check is written."""
    parts = []
    if check.min is not None:
        parts.append(">= %s" % text.number(check.min))
    if check.max is not None:
        parts.append("<= %s" % text.number(check.max))
    base = check.baseline
    if base is not None:
        stable = "stable (%s)" % check.baseline_reducer if check.baseline_reducer else "stable"
        for op, factor, offset in (("<=", base.max_factor, base.max_offset), (">=", base.min_factor, base.min_offset)):
            if factor is not None:
                parts.append("%s %s * %s %s %s" % (op, stable, text.number(factor), "-" if offset < 0 else "+",
                                                   text.number(abs(offset))))
    out = "%s %s" % (_REDUCER_TEXT[check.reducer], " and ".join(parts))
    if check.traffic_floor is not None:
        out += "; traffic >= %s" % text.number(check.traffic_floor.min)
    return out


def context_dict(context):
    out = {name: getattr(context, name) for name in ("namespace", "candidate_slot", "stable_slot",
                                                     "candidate_service", "stable_service")}
    out.update(start=text.timestamp(context.start), start_epoch=context.start)
    return out


def series_list(result, first=()):
    """([{labels, value}], omitted): the series of ``result``, those in ``first`` before the others, at most
    MAX_SERIES."""
    ordered = list(first) + [series for series in result.series if series not in first]
    shown = [{"labels": dict(series.labels), "value": series.raw} for series in ordered[:MAX_SERIES]]
    return shown, max(0, len(ordered) - MAX_SERIES)


def side_dict(side, first=()):
    """One query of a measurement: the query sent, the result type, the values with labels, warnings, or the
    error."""
    out = {"query": side.query}
    if side.error is not None:
        out["error"] = str(side.error)
        return out
    values, omitted = series_list(side.result, first)
    out.update(result_type=side.result.result_type, values=values, warnings=list(side.result.warnings),
               infos=list(side.result.infos))
    if omitted:
        out["values_omitted"] = omitted
    return out


def measurement_dict(measurement):
    judgement = measurement.judgement
    out = {"number": measurement.number, "time": text.timestamp(measurement.at), "window": "%ds" % measurement.window,
           "outcome": judgement.outcome, "reason": judgement.reason}
    if judgement.value is not None:
        out["value"] = text.number(judgement.value)
    if judgement.baseline is not None:
        out["baseline"] = text.number(judgement.baseline)
    if judgement.traffic is not None:
        out["traffic"] = text.number(judgement.traffic)
    return out


def _last_detail(measurement):
    """The queries, evaluation time and values of the check's last measurement, which decided its verdict."""
    sides = {side.role: side for side in measurement.sides}
    judgement = measurement.judgement
    out = {"evaluation_time": text.timestamp(measurement.at), "evaluation_time_epoch": measurement.at,
           "window": "%ds" % measurement.window, "outcome": judgement.outcome}
    if "query" in sides:
        main = side_dict(sides["query"], judgement.failing)
        out.update(rendered_query=main.pop("query"), **main)
        out["value"] = text.number(judgement.value) if judgement.value is not None else None
    if "baseline" in sides:
        out["baseline"] = dict(side_dict(sides["baseline"]), value=text.number(judgement.baseline)
                               if judgement.baseline is not None else None)
    if "traffic_floor" in sides:
        traffic = traffic_value(sides["traffic_floor"])
        out["traffic"] = dict(side_dict(sides["traffic_floor"]),
                              value=text.number(traffic) if traffic is not None else None)
    return out


def check_dict(run):
    check = run.check
    out = {"name": check.name, "enforce": check.enforce, "verdict": run.verdict, "reason": check_reason(run),
           "stopped": run.stopped, "condition": condition_text(check), "reducer": check.reducer,
           "on_no_data": check.on_no_data, "query": check.query, "counters": run.counters.to_dict(),
           "limits": {"count": check.count, "failure_limit": check.failure_limit,
                      "inconclusive_limit": check.inconclusive_limit,
                      "consecutive_error_limit": check.consecutive_error_limit,
                      "max_measurements": check.budget, "interval": format_duration(check.interval)},
           "measurements": [measurement_dict(measurement) for measurement in run.measurements]}
    if run.measurements:
        out.update(_last_detail(run.measurements[-1]))
    return out


def check_reason(run):
    """'<why the verdict>; at <time>: <what the last measurement saw>' (one line)."""
    if not run.measurements:
        return run.reason
    last = run.measurements[-1]
    return "%s; at %s: %s" % (run.reason, text.timestamp(last.at), last.reason)


def analysis_dict(analysis):
    verdict, reason, deciding = analysis.outcome()
    if deciding is not None:
        reason = "check %s %s: %s" % (deciding.name, deciding.verdict, check_reason(deciding))
    return {"changed": False, "mode": "analyze", "verdict": verdict, "reason": reason,
            "measurements": analysis.measurements, "started_at": text.timestamp(analysis.started),
            "finished_at": text.timestamp(analysis.finished), "context": context_dict(analysis.context),
            "checks": [check_dict(run) for run in analysis.runs]}


def story(out):
    """(reason, note) of the Event that tells the verdict of ``out`` (:func:`analysis_dict`, as masked for the
    result): AnalysisSuccessful, AnalysisFailed, AnalysisInconclusive or AnalysisError; the note says the verdict and
    why, then per check (the one that decided first) its verdict, value, condition and rendered query."""
    deciding = out["reason"].split(" ", 2)[1] if out["reason"].startswith("check ") else None
    checks = sorted(out.get("checks") or [], key=lambda check: check.get("name") != deciding)
    context = out.get("context") or {}
    slot = " of candidate slot %s" % context["candidate_slot"] if context.get("candidate_slot") else ""
    head = "analysis%s %s after %s measurements" % (slot, out["verdict"], out.get("measurements", 0))
    parts = ["%s: %s" % (head, out["reason"])]
    for check in checks:
        value = check.get("value")
        parts.append("check %s %s: value %s, condition %s, query %s" % (
            check["name"], check["verdict"], "none" if value is None else value, check["condition"],
            check.get("rendered_query") or check["query"]))
    return "Analysis" + out["verdict"], " | ".join(parts)


def preflight_dict(result):
    return {"changed": False, "mode": "preflight", "reason": preflight_reason(result),
            "evaluation_time": text.timestamp(result.at), "window": "%ds" % result.window,
            "context": context_dict(result.context),
            "preflight": [{"check": query.check, "role": query.role, "query": query.query, "outcome": query.outcome,
                           "message": query.message, "series": query.series, "result_type": query.result_type}
                          for query in result.queries]}


def preflight_reason(result):
    checks = len({query.check for query in result.queries})
    refused = result.refused
    if refused:
        first = refused[0]
        return "preflight: %d of %d queries refused; check %s %s: %s" % (
            len(refused), len(result.queries), first.check, first.role, first.message)
    warned = len([query for query in result.queries if query.outcome == WARNED])
    accepted = len([query for query in result.queries if query.outcome in (ACCEPTED, WARNED)])
    out = "preflight: %d queries of %d checks accepted" % (accepted, checks)
    return out + (" (%d with a warning)" % warned if warned else "")


def progress_line(run, measurement):
    """'error-ratio #3 (3/5 decided): Successful: value 0.01 <= 0.05 (max)', plus the check's verdict once known."""
    line = "%s #%d (%d/%d decided): %s: %s" % (run.name, measurement.number, run.counters.decided, run.check.count,
                                               measurement.outcome, measurement.reason)
    if run.done:
        line += " -> %s: %s" % (run.verdict, run.reason)
    return line
