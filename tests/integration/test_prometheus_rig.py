# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus test rig answers real PromQL over real scraped samples, as the metric analysis will see it.

Each test steers a service label of its own on the shared traffic exporter (fixture ``traffic``); Prometheus
scrapes it every second. Conditions on rates are polled until they hold (the 30 s windows take that long to
fill after a change), never asserted at a fixed time.
"""

import json
import math
import urllib.error

import pytest

from tests.http_stubs import serve
from tests.integration.prometheus_helpers import Client, rig, wait_until, within

pytestmark = pytest.mark.integration


def error_ratio(service, slot, window="30s"):
    sel = service.selector(slot=slot)
    return ('sum(rate(http_requests_total{%s,code=~"5.."}[%s])) / sum(rate(http_requests_total{%s}[%s]))'
            % (sel, window, sel, window))


def p99(service, slot):
    return ("histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{%s}[30s])))"
            % service.selector(slot=slot))


def requests(service, slot):
    return "sum(rate(http_requests_total{%s}[30s]))" % service.selector(slot=slot)


def test_a_bad_candidate_shows_in_its_error_ratio_and_p99_latency(prometheus, traffic):
    traffic.set("a", rps=20, error_ratio=0.0, latency_seconds=0.02)
    traffic.set("b", rps=20, error_ratio=0.2, latency_seconds=0.3)
    client = prometheus.client

    wait_until(lambda: client.scalar(error_ratio(traffic, "b")), within(0.18, 0.22),
               what="slot b's error ratio near 0.2")
    # latency_seconds 0.3 +- 20 % (0.24-0.36 s): the p99 lies in the bucket (0.25, 0.5]; a's 0.016-0.024 s
    # in (0.01, 0.025]
    wait_until(lambda: client.scalar(p99(traffic, "b")), within(0.25, 0.5), what="slot b's p99 in (0.25, 0.5]")
    wait_until(lambda: client.scalar(p99(traffic, "a")), within(0.01, 0.025), what="slot a's p99 in (0.01, 0.025]")
    wait_until(lambda: client.scalar(requests(traffic, "b")), within(18, 22), what="slot b near 20 requests/s")
    # a never answered an error: no 5xx series, so its error ratio is an empty vector, not 0
    assert client.vector(error_ratio(traffic, "a")) == []
    assert client.scalar("(%s) or vector(0)" % error_ratio(traffic, "a")) == 0


def test_a_slot_without_traffic_is_an_empty_vector(prometheus, traffic):
    traffic.set("a", rps=10)
    traffic.set("b", rps=0)
    client = prometheus.client
    # once a's series are scraped, the same scrapes carried b's, had there been any
    wait_until(lambda: client.scalar(requests(traffic, "a")), what="slot a scraped")
    assert client.query(requests(traffic, "b")) == {"resultType": "vector", "result": []}
    assert client.vector(error_ratio(traffic, "b")) == []
    assert client.vector(p99(traffic, "b")) == []


def test_traffic_that_stopped_gives_nan_zero_over_zero(prometheus, traffic):
    traffic.set("b", rps=10, error_ratio=0.1)
    client = prometheus.client
    short = error_ratio(traffic, "b", window="5s")  # a short window: the stop shows within seconds
    wait_until(lambda: client.scalar(short), lambda v: v is not None and not math.isnan(v),
               what="slot b's error ratio a number")
    traffic.set("b", rps=0)
    wait_until(lambda: client.scalar(short), lambda v: v is not None and math.isnan(v),
               what="slot b's error ratio NaN (0/0) once its traffic stopped")
    # the counters are still there, unchanged: rate 0, not an empty vector
    assert client.scalar("sum(rate(http_requests_total{%s}[5s]))" % traffic.selector(slot="b")) == 0


def test_a_syntax_error_is_http_400_bad_data(prometheus):
    status, body = prometheus.client.query_raw('sum(rate(http_requests_total{slot="b"}[30s])')
    assert status == 400
    assert body["status"] == "error"
    assert body["errorType"] == "bad_data"
    assert "parse error" in body["error"]


def test_a_reset_service_leaves_no_series(prometheus, traffic):
    traffic.set("a", rps=10)
    client = prometheus.client
    series = "http_requests_total{%s}" % traffic.selector()
    wait_until(lambda: client.vector(series), what="the service's series scraped")
    traffic.reset()
    # the next scrape lacks them: Prometheus marks them stale, an instant query finds nothing
    wait_until(lambda: client.vector(series), lambda v: v == [], what="the service's series gone after reset")


def test_the_exporter_refuses_a_bad_configuration(prometheus, traffic):
    for bad in ({"rps": -1}, {"error_ratio": 1.5}, {"latency_seconds": "slow"}, {"colour": "red"}):
        with pytest.raises(ValueError, match="HTTP 400"):
            traffic.set("b", **bad)
    assert traffic.set("b", rps=5) == {"service": traffic.name, "slot": "b", "rps": 5.0, "error_ratio": 0.0,
                                       "error_code": 500, "latency_seconds": 0.05, "latency_spread": 0.2}


def test_a_private_prometheus_goes_away_and_comes_back(private_prometheus, traffic):
    traffic.set("b", rps=10)
    instance = private_prometheus()
    client = instance.client
    query = requests(traffic, "b")
    wait_until(lambda: client.scalar(query), what="the private instance scraped slot b")

    instance.stop()
    assert not instance.running
    with pytest.raises(urllib.error.URLError):  # connection refused
        client.query(query)
    instance.start()
    assert client.ready()
    wait_until(lambda: client.scalar(query), what="slot b queried again after the restart")

    instance.kill()
    assert not instance.running
    instance.start()  # replays its write-ahead log
    wait_until(lambda: client.scalar(query), what="slot b queried again after SIGKILL and a start")

    instance.pause()
    try:
        with pytest.raises((TimeoutError, urllib.error.URLError)):  # connects, never answers
            Client(instance.url, timeout=2).query(query)
    finally:
        instance.resume()
    wait_until(lambda: client.scalar(query), what="slot b queried again after the pause")


def test_a_restart_whose_port_another_server_took_fails_and_names_it(private_prometheus, traffic):
    """While an instance is down, a server that answers every request as a ready Prometheus with data takes its
    port: the restart fails with PortTaken instead of passing for the instance (whose own process cannot bind and
    exits), and starts once the port is free again."""
    traffic.set("b", rps=5)
    instance = private_prometheus()
    instance.stop()

    def impostor(_method, _path, _headers, _body):
        data = {"resultType": "vector", "result": [{"metric": {"job": "traffic"}, "value": [1, "1"]}]}
        return 200, "application/json", json.dumps({"status": "success", "data": data}).encode()

    with serve(impostor, port=instance.info["port"]) as url:
        assert url == instance.url
        with pytest.raises(rig.PortTaken, match="another process answers at %s" % instance.url):
            instance.start(timeout=20)
        assert not instance.running
    instance.start()
    assert instance.running and instance.client.ready()
    wait_until(lambda: instance.client.scalar(requests(traffic, "b")), what="slot b once the port was free")


def test_a_private_prometheus_with_basic_auth(private_prometheus, traffic):
    traffic.set("b", rps=5)
    instance = private_prometheus(auth="basic")
    user, password = instance.basic_auth
    assert Client(instance.url).query_raw("up")[0] == 401
    assert Client(instance.url, basic_auth=(user, password + "x")).query_raw("up")[0] == 401
    wait_until(lambda: instance.client.scalar(requests(traffic, "b")), what="slot b through basic auth")


def test_a_private_prometheus_behind_the_bearer_proxy(private_prometheus, traffic):
    traffic.set("b", rps=5)
    instance = private_prometheus(auth="bearer")
    assert instance.url != instance.prometheus_url
    status, body = Client(instance.url).query_raw("up")
    assert status == 401
    assert body["errorType"] == "unauthorized"
    assert Client(instance.url, bearer_token=instance.bearer_token + "x").query_raw("up")[0] == 401
    wait_until(lambda: instance.client.scalar(requests(traffic, "b")), what="slot b through the bearer proxy")
    # Prometheus' own error answers pass through the proxy unchanged
    status, body = instance.client.query_raw("sum(")
    assert (status, body["errorType"]) == (400, "bad_data")
    stats = Client(instance.url).request("/-/bearer-proxy/stats")[1]
    assert stats["refused"] == 2
    assert stats["authorized"] >= 2
