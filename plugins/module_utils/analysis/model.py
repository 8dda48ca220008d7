# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an analysis is made of: checks (:class:`Check`, with :class:`Baseline` and :class:`TrafficFloor`), the
release's :class:`Context` and the analysis-wide :class:`Settings`, each a frozen dataclass with its defaults.
params.py builds them from the module's parameters and validates them."""

from __future__ import annotations

import dataclasses

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import template

REDUCERS = ("all", "any", "max", "min", "avg", "sum")
AGGREGATORS = ("max", "min", "avg", "sum")
NO_DATA_POLICIES = ("fail", "inconclusive", "pass", "retry")


@dataclasses.dataclass(frozen=True)
class Baseline:
    """The relative condition: the check's value compared with the stable slot's.
    ``value <= baseline * max_factor + max_offset`` and ``value >= baseline * min_factor + min_offset``."""

    query: str = ""  # empty: the check's query, rendered for the stable side
    max_factor: float | None = None
    max_offset: float = 0.0
    min_factor: float | None = None
    min_offset: float = 0.0
    reducer: str = ""  # empty: the check's reducer when it aggregates, else the baseline must be one series


@dataclasses.dataclass(frozen=True)
class TrafficFloor:
    """Below ``min`` (the sum of the query's series) a measurement has no data: ``on_no_data`` decides."""

    query: str
    min: float


@dataclasses.dataclass(frozen=True)
class Check:
    name: str
    query: str
    min: float | None = None
    max: float | None = None
    baseline: Baseline | None = None
    reducer: str = "all"
    interval: float = 60.0
    count: int = 5
    initial_delay: float = 0.0
    failure_limit: int = 0
    inconclusive_limit: int = 0
    consecutive_error_limit: int = 4
    max_measurements: int = 0  # 0: 2 * count + consecutive_error_limit
    on_no_data: str = "inconclusive"
    traffic_floor: TrafficFloor | None = None
    allow_warnings: bool = False
    enforce: bool = True

    @property
    def budget(self):
        """How many measurements the check may take: ``count`` decided ones, plus as many skipped for lack of data
        (``on_no_data: retry``), plus a run of errors up to its limit, unless ``max_measurements`` says."""
        return self.max_measurements or 2 * self.count + self.consecutive_error_limit

    @property
    def baseline_reducer(self):
        """The reducer of the baseline's series, or "" (the baseline must be one series)."""
        if self.baseline is None:
            return ""
        if self.baseline.reducer:
            return self.baseline.reducer
        return self.reducer if self.reducer in AGGREGATORS else ""

    def queries(self):
        """(role, query template, side) of each query a measurement may send, in the order it sends them."""
        out = []
        if self.traffic_floor is not None:
            out.append(("traffic_floor", self.traffic_floor.query, template.CANDIDATE))
        out.append(("query", self.query, template.CANDIDATE))
        if self.baseline is not None:
            out.append(("baseline", self.baseline.query or self.query, template.STABLE))
        return out


@dataclasses.dataclass(frozen=True)
class Context:
    """The release and step the queries are about; ``start`` in seconds since the epoch."""

    namespace: str = ""
    candidate_slot: str = ""
    stable_slot: str = ""
    candidate_service: str = ""
    stable_service: str = ""
    start: float = 0.0


@dataclasses.dataclass(frozen=True)
class Settings:
    """Analysis-wide: check defaults and the shortest window (whole seconds) a query gets."""

    interval: float = 60.0
    count: int = 5
    min_window: int = 60
