# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Local clusters like real ones (hack/clusters.py): kwok nodes carry the labels every real node has and a
realistic capacity, so a public chart that selects on them (kwok's own chart, with the usual
``nodeSelector: {kubernetes.io/os: linux}`` and a zone affinity) schedules on them through the playbooks. A
zone that no node has shows what progress says while a rollout cannot schedule: the reason and the seconds,
once per change rather than every 10 seconds."""

from __future__ import annotations

import os

import pytest
import yaml

from tests.helpers import helm_binary
from tests.integration.playbook_helpers import ROOT, artifact, base_vars, run_playbook

CHART = os.path.join(ROOT, "tests", "data", "charts", "kwok-0.1.2.tgz")
CLUSTER_SCOPED = (("rbac.authorization.k8s.io/v1", "ClusterRole"),
                  ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
                  ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"))


def _values(name, zone):
    return yaml.safe_dump({
        "fullnameOverride": name,
        "nodeSelector": {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}},
    })


@pytest.mark.integration
def test_nodes_have_the_labels_and_capacity_of_real_nodes(clusters):
    for c in clusters:
        nodes = c.list("v1", "Node")
        assert len(nodes) >= 3, c.name
        for node in nodes:
            labels = node["metadata"]["labels"]
            assert labels["kubernetes.io/os"] == "linux" and labels["kubernetes.io/arch"] == "amd64", labels
            assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
            assert (labels["topology.kubernetes.io/region"], labels["topology.kubernetes.io/zone"]) == (c.region, c.az)
            allocatable = node["status"]["allocatable"]
            assert (allocatable["cpu"], allocatable["memory"], allocatable["pods"]) == ("7910m", "31Gi", "110")


@pytest.mark.integration
def test_chart_selecting_os_and_zone_schedules_and_an_unknown_zone_explains_itself(
        clusters, inventory_path, namespaces, tmp_path):
    ns = namespaces
    name = "kwok-" + ns
    extra = base_vars(tmp_path, ns, deploy_application="kwok", deploy_artifact=artifact("kwok", "0.1.2", CHART),
                      deploy_helm_command=helm_binary(), deploy_helm_release="kwok",
                      deploy_helm_values=_values(name, "{{ az }}"))  # each cluster's own zone (host variable)
    try:
        run = run_playbook("deploy", inventory_path, extra, tmp_path)
        assert run.rc == 0, run.explain()
        assert {h: e["status"] for h, e in run.summary.items()} == {h: "deployed" for h in ("eu1a", "eu1b", "us1a")}
        for c in clusters:
            pods = c.list("v1", "Pod", ns)
            assert pods and all(p["spec"].get("nodeName", "").startswith("kwok-%s-" % c.name) for p in pods), c.name

        # No node is in zone nowhere-1z: the pod stays Pending, the progress lines say why and for how long.
        extra.update(deploy_helm_values=_values(name, "nowhere-1z"), deploy_wait_timeout="25s",
                     deploy_artifact=artifact("kwok", "0.1.3", CHART))
        run = run_playbook("deploy", inventory_path, extra, tmp_path, limit="eu1a")
        assert run.rc != 0, run.explain()
        progress = [line for line in run.output.splitlines()
                    if line.startswith("manent_apply [eu1a]: still rolling out: Deployment/%s/%s (" % (ns, name))]
        assert len(progress) == 1, run.explain()  # the 20 s report says the same as the 10 s one: not repeated
        assert "Unschedulable: 0/3 nodes are available" in progress[0], progress
        assert "node affinity/selector" in progress[0] and " s): " in progress[0], progress
    finally:
        for c in clusters:
            for api_version, kind in CLUSTER_SCOPED:
                c.delete(api_version, kind, None, name)
