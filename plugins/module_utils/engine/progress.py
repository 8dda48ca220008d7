# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress lines of a rollout wait: what each workload is waiting for, why, and for how long.

The wait loop (wait.py) hands a snapshot of its workloads (:func:`snapshot`) to its ``on_progress`` callback
every 10 seconds; a :class:`Reporter` turns the snapshots into the lines worth printing:

- a workload still rolling out is printed when its explanation changes (its status message or what its pods
  report), and otherwise only every ``repeat_every`` seconds (60), so a stuck rollout does not print the same
  line every 10 seconds: ``still rolling out: Deployment/shop/web (45 s): Available: 0/2; 2 pods:
  Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.``;
- a workload that was reported as rolling out and became ready gets one line: ``Deployment/shop/web: ready
  after 52 s``.

The reporter has no clock: it compares the seconds that the wait loop measured.
"""

from __future__ import annotations

from typing import NamedTuple

# pods are listed (one request per workload) to explain at most this many workloads per report
EXPLAINED_PER_REPORT = 10
REPEAT_EVERY = 60.0


class Workload(NamedTuple):
    """One waited object at a progress report."""

    ref: str
    status: str
    message: str
    seconds: float
    problems: tuple = ()
    done: bool = False


def snapshot(tracked, problems_of):
    """Workloads of the wait loop's tracked items (``ref``, ``result``, ``seconds``, ``done``); ``problems_of(item)``
    lists what the pods of a pending item report (called for at most EXPLAINED_PER_REPORT items)."""
    out, explained = [], 0
    for item in tracked:
        problems = ()
        if not item.done and explained < EXPLAINED_PER_REPORT:
            problems = tuple(problems_of(item))
            explained += 1
        out.append(Workload(item.ref, item.result.status, item.result.message, item.seconds, problems, item.done))
    return out


def explain(workload):
    """Why ``workload`` is not ready yet, without the time: its status message, then what its pods report."""
    parts = [workload.message or workload.status]
    parts.extend(workload.problems)
    return "; ".join(part for part in parts if part)


def _seconds(value):
    return "%d s" % int(round(value))


class Reporter:
    """Remembers what was printed per workload; :meth:`lines` returns only what is new."""

    def __init__(self, repeat_every=REPEAT_EVERY):
        self.repeat_every = repeat_every
        self._printed = {}  # ref -> (explanation, seconds when printed)

    def lines(self, workloads):
        out = []
        for workload in workloads:
            last = self._printed.get(workload.ref)
            if last is not None and workload.seconds < last[1]:
                last = None  # a new wait (next step of an operation) of the same workload
            if workload.done:
                if last is not None and last[0] is not None:
                    out.append("%s: ready after %s" % (workload.ref, _seconds(workload.seconds)))
                    self._printed[workload.ref] = (None, workload.seconds)
                continue
            text = explain(workload)
            if last is not None and last[0] == text and workload.seconds - last[1] < self.repeat_every:
                continue
            self._printed[workload.ref] = (text, workload.seconds)
            out.append("still rolling out: %s (%s): %s" % (workload.ref, _seconds(workload.seconds), text))
        return out
