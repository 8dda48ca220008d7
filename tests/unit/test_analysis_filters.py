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
    manent_analysis_lines, manent_analysis_short, manent_analysis_slots, manent_preflight_checks, manent_quorum,
    manent_step_analysis, manent_step_failure, manent_traffic_steps, manent_wave_failure, quorum_needed)
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


@pytest.mark.parametrize("settings, verdict, action", [
    # traffic defaults: a check that failed or could not measure aborts; no data pauses
    ({}, "Failed", "abort"), ({}, "Error", "abort"), ({}, "Inconclusive", "pause"), ({}, "Successful", ""),
    ({"on_failure": "pause"}, "Failed", "pause"), ({"on_failure": "pause"}, "Error", "abort"),
    ({"on_error": "pause"}, "Error", "pause"), ({"on_inconclusive": "abort"}, "Inconclusive", "abort"),
])
def test_short_result_with_the_step_settings_says_what_the_verdict_does(settings, verdict, action):
    short = manent_analysis_short({"verdict": verdict, "reason": "r", "checks": []}, dict(settings, checks=[ERRORS]))
    assert short["action"] == action
    assert {key: short[key] for key in ("on_failure", "on_error", "on_inconclusive")} == dict(
        {"on_failure": "abort", "on_error": "abort", "on_inconclusive": "pause"}, **settings)
    assert "action" not in manent_analysis_short({"verdict": verdict, "reason": "r", "checks": []})


def test_a_module_failure_without_a_verdict_is_an_error_and_aborts_by_default():
    short = manent_analysis_short({"failed": True, "msg": "Prometheus at http://p:9090: unreachable"}, {})
    assert (short["verdict"], short["action"]) == ("Error", "abort")


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


def test_analysis_slots_name_the_candidate_and_the_slot_in_service_as_the_collection_does():
    both = {"candidate": {"version": "2.0.0", "slot": "a"}, "in_service": {"version": "1.0.0", "slot": "b"}}
    assert manent_analysis_slots(both, "shop") == {"candidate_slot": "a", "stable_slot": "b",
                                                   "candidate_service": "shop-a", "stable_service": "shop-b"}
    # nothing in service yet: the stable side is the other slot
    assert manent_analysis_slots({"candidate": {"slot": "b"}}, "shop")["stable_service"] == "shop-a"
    assert manent_analysis_slots({"in_service": {"slot": "a"}}, "shop") == {}
    assert manent_analysis_slots(None, "shop") == {}
    with pytest.raises(AnsibleFilterError, match="unknown slot 'c'"):
        manent_analysis_slots({"candidate": {"slot": "c"}}, "shop")


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


def _wave(*verdicts):
    """hostvars of a wave whose clusters' analyses ended with ``verdicts`` (None: the deploy failed)."""
    return {"c%d" % n: {"_deploy_result": {"status": "failed"} if verdict is None else
                        {"status": "deployed", "analysis": {"verdict": verdict}}} for n, verdict in enumerate(verdicts)}


@pytest.mark.parametrize("verdicts, settings, verdict, action, policy", [
    # on_error and on_inconclusive default to on_failure: a wave that did not pass is handled alike, as before
    (["Error"], {}, "Error", "stop", "on_error stop"),
    (["Error"], {"on_failure": "rollback"}, "Error", "rollback", "on_error rollback"),
    (["Inconclusive"], {"on_failure": "rollback"}, "Inconclusive", "rollback", "on_inconclusive rollback"),
    (["Error"], {"on_failure": "rollback", "on_error": "stop"}, "Error", "stop", "on_error stop"),
    (["Inconclusive"], {"on_error": "rollback"}, "Inconclusive", "stop", "on_inconclusive stop"),
    # the most severe verdict is the wave's; rollback when any verdict of a cluster that did not pass says so
    (["Failed", "Error"], {"on_error": "rollback"}, "Failed", "rollback", "on_error rollback"),
    (["Successful", "Error", "Inconclusive"], {"on_inconclusive": "rollback"}, "Error", "rollback",
     "on_inconclusive rollback"),
    (["Error", None], {"on_error": "rollback"}, "Failed", "rollback", "on_error rollback"),  # a failed deploy: Failed
    (["Error", None], {"on_failure": "rollback", "on_error": "stop"}, "Failed", "rollback", "on_failure rollback"),
])
def test_quorum_says_what_a_wave_that_did_not_pass_does(verdicts, settings, verdict, action, policy):
    hostvars = _wave(*verdicts)
    result = manent_quorum(sorted(hostvars), hostvars, "all", dict(settings, checks=[ERRORS]))
    assert not result["ok"]
    assert (result["verdict"], result["action"], result["policy"]) == (verdict, action, policy)
    assert manent_quorum(["c0"], _wave("Successful"), "all", {"on_error": "rollback"})["action"] == ""


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
        traffic_analysis={"checks": [ERRORS], "interval": "2s", "on_failure": "pause", "on_error": "pause",
                          "on_inconclusive": "abort"},
        traffic_steps=[{"percent": 10}, {"percent": 50, "analysis": False},
                       {"percent": 60, "analysis": {"count": 2, "on_error": "abort"}}],
        wave_analysis={"checks": [ERRORS], "bake": "1m", "quorum": "50%", "on_failure": "rollback",
                       "on_error": "stop", "on_inconclusive": "rollback"})) == []
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
    ({"traffic_analysis": {"checks": [ERRORS], "on_error": "rollback"}},
     "deploy_traffic_analysis.on_error: 'rollback' is not one of abort, pause"),
    ({"traffic_analysis": {"checks": [ERRORS], "on_inconclusive": "stop"}},
     "deploy_traffic_analysis.on_inconclusive: 'stop' is not one of abort, pause"),
    ({"traffic_analysis": {"checks": [ERRORS]}, "traffic_steps": [{"percent": 10, "analysis": {"on_error": "wait"}}]},
     "deploy_traffic_steps[0].analysis.on_error: 'wait' is not one of abort, pause"),
    ({"wave_analysis": {"checks": [ERRORS], "on_error": "abort"}},
     "deploy_wave_analysis.on_error: 'abort' is not one of stop, rollback"),
    ({"wave_analysis": {"checks": [ERRORS], "on_inconclusive": "pause"}},
     "deploy_wave_analysis.on_inconclusive: 'pause' is not one of stop, rollback"),
    ({"wave_analysis": {"checks": [ERRORS], "on_errors": "stop"}},
     "deploy_wave_analysis.on_errors: is not a setting; use checks, interval, count, min_window, on_failure, "
     "on_error, on_inconclusive, bake, quorum"),
    ({"wave_analysis": {"checks": [ERRORS], "bake": "soon"}}, "deploy_wave_analysis.bake: 'soon' is not a duration"),
    ({"wave_analysis": {"checks": [ERRORS], "quorum": "0%"}}, "deploy_wave_analysis.quorum: '0%'"),
    ({"wave_analysis": {"checks": [ERRORS], "quorum": "most"}}, "deploy_wave_analysis.quorum: 'most'"),
    ({"analysis_context": "shop"}, "deploy_analysis_context: must be a dict"),
])
def test_preflight_names_the_variable_and_field_of_a_bad_analysis_setting(settings, expected):
    failures = manent_preflight(base_values(**settings))
    assert any(line.startswith(expected) for line in failures), failures


def test_step_failure_says_what_became_of_the_traffic():
    analysis = dict(manent_analysis_short(failed_result(), {}), step=10)
    aborted = manent_step_failure(analysis, {"operation": "abort", "weights": {"a": 100, "b": 0}}, "eu1a")
    assert aborted.startswith("analysis of the step to 10 % Failed: check errors Failed: value 0.3 > 0.01 (max)")
    assert 'query: rate(x{slot="b"}[20s])' in aborted
    assert aborted.endswith("aborted (on_failure abort): all traffic back to the stable slot (weights a 100, b 0), "
                            "the candidate scaled to zero")
    broken = manent_step_failure(analysis, {"failed": False, "msg": "the lock is held by someone"})
    assert "the automatic abort (on_failure abort) FAILED, run operation abort: the lock is held by someone" in broken
    paused = manent_step_failure(dict(manent_analysis_short(failed_result(), {"on_failure": "pause"}), step=10),
                                 {"weights": {"a": 90, "b": 10}}, "eu1a")
    assert paused.endswith("; weights left at a 90, b 10 on eu1a (on_failure pause): run operation abort, or step "
                           "again, after looking at the failed check")
    inconclusive = manent_step_failure(dict(manent_analysis_short({"verdict": "Inconclusive", "reason": "no data"}, {}),
                                            step=50), {"weights": {"a": 50, "b": 50}}, "eu1a")
    assert inconclusive == ("analysis of the step to 50 % Inconclusive: no data; weights left at a 50, b 50 on eu1a "
                            "(on_inconclusive pause): run operation abort, or step again, after looking at the "
                            "checks' data")


@pytest.mark.parametrize("settings, traffic, ending", [
    ({}, {"weights": {"a": 100, "b": 0}},
     "; aborted (on_error abort): all traffic back to the stable slot (weights a 100, b 0), the candidate scaled to "
     "zero"),
    ({"on_error": "pause"}, {"weights": {"a": 90, "b": 10}},
     "; weights left at a 90, b 10 on eu1a (on_error pause): run operation abort, or step again, after checking "
     "Prometheus"),
])
def test_step_failure_of_an_error_names_the_provider_and_what_on_error_did(settings, traffic, ending):
    reason = "check errors Error: 2 of 3 measurements were errors; at T: query: Prometheus at http://p:9090: unreachable"
    analysis = dict(manent_analysis_short({"verdict": "Error", "reason": reason, "checks": []}, settings), step=10)
    message = manent_step_failure(analysis, traffic, "eu1a")
    assert message == "analysis of the step to 10 %% Error: %s%s" % (reason, ending)


def test_wave_failure_fails_the_cluster_and_says_whether_it_was_rolled_back():
    quorum = {"message": "1 of 2 cluster(s) of the wave passed the analysis, 2 needed (not passed: eu1b)",
              "verdict": "Failed", "action": "rollback", "policy": "on_failure rollback"}
    analysis = manent_analysis_short(failed_result())
    rolled = manent_wave_failure({"host": "eu1b", "status": "deployed", "version": "1.0.0"}, analysis, quorum)
    assert rolled["status"] == "failed" and rolled["rolled_back"] is True and rolled["analysis"] == analysis
    assert rolled["message"].startswith("wave analysis failed: 1 of 2 cluster(s)")
    assert "this cluster: analysis Failed: check errors Failed" in rolled["message"]
    assert rolled["message"].endswith("rolled back to 1.0.0 (on_failure rollback)")
    stop = dict(quorum, verdict="Error", action="stop", policy="on_error stop")
    stopped = manent_wave_failure({"host": "eu1a", "status": "deployed", "version": "2.0.0"},
                                  {"verdict": "Successful", "reason": "ok"}, stop)
    assert stopped["rolled_back"] is False and "rolled back" not in stopped["message"]
    assert stopped["message"].endswith("; eu1a stays on 2.0.0 (on_error stop): run playbooks/rollback.yml, or deploy "
                                       "again, after checking Prometheus")
    not_rolled = manent_wave_failure({"status": "failed", "message": "no release to roll back to"}, analysis, quorum)
    assert not_rolled["rolled_back"] is False and "NOT rolled back: no release to roll back to" in not_rolled["message"]
