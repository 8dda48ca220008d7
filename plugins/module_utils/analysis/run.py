# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The measurement loop of an analysis (:func:`analyze`) and the preflight (:func:`preflight`).

Each check measures on its own schedule: the first measurement at ``initial_delay`` after the analysis started, and
never before the step's start plus ``min_window`` (so that ``${window}`` starts at the step and never reaches
before it), then every ``interval`` (a slot missed while other queries ran is skipped, not caught up). A
measurement pins its evaluation time once and sends each of the check's queries once at that time (the traffic
floor first: below it, the others are not sent); nothing is retried within an interval. After each measurement the
check's verdict is decided (verdict.py); once an enforced check's verdict is not Successful the analysis cannot be
Successful and every other check stops (fail-fast).

Clock (seconds since the epoch: evaluation times are Prometheus times) and sleep are injected; unit tests never
sleep.
"""

from __future__ import annotations

import dataclasses
import math
import time

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import template
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.evaluate import (
    SUCCESSFUL, Judgement, Side, below_floor, judge)
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.prometheus import SERVER_KINDS, QueryError
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.results import ResultError, parse
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.verdict import (
    Counters, decide, overall, stopped)


@dataclasses.dataclass(frozen=True)
class Measurement:
    number: int  # 1-based, per check
    at: float  # the evaluation time, seconds since the epoch
    window: int  # ${window} in seconds
    judgement: Judgement
    sides: tuple

    @property
    def outcome(self):
        return self.judgement.outcome

    @property
    def reason(self):
        return self.judgement.reason


class CheckRun:
    """One check during the analysis: its next measurement time, counters, measurements and, once known, its
    verdict and reason."""

    def __init__(self, check, first_at):
        self.check = check
        self.next_at = first_at
        self.counters = Counters()
        self.measurements = []
        self.verdict = None
        self.reason = ""
        self.stopped = False

    @property
    def name(self):
        return self.check.name

    @property
    def enforce(self):
        return self.check.enforce

    @property
    def done(self):
        return self.verdict is not None

    def record(self, measurement, now):
        """Count ``measurement``, decide, and schedule the next one: the next slot of the interval after ``now``
        (slots that passed while the queries ran are skipped)."""
        self.measurements.append(measurement)
        self.counters.add(measurement.outcome, measurement.reason)
        self.verdict, self.reason = decide(self.check, self.counters, measurement.judgement.permanent)
        interval = self.check.interval
        self.next_at += interval
        if self.next_at < now:
            self.next_at += math.ceil((now - self.next_at) / interval) * interval

    def stop(self, by):
        self.verdict, self.reason = stopped(self.check, self.counters, by.name, by.verdict)
        self.stopped = True


@dataclasses.dataclass
class Analysis:
    """What :func:`analyze` found; report.py explains it."""

    runs: list
    context: object
    settings: object
    started: float
    finished: float

    def outcome(self):
        """(verdict, reason, deciding CheckRun or None): verdict.overall over the checks."""
        return overall(self.runs)

    @property
    def measurements(self):
        return sum(run.counters.measurements for run in self.runs)


def first_at(check, started, context, settings):
    """When ``check`` measures first: ``initial_delay`` after ``started``, not before start + min_window."""
    return max(started + check.initial_delay, context.start + settings.min_window)


def send(client, role, query, at):
    """The Side of one query sent at evaluation time ``at``; its error kept, never raised."""
    try:
        return Side(role, query, result=parse(client.query(query, at)))
    except (QueryError, ResultError) as exc:
        return Side(role, query, error=exc)


def measure(check, client, context, settings, at, number):
    """Measurement ``number`` of ``check`` evaluated at ``at``."""
    sides = []
    for role, query, side in check.queries():
        rendered = template.render(query, template.values(context, side, at, settings.min_window))
        sides.append(send(client, role, rendered, at))
        if role == "traffic_floor" and below_floor(check, sides[-1]):
            break
    window = template.window_seconds(context.start, at, settings.min_window)
    return Measurement(number, at, window, judge(check, sides), tuple(sides))


def analyze(checks, context, client, settings, clock=time.time, sleep=time.sleep, on_measurement=None):
    """Run every check until each has a verdict (or is stopped by an enforced check's failure); an Analysis.
    ``on_measurement(run, measurement)`` is called after each measurement (progress lines)."""
    started = clock()
    runs = [CheckRun(check, first_at(check, started, context, settings)) for check in checks]
    while True:
        pending = [run for run in runs if not run.done]
        if not pending:
            break
        run = min(pending, key=lambda item: item.next_at)
        wait = run.next_at - clock()
        if wait > 0:
            sleep(wait)
        at = round(clock(), 3)
        measurement = measure(run.check, client, context, settings, at, len(run.measurements) + 1)
        run.record(measurement, clock())
        if on_measurement is not None:
            on_measurement(run, measurement)
        if run.done and run.enforce and run.verdict != SUCCESSFUL:
            for other in pending:
                if other is not run:
                    other.stop(run)
    return Analysis(runs=runs, context=context, settings=settings, started=started, finished=clock())


# -- preflight -----------------------------------------------------------------------------------------------

ACCEPTED, WARNED, REFUSED, NOT_SENT = "accepted", "warning", "refused", "not sent"


@dataclasses.dataclass(frozen=True)
class PreflightQuery:
    check: str
    role: str
    query: str  # as sent
    outcome: str  # accepted, warning, refused, not sent
    message: str
    series: int = 0
    result_type: str = ""


@dataclasses.dataclass
class Preflight:
    at: float
    window: int
    queries: list
    context: object

    @property
    def refused(self):
        return [query for query in self.queries if query.outcome in (REFUSED, NOT_SENT)]


def preflight(checks, context, client, settings, clock=time.time):
    """Every query of every check sent once, now, deciding nothing: a Preflight whose ``refused`` lists the
    queries Prometheus refuses (bad_data, a string result) or could not answer (unreachable, TLS, credentials, an
    answer that is not Prometheus': another API or a web page at provider.url). After a failure every later query
    would share (Prometheus unreachable, not Prometheus), the rest are not sent. Server-side failures (execution,
    timeout, unavailable) and warnings are reported, not refused: they may not last. Infos are reported too."""
    at = round(clock(), 3)
    out, blocked = [], None
    for check in checks:
        for role, query, side in check.queries():
            rendered = template.render(query, template.values(context, side, at, settings.min_window))
            if blocked is not None:
                out.append(PreflightQuery(check.name, role, rendered, NOT_SENT, "not sent: %s" % blocked))
                continue
            entry = _preflight_entry(check.name, send(client, role, rendered, at))
            if entry.outcome == REFUSED and _shared_failure(entry.error):
                blocked = entry.error
            out.append(entry.query)
    return Preflight(at, template.window_seconds(context.start, at, settings.min_window), out, context)


class _Entry:
    def __init__(self, query, error=None):
        self.query = query
        self.outcome = query.outcome
        self.error = error


def _preflight_entry(name, side):
    if side.error is not None:
        exc = side.error
        server_side = isinstance(exc, QueryError) and exc.kind in SERVER_KINDS
        harmless = server_side or (isinstance(exc, ResultError) and not exc.permanent and not exc.foreign)
        outcome = WARNED if harmless else REFUSED
        return _Entry(PreflightQuery(name, side.role, side.query, outcome, str(exc)), exc)
    result = side.result
    count = len(result.numbers())
    message = "%d series" % count if count else "no data yet (%s)" % ("only NaN" if result.series else "empty")
    if result.warnings:
        message += "; Prometheus warned: %s" % "; ".join(result.warnings)
    if result.infos:
        message += "; Prometheus noted: %s" % "; ".join(result.infos)
    outcome = WARNED if result.warnings else ACCEPTED
    return _Entry(PreflightQuery(name, side.role, side.query, outcome, message, count, result.result_type))


def _shared_failure(exc):
    """Whether every later query would fail the same way (the failure is about Prometheus, not the query)."""
    if isinstance(exc, ResultError):
        return exc.foreign
    return isinstance(exc, QueryError) and exc.kind not in SERVER_KINDS and exc.kind != "bad_data"
