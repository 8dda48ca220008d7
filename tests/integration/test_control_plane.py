# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local control plane is real: controllers roll out, deadlines fire, RBAC denies, CRDs are served."""

import os

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError
from tests.objects import NEVER_READY, deployment

pytestmark = pytest.mark.integration


def available(cluster, ns, name, image):
    d = cluster.get("apps/v1", "Deployment", ns, name)
    st = d.get("status", {})
    conds = {c["type"]: c for c in st.get("conditions", [])}
    return (st.get("observedGeneration") == d["metadata"]["generation"] and st.get("updatedReplicas") == 3
            and st.get("readyReplicas") == 3 and st.get("availableReplicas") == 3 and st.get("replicas") == 3
            and conds.get("Available", {}).get("status") == "True"
            and d["spec"]["template"]["spec"]["containers"][0]["image"] == image) and d


def web(namespace, image):
    """Three replicas of web rolling one pod at a time."""
    return deployment("web", namespace, image=image, replicas=3,
                      strategy={"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})


def test_deployment_rolls_out_through_real_controllers(cluster, namespace):
    cluster.apply(web(namespace, "registry.k8s.io/pause:3.9"))
    cluster.wait(lambda: available(cluster, namespace, "web", "registry.k8s.io/pause:3.9"), what="web available")
    pods = cluster.list("v1", "Pod", namespace, "app=web")
    ready = [p for p in pods if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"])]
    assert len(ready) == 3
    first_rs = {rs["metadata"]["name"] for rs in cluster.list("apps/v1", "ReplicaSet", namespace, "app=web")}
    assert len(first_rs) == 1

    cluster.apply(web(namespace, "registry.k8s.io/pause:3.10"))
    cluster.wait(lambda: available(cluster, namespace, "web", "registry.k8s.io/pause:3.10"), what="new image")
    sets = cluster.list("apps/v1", "ReplicaSet", namespace, "app=web")
    new = [rs for rs in sets if rs["metadata"]["name"] not in first_rs]
    old = [rs for rs in sets if rs["metadata"]["name"] in first_rs]
    assert len(new) == 1 and new[0]["status"].get("readyReplicas") == 3
    assert old and old[0]["spec"]["replicas"] == 0
    pods = cluster.list("v1", "Pod", namespace, "app=web")
    images = {p["spec"]["containers"][0]["image"] for p in pods if not p["metadata"].get("deletionTimestamp")}
    assert images == {"registry.k8s.io/pause:3.10"}


def test_never_ready_pods_hit_the_progress_deadline(cluster, namespace):
    cluster.apply(deployment("stuck", namespace, replicas=1, template_annotations=NEVER_READY, deadline=3))

    def exceeded():
        d = cluster.get("apps/v1", "Deployment", namespace, "stuck")
        for c in d.get("status", {}).get("conditions", []):
            if c["type"] == "Progressing" and c["status"] == "False":
                return c
        return None

    cond = cluster.wait(exceeded, timeout=90, what="ProgressDeadlineExceeded")
    assert cond["reason"] == "ProgressDeadlineExceeded"
    pod = cluster.list("v1", "Pod", namespace, "app=stuck")[0]
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ImagePullBackOff"


def test_namespace_scoped_role_gets_403_outside_its_namespace(cluster, namespace):
    if not os.path.exists(os.path.join(cluster.dir, "deployer.token")):
        pytest.fail("this test needs the deployer token written by hack/clusters.py")
    with open(os.path.join(cluster.dir, "deployer.token")) as f:
        token = f.read().strip()
    other = namespace + "-other"
    cluster.create_namespace(other)
    try:
        cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                       "metadata": {"name": "deployer", "namespace": namespace},
                       "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]})
        cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                       "metadata": {"name": "deployer", "namespace": namespace},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
                       "subjects": [{"kind": "User", "name": "manent-deployer",
                                     "apiGroup": "rbac.authorization.k8s.io"}]})
        limited = Kube(cluster.connection(token=token))
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
        cluster.wait(lambda: _can_write(limited, namespace, cm), what="RBAC to propagate")
        with pytest.raises(ApiError) as err:
            limited.request("POST", "/api/v1/namespaces/%s/configmaps" % other, body=cm)
        assert err.value.status == 403
        assert 'User "manent-deployer" cannot create resource "configmaps"' in str(err.value)
        assert other in str(err.value)
    finally:
        cluster.delete_namespace(other)


def _can_write(kube, ns, cm):
    try:
        kube.request("PATCH", "/api/v1/namespaces/%s/configmaps/x" % ns, query={"fieldManager": "t"}, body=cm,
                     content_type="application/apply-patch+yaml")
        return True
    except ApiError as exc:
        if exc.status != 403:
            raise
        return False


@pytest.mark.parametrize("api_version,kind", [
    ("gateway.networking.k8s.io/v1", "HTTPRoute"),
    ("gateway.networking.k8s.io/v1", "GRPCRoute"),
    ("gateway.networking.k8s.io/v1", "Gateway"),
    ("networking.istio.io/v1", "VirtualService"),
    ("networking.istio.io/v1", "DestinationRule"),
])
def test_traffic_crds_are_served_on_every_cluster(clusters, api_version, kind):
    for c in clusters:
        res = c.discovery.find(api_version, kind)
        assert res is not None, "%s %s not served on %s" % (api_version, kind, c.name)
        assert res.namespaced
    assert clusters[0].discovery.source == "aggregated"
