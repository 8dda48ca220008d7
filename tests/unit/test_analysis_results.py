# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Prometheus answers become: prometheus.decode (success, status error with errorType, anything that is not a
Prometheus answer) and results.parse (every result type, NaN and infinities, histograms, strings), on the recorded
answers of tests/unit/fixtures/prometheus."""

from __future__ import annotations

import math

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.prometheus import QueryError, decode
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.results import ResultError, parse
from tests.unit.analysis_fakes import fixture


def parsed(name):
    status, body = fixture(name)
    return parse(decode(status, "", body))


def test_vector_keeps_every_series_with_its_labels():
    result = parsed("vector_two_series")
    assert result.result_type == "vector"
    assert [(s.labels["code"], s.raw, s.value) for s in result.series] == [
        ("500", "0.062", 0.062), ("503", "0.004", 0.004)]
    assert result.series[0].labels == {"service": "shop-b", "slot": "b", "code": "500"}


def test_scalar_is_one_series_without_labels():
    result = parsed("scalar")
    assert result.result_type == "scalar"
    assert [(s.labels, s.value) for s in result.series] == [({}, 0.25)]


def test_matrix_takes_the_last_sample_of_each_series():
    result = parsed("matrix")
    assert result.result_type == "matrix"
    assert [(s.labels["code"], s.value) for s in result.series] == [("200", 175.0), ("500", 2.0)]
    assert result.series[0].labels["__name__"] == "http_requests_total"


@pytest.mark.parametrize("name", ["vector_empty", "matrix_empty"])
def test_an_empty_result_has_no_series(name):
    result = parsed(name)
    assert result.series == () and result.numbers() == []


def test_nan_and_infinities_are_read_as_prometheus_writes_them():
    result = parsed("vector_special_values")
    raws = [s.raw for s in result.series]
    assert raws == ["NaN", "+Inf", "-Inf", "1.5e-3"]
    values = [s.value for s in result.series]
    assert math.isnan(values[0]) and values[1] == math.inf and values[2] == -math.inf and values[3] == 0.0015
    # NaN counts as absent, the infinities count
    assert [s.raw for s in result.numbers()] == ["+Inf", "-Inf", "1.5e-3"]


def test_a_series_of_nan_only_has_no_numbers():
    result = parsed("vector_all_nan")
    assert len(result.series) == 1 and result.numbers() == []


def test_a_string_result_can_never_be_compared():
    with pytest.raises(ResultError, match="returns a string, not a number") as err:
        parsed("string")
    assert err.value.permanent


def test_a_native_histogram_sample_is_not_a_number():
    with pytest.raises(ResultError, match=r'series \{service="shop-b"\} is a native histogram') as err:
        parsed("native_histogram")
    assert "histogram_quantile()" in err.value.hint and not err.value.permanent


def test_warnings_and_infos_travel_with_the_result():
    assert parsed("warnings").warnings == ("remote read: store eu-2 unreachable, the result may be partial",)
    result = parsed("infos")
    assert result.warnings == () and "might not be a counter" in result.infos[0]


@pytest.mark.parametrize("name, status, kind, text", [
    ("error_bad_data", 400, "bad_data", 'refuses the query (400 bad_data): invalid parameter "query": 1:22: '
                                        'parse error: unexpected <by>'),
    ("error_execution", 422, "execution", "the query failed (422 execution): found duplicate series"),
    ("error_timeout", 503, "timeout", "the query timed out in Prometheus (503 timeout): query timed out in "
                                      "expression evaluation"),
    ("error_canceled", 499, "canceled", "the query was canceled (499 canceled)"),
    ("error_unavailable", 503, "unavailable", "answered 503 unavailable: the TSDB is still starting"),
])
def test_status_error_names_its_error_type(name, status, kind, text):
    code, body = fixture(name)
    assert code == status
    with pytest.raises(QueryError) as err:
        decode(code, "", body)
    assert err.value.kind == kind and err.value.status == status
    assert text in str(err.value)
    assert err.value.permanent is (kind == "bad_data")


@pytest.mark.parametrize("status, body, kind, text", [
    (200, b"<html>proxy login</html>", "malformed", "not a Prometheus answer: '<html>proxy login</html>'"),
    (200, b'{"status": "success"}', "malformed", "without data.resultType"),
    (200, b'{"status": "success", "data": {"resultType": "vector"}}', "malformed", "without data.resultType"),
    (200, b"[1, 2]", "malformed", "not a Prometheus answer"),
    (200, b"\xff\xfe", "malformed", "not a Prometheus answer"),
    (502, b"<html>Bad Gateway</html>", "http", "answered HTTP 502 Bad Gateway: '<html>Bad Gateway</html>'"),
    (404, b"404 page not found", "http", "answered HTTP 404 Not Found"),
    (401, b"Unauthorized", "auth", "refused the credentials: HTTP 401"),
    (403, b'{"status": "error", "errorType": "forbidden", "error": "no access"}', "forbidden",
     "answered 403 forbidden: no access"),
    (500, b'{"status": "success", "data": {"resultType": "vector", "result": []}}', "http", "HTTP 500"),
])
def test_answers_that_are_not_a_result(status, body, kind, text):
    reasons = {502: "Bad Gateway", 404: "Not Found", 401: "Unauthorized", 403: "Forbidden", 500: "Internal"}
    with pytest.raises(QueryError) as err:
        decode(status, reasons.get(status, "OK"), body)
    assert err.value.kind == kind
    assert text in str(err.value)
    assert err.value.hint


def test_a_long_body_is_cut_in_messages():
    with pytest.raises(QueryError) as err:
        decode(502, "Bad Gateway", b"x" * 5000)
    assert len(str(err.value)) < 600


@pytest.mark.parametrize("data, text", [
    ({"resultType": "vector", "result": "nope"}, "not a list of series"),
    ({"resultType": "vector", "result": [{"metric": {}, "value": [1]}]}, "malformed sample"),
    ({"resultType": "vector", "result": [{"metric": {}, "value": [1, "abc"]}]}, "malformed value 'abc'"),
    ({"resultType": "vector", "result": [{"metric": {}, "value": [1, True]}]}, "malformed value True"),
    ({"resultType": "table", "result": []}, "unknown result type 'table'"),
])
def test_malformed_results(data, text):
    class Answer:
        warnings = infos = ()
    answer = Answer()
    answer.data = data
    with pytest.raises(ResultError, match=text):
        parse(answer)
