# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's filters for many clusters (docs/role.md, "Many clusters"): the preflight rules in one filter call
(manent_preflight), the hosts that would deploy one namespace of one cluster twice (manent_shared_targets), and the
summary of many clusters grouped by outcome (manent_summary_lines over 10 clusters, manent_summary_groups)."""

from __future__ import annotations

import re

import pytest

from ansible_collections.manent.kubernetes.plugins.filter.manent import host_ranges, manent_artifact, manent_summary_lines
from ansible_collections.manent.kubernetes.plugins.filter.manent_checks import (
    _redact, cluster_url, manent_argument_errors, manent_preflight, manent_shared_targets)

GOOD = {"environment": "prod", "application": "shop", "namespace": "shop-prod", "keep_releases": 5, "parallel": "2",
        "wait_timeout": "1m30s", "wave_by": "region", "host": "eu1a", "api_server": "https://k8s.example.com",
        "client_cert": "", "client_key": None, "token": "file:/t", "concurrency": 0,
        "artifact": {"type": "kubernetes", "name": "shop"}, "artifact_types": ["kubernetes"], "artifact_name": "shop",
        "version": "1.0.0", "source": "shop.yaml", "sha256": "a" * 64}


def test_preflight_of_good_values_is_empty_with_every_part():
    assert manent_preflight(GOOD, ["artifact", "apply"]) == []


@pytest.mark.parametrize("change, parts, expected", [
    ({"environment": ""}, [], "deploy_environment: is empty; set the environment of the release key, e.g. prod"),
    ({"namespace": "Shop"}, [], "deploy_namespace: 'Shop' is not a namespace name (lowercase letters, digits and '-', "
                                "at most 63)"),
    ({"keep_releases": "1"}, [], "deploy_keep_releases: must be at least 2 (history needs the release in service "
                                 "and the one before it)"),
    ({"parallel": "many"}, [], "deploy_parallel: must be at least 1"),
    ({"wait_timeout": "soon"}, [], "deploy_wait_timeout: 'soon' is not a duration; use seconds or e.g. 90s, 5m, 1m30s"),
    ({"wave_by": "zone"}, [], "deploy_wave_by: must be region or az"),
    ({"api_server": "http://k8s"}, [], "manent_api_server: host eu1a uses plain http; use the host name or an "
                                       "https:// URL"),
    ({"client_cert": "c.pem"}, [], "manent_client_key: host eu1a sets only one of manent_client_cert and "
                                   "manent_client_key; set both or neither"),
    ({"token": ""}, [], "manent_token: host eu1a has neither a token nor a client certificate"),
    ({"artifact": {}}, ["artifact"], "deploy_artifact: is not set; give {type: kubernetes, name, version, source, "
                                     "sha256}"),
    ({"artifact": {"type": "helm"}}, ["artifact"], "deploy_artifact.type: 'helm' is not one of deploy_artifact_types"),
    ({"sha256": "abc"}, ["artifact"], "deploy_artifact.sha256: must be the 64 hex digits"),
    # digits only and unquoted: YAML reads a number (0123... as octal), the role's string of it is no digest
    ({"artifact": dict(GOOD["artifact"], sha256=0o123), "sha256": "83"}, ["artifact"],
     'deploy_artifact.sha256: was read by YAML as the number 83, not as text (a digest of digits only, unquoted, is '
     'one): quote it, e.g. sha256: "<the 64 hex digits>"'),
    ({"source": ""}, ["artifact"], "deploy_artifact.source: is empty; give a URL or a path on the controller"),
    ({"concurrency": -1}, ["apply"], "deploy_concurrency: must be at least 1, or 0 for manent_apply's default"),
])
def test_preflight_names_the_variable_and_what_to_do(change, parts, expected):
    failures = manent_preflight(dict(GOOD, **change), parts)
    assert len(failures) == 1 and failures[0].startswith(expected), failures


def test_preflight_reads_the_artifact_as_manent_artifact_returns_it():
    """The role combines manent_artifact's result (name, not artifact_name) into the artifact part's values."""
    read = manent_artifact(GOOD["artifact"] | {"version": "1.0.0", "source": "shop.yaml", "sha256": "A" * 64})
    values = {k: v for k, v in GOOD.items() if k not in ("artifact_name", "version", "source", "sha256")}
    assert manent_preflight(dict(values, **read), ["artifact"]) == []
    failures = manent_preflight(dict(values, **manent_artifact({"type": "kubernetes"})), ["artifact"])
    assert [line.split(":")[0] for line in failures] == [
        "deploy_artifact.name", "deploy_artifact.version", "deploy_artifact.source", "deploy_artifact.sha256"]


def test_preflight_checks_the_parts_asked_for_else_those_whose_values_are_given():
    bad = dict(GOOD, sha256="", concurrency=-1)
    assert manent_preflight(bad, []) == []
    assert [line.split(":")[0] for line in manent_preflight(bad)] == ["deploy_artifact.sha256", "deploy_concurrency"]
    parted = ("artifact", "artifact_types", "artifact_name", "version", "source", "sha256", "concurrency")
    common = {k: v for k, v in bad.items() if k not in parted}
    assert manent_preflight(common) == []


@pytest.mark.parametrize("server, port, url", [
    ("k8s.example.com", None, "https://k8s.example.com:6443"),
    ("K8S.example.com", 443, "https://k8s.example.com:443"),
    ("https://k8s.example.com/", None, "https://k8s.example.com:6443"),
    ("https://127.0.0.1:18500", 6443, "https://127.0.0.1:18500"),
    ("https://lb.example.com/clusters/a", None, "https://lb.example.com:6443/clusters/a"),
])
def test_cluster_url_as_the_modules_build_it(server, port, url):
    assert cluster_url(server, port) == url


def test_shared_targets_name_the_hosts_of_one_cluster_and_namespace():
    hostvars = {"a": {"manent_api_server": "https://127.0.0.1:17443", "deploy_namespace": "team-a"},
                "b": {"manent_api_server": "https://127.0.0.1:17443", "deploy_namespace": "team-b"},
                "c": {"manent_api_server": "https://127.0.0.1:17443/", "deploy_namespace": "team-a"},
                "k8s.example.com": {}, "d": {"manent_api_server": "K8S.example.com", "manent_api_port": 6443},
                "e": {"manent_api_server": "k8s.example.com", "manent_api_port": 443}}
    lines = manent_shared_targets(list(hostvars), hostvars, "shop")
    assert lines == [
        "hosts a, c reach the same cluster (https://127.0.0.1:17443) for the same namespace (team-a): each would "
        "deploy the release there, one over the other; give each host its own deploy_namespace, or target one of "
        "them (-l)",
        "hosts k8s.example.com, d reach the same cluster (https://k8s.example.com:6443) for the same namespace "
        "(shop): each would deploy the release there, one over the other; give each host its own deploy_namespace, "
        "or target one of them (-l)"]
    assert manent_shared_targets(["a", "b", "e"], hostvars, "shop") == []


def test_shared_targets_of_kubeconfig_contexts():
    inline = "apiVersion: v1\nusers:\n- name: u\n  user: {token: s3cr3t}\n"
    hostvars = {"a": {"manent_kubeconfig": "/etc/fleet.kubeconfig", "manent_context": "eu1"},
                "b": {"manent_kubeconfig": "/etc/../etc/fleet.kubeconfig", "manent_context": "eu1"},
                "c": {"manent_kubeconfig": "/etc/fleet.kubeconfig", "manent_context": "us1"},
                "d": {"manent_kubeconfig": inline}, "e": {"manent_kubeconfig": inline}}
    lines = manent_shared_targets(list(hostvars), hostvars, "shop")
    assert lines == [
        "hosts a, b reach the same cluster (context eu1 of kubeconfig /etc/fleet.kubeconfig) for the same namespace "
        "(shop): each would deploy the release there, one over the other; give each host its own deploy_namespace, "
        "or target one of them (-l)"]
    assert "s3cr3t" not in "".join(lines)


def test_host_ranges():
    assert host_ranges(["c001", "c002", "c003", "c005", "c006", "eu1a", "k8s-1.example.com", "k8s-2.example.com",
                        "k8s-3.example.com", "c009", "c010", "c011", "c12"]) == \
        "c001..c003, c005, c006, eu1a, k8s-1.example.com..k8s-3.example.com, c009..c011, c12"
    assert host_ranges([]) == ""


def _deployed(seconds):
    return {"status": "deployed", "version": "1.0.1", "previous": "1.0.0", "objects": 5,
            "counts": {"unchanged": 4, "configured": 1}, "pruned": [], "seconds": seconds}


def test_the_summary_of_ten_clusters_has_a_row_each():
    lines = manent_summary_lines({"c%03d" % i: _deployed(1.0) for i in range(1, 11)})
    assert len(lines) == 11 and lines[1].split()[:2] == ["c001", "deployed"]


def test_the_summary_of_a_hundred_clusters_is_grouped_by_outcome_failures_first_each_message_once():
    summary = {"c%03d" % i: _deployed(0.5 + i / 100.0) for i in range(1, 50)}
    summary["c050"] = dict(_deployed(61.0), status="failed", counts={},
                           message="Deployment/shop/web: ProgressDeadlineExceeded")
    summary.update({"c%03d" % i: None for i in range(51, 101)})  # the next wave: not started
    lines = manent_summary_lines(summary)
    assert lines == [
        "clusters  status       version  previous  objects  changes                   pruned  seconds    hosts",
        "1         failed       1.0.1    1.0.0     5        -                         0       61         c050",
        "49        deployed     1.0.1    1.0.0     5        configured:1 unchanged:4  0       0.51-0.99  c001..c049",
        "50        not started  -        -         -        -                         0       -          c051..c100",
        "c050: Deployment/shop/web: ProgressDeadlineExceeded"]


# --------------------------------------------------------------------------- the argument spec, once for all hosts


class _Unrenderable(dict):
    """A host's variables where one cannot be templated here (its template names a variable of the role)."""

    def __getitem__(self, name):
        if name == "deploy_wait_timeout":
            raise ValueError("'later' is undefined")
        return super().__getitem__(name)


def test_argument_errors_name_each_error_once_with_its_hosts():
    hostvars = {"a": {"deploy_wait": "maybe", "deploy_namespace": "ns-a"},
                "b": {"deploy_wait": "maybe", "deploy_namespace": "ns-b"},
                "c": {"deploy_keep_releases": "five", "deploy_region_order": ["eu1"]},
                "d": _Unrenderable(deploy_wait_timeout="{{ later }}", deploy_prune="never"),
                "e": {"deploy_parallel": "4", "deploy_prune": "yes", "unrelated_variable": {"x": 1}}}
    errors = manent_argument_errors(list(hostvars), hostvars, "plan")
    assert len(errors) == 3, errors
    # ansible-core's validator words the type "str" or "<class 'str'>" depending on its version
    assert re.match(r"a, b: argument 'deploy_wait' is of type .+? and we were unable to convert to bool", errors[0])
    assert re.match(r"c: argument 'deploy_keep_releases' is of type .+? and we were unable to convert to int",
                    errors[1]), errors
    assert re.match(r"d: argument 'deploy_prune' is of type .+? and we were unable to convert to bool", errors[2]), \
        errors  # and not deploy_wait_timeout, which only the role's tasks can template


def test_argument_errors_of_good_or_absent_variables_are_empty_and_many_hosts_are_counted():
    assert manent_argument_errors(["a"], {"a": {}}) == []
    good = {"deploy_wait": "true", "deploy_keep_releases": "3", "deploy_checkpoint_fields": ["version"]}
    assert manent_argument_errors(["a"], {"a": good}) == []
    hostvars = {"h%02d" % i: {"deploy_helm_hooks": "sometimes"} for i in range(12)}
    errors = manent_argument_errors(sorted(hostvars), hostvars)
    assert len(errors) == 1 and errors[0].startswith("h00..h11: "), errors  # named as the summary names hosts


def test_argument_errors_of_an_unknown_entry_point_say_so():
    with pytest.raises(ValueError, match="no entry point 'plans'"):
        manent_argument_errors(["a"], {"a": {}}, "plans")


def test_argument_error_messages_never_quote_credentials():
    message = "argument 'manent_token' could not use 'hunter2-token' nor 'ab'"
    assert _redact(message, {"manent_token": "hunter2-token"}) == "argument 'manent_token' could not use '********' " \
        "nor 'ab'"
    assert _redact("x {'k': 'pa55word'}", {"deploy_artifact_url_password": {"k": "pa55word"}}) == "x {'k': '********'}"
    assert _redact("keep 'shop'", {"deploy_application": "shop"}) == "keep 'shop'"


def test_argument_errors_read_mappings_whose_keys_are_numbers_and_text():
    """A host variable whose mapping mixes number and text keys (YAML reads `1:` as a number) is compared and
    validated like any other: its keys are taken as text."""
    hostvars = {"eu1a": {"deploy_helm_values": {1: "one", "two": 2}}, "eu1b": {"deploy_helm_values": {"1": "one", "two": 2}}}
    assert manent_argument_errors(list(hostvars), hostvars, "plan") == []
