# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""manent_analysis against a real Prometheus 2.53 (the LTS line; PROMETHEUS_LTS_VERSION in hack/versions.env, built
from the Go module proxy like 3.x) scraping a counter without ``_total``, as ingress-nginx exports it. Prometheus
before 2.54 sends the info annotation of ``rate()`` over such a counter ("PromQL info: metric might not be a
counter") among the ``warnings``: the check must be judged, with the info reported, not Inconclusive."""

from __future__ import annotations

import json
import time

import pytest

from tests.http_stubs import serve
from tests.integration.module_helpers import run_module
from tests.integration.prometheus_helpers import start_instance, wait_until, within

pytestmark = pytest.mark.integration
METRIC = "nginx_ingress_controller_requests"
QUERY = 'sum(rate(%s{status="200"}[${window}]))' % METRIC
INFO = "PromQL info: metric might not be a counter"


def counter(_method, _path, _headers, _body):
    """/metrics: one counter without _total, growing 10 per second."""
    value = int(time.time() * 10) % 10**9
    text = "# HELP %s The requests.\n# TYPE %s counter\n%s{status=\"200\"} %d\n" % (METRIC, METRIC, METRIC, value)
    return 200, "text/plain; version=0.0.4", text.encode()


@pytest.fixture
def lts_prometheus(tmp_path):
    """A Prometheus 2.53 of this test on free loopback ports, scraping the counter every second; stopped after."""
    with serve(counter) as exporter:
        instance = start_instance(tmp_path / "prometheus-2.53", [exporter[len("http://"):]],
                                  line="PROMETHEUS_LTS_VERSION")
        try:
            yield instance
        finally:
            instance.close()


def analysis(tmp_path, url, start, mode="analyze"):
    return run_module("manent_analysis", tmp_path, provider={"url": url, "timeout": "10s"}, mode=mode,
                      checks=[{"name": "requests", "query": QUERY, "min": 1, "inconclusive_limit": 0}],
                      context={"namespace": "ingress", "start": start}, interval="1s", count=2, min_window="5s")


def test_prometheus_2_53_info_among_the_warnings_is_reported_and_the_check_judged(lts_prometheus, tmp_path):
    status, build = lts_prometheus.client.request("/api/v1/status/buildinfo")
    assert status == 200 and build["data"]["version"].startswith("2.53."), build
    plain = QUERY.replace("${window}", "10s")
    wait_until(lambda: lts_prometheus.client.scalar(plain), within(8, 100), timeout=120, what="the counter's rate")
    start = int(time.time()) - 10
    # What 2.53 answers: the info in "warnings" (no "infos" field before 2.54).
    status, body = lts_prometheus.client.query_raw(plain)
    assert status == 200 and "infos" not in body, body
    assert [w for w in body.get("warnings", []) if w.startswith(INFO)], json.dumps(body)

    failed, result = analysis(tmp_path, lts_prometheus.url, start)
    assert not failed and result["verdict"] == "Successful", result
    (check,) = result["checks"]
    assert check["counters"]["successful"] == 2 and check["counters"]["inconclusive"] == 0, check
    assert check["warnings"] == [] and check["infos"] and check["infos"][0].startswith(INFO), check

    failed, result = analysis(tmp_path, lts_prometheus.url, start, mode="preflight")
    assert not failed, result
    (query,) = result["preflight"]
    assert query["outcome"] == "accepted" and "Prometheus noted: %s" % INFO in query["message"], query
