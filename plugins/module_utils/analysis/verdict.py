# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict rules (docs/analysis.md#verdicts), pure functions.

A check, after each measurement (:func:`decide`), in this order:

1. Failed when more measurements failed than ``failure_limit``;
2. Error at once when the query can never succeed (Prometheus refuses it: ``bad_data``; it returns a string), or
   when more consecutive measurements were errors than ``consecutive_error_limit``;
3. Inconclusive when more were inconclusive than ``inconclusive_limit``;
4. Successful once ``count`` measurements are decided (Successful, Failed or Inconclusive: an Error or a measurement
   skipped for lack of data is not counted, and an Error never counts as a success);
5. once ``count`` decided measurements can no longer be reached within ``max_measurements``: Error when errors are
   why (at least as many of the measurements that did not count were errors as were skipped for lack of data: the
   provider failed, and its last failure is named), else Inconclusive (no data);
6. otherwise undecided: measure again at the next interval.

The analysis (:func:`overall`), over the checks with ``enforce: true`` only: any Failed -> Failed; else any Error
-> Error; else any Inconclusive -> Inconclusive; else Successful. Checks with ``enforce: false`` are reported and
never decide.
"""

from __future__ import annotations

import dataclasses

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.evaluate import (
    ERROR, FAILED, INCONCLUSIVE, SKIPPED, SUCCESSFUL)

_FIELDS = {SUCCESSFUL: "successful", FAILED: "failed", INCONCLUSIVE: "inconclusive", SKIPPED: "skipped"}
_RANK = {FAILED: 0, ERROR: 1, INCONCLUSIVE: 2}


@dataclasses.dataclass
class Counters:
    measurements: int = 0
    successful: int = 0
    failed: int = 0
    inconclusive: int = 0
    errors: int = 0
    consecutive_errors: int = 0
    skipped: int = 0
    last_error: str = dataclasses.field(default="", compare=False)  # the reason of the last Error measurement

    @property
    def decided(self):
        """Measurements that count toward ``count``: Successful, Failed and Inconclusive."""
        return self.successful + self.failed + self.inconclusive

    def add(self, outcome, reason=""):
        self.measurements += 1
        if outcome == ERROR:
            self.errors += 1
            self.consecutive_errors += 1
            self.last_error = reason
            return
        self.consecutive_errors = 0
        field = _FIELDS[outcome]
        setattr(self, field, getattr(self, field) + 1)

    def to_dict(self):
        out = dataclasses.asdict(self)
        del out["last_error"]
        return dict(out, decided=self.decided)


def decide(check, counters, permanent=False):
    """(verdict, reason) of ``check`` once its verdict is known, else (None, ""); ``permanent``: the last
    measurement's error can never go away."""
    c = counters
    if c.failed > check.failure_limit:
        return FAILED, "%d of %d measurements failed (failure_limit %d)" % (c.failed, c.decided, check.failure_limit)
    if permanent:
        return ERROR, "the query can never succeed as written, not measured again"
    if c.consecutive_errors > check.consecutive_error_limit:
        return ERROR, "%d consecutive errors (consecutive_error_limit %d)" % (
            c.consecutive_errors, check.consecutive_error_limit)
    if c.inconclusive > check.inconclusive_limit:
        return INCONCLUSIVE, "%d of %d measurements inconclusive (inconclusive_limit %d)" % (
            c.inconclusive, c.decided, check.inconclusive_limit)
    if c.decided >= check.count:
        return SUCCESSFUL, "%d of %d measurements successful%s" % (c.successful, c.decided, _tolerated(check, c))
    if check.count - c.decided > check.budget - c.measurements:
        out_of_reach = "%d of count %d measurements decided and max_measurements %d cannot reach it" % (
            c.decided, check.count, check.budget)
        if c.errors >= c.skipped:
            return ERROR, "%s: %d of %d measurements were errors (%d skipped for lack of data)%s" % (
                out_of_reach, c.errors, c.measurements, c.skipped, _last_error(c))
        return INCONCLUSIVE, "%s (%s)" % (out_of_reach, _undecided(c))
    return None, ""


def _tolerated(check, c):
    parts = []
    if c.failed:
        parts.append("%d failed (failure_limit %d)" % (c.failed, check.failure_limit))
    if c.inconclusive:
        parts.append("%d inconclusive (inconclusive_limit %d)" % (c.inconclusive, check.inconclusive_limit))
    if c.errors:
        parts.append("%d errors not counted" % c.errors)
    if c.skipped:
        parts.append("%d skipped for lack of data" % c.skipped)
    return "; " + ", ".join(parts) if parts else ""


def _last_error(c):
    """The last error, when the last measurement was not one (the check's reason ends with the last measurement's)."""
    return "; last error: %s" % c.last_error if c.consecutive_errors == 0 and c.last_error else ""


def _undecided(c):
    return "%d skipped for lack of data, %d errors, of %d measurements" % (c.skipped, c.errors, c.measurements)


def stopped(check, counters, by_name, by_verdict):
    """(Inconclusive, reason) of a check stopped before its verdict because check ``by_name`` decided the analysis
    (``by_verdict``)."""
    return INCONCLUSIVE, "stopped after %d of count %d measurements: check %s decided the analysis (%s)" % (
        counters.decided, check.count, by_name, by_verdict)


def overall(checks):
    """(verdict, reason, deciding check or None) of the analysis from its checks' outcomes: objects with ``name``,
    ``enforce``, ``verdict``, ``reason`` and ``stopped`` (stopped by another check's verdict)."""
    enforced = [check for check in checks if check.enforce]
    not_successful = [check for check in enforced if check.verdict != SUCCESSFUL]
    if not not_successful:
        if not enforced:
            return SUCCESSFUL, "no check enforced: %d reported only" % len(checks), None
        return SUCCESSFUL, "%d of %d enforced checks successful" % (len(enforced), len(enforced)), None
    deciding = min(not_successful, key=lambda check: (_RANK[check.verdict], check.stopped))
    return deciding.verdict, "check %s %s: %s" % (deciding.name, deciding.verdict, deciding.reason), deciding
