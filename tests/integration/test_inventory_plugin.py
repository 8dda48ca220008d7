# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin manent.kubernetes.clusters on the local clusters: hosts from a kubeconfig with one context per
cluster, and from Argo CD cluster Secrets (a bearer token, an exec plugin) on one cluster for the two others; the
deploy playbook runs unchanged through each with ``-l region_...``; the inventory cache is used, and read again when a
private kubeconfig it refers to is gone."""

import os

import pytest

from tests.integration.exec_helpers import Plugin, grant
from tests.integration.inventory_helpers import (
    argocd_fleet, fleet_kubeconfig, group, listing, management_kubeconfig, write_source)
from tests.integration.playbook_helpers import run_playbook, shop_vars
from tests.reliability import record

pytestmark = pytest.mark.integration


def _deployed(cluster, namespace):
    return cluster.get("apps/v1", "Deployment", namespace, "shop") is not None


def test_kubeconfig_contexts_as_hosts_deploy_a_region(clusters, namespaces, tmp_path):
    config = fleet_kubeconfig(clusters, tmp_path / "fleet.yaml")
    source = write_source(tmp_path / "clusters.manent.yml", [{"kubeconfig": {"path": "fleet.yaml"}}])
    inventory, _err = listing(source)
    hosts = inventory["_meta"]["hostvars"]
    assert sorted(hosts) == sorted("local-" + c.name for c in clusters)
    for cluster in clusters:
        host = hosts["local-" + cluster.name]
        assert {key: host[key] for key in ("ansible_connection", "manent_kubeconfig", "manent_context", "region",
                                           "az")} == {"ansible_connection": "local", "manent_kubeconfig": config,
                                                      "manent_context": "local-" + cluster.name,
                                                      "region": cluster.region, "az": cluster.az}
        assert "local-" + cluster.name in inventory[group("region", cluster.region)]["hosts"]
        assert "local-" + cluster.name in inventory[group("az", cluster.az)]["hosts"]
    region = clusters[0].region
    run = run_playbook("deploy", source, shop_vars(tmp_path / "run", namespaces, "1.0.0", "hello"), tmp_path / "run",
                       limit=group("region", region))
    assert run.rc == 0, run.explain()
    assert {c.name: _deployed(c, namespaces) for c in clusters} == {c.name: c.region == region for c in clusters}
    record("fault", "inventory plugin: kubeconfig contexts as hosts, deploy.yml -l region_... through them", True,
           source=__name__)


def test_argocd_cluster_secrets_as_hosts_deploy_and_cache(clusters, namespaces, tmp_path):
    management, token_cluster, exec_cluster = clusters[0], clusters[1], clusters[2]
    grant(exec_cluster, namespaces, ["deployer-1"])
    plugin = Plugin(exec_cluster, namespaces, tmp_path / "plugin", lifetime=60)
    argocd_fleet(management, namespaces, token_cluster, exec_cluster, plugin)
    credentials = tmp_path / "credentials"
    source = write_source(tmp_path / "clusters.manent.yml", [{"argocd": {
        "management": {"kubeconfig": management_kubeconfig(management, tmp_path / "mgmt.yaml"), "context": "mgmt"},
        "namespace": namespaces}}], credentials_dir=str(credentials), cache=True,
        cache_plugin="ansible.builtin.jsonfile", cache_connection=str(tmp_path / "cache"))
    inventory, err = listing(source, "--flush-cache")
    hosts = inventory["_meta"]["hostvars"]
    assert sorted(hosts) == [token_cluster.name + "-argo", exec_cluster.name + "-argo"]  # no in-cluster, no legacy
    assert "legacy left out: Secret %s/legacy uses basic authentication" % namespaces in " ".join(err.split()), err
    for cluster in (token_cluster, exec_cluster):
        host = hosts[cluster.name + "-argo"]
        assert host["manent_kubeconfig"] == str(credentials / ("host-%s-argo.kubeconfig" % cluster.name))
        assert (host["manent_context"], host["region"], host["az"]) == (cluster.name + "-argo", cluster.region, cluster.az)
        assert host["manent_argocd_secret"] == "%s/%s-argo" % (namespaces, cluster.name)
    limit = ":".join(group("region", c.region) for c in (token_cluster, exec_cluster))
    run = run_playbook("deploy", source, shop_vars(tmp_path / "run", namespaces, "1.0.0", "hello"), tmp_path / "run",
                       limit=limit)
    assert run.rc == 0, run.explain()
    assert [_deployed(c, namespaces) for c in clusters] == [False, True, True]
    assert plugin.runs(), "the exec plugin of the Argo CD Secret did not run"

    # the cache answers while the private files it refers to exist: a Secret deleted meanwhile is still a host
    management.delete("v1", "Secret", namespaces, token_cluster.name + "-argo")
    cached, _err = listing(source)
    assert sorted(cached["_meta"]["hostvars"]) == sorted(hosts)
    # one of its files gone: the sources are read again instead of handing out a missing path
    os.unlink(hosts[exec_cluster.name + "-argo"]["manent_kubeconfig"])
    fresh, _err = listing(source)
    assert sorted(fresh["_meta"]["hostvars"]) == [exec_cluster.name + "-argo"]
    assert os.path.isfile(fresh["_meta"]["hostvars"][exec_cluster.name + "-argo"]["manent_kubeconfig"])
    assert sorted(os.listdir(credentials)) == ["host-%s-argo.kubeconfig" % exec_cluster.name]  # the stale one removed
    record("fault", "inventory plugin: Argo CD cluster Secrets (bearer token, exec plugin) as hosts, deploy.yml -l "
                    "region_... through them; cache refreshed when a private kubeconfig is gone", True, source=__name__)
