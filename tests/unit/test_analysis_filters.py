# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's analysis filters (plugins/filter/manent_analysis.py) and the preflight rules of the analysis
variables (plugins/filter/manent_checks.py, part "analysis")."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.manent.kubernetes.plugins.filter.manent import manent_summary_lines
from ansible_collections.manent.kubernetes.plugins.filter.manent_analysis import (
    manent_analysis_lines, manent_analysis_short, manent_preflight_checks, manent_quorum,
    manent_step_analysis, manent_traffic_steps, quorum_needed)
from ansible_collections.manent.kubernetes.plugins.filter.manent_checks import manent_preflight

ERRORS = {"name": "errors", "query": "up", "max": 0.01}
LATENCY = {"name": "latency", "query": "p99", "max": 0.5}


def failed_result():
    return {"failed": False, "verdict": "Failed", "reason": "check errors Failed: value 0.3 > 0.01 (max)",
            "checks": [dict(ERRORS, verdict="Failed", enforce=True, stopped=False, reason="value 0.3 > 0.01 (max)",
                            rendered_query='rate(x{slot="b"}[20s])', values=[{"labels": {}, "value": "0.3"}]),
                       dict(LATENCY, verdict="Inconclusive", enforce=True, stopped=True, reason="stopped")]}


def test_short_result_names_the_deciding_check_and_its_rendered_query():
    short = manent_analysis_short(failed_result())
    assert short["verdict"] == "Failed" and "0.3 > 0.01" in short["reason"]
    assert short["check"] == "errors" and short["query"] == 'rate(x{slot="b"}[20s])'
    assert short["checks"] == [{"name": "errors", "verdict": "Failed", "reason": "value 0.3 > 0.01 (max)"},
                               {"name": "latency", "verdict": "Inconclusive", "reason": "stopped"}]


def test_short_result_of_a_success_names_no_check_and_a_refused_input_is_an_error():
    assert "check" not in manent_analysis_short({"verdict": "Successful", "reason": "2 checks passed", "checks": []})
    short = manent_analysis_short({"failed": True, "msg": "checks[0].query: unknown placeholder ${nope}"})
    assert short == {"verdict": "Error", "reason": "checks[0].query: unknown placeholder ${nope}", "checks": []}
    assert manent_analysis_short(None)["verdict"] == "Error"


def test_step_analysis_merges_the_step_over_all_steps_and_false_skips():
    every = {"checks": [ERRORS], "interval": "2s", "on_failure": "abort"}
    assert manent_step_analysis({"percent": 10}, every) == every
    assert manent_step_analysis({"percent": 10, "analysis": {"on_failure": "pause"}}, every)["on_failure"] == "pause"
    assert manent_step_analysis({"percent": 10, "analysis": False}, every) == {}
    assert manent_step_analysis({"percent": 10}, {}) == {}
    assert manent_step_analysis({"percent": 10, "analysis": {"checks": [LATENCY]}}, {})["checks"] == [LATENCY]
    steps = manent_traffic_steps([{"percent": 10}, {"percent": 50, "analysis": False}], every)
    assert steps == [{"percent": 10, "operation": "step", "analysis": every},
                     {"percent": 50, "operation": "step", "analysis": {}}]


def test_preflight_checks_are_sent_once_and_names_stay_unique():
    other = dict(ERRORS, max=0.05)
    checks = manent_preflight_checks([{"checks": [ERRORS, LATENCY]}, {"checks": [ERRORS, other]}])
    assert [c["name"] for c in checks] == ["errors", "latency", "errors #2"]
    assert checks[2]["max"] == 0.05


@pytest.mark.parametrize("quorum, total, needed", [
    (None, 3, 3), ("all", 3, 3), (2, 3, 2), ("5", 3, 3), (0.5, 3, 2), ("50%", 3, 2), ("100%", 2, 2),
    ("0.34", 3, 2), ("1%", 3, 1), (1, 0, 0)])
def test_quorum_needed(quorum, total, needed):
    assert quorum_needed(quorum, total) == needed


@pytest.mark.parametrize("quorum", ["many", "0%", "1.5", "-1%"])
def test_quorum_refused(quorum):
    with pytest.raises(AnsibleFilterError):
        quorum_needed(quorum, 3)


def test_quorum_counts_successful_analyses_of_clusters_that_did_not_fail():
    hostvars = {"a": {"_deploy_result": {"status": "deployed", "analysis": {"verdict": "Successful"}}},
                "b": {"_deploy_result": {"status": "deployed", "analysis": {"verdict": "Failed"}}},
                "c": {"_deploy_result": {"status": "failed", "analysis": {"verdict": "Successful"}}},
                "d": {}}
    result = manent_quorum(["a", "b", "c", "d"], hostvars)
    assert not result["ok"] and result["passed"] == ["a"] and result["failed"] == ["b", "c", "d"]
    assert result["message"] == ("1 of 4 cluster(s) of the wave passed the analysis, 4 needed "
                                 "(not passed: b, c, d)")
    assert manent_quorum(["a", "b"], hostvars, "50%")["ok"]
    assert not manent_quorum(["a", "b"], hostvars, 2)["ok"]


def test_summary_lines_show_the_analysis_of_clusters_without_a_message():
    ok = {"host": "eu1a", "status": "done", "message": "", "analysis": {"verdict": "Successful", "reason": "3 passed"}}
    failed = {"host": "eu1b", "status": "failed", "message": "analysis Failed: x", "analysis": {"verdict": "Failed"}}
    assert manent_analysis_lines([ok, failed, {"host": "us1a"}]) == ["eu1a: analysis Successful: 3 passed"]
    lines = manent_summary_lines({"eu1a": dict(ok, status="deployed"), "eu1b": failed})
    assert "eu1a: analysis Successful: 3 passed" in lines and "eu1b: analysis Failed: x" in lines


def base_values(**analysis):
    values = {"environment": "prod", "application": "shop", "namespace": "shop", "keep_releases": 5, "parallel": 1,
              "wait_timeout": "5m", "wave_by": "region", "host": "eu1a", "api_server": "eu1a", "token": "t",
              "analysis_context": {}, "analysis_provider_url": "https://prometheus:9090"}
    values.update(analysis)
    return values


def test_preflight_accepts_good_analysis_settings():
    assert manent_preflight(base_values(
        traffic_analysis={"checks": [ERRORS], "interval": "2s", "on_failure": "pause"},
        traffic_steps=[{"percent": 10}, {"percent": 50, "analysis": False},
                       {"percent": 60, "analysis": {"count": 2}}],
        wave_analysis={"checks": [ERRORS], "bake": "1m", "quorum": "50%", "on_failure": "rollback"})) == []
    assert manent_preflight(base_values(analysis_provider_url="")) == []  # no analysis: no provider needed


@pytest.mark.parametrize("settings, expected", [
    ({"traffic_analysis": {"checks": [ERRORS]}, "analysis_provider_url": ""}, "deploy_analysis_provider.url: is not set"),
    ({"traffic_analysis": {"checks": [ERRORS], "on_failure": "rollback"}},
     "deploy_traffic_analysis.on_failure: 'rollback' is not one of abort, pause"),
    ({"traffic_analysis": {"checks": []}}, "deploy_traffic_analysis.checks: must be a list of checks"),
    ({"traffic_analysis": {"checks": [{"name": "x"}]}}, "deploy_traffic_analysis.checks: must be a list of checks"),
    ({"traffic_analysis": {"checks": [ERRORS], "intervall": "1s"}},
     "deploy_traffic_analysis.intervall: is not a setting"),
    ({"traffic_analysis": ["x"]}, "deploy_traffic_analysis: must be a dict"),
    ({"traffic_steps": [{"percent": 10, "analysis": {"count": 2}}]}, "deploy_traffic_steps[0].analysis.checks"),
    ({"wave_analysis": {"checks": [ERRORS], "on_failure": "abort"}},
     "deploy_wave_analysis.on_failure: 'abort' is not one of stop, rollback"),
    ({"wave_analysis": {"checks": [ERRORS], "bake": "soon"}}, "deploy_wave_analysis.bake: 'soon' is not a duration"),
    ({"wave_analysis": {"checks": [ERRORS], "quorum": "0%"}}, "deploy_wave_analysis.quorum: '0%'"),
    ({"wave_analysis": {"checks": [ERRORS], "quorum": "most"}}, "deploy_wave_analysis.quorum: 'most'"),
    ({"analysis_context": "shop"}, "deploy_analysis_context: must be a dict"),
])
def test_preflight_names_the_variable_and_field_of_a_bad_analysis_setting(settings, expected):
    failures = manent_preflight(base_values(**settings))
    assert any(line.startswith(expected) for line in failures), failures
