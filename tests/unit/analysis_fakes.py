# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the analysis unit tests (test_analysis_*.py) share: the recorded Prometheus answers
(tests/unit/fixtures/prometheus), a fake clock whose sleep only moves time, a fake Prometheus transport that answers
by query, and the module parameters of a small analysis."""

from __future__ import annotations

import copy
import json
import os
import urllib.parse

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.prometheus import QueryError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "prometheus")
STATUSES = {"error_bad_data": 400, "error_execution": 422, "error_timeout": 503, "error_unavailable": 503,
            "error_canceled": 499}
START = 1_733_306_400.0  # 2024-12-04T10:00:00Z
TOKEN = "sentinel-TOKEN-6f1d2c9a"
PASSWORD = "sentinel-PASSWORD-83be17"


def fixture(name):
    """(HTTP status, body bytes) of a recorded answer."""
    with open(os.path.join(FIXTURES, name + ".json"), "rb") as handle:
        return STATUSES.get(name, 200), handle.read()


def answer(value, labels=None, result_type="vector", warnings=None):
    """(200, body) of a one-series answer with ``value`` (a string as Prometheus writes it)."""
    if result_type == "scalar":
        data = {"resultType": "scalar", "result": [START, value]}
    else:
        data = {"resultType": "vector", "result": [{"metric": labels or {}, "value": [START, value]}]}
    body = {"status": "success", "data": data}
    if warnings:
        body["warnings"] = warnings
    return 200, json.dumps(body).encode()


def series(*values):
    """(200, body) of a vector with one series per value, labelled pod=p0, p1, ..."""
    result = [{"metric": {"pod": "p%d" % i}, "value": [START, value]} for i, value in enumerate(values)]
    return 200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


class FakePrometheus:
    """A transport (``transport(url, body, headers, timeout)``) that answers from ``script``: a function of
    (query, evaluation time) returning (status, body) or raising QueryError, or a list of such answers for every
    query in turn. Every request is kept in ``requests`` (url, form, headers)."""

    def __init__(self, script):
        self.script = script if callable(script) else self._in_turn(list(script))
        self.requests = []

    @staticmethod
    def _in_turn(answers):
        def next_answer(_query, _at):
            item = answers.pop(0)
            if isinstance(item, Exception):
                raise item
            return item
        return next_answer

    def __call__(self, url, body, headers, timeout):
        form = {key: values[0] for key, values in urllib.parse.parse_qs(body.decode()).items()}
        self.requests.append({"url": url, "form": form, "headers": dict(headers), "timeout": timeout})
        status, payload = self.script(form["query"], float(form["time"]))
        return status, "", payload

    @property
    def queries(self):
        return [request["form"]["query"] for request in self.requests]

    @property
    def times(self):
        return [float(request["form"]["time"]) for request in self.requests]


def unreachable(*_args):
    raise QueryError("unreachable: [Errno 111] Connection refused", "unreachable")


BASE_PARAMS = {
    "provider": {"url": "https://prometheus.example:9090", "bearer_token": TOKEN, "insecure_skip_tls_verify": False,
                 "timeout": "30s"},
    "context": {"namespace": "shop", "candidate_slot": "b", "stable_slot": "a", "candidate_service": "shop-b",
                "stable_service": "shop-a", "start": START},
    "mode": "analyze", "interval": "1m", "count": 3, "min_window": "1m",
    "checks": [{"name": "errors", "query": 'sum(rate(errors{service="${service}"}[${window}]))', "max": 0.05}],
}


def params(checks=None, **overrides):
    """Module parameters of an analysis of ``checks`` (default: one check, max 0.05), with ``overrides``."""
    out = copy.deepcopy(BASE_PARAMS)
    if checks is not None:
        out["checks"] = checks
    out.update(overrides)
    return out


def check(**fields):
    """One check: name c, a query of the candidate's service, max 0.05 unless ``fields`` say otherwise."""
    out = {"name": "c", "query": 'sum(rate(x{service="${service}"}[${window}]))', "max": 0.05}
    out.update(fields)
    return {key: value for key, value in out.items() if value is not None}
