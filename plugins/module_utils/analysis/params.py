# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module's parameters as the model's dataclasses (model.py), in one place.

:func:`checks_from_params`, :func:`context_from_params` and :func:`settings_from_params` take plain dicts (the
module's validated parameters; the action plugin and unit tests give the same) and refuse what cannot work before
any query is sent, with an InputError naming the check and field (``checks[1] (latency).baseline.max_factor``) and
what to write instead.
"""

from __future__ import annotations

import datetime
import math
import re

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import template, text
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.model import (
    AGGREGATORS, NO_DATA_POLICIES, REDUCERS, Baseline, Check, Context, Settings, TrafficFloor)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

# context values go into PromQL label matchers: nothing that could end a string or a matcher
_CONTEXT_VALUE = re.compile(r"[A-Za-z0-9_.:-]*")
# how far in the future context.start may be (clocks of the controller and whoever gave the time)
START_FUTURE_TOLERANCE = 60.0


class _Fields:
    """Reads the fields of one check's dict; errors name the check and the field."""

    def __init__(self, item, where):
        self.item = item
        self.where = where

    def subject(self, name):
        return "%s.%s" % (self.where, name)

    def fail(self, name, message, hint):
        raise InputError(message, subject=self.subject(name), hint=hint)

    def text(self, name, required=False):
        value = self.item.get(name)
        if value is None or value == "":
            if required:
                self.fail(name, "is missing", "give a non-empty string")
            return ""
        if not isinstance(value, str):
            self.fail(name, "must be a string, not %s" % type(value).__name__, "quote the value")
        return value

    def number(self, name, default=None):
        value = self.item.get(name)
        if value is None:
            return default
        try:
            out = float(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            out = None
        if out is None or math.isnan(out):
            self.fail(name, "%r is not a number" % (value,), "write a number such as 0.05, 1e-3 or 250")
        return out

    def integer(self, name, default, least=0):
        value = self.item.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
            self.fail(name, "%r is not a whole number" % (value,), "write a whole number of at least %d" % least)
        if int(value) < least:
            self.fail(name, "%s is less than %d" % (value, least), "write a whole number of at least %d" % least)
        return int(value)

    def duration(self, name, default, positive=False):
        value = self.item.get(name)
        if value is None or value == "":
            return default
        seconds = parse_duration(value, name=self.subject(name))
        if positive and seconds <= 0:
            self.fail(name, "must be longer than zero", 'write a duration such as "30s" or "1m"')
        return seconds

    def choice(self, name, choices, default):
        value = self.item.get(name)
        if value is None or value == "":
            return default
        if value not in choices:
            listed = ", ".join(choices)
            self.fail(name, "%r is not one of %s" % (value, listed), "choose one of %s" % listed)
        return value

    def flag(self, name, default):
        value = self.item.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(name, "%r is not a boolean" % (value,), "write true or false")
        return value

    def block(self, name, known):
        value = self.item.get(name)
        if value is None:
            return None
        if not isinstance(value, dict):
            self.fail(name, "must be a mapping", "write it as a dict of %s" % ", ".join(known))
        unknown = sorted(set(value) - set(known))
        if unknown:
            self.fail(name, "unknown field %s" % ", ".join(unknown), "use %s" % ", ".join(known))
        return _Fields(value, self.subject(name))


CHECK_FIELDS = ("name", "query", "min", "max", "baseline", "reducer", "interval", "count", "initial_delay",
                "failure_limit", "inconclusive_limit", "consecutive_error_limit", "max_measurements", "on_no_data",
                "traffic_floor", "allow_warnings", "enforce")
BASELINE_FIELDS = ("query", "max_factor", "max_offset", "min_factor", "min_offset", "reducer")
FLOOR_FIELDS = ("query", "min")


def checks_from_params(items, settings, context):
    """The checks of the module's ``checks`` list; InputError for the first problem found."""
    if not isinstance(items, (list, tuple)) or not items:
        raise InputError("no checks given", subject="checks", hint="give a list of checks, each with name and query")
    checks, names = [], set()
    for index, item in enumerate(items):
        check = check_from_dict(item, index, settings)
        if check.name in names:
            raise InputError("two checks are named %r" % check.name, subject="checks[%d].name" % index,
                             hint="give each check its own name")
        names.add(check.name)
        for role, query, side in check.queries():
            template.check(query, context, side, _query_subject(index, check.name, role))
        checks.append(check)
    return tuple(checks)


def _query_subject(index, name, role):
    field = {"query": "query", "baseline": "baseline.query", "traffic_floor": "traffic_floor.query"}[role]
    return "checks[%d] (%s).%s" % (index, name, field)


def check_from_dict(item, index, settings):
    """One check; ``settings`` gives the default interval and count."""
    if not isinstance(item, dict):
        raise InputError("must be a mapping", subject="checks[%d]" % index, hint="write name, query and a condition")
    fields = _Fields(item, "checks[%d]" % index)
    name = fields.text("name", required=True)
    fields.where = "checks[%d] (%s)" % (index, name)
    unknown = sorted(set(item) - set(CHECK_FIELDS))
    if unknown:
        raise InputError("unknown field %s" % ", ".join(unknown), subject=fields.where,
                         hint="use %s" % ", ".join(CHECK_FIELDS))
    count = fields.integer("count", settings.count, least=1)
    error_limit = fields.integer("consecutive_error_limit", 4)
    check = Check(
        name=name, query=fields.text("query", required=True), min=fields.number("min"), max=fields.number("max"),
        baseline=_baseline(fields), reducer=fields.choice("reducer", REDUCERS, "all"),
        interval=fields.duration("interval", settings.interval, positive=True), count=count,
        initial_delay=fields.duration("initial_delay", 0.0),
        failure_limit=fields.integer("failure_limit", 0), inconclusive_limit=fields.integer("inconclusive_limit", 0),
        consecutive_error_limit=error_limit,
        max_measurements=fields.integer("max_measurements", 0, least=count),
        on_no_data=fields.choice("on_no_data", NO_DATA_POLICIES, "inconclusive"),
        traffic_floor=_floor(fields), allow_warnings=fields.flag("allow_warnings", False),
        enforce=fields.flag("enforce", True))
    _check_condition(check, fields)
    return check


def _baseline(fields):
    block = fields.block("baseline", BASELINE_FIELDS)
    if block is None:
        return None
    baseline = Baseline(query=block.text("query"), max_factor=block.number("max_factor"),
                        max_offset=block.number("max_offset", 0.0), min_factor=block.number("min_factor"),
                        min_offset=block.number("min_offset", 0.0), reducer=block.choice("reducer", AGGREGATORS, ""))
    if baseline.max_factor is None and baseline.min_factor is None:
        block.fail("max_factor", "the baseline sets neither max_factor nor min_factor",
                   "write e.g. max_factor: 1.5 and max_offset: 0.001 for value <= stable * 1.5 + 0.001")
    for name in ("max_factor", "min_factor"):
        factor = getattr(baseline, name)
        if factor is not None and (factor < 0 or math.isinf(factor)):
            block.fail(name, "%s is not a finite number of at least 0" % text.number(factor),
                       "write a factor such as 1.5")
    for name in ("max_offset", "min_offset"):
        if math.isinf(getattr(baseline, name)):
            block.fail(name, "is infinite", "write a finite offset such as 0.001")
    return baseline


def _floor(fields):
    block = fields.block("traffic_floor", FLOOR_FIELDS)
    if block is None:
        return None
    floor = TrafficFloor(query=block.text("query", required=True), min=block.number("min"))
    if floor.min is None or floor.min < 0 or math.isinf(floor.min):
        block.fail("min", "must be a finite number of at least 0",
                   "write the least traffic that makes a measurement meaningful, e.g. 1 (requests per second)")
    return floor


def _check_condition(check, fields):
    if check.min is None and check.max is None and check.baseline is None:
        raise InputError("has no condition", subject=fields.where,
                         hint="give min and/or max (absolute), or baseline (relative to the stable slot)")
    if check.min is not None and check.max is not None and check.min > check.max:
        why = "%s is greater than max %s: no value can pass" % (text.number(check.min), text.number(check.max))
        fields.fail("min", why, "swap them, or drop one")
    if check.on_no_data == "retry" and check.budget <= check.count:
        fields.fail("max_measurements", "leaves no room to retry (%d for count %d)" % (check.budget, check.count),
                    "raise max_measurements above count, or use another on_no_data")


CONTEXT_FIELDS = ("namespace", "candidate_slot", "stable_slot", "candidate_service", "stable_service", "start")


def context_from_params(params, now):
    """The Context of the module's ``context`` option; ``start`` defaults to ``now``."""
    params = params or {}
    fields = _Fields(params, "context")
    unknown = sorted(set(params) - set(CONTEXT_FIELDS))
    if unknown:
        raise InputError("unknown field %s" % ", ".join(unknown), subject="context",
                         hint="use %s" % ", ".join(CONTEXT_FIELDS))
    values = {}
    for name in CONTEXT_FIELDS[:-1]:
        value = fields.text(name)
        if not _CONTEXT_VALUE.fullmatch(value):
            fields.fail(name, "%r has characters a PromQL label value cannot take here" % value,
                        "use letters, digits and . _ : - only")
        values[name] = value
    start = parse_time(params.get("start"), "context.start") if params.get("start") not in (None, "") else now
    if start > now + START_FUTURE_TOLERANCE:
        raise InputError("%s is in the future" % params.get("start"), subject="context.start",
                         hint="give the step's start (seconds since the epoch or an ISO 8601 time with a zone)")
    return Context(start=start, **values)


def parse_time(value, subject):
    """Seconds since the epoch of a number, a numeric string, or an ISO 8601 time with a time zone."""
    hint = "give seconds since the epoch (1733306400) or an ISO 8601 time with a zone (2026-12-04T10:00:00Z)"
    if isinstance(value, bool):
        raise InputError("%r is not a time" % (value,), subject=subject, hint=hint)
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            seconds = _iso_seconds(text, subject, hint)
    if math.isnan(seconds) or math.isinf(seconds) or seconds <= 0:
        raise InputError("%r is not a time" % (value,), subject=subject, hint=hint)
    return seconds


def _iso_seconds(text, subject, hint):
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InputError("%r is not a time" % text, subject=subject, hint=hint) from None
    if moment.tzinfo is None:
        raise InputError("%r has no time zone" % text, subject=subject, hint="add Z (UTC) or an offset such as +01:00")
    return moment.timestamp()


def settings_from_params(params):
    """The analysis-wide Settings of the module's ``interval``, ``count`` and ``min_window``."""
    fields = _Fields(params, "")
    fields.subject = lambda name: name
    interval = fields.duration("interval", 60.0, positive=True)
    min_window = fields.duration("min_window", 60.0, positive=True)
    return Settings(interval=interval, count=fields.integer("count", 5, least=1), min_window=int(math.ceil(min_window)))
