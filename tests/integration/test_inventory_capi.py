# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Cluster API source of the inventory plugin against real control planes: the first local cluster is the
management cluster (the real Cluster CRD, Cluster objects, kubeconfig Secrets), the other two are its workload
clusters, reached with tokens of ServiceAccounts made for the test; a third Cluster is still provisioning."""

from __future__ import annotations

import json
import os
import stat
import uuid

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.plugin_utils import inventory_capi
from tests.integration import capi_helpers
from tests.integration.inventory_helpers import group, plain, run_inventory, write_source
from tests.integration.playbook_helpers import SHOP_SECRET, app_objects, artifact, base_vars, run_playbook, write_manifest

FLEET_LABEL = "manent.test/fleet"  # on the Clusters of one run of this module


class Tokens(list):
    """The workload clusters' tokens, kept out of pytest's report of a failed test."""

    def __repr__(self):
        return "<%d tokens>" % len(self)


@pytest.fixture(scope="module")
def fleet(clusters):
    """``{management, namespace, workloads: {cluster name: (local cluster, region, az)}, pending, tokens, uid}``: two
    workload clusters in region ``r<uid>`` (zones ``r<uid>-a``, ``r<uid>-b``) and a third Cluster there, provisioning."""
    management, workloads = clusters[0], clusters[1:3]
    uid = uuid.uuid4().hex[:8]
    namespace = "capi-" + uid
    made = []
    capi_helpers.install_crd(management)
    try:
        management.create_namespace(namespace)
        made.append(management)
        out = {"management": management, "namespace": namespace, "workloads": {}, "tokens": Tokens(), "uid": uid,
               "pending": "w3-" + uid}
        for i, local in enumerate(workloads, 1):
            name, region, az = "w%d-%s" % (i, uid), "r" + uid, "r%s-%s" % (uid, "ab"[i - 1])
            local.create_namespace(namespace)
            made.append(local)
            token = capi_helpers.service_account_token(local, namespace, "capi-deployer")
            out["tokens"].append(token)
            management.apply(capi_helpers.kubeconfig_secret(namespace, name,
                                                            capi_helpers.workload_kubeconfig(local, name, token)))
            management.apply(capi_helpers.cluster_object(namespace, name, {
                "topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": az, FLEET_LABEL: uid}))
            capi_helpers.set_status(management, namespace, name, capi_helpers.provisioned_status())
            out["workloads"][name] = (local, region, az)
        # the provisioning Cluster has a usable kubeconfig Secret too: only its status leaves it out
        management.apply(capi_helpers.kubeconfig_secret(namespace, out["pending"], capi_helpers.workload_kubeconfig(
            workloads[0], out["pending"], out["tokens"][0])))
        management.apply(capi_helpers.cluster_object(namespace, out["pending"], {
            "topology.kubernetes.io/region": "r" + uid, FLEET_LABEL: uid}))
        capi_helpers.set_status(management, namespace, out["pending"], capi_helpers.provisioning_status())
        yield out
    finally:
        for local in made:
            local.delete_namespace(namespace)
        capi_helpers.remove_crd(management, FLEET_LABEL, uid)


def test_discover_reads_the_real_crd(fleet):
    with Kube(fleet["management"].connection()) as kube:
        found = {f.name: f for f in inventory_capi.discover(kube, {"cluster_api": {"namespaces": [fleet["namespace"]]}})}
    assert sorted(found) == sorted(list(fleet["workloads"]) + [fleet["pending"]])
    assert found[fleet["pending"]].skipped == "phase Provisioning, not Provisioned"
    for name, (local, region, az) in fleet["workloads"].items():
        host = found[name]
        assert (host.skipped, host.region, host.az, host.context) == ("", region, az, "%s-admin@%s" % (name, name))
        assert host.variables["manent_capi"]["api_version"] == capi_helpers.API_VERSION
        assert host.variables["manent_cluster_server"] == local.url
        # the kubeconfig read from the Secret reaches the workload cluster as the ServiceAccount
        assert host.kubeconfig["users"][0]["user"]["token"] in fleet["tokens"]
    assert not any(token in repr(list(found.values())) for token in fleet["tokens"])


def inventory_file(fleet, tmp_path):
    """A clusters.manent.yml of the Cluster API source (management given as the role's static variables) with the
    inventory cache on."""
    management = fleet["management"]
    return write_source(tmp_path / "clusters.manent.yml", [{"cluster_api": {
        "management": {"api_server": management.url, "ca_file": management.ca_file,
                       "token": "file:" + os.path.join(management.dir, "admin.token")},
        "namespaces": [fleet["namespace"]], "label_selector": "%s=%s" % (FLEET_LABEL, fleet["uid"])}}],
        credentials_dir=str(tmp_path / "credentials"), cache=True, cache_plugin="ansible.builtin.jsonfile",
        cache_connection=str(tmp_path / "cache"))


def test_plugin_lists_the_ready_clusters_and_deploys_through_them(fleet, tmp_path):
    """ansible-inventory gives the two provisioned clusters with their region/az groups and warns about the
    third; deploy.yml -l region_<r> deploys through them with the kubeconfigs of their Secrets; no token in the
    inventory, its cache or the run's output."""
    path = inventory_file(fleet, tmp_path)
    code, out, err = run_inventory(path)
    assert code == 0, err
    inventory = plain(json.loads(out))
    region = group("region", "r" + fleet["uid"])
    names = sorted(fleet["workloads"])
    assert sorted(inventory[region]["hosts"]) == names
    assert inventory[group("az", "r%s-a" % fleet["uid"])]["hosts"] == [names[0]]
    assert inventory[group("az", "r%s-b" % fleet["uid"])]["hosts"] == [names[1]]
    assert "%s left out: phase Provisioning, not Provisioned" % fleet["pending"] in " ".join(err.split())
    hostvars = inventory["_meta"]["hostvars"]
    assert fleet["pending"] not in hostvars
    for name, (local, region_value, az) in fleet["workloads"].items():
        host = hostvars[name]
        assert (host["region"], host["az"], host["manent_context"]) == (region_value, az, "%s-admin@%s" % (name, name))
        assert host["manent_capi"]["namespace"] == fleet["namespace"] and host["manent_cluster_server"] == local.url
        mode = os.stat(host["manent_kubeconfig"]).st_mode
        assert stat.S_IMODE(mode) == 0o600 and stat.S_IMODE(os.stat(os.path.dirname(host["manent_kubeconfig"])).st_mode) == 0o700
    cached = "".join(open(os.path.join(root, f), encoding="utf-8").read()
                     for root, _dirs, files in os.walk(str(tmp_path / "cache")) for f in files)
    assert names[0] in cached  # the cache was written, and holds names and paths only
    for token in fleet["tokens"]:
        assert token not in out and token not in err and token not in cached

    objects = app_objects("1.0.0", SHOP_SECRET)
    manifest = write_manifest(str(tmp_path / "shop-1.0.0.yaml"), objects)
    extra = base_vars(tmp_path / "r1", fleet["namespace"], deploy_application="shop",
                      deploy_artifact=artifact("shop", "1.0.0", manifest), deploy_wait_timeout="120s")
    run = run_playbook("deploy", path, extra, tmp_path / "r1", limit=region, verbosity=3)
    assert run.rc == 0, run.explain()
    assert sorted(run.recap) == names and all(counts["failed"] == 0 for counts in run.recap.values())
    assert sorted(run.summary) == names
    for local, _region, _az in fleet["workloads"].values():
        assert (local.get("v1", "ConfigMap", fleet["namespace"], "shop-config") or {}).get("data") == {"version": "1.0.0"}
    for token in fleet["tokens"]:
        assert token not in run.output
