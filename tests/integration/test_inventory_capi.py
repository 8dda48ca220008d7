# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Cluster API source of the inventory plugin against real control planes: the first local cluster is the
management cluster (the real Cluster CRD, Cluster objects, kubeconfig Secrets), the other two are its workload
clusters, reached with tokens of ServiceAccounts made for the test; a third Cluster is still provisioning."""

from __future__ import annotations

import uuid

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.plugin_utils import inventory_capi
from tests.integration import capi_helpers


@pytest.fixture(scope="module")
def fleet(clusters):
    """``{management, namespace, workloads: {cluster name: (local cluster, region, az)}, pending, tokens}``."""
    management, workloads = clusters[0], clusters[1:3]
    uid = uuid.uuid4().hex[:8]
    namespace = "capi-" + uid
    made = []
    capi_helpers.install_crd(management)
    try:
        management.create_namespace(namespace)
        made.append(management)
        out = {"management": management, "namespace": namespace, "workloads": {}, "tokens": [], "uid": uid,
               "pending": "w3-" + uid}
        for i, local in enumerate(workloads, 1):
            name, region, az = "w%d-%s" % (i, uid), "r%s%d" % (uid, i), "r%s%da" % (uid, i)
            local.create_namespace(namespace)
            made.append(local)
            token = capi_helpers.service_account_token(local, namespace, "capi-deployer")
            out["tokens"].append(token)
            management.apply(capi_helpers.kubeconfig_secret(namespace, name,
                                                            capi_helpers.workload_kubeconfig(local, name, token)))
            management.apply(capi_helpers.cluster_object(namespace, name, {
                "topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": az, "manent.test/fleet": uid}))
            capi_helpers.set_status(management, namespace, name, capi_helpers.provisioned_status())
            out["workloads"][name] = (local, region, az)
        management.apply(capi_helpers.cluster_object(namespace, out["pending"], {
            "topology.kubernetes.io/region": "r%s1" % uid, "manent.test/fleet": uid}))
        capi_helpers.set_status(management, namespace, out["pending"], capi_helpers.provisioning_status())
        yield out
    finally:
        for local in made:
            local.delete_namespace(namespace)
        capi_helpers.remove_crd(management)


def test_discover_reads_the_real_crd(fleet):
    with Kube(fleet["management"].connection()) as kube:
        found = {f.name: f for f in inventory_capi.discover(kube, {"cluster_api": {"namespaces": [fleet["namespace"]]}})}
    assert sorted(found) == sorted(list(fleet["workloads"]) + [fleet["pending"]])
    assert found[fleet["pending"]].skipped == "phase Provisioning, not Provisioned"
    for name, (local, region, az) in fleet["workloads"].items():
        host = found[name]
        assert (host.skipped, host.region, host.az, host.context) == ("", region, az, "%s-admin@%s" % (name, name))
        assert host.variables["manent_capi"]["api_version"] == capi_helpers.API_VERSION
        assert host.variables["manent_capi"]["server"] == local.url
        # the kubeconfig read from the Secret reaches the workload cluster as the ServiceAccount
        assert host.kubeconfig["users"][0]["user"]["token"] in fleet["tokens"]
    assert not any(token in repr(list(found.values())) for token in fleet["tokens"])
