"""Stored history written by an older manent with API versions this cluster no longer serves (SPEC §12).

Prune deletes such objects through a served version of the same kind; rollback maps pure renames
(apps/v1beta2 -> apps/v1) and says so; a non-rename (extensions/v1beta1 Ingress) stops the rollback
before any change. The API server's own deprecation warnings surface per object.
"""

import hashlib
import json

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils import history_codec as codec
from ansible_collections.manent.kubernetes.plugins.module_utils.deploy import Deployer, DeployOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.identity import Release, ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.render import RenderOptions, render

pytestmark = pytest.mark.integration


def deployment(ns, name, api_version="apps/v1"):
    return {"apiVersion": api_version, "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}


def ingress_v1(ns, name):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name, "namespace": ns},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}


def ingress_v1beta1(ns, name):
    return {"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": name, "namespace": ns},
            "spec": {"backend": {"serviceName": "web", "servicePort": 80}}}


def configmap(ns, name, value):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": {"v": value}}


def write_old_history(cluster, ns, key, version, objects):
    """A record and locator as an older manent wrote them: uncompressed objects.json, release in service."""
    release = Release(key, version, "d-old")
    cm = codec.encode_record(release, ns, [], meta={"status": "deployed"})
    cm.pop("binaryData", None)
    cm["data"]["objects.json"] = json.dumps(objects)
    cluster.kube.request("POST", "/api/v1/namespaces/%s/configmaps" % ns, body=cm)
    loc = codec.encode_locator(key, ns, current={"version": version, "deployment": "d-old",
                                                 "record": codec.record_name(key, version)})
    cluster.kube.request("POST", "/api/v1/namespaces/%s/configmaps" % ns, body=loc)


def deploy_new(cluster, ns, key, version, objects, tmp_path, prune=True):
    path = tmp_path / ("v%s.yaml" % version)
    path.write_text("---\n".join(yaml.safe_dump(o) for o in objects))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    bundle = render(str(path), Release(key, version, "d-" + version), RenderOptions(namespace=ns, artifact_sha256=sha),
                    cluster.discovery, cluster.kube.version())
    return Deployer(cluster.kube, cluster.discovery, DeployOptions(prune=prune, wait_timeout=60)).deploy(bundle)


def rollback(cluster, ns, key):
    return Deployer(cluster.kube, cluster.discovery, DeployOptions(prune=True, wait_timeout=60)).rollback(ns, key)


def resource_versions(cluster, ns):
    out = {}
    for api_version, kind in (("v1", "ConfigMap"), ("apps/v1", "Deployment"), ("networking.k8s.io/v1", "Ingress")):
        for o in cluster.list(api_version, kind, ns):
            out["%s/%s" % (kind, o["metadata"]["name"])] = o["metadata"]["resourceVersion"]
    return out


def test_prune_deletes_objects_stored_under_removed_api_versions(cluster, namespace, tmp_path):
    key = ReleaseKey("legacy", "legacy", "prod")
    # What the cluster really holds (written back then through versions that were served at the time).
    cluster.apply(deployment(namespace, "legacy-web"))
    cluster.apply(ingress_v1(namespace, "legacy-ing"))
    cluster.apply(configmap(namespace, "settings", "1"))
    write_old_history(cluster, namespace, key, "1.0.0", [
        deployment(namespace, "legacy-web", "apps/v1beta2"), ingress_v1beta1(namespace, "legacy-ing"),
        configmap(namespace, "settings", "1")])

    result = deploy_new(cluster, namespace, key, "2.0.0", [configmap(namespace, "settings", "2")], tmp_path)

    assert result.status == "deployed" and result.previous == "1.0.0"
    assert sorted(result.pruned) == ["Deployment/%s/legacy-web" % namespace, "Ingress/%s/legacy-ing" % namespace]
    cluster.wait(lambda: cluster.get("apps/v1", "Deployment", namespace, "legacy-web") is None, what="deleted")
    assert cluster.get("networking.k8s.io/v1", "Ingress", namespace, "legacy-ing") is None
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "2"}


def test_rollback_maps_pure_renames_and_says_so(cluster, namespace, tmp_path):
    key = ReleaseKey("renamed", "renamed", "prod")
    cluster.apply(deployment(namespace, "legacy-web"))
    write_old_history(cluster, namespace, key, "1.0.0", [deployment(namespace, "legacy-web", "apps/v1beta2"),
                                                         configmap(namespace, "settings", "1")])
    deploy_new(cluster, namespace, key, "2.0.0", [configmap(namespace, "settings", "2"),
                                                  deployment(namespace, "new-web")], tmp_path)
    cluster.wait(lambda: cluster.get("apps/v1", "Deployment", namespace, "legacy-web") is None,
                 what="legacy-web pruned by 2.0.0")

    result = rollback(cluster, namespace, key)

    assert result.status == "rolled-back" and result.release == "1.0.0"
    assert any("apps/v1beta2" in w and "apps/v1" in w for w in result.warnings), result.warnings
    live = cluster.wait(lambda: cluster.get("apps/v1", "Deployment", namespace, "legacy-web"), what="restored")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.10"
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "1"}
    assert "Deployment/%s/new-web" % namespace in result.pruned


def test_rollback_stops_before_any_change_on_a_schema_change(cluster, namespace, tmp_path):
    key = ReleaseKey("schema", "schema", "prod")
    cluster.apply(ingress_v1(namespace, "legacy-ing"))
    write_old_history(cluster, namespace, key, "1.0.0", [ingress_v1beta1(namespace, "legacy-ing"),
                                                         configmap(namespace, "settings", "1")])
    deploy_new(cluster, namespace, key, "2.0.0", [configmap(namespace, "settings", "2")], tmp_path, prune=False)
    before = resource_versions(cluster, namespace)

    with pytest.raises(InputError) as err:
        rollback(cluster, namespace, key)

    text = str(err.value)
    assert "Ingress" in text and "extensions/v1beta1" in text and "networking.k8s.io/v1" in text
    assert resource_versions(cluster, namespace) == before


def test_api_server_deprecation_warnings_name_the_object(cluster, namespace, tmp_path):
    """v1 Endpoints is deprecated since 1.33: the API server says so in a Warning header."""
    key = ReleaseKey("warned", "warned", "prod")
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ext", "namespace": namespace},
                 "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}]}
    result = deploy_new(cluster, namespace, key, "1.0.0", [endpoints], tmp_path)
    server = [w for w in result.warnings if w.startswith("Endpoints/%s/ext: " % namespace)
              and "EndpointSlice" in w]
    assert server, result.warnings
