# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Metric analysis of a rollout (module manent_analysis, docs/analysis.md): checks run against the Prometheus
HTTP API and one verdict.

- model.py       the check spec, context and settings: dataclasses with their defaults
- params.py      the module's parameters as those, validated (errors name the check and field)
- template.py    the ``${...}`` placeholders of queries and their rendering for one measurement
- provider.py    where Prometheus is and the credentials (the module's ``provider`` option), checked
- prometheus.py  the HTTP client of ``/api/v1/query`` (TLS, credentials, Prometheus' error answers)
- results.py     an answer's data as series: every result type, NaN and infinities
- evaluate.py    pure functions: reducers, conditions, the outcome of one measurement
- verdict.py     pure functions: counters and limits -> the verdict of a check, checks -> the analysis' verdict
- run.py         the measurement loop (injected clock and sleep), fail-fast, and the preflight
- report.py      the explanation: rendered queries, evaluation times, values with labels, conditions, counters,
                 one-line reasons; text.py writes numbers, labels and times as Prometheus does

The module's entry point (argument spec, parameters mapped to the above, the result) is tasks/analysis_task.py.
May import: base (errors, durations, credentials), never the kubernetes client: the analysis talks to Prometheus
only.
"""
