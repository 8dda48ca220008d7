# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run.analyze and run.preflight against a fake Prometheus and a fake clock: the schedule (first measurement not
before the step's start plus min_window, pinned evaluation times, the window from the step's start), one request per
query per interval, limits, fail-fast, errors that never count as successes, retries, and the preflight."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import report, run
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.evaluate import (
    ERROR, FAILED, INCONCLUSIVE, SKIPPED, SUCCESSFUL)
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.model import (
    Baseline, Check, Context, Settings, TrafficFloor)
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.prometheus import PrometheusClient, QueryError
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.provider import Provider
from tests.unit.analysis_fakes import START, FakePrometheus, answer, fixture, unreachable
from tests.unit.fakes import FakeClock

CONTEXT = Context(namespace="shop", candidate_slot="b", stable_slot="a", candidate_service="shop-b",
                  stable_service="shop-a", start=START)
SETTINGS = Settings(interval=60.0, count=3, min_window=60)
QUERY = 'rate(x{service="${service}"}[${window}])'


def analyze(checks, script, clock=None, context=CONTEXT, settings=SETTINGS):
    clock = clock or FakeClock(START)
    prometheus = FakePrometheus(script)
    client = PrometheusClient(Provider("https://prometheus.example:9090"), transport=prometheus)
    lines = []
    result = run.analyze(checks, context, client, settings, clock=clock, sleep=clock.sleep,
                         on_measurement=lambda check_run, m: lines.append((check_run.name, m.outcome)))
    return result, prometheus, clock, lines


def always(reply):
    return lambda _query, _at: reply


def test_measurements_start_after_min_window_at_pinned_times_with_the_window_from_the_step():
    result, prometheus, clock, lines = analyze([Check("c", QUERY, max=0.05, count=3)], always(answer("0.01")))
    assert result.outcome()[0] == SUCCESSFUL
    assert prometheus.times == [START + 60, START + 120, START + 180]
    assert prometheus.queries == ['rate(x{service="shop-b"}[%ds])' % s for s in (60, 120, 180)]
    assert clock.sleeps == [60, 60, 60] and lines == [("c", SUCCESSFUL)] * 3
    assert [m.window for m in result.runs[0].measurements] == [60, 120, 180]


def test_a_step_that_started_earlier_is_measured_at_once_over_its_whole_window():
    clock = FakeClock(START + 600.5)
    result, prometheus, _clock, _lines = analyze([Check("c", QUERY, max=0.05, count=2)], always(answer("0.01")),
                                                 clock=clock)
    assert prometheus.times == [START + 600.5, START + 660.5]
    assert prometheus.queries[0] == 'rate(x{service="shop-b"}[600s])'
    assert result.started == START + 600.5


def test_initial_delay_when_it_is_later_than_min_window():
    clock = FakeClock(START + 600)
    _result, prometheus, _clock, _lines = analyze([Check("c", QUERY, max=0.05, count=1, initial_delay=30)],
                                                  always(answer("0.01")), clock=clock)
    assert prometheus.times == [START + 630]


def test_every_query_of_a_measurement_shares_its_evaluation_time():
    check = Check("c", QUERY, baseline=Baseline(max_factor=2.0), traffic_floor=TrafficFloor("sum(t)", 1.0), count=2)
    _result, prometheus, _clock, _lines = analyze([check], always(answer("1")))
    assert len(prometheus.requests) == 6  # three queries, once each per interval
    assert prometheus.times == [START + 60] * 3 + [START + 120] * 3
    assert prometheus.queries[:3] == ["sum(t)", 'rate(x{service="shop-b"}[60s])', 'rate(x{service="shop-a"}[60s])']


def test_below_the_traffic_floor_the_other_queries_are_not_sent():
    def script(query, _at):
        return answer("0.5") if query == "sum(t)" else answer("0.01")
    check = Check("c", QUERY, max=0.05, traffic_floor=TrafficFloor("sum(t)", 1.0), count=2, on_no_data="fail")
    result, prometheus, _clock, _lines = analyze([check], script)
    assert prometheus.queries == ["sum(t)"] and result.outcome()[0] == FAILED


def test_errors_up_to_the_limit_end_in_error_never_in_success():
    result, prometheus, _clock, _lines = analyze([Check("c", QUERY, max=0.05, count=3)], unreachable)
    verdict, reason, _deciding = result.outcome()
    assert verdict == ERROR and len(prometheus.requests) == 5
    assert reason.startswith("check c Error: 5 consecutive errors (consecutive_error_limit 4)")
    counters = result.runs[0].counters
    assert (counters.successful, counters.errors, counters.decided) == (0, 5, 0)


def test_errors_below_the_limit_are_measured_again_and_not_counted():
    replies = [QueryError("unreachable: refused", "unreachable")] * 4 + [answer("0.01")] * 3
    result, prometheus, _clock, _lines = analyze([Check("c", QUERY, max=0.05, count=3)], replies)
    assert result.outcome()[0] == SUCCESSFUL and len(prometheus.requests) == 7
    assert [m.outcome for m in result.runs[0].measurements] == [ERROR] * 4 + [SUCCESSFUL] * 3


def test_prometheus_gone_after_the_first_measurement_is_an_error_naming_its_failure():
    """One measurement, then Prometheus unreachable: count cannot be reached within max_measurements because of the
    errors (not for lack of data), so the check is Error, and its reason says what Prometheus answered."""
    replies = [answer("0.01")] + [QueryError("unreachable: [Errno 111] Connection refused", "unreachable")] * 4
    result, _prometheus, _clock, _lines = analyze([Check("c", QUERY, max=0.05, count=2, max_measurements=5)], replies)
    explained = report.analysis_dict(result)  # the module's result: the check's reason ends with its last measurement
    verdict, reason = explained["verdict"], explained["reason"]
    assert verdict == ERROR, reason
    assert reason.startswith("check c Error: 1 of count 2 measurements decided and max_measurements 5 cannot reach "
                             "it: 4 of 5 measurements were errors (0 skipped for lack of data); at "), reason
    assert reason.endswith(": query: Prometheus at https://prometheus.example:9090: unreachable: [Errno 111] "
                           "Connection refused (check provider.url and that Prometheus runs and is reachable from "
                           "the controller)"), reason


def test_a_query_prometheus_refuses_is_an_error_at_once():
    result, prometheus, _clock, _lines = analyze([Check("c", QUERY, max=0.05)], always(fixture("error_bad_data")))
    verdict, reason, _deciding = result.outcome()
    assert verdict == ERROR and len(prometheus.requests) == 1
    assert reason == "check c Error: the query can never succeed as written, not measured again"
    assert "refuses the query (400 bad_data)" in result.runs[0].measurements[0].reason


def test_fail_fast_stops_every_other_check():
    def script(query, _at):
        return answer("0.9") if "bad" in query else answer("0.01")
    checks = [Check("slow", QUERY, max=0.05, count=10, interval=30), Check("bad", "bad", max=0.05, count=3)]
    result, prometheus, _clock, _lines = analyze(checks, script)
    verdict, reason, deciding = result.outcome()
    assert verdict == FAILED and deciding.name == "bad"
    assert len(prometheus.requests) == 2  # one each, both due at start + 60
    slow = result.runs[0]
    assert slow.verdict == INCONCLUSIVE and slow.stopped
    assert slow.reason == "stopped after 1 of count 10 measurements: check bad decided the analysis (Failed)"
    assert reason.startswith("check bad Failed: 1 of 1 measurements failed (failure_limit 0)")


def test_a_check_not_enforced_neither_decides_nor_stops_the_others():
    def script(query, _at):
        return answer("0.9") if "shadow" in query else answer("0.01")
    checks = [Check("shadow", "shadow", max=0.05, count=2, enforce=False), Check("c", QUERY, max=0.05, count=3)]
    result, prometheus, _clock, _lines = analyze(checks, script)
    verdict, reason, _deciding = result.outcome()
    assert verdict == SUCCESSFUL and reason == "1 of 1 enforced checks successful"
    assert result.runs[0].verdict == FAILED and not result.runs[0].stopped
    assert len(prometheus.requests) == 4


def test_retry_measures_again_and_ends_inconclusive_without_data():
    check = Check("c", QUERY, max=0.05, count=2, on_no_data="retry", max_measurements=4)
    result, prometheus, _clock, _lines = analyze([check], always(fixture("vector_empty")))
    verdict, reason, _deciding = result.outcome()
    assert verdict == INCONCLUSIVE and len(prometheus.requests) == 3
    assert [m.outcome for m in result.runs[0].measurements] == [SKIPPED] * 3
    assert "cannot reach it (3 skipped for lack of data" in reason


def test_retry_then_data():
    replies = [fixture("vector_empty"), answer("0.01"), fixture("vector_empty"), answer("0.02")]
    check = Check("c", QUERY, max=0.05, count=2, on_no_data="retry")
    result, _prometheus, _clock, _lines = analyze([check], replies)
    assert result.outcome()[0] == SUCCESSFUL
    assert result.runs[0].counters.to_dict()["skipped"] == 2


def test_a_slow_answer_skips_the_slots_it_overran():
    clock = FakeClock(START)

    def slow(_query, _at):
        clock.now += 150  # the answer takes two and a half intervals
        return answer("0.01")
    _result, prometheus, _clock, _lines = analyze([Check("c", QUERY, max=0.05, count=2)], slow, clock=clock)
    assert prometheus.times == [START + 60, START + 240]


def test_checks_keep_their_own_schedules():
    checks = [Check("a", "qa", max=1.0, count=3, interval=30), Check("b", "qb", max=1.0, count=2, interval=60)]
    _result, prometheus, _clock, _lines = analyze(checks, always(answer("0.5")))
    assert list(zip(prometheus.queries, [t - START for t in prometheus.times])) == [
        ("qa", 60), ("qb", 60), ("qa", 90), ("qa", 120), ("qb", 120)]


# -- preflight -----------------------------------------------------------------------------------------------

def preflight(checks, script, clock=None):
    clock = clock or FakeClock(START)
    prometheus = FakePrometheus(script)
    client = PrometheusClient(Provider("https://prometheus.example:9090"), transport=prometheus)
    return run.preflight(checks, CONTEXT, client, SETTINGS, clock=clock), prometheus


def test_preflight_sends_every_query_once_now():
    checks = [Check("a", QUERY, baseline=Baseline(max_factor=1.0), traffic_floor=TrafficFloor("t", 1.0)),
              Check("b", "qb", max=1.0)]
    result, prometheus = preflight(checks, lambda q, _at: fixture("vector_empty") if q == "qb" else answer("1"))
    assert prometheus.times == [START] * 4 and not result.refused
    assert [(q.check, q.role, q.outcome) for q in result.queries] == [
        ("a", "traffic_floor", "accepted"), ("a", "query", "accepted"), ("a", "baseline", "accepted"),
        ("b", "query", "accepted")]
    assert result.queries[1].query == 'rate(x{service="shop-b"}[60s])' and result.window == 60
    assert result.queries[3].message == "no data yet (empty)"


@pytest.mark.parametrize("reply, outcome, text", [
    ("error_bad_data", "refused", "refuses the query (400 bad_data)"),
    ("string", "refused", "returns a string"),
    ("error_execution", "warning", "422 execution"),
    ("error_timeout", "warning", "503 timeout"),
    ("native_histogram", "warning", "native histogram"),
    ("warnings", "warning", "Prometheus warned"),
    ("vector_all_nan", "accepted", "no data yet (only NaN)"),
])
def test_preflight_outcomes(reply, outcome, text):
    result, _prometheus = preflight([Check("a", "qa", max=1.0)], lambda _q, _at: fixture(reply))
    assert result.queries[0].outcome == outcome
    assert text in result.queries[0].message
    assert bool(result.refused) is (outcome == "refused")


def test_preflight_stops_sending_once_prometheus_cannot_be_reached():
    checks = [Check("a", "qa", max=1.0), Check("b", "qb", max=1.0)]
    result, prometheus = preflight(checks, unreachable)
    assert len(prometheus.requests) == 1
    assert [q.outcome for q in result.queries] == ["refused", "not sent"]
    assert result.queries[1].message.startswith("not sent: Prometheus at https://prometheus.example:9090: "
                                                "unreachable")
    assert len(result.refused) == 2


def test_preflight_keeps_sending_after_a_refused_query():
    checks = [Check("a", "qa", max=1.0), Check("b", "qb", max=1.0)]
    result, prometheus = preflight(checks, lambda q, _at: fixture("error_bad_data") if q == "qa" else answer("1"))
    assert len(prometheus.requests) == 2
    assert [q.outcome for q in result.queries] == ["refused", "accepted"]


NOT_PROMETHEUS = [
    (200, b'{"status": "success", "data": {"resultType": "streams", "result": [{"stream": {"app": "shop"}, '
          b'"values": [["1733306400000000000", "GET /"]]}]}}'),
    (200, b'{"status": "success", "data": {"resultType": "vector", "result": {"foo": 1}}}'),
    (200, b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "foo": 1}]}}'),
    (200, b'{"status": "success", "data": {"foo": 1}}'),
    (200, b'{"major": "1", "minor": "34", "gitVersion": "v1.34.4"}'),
    (200, b"<html><head><title>Welcome</title></head><body>It works</body></html>"),
]


@pytest.mark.parametrize("reply", NOT_PROMETHEUS, ids=["loki-streams", "result-not-a-list", "no-value", "no-result",
                                                       "kube-version", "html"])
def test_preflight_refuses_an_answer_that_is_not_prometheus(reply):
    checks = [Check("a", "qa", max=1.0), Check("b", "qb", max=1.0)]
    result, prometheus = preflight(checks, lambda _q, _at: reply)
    assert [q.outcome for q in result.queries] == ["refused", "not sent"] and len(prometheus.requests) == 1
    assert "not a Prometheus" in result.queries[0].message
    assert "provider.url" in result.queries[0].message


def test_preflight_reports_the_info_prometheus_2_53_sends_as_a_warning():
    """Prometheus before 2.54 sends info annotations among the warnings (answer recorded from 2.53.3)."""
    result, _prometheus = preflight([Check("a", "qa", max=1.0)], lambda _q, _at: fixture("infos_in_warnings_2_53"))
    (query,) = result.queries
    assert query.outcome == "accepted" and not result.refused
    assert "Prometheus noted: PromQL info: metric might not be a counter" in query.message


def test_an_answer_of_prometheus_2_53_with_an_info_is_judged():
    """With inconclusive_limit 0, the info of a counter without _total (recorded from 2.53.3) is not partial data."""
    checks = [Check("a", "rate(nginx_ingress_controller_requests[${window}])", min=1.0, max=20.0, count=3,
                    inconclusive_limit=0)]
    result, _prometheus, _clock, _lines = analyze(checks, always(fixture("infos_in_warnings_2_53")))
    assert result.outcome()[0] == SUCCESSFUL
    (measurement, *_rest) = result.runs[0].measurements
    assert measurement.sides[0].result.infos and not measurement.sides[0].result.warnings
