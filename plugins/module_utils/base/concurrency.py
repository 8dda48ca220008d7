# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Requests sent at once: how many (:data:`CONCURRENCY`), and the two ways of sending them (:func:`concurrently`,
:func:`together`) that every part of the engine uses."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor


def concurrently(work, units, concurrency):
    """``[work(unit) for unit in units]``, up to ``concurrency`` at once, answers in order."""
    workers = max(1, min(concurrency, len(units)))
    if workers == 1:
        return [work(unit) for unit in units]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(work, units))


def together(*calls):
    """Call the independent functions ``calls`` (no arguments) at once; their answers in order. The first error,
    in that order, is raised once all have finished."""
    return concurrently(lambda call: call(), list(calls), len(calls))


# Requests sent at once by one deploy (objects of a tier applied, kinds listed), unless the task says otherwise
# (manent_apply's concurrency). Over 50 ms round trips, 16 rather than 8 took a 300-object first install from 4.4 s
# to 3.7 s, and 32 rather than 16 (with Services in the tier of the configuration) its apply from 2.3-2.6 s to
# 2.0 s: a Service takes the API server ~0.05 s, so 16 at once leave it waiting on the link. Locally no slower
# (medians of alternated runs, docs/performance.md).
CONCURRENCY = 32
