# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""manent_analysis against a real Prometheus scraping real samples (hack/prometheus.py, the traffic exporter):
real PromQL (rate, histogram_quantile, ratios) judged by the module as Ansible runs it. Each test has a service
label of its own on the shared exporter; a test that stops Prometheus or needs a token has a private instance."""

from __future__ import annotations

import math
import time

import pytest

from tests.integration.module_helpers import run_module
from tests.integration.prometheus_helpers import wait_until, within

pytestmark = pytest.mark.integration
SETTLE = 60  # seconds: a 20 s rate window settles well within this after a change of the traffic


def error_ratio(traffic):
    """The error ratio of the slot the query is about (``${slot}``), over the window since the step started."""
    svc = traffic.selector()
    return ('sum(rate(http_requests_total{%s,slot="${slot}",code=~"5.."}[${window}])) / '
            'sum(rate(http_requests_total{%s,slot="${slot}"}[${window}]))' % (svc, svc))


def p99(traffic):
    return ('histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{%s,slot="${slot}"}'
            '[${window}])))' % traffic.selector())


def requests_rate(traffic):
    return 'sum(rate(http_requests_total{%s,slot="${slot}"}[${window}]))' % traffic.selector()


def analyze(tmp_path, url, checks, start, mode="analyze", provider=None, **settings):
    """One run of the module (as Ansible runs it) over ``checks``; (failed, result)."""
    params = {"provider": dict({"url": url, "timeout": "10s"}, **(provider or {})), "checks": checks, "mode": mode,
              "context": {"namespace": "shop-prod", "candidate_slot": "b", "stable_slot": "a",
                          "candidate_service": "shop-b", "stable_service": "shop-a", "start": start},
              "interval": settings.pop("interval", "2s"), "count": settings.pop("count", 3),
              "min_window": settings.pop("min_window", "20s")}
    params.update(settings)
    return run_module("manent_analysis", tmp_path, **params)


def spanning(prometheus, traffic, slot, seconds=22):
    """Wait until every series of the slot has been scraped for ``seconds`` (its first sample that long ago). A
    window reaching back before a series' first sample gets a rate extrapolated from the few samples it has,
    each series (each answer code) its own way, so an error ratio there can be far from the traffic's: in CI, 0.056
    for a slot making 10 % errors, its series 2 s old in a 20 s window."""
    age = "min(time() - min_over_time(timestamp(http_requests_total{%s})[30s:1s]))" % traffic.selector(slot=slot)
    wait_until(lambda: prometheus.client.scalar(age), lambda value: value is not None and value >= seconds,
               timeout=120, what="series of slot %s scraped for %d s" % (slot, seconds))


def steady(prometheus, traffic, slot, query, until, span=True):
    """Wait until the slot's series span the last 20 s (unless ``span`` is false: a test that judges no value of
    them) and its traffic shows in them (``query`` of it holds ``until``); the start of a step then is a moment
    from which the last 20 s hold that traffic only."""
    if span:
        spanning(prometheus, traffic, slot)
    wait_until(lambda: prometheus.client.scalar(query.replace("${slot}", slot).replace("${window}", "20s")),
               until, timeout=120, what="%s of slot %s" % (query, slot))
    return int(time.time()) - 20


def check_named(result, name):
    return next(c for c in result["checks"] if c["name"] == name)


def test_a_healthy_candidate_passes_every_check(prometheus, traffic, tmp_path):
    traffic.set("a", rps=20, error_ratio=0.01, latency_seconds=0.05)
    traffic.set("b", rps=20, error_ratio=0.01, latency_seconds=0.05)
    steady(prometheus, traffic, "a", requests_rate(traffic), within(10, 40))
    start = steady(prometheus, traffic, "b", error_ratio(traffic), within(0, 0.05))
    failed, result = analyze(tmp_path, prometheus.url, [
        {"name": "error-ratio", "query": error_ratio(traffic), "max": 0.05},
        {"name": "p99", "query": p99(traffic), "max": 0.5},
        {"name": "error-ratio-vs-stable", "query": error_ratio(traffic),
         "baseline": {"max_factor": 1.5, "max_offset": 0.02}},
    ], start)
    assert not failed and result["verdict"] == "Successful", result
    for check in result["checks"]:
        assert check["verdict"] == "Successful" and check["counters"]["successful"] == 3, check


def test_a_candidate_with_errors_fails_showing_query_values_and_condition(prometheus, traffic, tmp_path):
    traffic.set("b", rps=20, error_ratio=0.3, latency_seconds=0.05)
    start = steady(prometheus, traffic, "b", error_ratio(traffic), within(0.2, 0.4))
    failed, result = analyze(tmp_path, prometheus.url, [
        {"name": "error-ratio", "query": error_ratio(traffic), "max": 0.05}], start)
    assert failed and result["verdict"] == "Failed", result
    check = check_named(result, "error-ratio")
    assert check["verdict"] == "Failed" and check["counters"]["failed"] >= 1, check
    assert 'slot="b"' in check["rendered_query"] and "${" not in check["rendered_query"], check
    assert check["condition"] and "0.05" in check["condition"], check
    values = [v["value"] for v in check["values"]]
    assert values and all(0.2 < float(v) < 0.4 for v in values), check
    assert "error-ratio" in result["msg"] and "0.05" in result["msg"], result["msg"]


@pytest.mark.parametrize("policy, verdict", [("fail", "Failed"), ("inconclusive", "Inconclusive"),
                                             ("pass", "Successful"), ("retry", "Inconclusive")])
def test_no_data_is_decided_by_its_policy(prometheus, traffic, tmp_path, policy, verdict):
    """Slot b never had traffic: its series do not exist, every query answers an empty vector."""
    traffic.set("a", rps=20)
    steady(prometheus, traffic, "a", requests_rate(traffic), within(10, 40), span=False)  # slot b is judged
    assert prometheus.client.vector(error_ratio(traffic).replace("${slot}", "b").replace("${window}", "20s")) == []
    failed, result = analyze(tmp_path, prometheus.url, [
        {"name": "error-ratio", "query": error_ratio(traffic), "max": 0.05, "on_no_data": policy,
         "count": 2, "max_measurements": 3}], int(time.time()) - 20)
    assert result["verdict"] == verdict, result
    assert failed is (verdict != "Successful"), result
    assert "no data" in check_named(result, "error-ratio")["reason"].lower(), result


def test_nan_from_zero_over_zero_is_no_data(prometheus, traffic, tmp_path):
    """Traffic that stopped: the series stay, their rates are 0, the ratio is 0/0 = NaN: no data, never a pass or a
    failure by itself."""
    traffic.set("b", rps=20, error_ratio=0.5)
    steady(prometheus, traffic, "b", requests_rate(traffic), within(10, 40), span=False)  # judged once stopped
    traffic.set("b", rps=0)
    nan = error_ratio(traffic).replace("${slot}", "b").replace("${window}", "5s")
    wait_until(lambda: prometheus.client.vector(nan), lambda v: bool(v) and math.isnan(v[0][1]), timeout=60,
               what="a NaN error ratio")
    failed, result = analyze(tmp_path, prometheus.url, [
        {"name": "error-ratio", "query": error_ratio(traffic).replace("${window}", "5s"), "max": 0.05,
         "on_no_data": "inconclusive"}], int(time.time()) - 5, min_window="5s", count=1)
    assert failed and result["verdict"] == "Inconclusive", result
    assert "nan" in check_named(result, "error-ratio")["reason"].lower(), result


@pytest.mark.parametrize("reducer, bound, verdict", [
    ("all", {"max": 16}, "Failed"), ("any", {"max": 16}, "Successful"), ("max", {"max": 16}, "Failed"),
    ("min", {"max": 16}, "Successful"), ("avg", {"min": 14, "max": 16}, "Successful"),
    ("sum", {"max": 16}, "Failed")])
def test_two_series_with_each_reducer(prometheus, traffic, tmp_path, reducer, bound, verdict):
    """Requests per second by slot: a at 10, b at 20 (two series), each measured within 0.5 of its rate, so no
    bound sits on a value. all/max/sum see 20 or 30 > 16; any/min see 10; avg sees 15, inside 14..16, which no
    other reducer gives."""
    traffic.set("a", rps=10)
    traffic.set("b", rps=20)
    query = 'sum by (slot) (rate(http_requests_total{%s}[${window}]))' % traffic.selector()
    wait_until(lambda: prometheus.client.vector(query.replace("${window}", "20s")),
               lambda v: len(v) == 2 and all(within(5, 30)(value) for _labels, value in v), timeout=120,
               what="two series")
    spanning(prometheus, traffic, "a")
    spanning(prometheus, traffic, "b")
    wait_until(lambda: sorted(round(value) for _labels, value in prometheus.client.vector(
        query.replace("${window}", "20s"))), lambda v: v == [10, 20], timeout=120, what="rates of 10 and 20")
    start = int(time.time()) - 20  # the last 20 s hold both rates: the window of the measurement starts there
    failed, result = analyze(tmp_path, prometheus.url, [
        dict({"name": "rps", "query": query, "reducer": reducer}, **bound)], start, count=1)
    assert result["verdict"] == verdict, (reducer, result["checks"])
    check = check_named(result, "rps")
    assert sorted(v["labels"].get("slot") for v in check["values"]) == ["a", "b"], check


def test_a_relative_check_passes_and_fails_against_the_stable_slot(prometheus, traffic, tmp_path):
    traffic.set("a", rps=20, error_ratio=0.1)
    traffic.set("b", rps=20, error_ratio=0.12)
    steady(prometheus, traffic, "a", error_ratio(traffic), within(0.05, 0.15))
    start = steady(prometheus, traffic, "b", error_ratio(traffic), within(0.07, 0.17))
    relative = {"name": "vs-stable", "query": error_ratio(traffic), "baseline": {"max_factor": 1.5, "max_offset": 0.01}}
    failed, result = analyze(tmp_path, prometheus.url, [relative], start, count=1)
    assert not failed and result["verdict"] == "Successful", result
    traffic.set("b", rps=20, error_ratio=0.5)
    start = steady(prometheus, traffic, "b", error_ratio(traffic), within(0.4, 0.6))
    failed, result = analyze(tmp_path, prometheus.url, [relative], start, count=1)
    assert failed and result["verdict"] == "Failed", result
    assert "baseline" in check_named(result, "vs-stable"), result


def test_prometheus_stopped_mid_analysis_ends_in_error_never_success(prometheus, traffic, private_prometheus,
                                                                     tmp_path):
    server = private_prometheus()
    traffic.set("b", rps=20, error_ratio=0.0)
    wait_until(lambda: server.client.scalar(requests_rate(traffic).replace("${slot}", "b").replace(
        "${window}", "20s")), within(10, 40), timeout=120, what="traffic in the private Prometheus")
    server.stop()
    failed, result = analyze(tmp_path, server.url, [
        {"name": "rps", "query": requests_rate(traffic), "min": 1, "consecutive_error_limit": 2}],
        int(time.time()) - 20, count=3)
    assert failed and result["verdict"] == "Error", result
    check = check_named(result, "rps")
    assert check["counters"]["successful"] == 0 and check["counters"]["errors"] >= 3, check


def test_a_query_prometheus_refuses_fails_the_preflight(prometheus, traffic, tmp_path):
    failed, result = analyze(tmp_path, prometheus.url, [
        {"name": "good", "query": requests_rate(traffic), "min": 1},
        {"name": "broken", "query": "sum(rate(http_requests_total{%s}[${window}])" % traffic.selector(), "max": 1}],
        int(time.time()), mode="preflight")
    assert failed, result
    assert "broken" in result["msg"] and "bad_data" in result["msg"], result["msg"]


def test_the_bearer_token_appears_in_no_output(prometheus, traffic, private_prometheus, tmp_path):
    server = private_prometheus(auth="bearer")
    traffic.set("b", rps=20)
    wait_until(lambda: server.client.scalar(requests_rate(traffic).replace("${slot}", "b").replace(
        "${window}", "20s")), within(10, 40), timeout=120, what="traffic behind the bearer proxy")
    failed, result = analyze(tmp_path, server.url, [{"name": "rps", "query": requests_rate(traffic), "min": 1}],
                             int(time.time()) - 20, count=1, provider={"bearer_token": server.bearer_token})
    assert not failed and result["verdict"] == "Successful", result
    assert server.bearer_token not in repr(result)
    failed, result = analyze(tmp_path, server.url, [{"name": "rps", "query": requests_rate(traffic), "min": 1}],
                             int(time.time()) - 20, count=1, provider={"bearer_token": "wrong-" + server.bearer_token})
    assert failed and server.bearer_token not in repr(result), result
