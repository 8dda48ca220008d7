# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Many inventory hosts on one API server (docs/role.md, "Many clusters"): the same cluster reached for two teams'
namespaces deploys each host's rendering into that host's namespace, and two hosts of one run that reach the same
cluster for the same namespace stop the run before anything is written, naming both. Through playbooks/deploy.yml
against the first local cluster."""

from __future__ import annotations

import re
import uuid

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import HISTORY_LOCATOR
from tests.integration.playbook_helpers import labelled_history, run_playbook, shop_vars

CONNECTION = ("ansible_connection", "ansible_python_interpreter", "manent_api_server", "manent_ca_file",
              "manent_token", "region", "az")


def _one_server_inventory(inventory_path, path, namespaces):
    """Hosts team-a, team-b, ... (one per namespace, in order), every one with the first cluster's connection."""
    with open(inventory_path, encoding="utf-8") as handle:
        first = next(iter(yaml.safe_load(handle)["all"]["hosts"].values()))
    hosts = {}
    for index, namespace in enumerate(namespaces):
        host = {key: first[key] for key in CONNECTION if key in first}
        host["deploy_namespace"] = namespace
        hosts["team-%s" % "abcdefgh"[index]] = host
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"hosts": hosts}}, handle, sort_keys=False)
    return str(path)


def _set_host_var(path, host, name, value):
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    data["all"]["hosts"][host][name] = value
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(data, handle, sort_keys=False)


def _vars(tmp_path, greeting, version="1.0.0"):
    # The checkpoint's defaults: each host deploys with its own deploy id (its namespace), which it does not compare.
    extra = shop_vars(tmp_path, "unused", version, greeting, replicas="1", deploy_create_namespace=True)
    del extra["deploy_namespace"]  # each host's own (an extra variable would override the host variables)
    return extra


@pytest.fixture
def two_namespaces(cluster):
    names = ["t-%s-%s" % (uuid.uuid4().hex[:8], team) for team in ("a", "b")]
    yield names
    for name in names:
        cluster.delete_namespace(name)


@pytest.mark.integration
def test_two_hosts_on_one_api_server_deploy_each_its_own_namespace(cluster, inventory_path, two_namespaces, tmp_path):
    inventory = _one_server_inventory(inventory_path, tmp_path / "inventory.yml", two_namespaces)
    # A host variable templated from one of the role's defaults: the run-wide argument check (hostvars, without the
    # role's variables) leaves it to the tasks, which template it with them.
    _set_host_var(inventory, "team-a", "deploy_break_lock", "{{ deploy_adopt }}")
    run = run_playbook("deploy", inventory, _vars(tmp_path, "hello teams"), tmp_path)
    assert run.rc == 0, run.explain()

    summary = run.summary
    for host, namespace in zip(("team-a", "team-b"), two_namespaces):
        assert summary[host]["status"] == "deployed", summary[host]
        assert summary[host]["details"]["namespace"] == namespace, summary[host]
        config = cluster.get("v1", "ConfigMap", namespace, "shop-config")
        assert config is not None and config["data"]["greeting"] == "hello teams", (namespace, run.explain())
        assert cluster.get("apps/v1", "Deployment", namespace, "shop") is not None, namespace
        assert labelled_history(cluster, namespace, "shop"), namespace  # each host's own history and lock
    assert "Preflight | One inventory host per cluster and namespace" in run.output

    again = run_playbook("deploy", inventory, _vars(tmp_path, "hello teams"), tmp_path)
    assert again.rc == 0, again.explain()
    assert all(r["changed"] == 0 for r in again.recap.values()), again.explain()


@pytest.mark.integration
def test_clusters_that_differ_by_their_variables_pass_the_checkpoint_a_real_divergence_does_not(
        cluster, inventory_path, two_namespaces, tmp_path):
    # Each host its own namespace and its own variables (deploy ids differ): the default checkpoint compares the
    # version and the artifact's sha256, the same on every cluster by design, so every redeploy passes it.
    inventory = _one_server_inventory(inventory_path, tmp_path / "inventory.yml", two_namespaces)
    for host, replicas in (("team-a", "1"), ("team-b", "2")):
        _set_host_var(inventory, host, "deploy_variables", {"REPLICAS": replicas, "GREETING": "hello " + host})

    def deploy(version, limit=None):
        extra = _vars(tmp_path, "unused", version)
        del extra["deploy_variables"]  # each host's own
        return run_playbook("deploy", inventory, extra, tmp_path, limit=limit)

    for attempt in range(3):  # the first deploy, then two redeploys with the defaults
        run = deploy("1.0.0")
        assert run.rc == 0, (attempt, run.explain())
        assert {e["status"] for e in run.summary.values()} == {"deployed"}, (attempt, run.summary)
    for host, namespace, replicas in (("team-a", two_namespaces[0], 1), ("team-b", two_namespaces[1], 2)):
        assert cluster.get("apps/v1", "Deployment", namespace, "shop")["spec"]["replicas"] == replicas, host
    # the deploy ids in service differ: a checkpoint that compared them would refuse this fleet
    locators = [cm["data"] for ns in two_namespaces for cm in labelled_history(cluster, ns, "shop")
                if cm["metadata"]["labels"]["manent.io/history"] == HISTORY_LOCATOR]
    assert len({data["deployment"] for data in locators}) == 2, locators
    assert {data["artifactSha256"] for data in locators} == {_vars(tmp_path, "unused")["deploy_artifact"]["sha256"]}

    # A real divergence: team-b moves to 2.0.0 alone, then the whole fleet is refused before any change.
    assert deploy("2.0.0", limit="team-b").rc == 0
    before = {ns: cluster.get("v1", "ConfigMap", ns, "shop-config")["metadata"]["resourceVersion"]
              for ns in two_namespaces}
    run = deploy("3.0.0")
    assert run.rc != 0, run.explain()
    assert "the targeted clusters run different releases of shop" in run.output, run.explain()
    table = [line.strip(' ",').split() for line in run.output.splitlines()]
    rows = {row[0]: row[2:] for row in table if row and row[0] in ("1.0.0", "2.0.0") and len(row) > 3}
    # the namespaces differ: each release's line names its own
    assert rows == {"1.0.0": [two_namespaces[0], "1", "team-a"], "2.0.0": [two_namespaces[1], "1", "team-b"]}, \
        run.explain()
    assert "Deploy | Apply" not in run.output, run.explain()
    assert {ns: cluster.get("v1", "ConfigMap", ns, "shop-config")["metadata"]["resourceVersion"]
            for ns in two_namespaces} == before


@pytest.mark.integration
def test_two_hosts_for_one_namespace_of_one_cluster_stop_the_run_before_any_write(cluster, inventory_path,
                                                                                  two_namespaces, tmp_path):
    namespace = two_namespaces[0]
    inventory = _one_server_inventory(inventory_path, tmp_path / "inventory.yml", [namespace, namespace])
    run = run_playbook("deploy", inventory, _vars(tmp_path, "hello"), tmp_path)

    assert run.rc != 0, run.explain()
    with open(inventory, encoding="utf-8") as handle:
        url = yaml.safe_load(handle)["all"]["hosts"]["team-a"]["manent_api_server"]
    assert "hosts team-a, team-b reach the same cluster (%s) for the same namespace (%s)" % (url, namespace) \
        in run.output, run.explain()
    assert "Deploy | Render the release" not in run.output, run.explain()  # no cluster was contacted
    assert cluster.get("v1", "Namespace", None, namespace) is None  # not even the namespace was created


@pytest.mark.integration
def test_a_bad_host_variable_stops_the_run_once_naming_that_host_before_any_write(cluster, inventory_path,
                                                                                  two_namespaces, tmp_path):
    # The argument spec is checked once for every host of the run (plugins/filter/manent_checks.py), not in each
    # host's worker: the host variable of team-b alone is named, with the variable and the rule it breaks.
    path = _one_server_inventory(inventory_path, tmp_path / "inventory.yml", two_namespaces)
    _set_host_var(path, "team-b", "deploy_keep_releases", "a few")
    run = run_playbook("deploy", path, _vars(tmp_path, "hello"), tmp_path)

    assert run.rc != 0, run.explain()
    # ansible-core's validator words the type "str" or "<class 'str'>" depending on its version
    assert re.search(r"team-b: argument 'deploy_keep_releases' is of type .+? and we were unable to convert to int",
                     run.output), run.explain()
    assert "team-a:" not in run.output, run.explain()
    assert "Deploy | Render the release" not in run.output, run.explain()  # no cluster was contacted
    for namespace in two_namespaces:
        assert cluster.get("v1", "Namespace", None, namespace) is None  # not even the namespace was created
