# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manent_analysis task end to end on a fake Prometheus: the result that explains the verdict, failing when it
is not Successful (the result kept for rescue), check mode, the preflight, warnings, and the credentials absent from
the result, the messages, the progress lines and the reprs, however they were given."""

from __future__ import annotations

import base64
import json
import types

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import analysis_task as task
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task
from ansible_collections.manent.kubernetes.plugins.action import manent_analysis as action
from tests.unit.analysis_fakes import (
    PASSWORD, START, TOKEN, FakePrometheus, answer, check, fixture, params, series, unreachable)
from tests.unit.fakes import FakeClock


def run(parameters, script, check_mode=False, clock=None):
    clock = clock or FakeClock(START)
    prometheus = FakePrometheus(script)
    lines = []
    out = task.run(parameters, check_mode=check_mode, clock=clock, sleep=clock.sleep, on_measurement=lines.append,
                   transport=prometheus)
    return out, prometheus, lines


def failing(parameters, script, check_mode=False, transport=None):
    clock = FakeClock(START)
    lines = []
    with pytest.raises(task.ManentError) as err:
        task.run(parameters, check_mode=check_mode, clock=clock, sleep=clock.sleep, on_measurement=lines.append,
                 transport=transport or FakePrometheus(script))
    return err.value, lines


def test_a_successful_analysis_explains_itself():
    out, prometheus, lines = run(params(), lambda _q, _at: answer("0.01", {"service": "shop-b"}))
    assert out["changed"] is False and out["mode"] == "analyze"
    assert out["verdict"] == "Successful" and out["reason"] == "1 of 1 enforced checks successful"
    assert out["measurements"] == 3 and len(prometheus.requests) == 3
    assert out["started_at"] == "2024-12-04T10:00:00.000Z" and out["finished_at"] == "2024-12-04T10:03:00.000Z"
    assert out["context"]["candidate_service"] == "shop-b" and out["context"]["start_epoch"] == START
    (result,) = out["checks"]
    assert result["verdict"] == "Successful" and result["condition"] == "every series <= 0.05"
    assert result["reason"] == ('3 of 3 measurements successful; at 2024-12-04T10:03:00.000Z: value 0.01 <= 0.05 '
                                '(max) at {service="shop-b"}')
    assert result["rendered_query"] == 'sum(rate(errors{service="shop-b"}[180s]))'
    assert result["query"] == 'sum(rate(errors{service="${service}"}[${window}]))'
    assert result["evaluation_time"] == "2024-12-04T10:03:00.000Z" and result["window"] == "180s"
    assert result["values"] == [{"labels": {"service": "shop-b"}, "value": "0.01"}] and result["value"] == "0.01"
    assert result["counters"]["successful"] == 3 and result["limits"]["max_measurements"] == 10
    assert [m["time"] for m in result["measurements"]] == ["2024-12-04T10:0%d:00.000Z" % i for i in (1, 2, 3)]
    assert len(lines) == 3 and lines[-1].startswith("errors #3 (3/3 decided): Successful: value 0.01 <= 0.05")
    json.dumps(out)  # plain data


def test_a_failed_verdict_fails_the_task_with_the_explanation():
    checks = [check(name="errors", reducer="max", max=0.05)]
    err, _lines = failing(params(checks), lambda _q, _at: fixture("vector_two_series"))
    assert isinstance(err, task.AnalysisFailed)
    assert str(err) == ('analysis Failed: check errors Failed: 1 of 1 measurements failed (failure_limit 0); at '
                        '2024-12-04T10:01:00.000Z: max of 2 series 0.062 > 0.05 (max) at {code="500", '
                        'service="shop-b", slot="b"}')
    out = err.partial.to_dict()
    assert out["verdict"] == "Failed" and err.partial.changed is False
    (result,) = out["checks"]
    assert result["values"][0] == {"labels": {"service": "shop-b", "slot": "b", "code": "500"}, "value": "0.062"}
    assert result["value"] == "0.062" and result["condition"] == "the max of the series <= 0.05"


def test_check_mode_runs_and_reports_what_it_would_decide():
    out, prometheus, _lines = run(params(), lambda _q, _at: answer("0.9"), check_mode=True)
    assert out["verdict"] == "Failed" and len(prometheus.requests) == 1
    assert out["warnings"] == ["check mode: the analysis is Failed; a run without --check fails here: %s"
                               % out["reason"]]


def test_the_relative_check_reports_both_sides():
    relative = check(name="vs-stable", max=None, baseline={"max_factor": 1.5, "max_offset": 0.001})

    def script(query, _at):
        return answer("0.02") if "shop-b" in query else answer("0.01")
    err, _lines = failing(params([relative]), script)
    result = err.partial.to_dict()["checks"][0]
    assert result["condition"] == "every series <= stable * 1.5 + 0.001"
    assert result["baseline"]["query"] == 'sum(rate(x{service="shop-a"}[60s]))'
    assert result["baseline"]["value"] == "0.01" and result["value"] == "0.02"
    assert result["measurements"][0]["baseline"] == "0.01"


def test_the_preflight():
    out, prometheus, _lines = run(params(mode="preflight"), lambda _q, _at: fixture("vector_empty"))
    assert out["mode"] == "preflight" and "verdict" not in out
    assert out["reason"] == "preflight: 1 queries of 1 checks accepted"
    assert out["preflight"] == [{"check": "errors", "role": "query", "outcome": "accepted", "series": 0,
                                 "query": 'sum(rate(errors{service="shop-b"}[60s]))', "result_type": "vector",
                                 "message": "no data yet (empty)"}]
    assert len(prometheus.requests) == 1


@pytest.mark.parametrize("script, text", [
    (lambda _q, _at: fixture("error_bad_data"), "refuses the query (400 bad_data)"),
    (unreachable, "unreachable: [Errno 111] Connection refused"),
])
def test_a_refused_preflight_fails_the_task(script, text):
    err, _lines = failing(params(mode="preflight"), script)
    assert isinstance(err, task.PreflightFailed)
    assert str(err).startswith("preflight: 1 of 1 queries refused; check errors query: Prometheus at "
                               "https://prometheus.example:9090: ")
    assert text in str(err)
    assert err.partial.to_dict()["preflight"][0]["outcome"] == "refused"


def test_invalid_parameters_stop_before_any_query():
    prometheus = FakePrometheus(unreachable)
    with pytest.raises(InputError, match="unknown placeholder"):
        task.run(params([check(query="x[${windw}]")]), transport=prometheus)
    assert prometheus.requests == []


def test_warnings_for_tls_off_and_plain_http():
    parameters = params()
    parameters["provider"]["insecure_skip_tls_verify"] = True
    out, _prometheus, _lines = run(parameters, lambda _q, _at: answer("0.01"))
    assert out["warnings"] == [task.INSECURE_WARNING % "https://prometheus.example:9090"]
    parameters = params()
    parameters["provider"]["url"] = "http://prometheus.example:9090"
    err, _lines = failing(parameters, lambda _q, _at: answer("0.9"))
    assert err.partial.to_dict()["warnings"] == [task.PLAIN_HTTP_WARNING % "http://prometheus.example:9090"]


# -- credentials ---------------------------------------------------------------------------------------------

def echoing(_url, _body, headers, _timeout):
    """A proxy that echoes the request's credentials in its error page."""
    page = "<html>denied: %s / %s</html>" % (headers.get("Authorization"), headers.get("X-Scope-OrgID"))
    return 502, "Bad Gateway", page.encode()


def secret_params(monkeypatch, tmp_path, how):
    parameters = params([check(name="a"), check(name="b", query='sum(up{t="${namespace}"})')])
    provider = parameters["provider"]
    provider["headers"] = {"X-Scope-OrgID": "tenant-secret-9"}
    provider["secret_headers"] = ["X-Scope-OrgID"]
    if how == "inline":
        provider["bearer_token"] = TOKEN
    elif how == "file":
        path = tmp_path / "token"
        path.write_text(TOKEN)
        provider["bearer_token"] = "file:%s" % path
    else:
        del provider["bearer_token"]
        monkeypatch.setenv("PROM_PASSWORD", PASSWORD)
        provider.update(username="manent", password="env:PROM_PASSWORD")
    return parameters


@pytest.mark.parametrize("how", ["inline", "file", "env"])
@pytest.mark.parametrize("mode", ["analyze", "preflight"])
def test_credentials_are_absent_from_every_output(monkeypatch, tmp_path, how, mode):
    parameters = secret_params(monkeypatch, tmp_path, how)
    parameters["mode"] = mode
    err, lines = failing(parameters, None, transport=echoing)
    everything = json.dumps(err.partial.to_dict()) + str(err) + repr(err) + "\n".join(lines)
    assert "denied: ******** / ********" in everything
    basic = base64.b64encode(("manent:" + PASSWORD).encode()).decode()
    for secret in (TOKEN, PASSWORD, basic, "tenant-secret-9"):
        assert secret not in everything


def test_a_tenant_header_that_is_not_secret_masks_nothing(monkeypatch):
    """A tenant ``prod`` is not a credential: the namespace shop-prod stays shop-prod in queries and reasons, in the
    module's result too (``headers`` is no_log for ansible; module_main takes the plain values off)."""
    parameters = params([check(query='sum(rate(errors{namespace="shop-prod"}[${window}]))')])
    parameters["provider"]["headers"] = {"X-Scope-OrgID": "prod", "X-Api-Key": "api-key-5e2f9a71"}
    parameters["provider"]["secret_headers"] = ["X-Api-Key"]
    out, prometheus, _lines = run(parameters, lambda _q, _at: answer("0.01", {"namespace": "shop-prod"}))
    assert prometheus.requests[0]["headers"]["X-Scope-OrgID"] == "prod"
    assert out["checks"][0]["rendered_query"] == 'sum(rate(errors{namespace="shop-prod"}[180s]))'
    assert "shop-prod" in out["checks"][0]["reason"] and "********" not in json.dumps(out)
    assert task.given_secrets(parameters) == {"api-key-5e2f9a71", TOKEN}
    module = FakeModule(parameters)
    module.no_log_values.update({"prod", "api-key-5e2f9a71", TOKEN})  # what ansible collects of the no_log options
    real_run = task.run
    monkeypatch.setattr(task, "run", lambda p, c: real_run(p, c, clock=FakeClock(START), sleep=lambda _s: None,
                                                           transport=FakePrometheus(lambda _q, _at: answer("0.01"))))
    task.module_main(module)
    assert module.no_log_values == {"api-key-5e2f9a71", TOKEN} and not module.result["failed"]


def test_credentials_are_absent_from_an_unexpected_error(monkeypatch, tmp_path):
    parameters = secret_params(monkeypatch, tmp_path, "inline")

    def broken(*_args):
        raise RuntimeError("socket state for Bearer %s" % TOKEN)
    with pytest.raises(task.ManentError) as err:
        task.run(parameters, clock=FakeClock(START), sleep=FakeClock(START).sleep, transport=broken)
    assert str(err.value) == "unexpected error (RuntimeError): socket state for ********"


# -- module and action plugin --------------------------------------------------------------------------------

class FakeModule:
    def __init__(self, parameters, check_mode=False):
        self.params = parameters
        self.check_mode = check_mode
        self.warnings = []
        self.result = None
        self.no_log_values = set()

    def warn(self, text):
        self.warnings.append(text)

    def exit_json(self, **result):
        self.result = dict(result, failed=False)

    def fail_json(self, **result):
        self.result = dict(result, failed=True)


def test_module_main_fails_with_the_result(monkeypatch):
    parameters = params()
    parameters["provider"]["insecure_skip_tls_verify"] = True
    prometheus = FakePrometheus(lambda _q, _at: answer("0.9"))
    real_run = task.run
    monkeypatch.setattr(task, "run", lambda p, c: real_run(
        p, c, clock=FakeClock(START), sleep=lambda _s: None, transport=prometheus))
    module = FakeModule(parameters)
    task.module_main(module)
    assert module.result["failed"] and module.result["verdict"] == "Failed" and module.result["changed"] is False
    assert module.result["msg"].startswith("analysis Failed: check errors Failed")
    assert module.warnings == [task.INSECURE_WARNING % "https://prometheus.example:9090"]
    module = FakeModule(parameters, check_mode=True)
    task.module_main(module)
    assert not module.result["failed"] and len(module.warnings) == 2


def test_the_action_plugin_prints_a_line_per_measurement(monkeypatch):
    shown = []
    monkeypatch.setattr(action.display, "display", shown.append)
    real_run = task.run
    monkeypatch.setattr(action.analysis_task, "run", lambda p, check_mode, on_measurement: real_run(
        p, check_mode, clock=FakeClock(START), sleep=lambda _s: None, on_measurement=on_measurement,
        transport=FakePrometheus(lambda _q, _at: series("0.01", "0.02"))))
    fake = types.SimpleNamespace(_task=types.SimpleNamespace(args=params()),
                                 _play_context=types.SimpleNamespace(check_mode=False, diff=False))
    out = controller_task.run(fake, {}, "manent_analysis", task.argument_spec(), action.task_for("eu1a"))
    assert out["verdict"] == "Successful" and "failed" not in out
    assert shown[0] == ('manent_analysis [eu1a]: errors #1 (1/3 decided): Successful: all 2 series hold, nearest '
                        '0.02 <= 0.05 (max) at {pod="p1"}')
    assert len(shown) == 3


RESERVED = {"started", "finished", "ansible_job_id", "results_file", "results", "rc", "stdout", "stderr", "skipped",
            "invocation", "failed", "msg", "ansible_facts"}


def test_the_result_leaves_the_keys_ansible_reads_alone():
    """async polling reads `started` and `finished` as numbers: a result key of that name broke async runs."""
    out, _prometheus, _lines = run(params(), lambda _q, _at: answer("0.01"))
    assert not RESERVED & set(out)
    out, _prometheus, _lines = run(params(mode="preflight"), lambda _q, _at: answer("0.01"))
    assert not RESERVED & set(out)
