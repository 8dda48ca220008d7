# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy role's filters (plugins/filter/manent.py)."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import (
    CONFIGURED, CREATED, UNCHANGED, Change)
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.result import DeployResult
from ansible_collections.manent.kubernetes.plugins.filter.manent import (
    FilterModule, as_int, manent_applied_results, manent_audit_lines, manent_checkpoint_keys, manent_checkpoint_lines, manent_cluster_result,
    manent_history_lines, manent_run,
    manent_seconds, manent_summary_lines, manent_table, manent_traffic_lines, manent_traffic_rows)


def test_table_aligns_columns_and_trims_the_end():
    assert manent_table([["host", "weights"], ["eu1a", "90/10"], ["a-longer-host", "-"]]) == [
        "host           weights",
        "eu1a           90/10",
        "a-longer-host  -",
    ]
    assert manent_table([]) == []


@pytest.mark.parametrize("text, seconds", [("0s", 0), ("90s", 90), ("5m", 300), ("1m30s", 90), ("1.2s", 2),
                                           (7, 7), ("1h", 3600)])
def test_seconds(text, seconds):
    assert manent_seconds(text) == seconds


@pytest.mark.parametrize("value, number", [(3, 3), ("3", 3), (2.7, 2), ("2.5", 2), (" 4 ", 4), (True, 1), ("", 0),
                                           (None, 0), ("three", 0), ([], 0), (float("inf"), 0)])
def test_numbers_read_as_jinja_int_reads_them(value, number):
    assert as_int(value) == number


def test_seconds_rejects_a_bad_duration_naming_it():
    with pytest.raises(AnsibleFilterError) as err:
        manent_seconds("soon", "pause")
    assert "pause" in str(err.value) and "soon" in str(err.value)


def test_traffic_rows():
    results = [
        {"host": "eu1a", "operation": "step", "status": "done",
         "outcome": {"changed": True, "weights": {"a": 90, "b": 10},
                     "history": {"in_service": {"version": "1.0.0", "slot": "a"},
                                 "candidate": {"version": "2.0.0", "slot": "b", "weight": "10"}}}},
        {"host": "us1a", "operation": "step", "status": "failed", "outcome": {}},
    ]
    assert manent_traffic_rows(results) == [
        ["host", "operation", "status", "in service", "candidate", "weights a/b", "changed"],
        ["eu1a", "step", "done", "1.0.0 (a)", "2.0.0 (b)", "90/10", "yes"],
        ["us1a", "step", "failed", "-", "-", "-", "no"],
    ]


def test_traffic_lines_table_then_messages_then_analyses():
    summary = {
        "eu1a": {"host": "eu1a", "operation": "step", "status": "done", "message": "",
                 "outcome": {"changed": True, "weights": {"a": 90, "b": 10},
                             "history": {"in_service": {"version": "1.0.0", "slot": "a"},
                                         "candidate": {"version": "2.0.0", "slot": "b"}}},
                 "analysis": {"verdict": "Successful", "reason": "every check passed"}},
        "eu1b": {"host": "eu1b", "operation": "step", "status": "failed", "outcome": {},
                 "message": "eu1b: analysis Failed: error rate 0.2 > 0.05",
                 "analysis": {"verdict": "Failed", "reason": "error rate"}},
        "us1a": None,
    }
    assert manent_traffic_lines(summary) == [
        "host  operation  status       in service  candidate  weights a/b  changed",
        "eu1a  step       done         1.0.0 (a)   2.0.0 (b)  90/10        yes",
        "eu1b  step       failed       -           -          -            no",
        "us1a  -          not started  -           -          -            no",
        "eu1b: analysis Failed: error rate 0.2 > 0.05",
        "eu1a: analysis Successful: every check passed",
    ]
    assert manent_traffic_lines({}) == manent_table([manent_traffic_rows([])[0]])


def test_summary_lines_table_then_notes():
    summary = {
        "eu1a": {"host": "eu1a", "status": "deployed", "version": "1.1.0", "previous": "1.0.0", "objects": 4,
                 "counts": {"unchanged": 2, "configured": 2}, "pruned": [], "seconds": 2.2, "message": ""},
        "eu1b": {"host": "eu1b", "status": "failed", "version": "1.1.0", "previous": "", "objects": 0, "counts": {},
                 "pruned": ["ConfigMap/ns/old"], "seconds": 14.0,
                 "message": "Deployment/ns/web: ProgressDeadlineExceeded"},
        "eu1c": {"host": "eu1c", "status": "checked", "version": "1.1.0", "previous": "1.0.0", "objects": 3,
                 "counts": {"created": 3}, "pruned": [], "seconds": 0.5, "objects_skipped": "2", "message": ""},
        "us1a": {"status": "not started"},
        "us1b": None,
    }
    assert manent_summary_lines(summary) == [
        "host  status       version  previous  objects  changes                   pruned  seconds",
        "eu1a  deployed     1.1.0    1.0.0     4        configured:2 unchanged:2  0       2.2",
        "eu1b  failed       1.1.0    -         0        -                         1       14.0",
        "eu1c  checked      1.1.0    1.0.0     3        created:3                 0       0.5",
        "us1a  not started  -        -         -        -                         0       -",
        "us1b  not started  -        -         -        -                         0       -",
        "eu1b: Deployment/ns/web: ProgressDeadlineExceeded",
        "eu1c: 2 objects not verifiable in check mode",
    ]


def test_a_note_with_line_breaks_becomes_several_lines():
    lines = manent_summary_lines({"eu1a": {"status": "failed", "message": "apply failed:\n  ConfigMap/ns/a"}})
    assert lines[-2:] == ["eu1a: apply failed:", "  ConfigMap/ns/a"]


HOSTVARS = {
    "eu1a": {"region": "eu-1", "az": "eu-1a",
             "in_service": {"version": "2.0.0", "deployment": "d2", "slot": ""},
             "_deploy_history": {"host": "eu1a", "in_service": {"version": "2.0.0", "deployment": "d2"},
                                 "records": ["2.0.0 deployed", "1.0.0 superseded"]},
             "_deploy_audit": {"host": "eu1a", "artifact": "error", "artifact_error": "rendering failed",
                               "artifact_warnings": ["policy/v1beta1 PodDisruptionBudget is removed"],
                               "history": [{"version": "1.0.0", "object": "PodDisruptionBudget/ns/web",
                                            "level": "error", "message": "policy/v1beta1 is removed"},
                                           {"version": "1.0.0", "object": "HorizontalPodAutoscaler/ns/web",
                                            "level": "warning", "message": "autoscaling/v2beta2 is deprecated"}]}},
    "us1a": {"region": "us-1", "in_service": None,
             "_deploy_history": {"host": "us1a", "in_service": None, "records": []},
             "_deploy_audit": {"host": "us1a", "artifact": "not checked", "artifact_error": "",
                               "artifact_warnings": [], "history": []}},
    "new1": {},
}


def test_checkpoint_lines_group_the_clusters_by_release_in_service():
    assert manent_checkpoint_lines(["eu1a", "us1a", "new1"], HOSTVARS, ["version", "deployment"], "in_service") == [
        "version in service  deployment  clusters  hosts",
        "2.0.0               d2          1         eu1a",
        "(none)              -           2         us1a, new1",
    ]


def test_checkpoint_lines_of_a_fleet_are_host_ranges_and_show_the_namespaces_only_when_they_differ():
    digest = "ab" * 32
    hostvars = {"c%03d" % n: {"in_service": {"version": "2.0.0" if n <= 10 else "1.0.0", "artifact": digest}}
                for n in range(1, 100)}
    hostvars["c100"] = {"in_service": None}
    hosts = sorted(hostvars)
    assert manent_checkpoint_lines(hosts, hostvars, ["version", "artifact"], "in_service", namespace="shop") == [
        "version in service  artifact sha256  clusters  hosts",
        "2.0.0               abababababab     10        c001..c010",
        "1.0.0               abababababab     89        c011..c099",
        "(none)              -                1         c100",
    ]
    hostvars["c100"]["deploy_namespace"] = "shop-b"
    assert manent_checkpoint_lines(hosts, hostvars, ["version"], "in_service", namespace="shop")[-1] == \
        "(none)              shop-b     1         c100"


def test_history_lines():
    assert manent_history_lines(["eu1a", "us1a"], HOSTVARS, "region") == [
        "host  region  in service  deployment  records (newest first)",
        "eu1a  eu-1    2.0.0       d2          2.0.0 deployed, 1.0.0 superseded",
        "us1a  us-1    (none)      -           -",
    ]


def test_audit_lines_count_findings_and_note_each():
    assert manent_audit_lines(["eu1a", "us1a", "new1"], HOSTVARS) == [
        "host  artifact     artifact warnings  history removed  history deprecated",
        "eu1a  error        1                  1                1",
        "us1a  not checked  0                  0                0",
        "new1  -            0                  0                0",
        "eu1a: artifact: rendering failed",
        "eu1a: artifact: policy/v1beta1 PodDisruptionBudget is removed",
        "eu1a: history 1.0.0: PodDisruptionBudget/ns/web: policy/v1beta1 is removed",
        "eu1a: history 1.0.0: HorizontalPodAutoscaler/ns/web: autoscaling/v2beta2 is deprecated",
    ]


def test_filters_are_registered():
    assert sorted(FilterModule().filters()) == [
        "manent_applied_results", "manent_artifact", "manent_artifact_location",
        "manent_audit_lines", "manent_checkpoint_keys", "manent_checkpoint_lines", "manent_cluster_result",
        "manent_file_sha256",
        "manent_history_lines", "manent_run", "manent_seconds", "manent_summary_groups", "manent_summary_lines",
        "manent_table", "manent_traffic_lines", "manent_traffic_rows", "manent_waves"]


BASE = {"host": "eu1a", "region": "eu-1", "az": "eu-1a", "namespace": "shop"}
APPLIED = {"status": "deployed", "changed": True, "counts": {"configured": 1, "unchanged": 3},
           "details": {"namespace": "shop", "objects": 4, "release": "2.0.0", "previous": "1.0.0",
                       "pruned": ["ConfigMap/shop/old"], "objects_skipped": 0},
           "timings": {"total": 2.345}}


def test_cluster_result_is_this_operation_alone_in_spec_shape():
    entry = manent_cluster_result(APPLIED, BASE, {"hooks_skipped": ["Job/migrate (pre-upgrade)"]})
    assert (entry["host"], entry["status"], entry["version"], entry["previous"]) == ("eu1a", "deployed", "2.0.0",
                                                                                     "1.0.0")
    assert entry["counts"] == {"configured": 1, "unchanged": 3} and entry["seconds"] == 2.3
    assert entry["details"] == {"namespace": "shop", "objects": 4, "release": "2.0.0", "previous": "1.0.0",
                                "pruned": ["ConfigMap/shop/old"], "helm_hooks_skipped": ["Job/migrate (pre-upgrade)"],
                                "objects_skipped": 0}
    assert entry["message"] == "" and entry["hooks_skipped"] == ["Job/migrate (pre-upgrade)"]


def test_cluster_result_reads_the_version_beside_a_record_name():
    outcome = dict(APPLIED, details=dict(APPLIED["details"], release="manent-untenanted-shop-shop-test-1a2b-2.0.0",
                                         version="2.0.0", helm_hooks_skipped=[]))
    outcome["host"] = "https://k8s-eu1a.example.com:6443"
    entry = manent_cluster_result(outcome, BASE, {"hooks_skipped": ["ignored: the module says"]})
    assert entry["version"] == "2.0.0"
    assert (entry["host"], entry["api_server"]) == ("eu1a", "https://k8s-eu1a.example.com:6443")
    assert entry["details"]["release"] == "manent-untenanted-shop-shop-test-1a2b-2.0.0"
    assert entry["details"]["helm_hooks_skipped"] == []


def test_cluster_result_of_a_failure_names_the_target_version_and_message():
    entry = manent_cluster_result({"msg": "Deployment/shop/web: rollout failed", "counts": {"created": 1}}, BASE,
                                  None, failed=True, version="2.0.0")
    assert (entry["status"], entry["version"], entry["message"]) == ("failed", "2.0.0",
                                                                     "Deployment/shop/web: rollout failed")
    assert entry["counts"] == {"created": 1} and entry["details"]["namespace"] == "shop"


def test_applied_results_of_a_batch_come_from_each_host_s_registered_results_alone():
    """One task records the batch (phases/apply.yml): each host whose apply succeeded, from its own registered results
    and inventory variables; a failed, skipped or missing apply is left to the rescue."""
    applied = dict(APPLIED, details=dict(APPLIED["details"], application="shop", environment="prod", namespace="shop-eu"))
    hostvars = {
        "eu1a": {"__o": applied, "__r": {"hooks_skipped": ["Job/migrate (pre-upgrade)"]}, "region": "eu-1",
                 "az": "eu-1a"},
        "eu1b": {"__o": {"failed": True, "msg": "rollout failed"}, "region": "eu-1"},
        "us1a": {"__o": {"skipped": True}},
        "us1b": {},
        "ap1a": {"__o": dict(applied, details=dict(applied["details"], namespace="shop-ap"))},
    }
    got = manent_applied_results(["eu1a", "eu1b", "us1a", "us1b", "ap1a"], hostvars, "__o", "__r", True)
    assert [r["host"] for r in got] == ["eu1a", "ap1a"]
    eu1a = manent_cluster_result(applied, {"host": "eu1a", "region": "eu-1", "az": "eu-1a", "application": "shop",
                                           "environment": "prod", "namespace": "shop-eu", "check_mode": True},
                                 {"hooks_skipped": ["Job/migrate (pre-upgrade)"]})
    assert got[0]["result"] == eu1a and eu1a["hooks_skipped"] == ["Job/migrate (pre-upgrade)"]
    assert (got[1]["result"]["region"], got[1]["result"]["az"], got[1]["result"]["namespace"]) == ("", "", "shop-ap")
    assert manent_applied_results(None, {}, "__o", "__r") == []


def test_deploy_result_names_the_release_key_s_application_and_environment():
    result = DeployResult(status="deployed", namespace="shop", release="1.0.0", previous="", application="shop",
                          environment="prod")
    details = result.to_dict()["details"]
    assert (details["application"], details["environment"], details["namespace"]) == ("shop", "prod", "shop")


def test_run_lists_every_cluster_as_a_target():
    summary = {"eu1a": manent_cluster_result(APPLIED, BASE), "us1a": {"status": "not started"}}
    run = manent_run(summary, "rollback")
    assert (run["plugin"], run["operation"]) == ("kubernetes", "rollback")
    assert [(t["host"], t["status"]) for t in run["targets"]] == [("eu1a", "deployed"), ("us1a", "not started")]
    assert list(run["targets"][0])[:3] == ["host", "status", "details"]
    assert run["targets"][0]["counts"] == {"configured": 1, "unchanged": 3}
    assert run["targets"][1]["details"] == {}


def test_checkpoint_reads_the_release_in_service_from_a_dotted_field():
    # hostvars' entries are Mappings that are not dicts
    release = {"version": "2.0.0", "deployment": "d2"}
    rendered = {"eu1a": MappingProxyType({"region": "eu-1", "__deploy_render": {"in_service": release}}),
                "eu1b": MappingProxyType({"region": "eu-1", "__deploy_render": {"in_service": None}}),
                "us1a": MappingProxyType({"region": "us-1"})}
    assert manent_checkpoint_lines(["eu1a", "eu1b", "us1a"], rendered, ["version"], "__deploy_render.in_service") == [
        "version in service  clusters  hosts",
        "2.0.0               1         eu1a",
        "(none)              2         eu1b, us1a",
    ]


def test_checkpoint_keys_are_the_distinct_releases_in_service():
    hostvars = {"a": {"r": {"in_service": {"version": "1", "deployment": "x"}}},
                "b": {"r": {"in_service": {"version": "1", "deployment": "x"}}},
                "c": {"r": {"in_service": None}}, "d": {},
                "e": {"r": {"in_service": {"version": "1", "deployment": "y"}}}}
    assert manent_checkpoint_keys(["a", "b", "c", "d"], hostvars, ["version", "deployment"], "r.in_service") == ["1 / x"]
    assert manent_checkpoint_keys(["a", "e"], hostvars, ["version"], "r.in_service") == ["1"]
    assert manent_checkpoint_keys(["a", "e"], hostvars, ["version", "deployment"], "r.in_service") == ["1 / x", "1 / y"]
    assert manent_checkpoint_keys(["us1a", "eu1a"], HOSTVARS, ["version"], "in_service") == ["2.0.0"]


def test_the_checkpoint_compares_the_artifact_only_where_every_release_records_it():
    def fleet(*releases):
        return {"h%d" % n: {"r": {"in_service": release}} for n, release in enumerate(releases)}

    same = fleet({"version": "1", "artifact": "aa", "deployment": "x"}, {"version": "1", "artifact": "aa",
                                                                         "deployment": "y"})
    assert manent_checkpoint_keys(list(same), same, ["version", "artifact"], "r.in_service") == ["1 / aa"]
    rebuilt = fleet({"version": "1", "artifact": "aa"}, {"version": "1", "artifact": "bb"})
    assert manent_checkpoint_keys(list(rebuilt), rebuilt, ["version", "artifact"], "r.in_service") == ["1 / aa",
                                                                                                       "1 / bb"]
    # a release put in service before the artifact was recorded: compared on the version alone
    older = fleet({"version": "1", "artifact": "aa"}, {"version": "1", "artifact": ""})
    assert manent_checkpoint_keys(list(older), older, ["version", "artifact"], "r.in_service") == ["1"]
    behind = fleet({"version": "2", "artifact": "aa"}, {"version": "1"})
    assert manent_checkpoint_keys(list(behind), behind, ["version", "artifact"], "r.in_service") == ["2", "1"]


def test_the_release_namespace_created_is_a_change_not_an_object():
    """A first deploy with create_namespace counts the release's own objects, as the next deploy does; the summary
    says what the first one added."""
    first = DeployResult(status="deployed", namespace="shop", release="1.0.0", previous="", changes=[
        Change("Namespace/shop", CREATED), Change("ConfigMap/shop/a", CREATED), Change("Deployment/shop/web", CREATED)],
        namespace_created="shop")
    second = DeployResult(status="deployed", namespace="shop", release="1.0.1", previous="1.0.0", changes=[
        Change("ConfigMap/shop/a", UNCHANGED), Change("Deployment/shop/web", CONFIGURED)])
    assert first.objects == second.objects == 2
    assert first.to_dict()["counts"] == {"created": 3}
    base = {"host": "eu1a"}
    summary = {"eu1a": manent_cluster_result(first.to_dict(), base),
               "eu1b": manent_cluster_result(second.to_dict(), base)}
    lines = manent_summary_lines(summary)
    assert lines[1].split()[4] == lines[2].split()[4] == "2", lines
    assert lines[3:] == ["eu1a: namespace shop created (deploy_create_namespace), counted in changes, not in objects"]
    grouped = manent_summary_lines(summary, group_over=1)
    assert grouped[-1] == ("eu1a: namespace shop created (deploy_create_namespace), counted in changes, "
                           "not in objects"), grouped
    # a Namespace object of the release itself is one of its objects
    own = DeployResult(status="deployed", namespace="shop", release="1.0.0", previous="",
                       changes=[Change("Namespace/shop", CREATED), Change("ConfigMap/shop/a", CREATED)])
    assert own.objects == 2 and not own.to_dict()["details"]["namespace_created"]


def test_the_checkpoint_filters_need_the_variable_that_holds_the_release_in_service():
    for call in (lambda: manent_checkpoint_keys(["us1a"], HOSTVARS, ["version"]),
                 lambda: manent_checkpoint_lines(["us1a"], HOSTVARS, ["version"])):
        with pytest.raises(AnsibleFilterError, match="field: the host variable that holds the release in service"):
            call()
