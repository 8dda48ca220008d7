"""Stored history written by an older manent with API versions this cluster no longer serves (docs/requirements.md §12).

Prune deletes such objects through a served version of the same kind; rollback maps pure renames
(apps/v1beta2 -> apps/v1) and says so; a kind without replacement (PodSecurityPolicy) stops the rollback
before any change unless dropped on request. The API server's own deprecation warnings surface per object.
The whole removal table through manent_history itself (audit -> rewrite -> rollback, and rollback converting in
memory): test_every_removed_kind_*.
"""

import base64
import hashlib
import json
import os
import subprocess

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import apiconvert, apiversions
from ansible_collections.manent.kubernetes.plugins.module_utils.history import anchor as history_anchor
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import history_task
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import status
from ansible_collections.manent.kubernetes.plugins.module_utils.history.locator_format import encode_locator
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import encode_record
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.deploy import Deployer, DeployOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import RenderOptions, render, stamp
from tests.integration.playbook_helpers import (
    artifact, base_vars, resource_versions, run_history_module, run_playbook, write_manifest)
from tests.objects import configmap, deployment

pytestmark = pytest.mark.integration
REMOVED_API_KINDS = (("v1", "ConfigMap"), ("apps/v1", "Deployment"), ("networking.k8s.io/v1", "Ingress"))


def ingress_v1(ns, name):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name, "namespace": ns},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}


def ingress_v1beta1(ns, name):
    return {"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": name, "namespace": ns},
            "spec": {"backend": {"serviceName": "web", "servicePort": 80}}}


def psp(name):
    return {"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy", "metadata": {"name": name},
            "spec": {"privileged": False, "seLinux": {"rule": "RunAsAny"}, "runAsUser": {"rule": "RunAsAny"},
                     "supplementalGroups": {"rule": "RunAsAny"}, "fsGroup": {"rule": "RunAsAny"}}}


def applied(cluster, obj, key, version="1.0.0"):
    """``obj`` on the cluster as a manent deploy of ``key`` left it: with the release's labels (prune deletes only
    live objects that carry them)."""
    cluster.apply(stamp(obj, Release(key, version, "d-old")))


def write_old_history(cluster, ns, key, version, objects):
    """A record and locator as an older manent wrote them: uncompressed objects.json, release in service."""
    release = Release(key, version, "d-old")
    cm = encode_record(release, ns, [], meta={"status": "deployed"})
    cm.pop("binaryData", None)
    cm["data"]["objects.json"] = json.dumps(objects)
    cluster.kube.request("POST", "/api/v1/namespaces/%s/configmaps" % ns, body=cm)
    loc = encode_locator(key, ns, current={"version": version, "deployment": "d-old",
                                           "record": record_name(key, version)})
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


def test_prune_deletes_objects_stored_under_removed_api_versions(cluster, namespace, tmp_path):
    key = ReleaseKey("legacy", "legacy", "prod")
    # What the cluster really holds (written back then through versions that were served at the time).
    applied(cluster, deployment("legacy-web", namespace, container="c"), key)
    applied(cluster, ingress_v1(namespace, "legacy-ing"), key)
    applied(cluster, configmap("settings", namespace=namespace, v="1"), key)
    write_old_history(cluster, namespace, key, "1.0.0", [
        deployment("legacy-web", namespace, api_version="apps/v1beta2", container="c"), ingress_v1beta1(namespace, "legacy-ing"),
        configmap("settings", namespace=namespace, v="1")])

    result = deploy_new(cluster, namespace, key, "2.0.0", [configmap("settings", namespace=namespace, v="2")], tmp_path)

    assert result.status == "deployed" and result.previous == "1.0.0"
    assert sorted(result.pruned) == ["Deployment/%s/legacy-web" % namespace, "Ingress/%s/legacy-ing" % namespace]
    cluster.assert_deleted("apps/v1", "Deployment", namespace, "legacy-web", timeout=60)
    cluster.assert_deleted("networking.k8s.io/v1", "Ingress", namespace, "legacy-ing")
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "2"}


def test_rollback_maps_pure_renames_and_says_so(cluster, namespace, tmp_path):
    key = ReleaseKey("renamed", "renamed", "prod")
    applied(cluster, deployment("legacy-web", namespace, container="c"), key)
    write_old_history(cluster, namespace, key, "1.0.0", [deployment("legacy-web", namespace, api_version="apps/v1beta2", container="c"),
                                                         configmap("settings", namespace=namespace, v="1")])
    deploy_new(cluster, namespace, key, "2.0.0", [configmap("settings", namespace=namespace, v="2"),
                                                  deployment("new-web", namespace, container="c")], tmp_path)
    cluster.assert_deleted("apps/v1", "Deployment", namespace, "legacy-web", timeout=60)  # pruned by 2.0.0

    result = rollback(cluster, namespace, key)

    assert result.status == "rolled-back" and result.release == "1.0.0"
    assert any("apps/v1beta2" in w and "apps/v1" in w for w in result.warnings), result.warnings
    live = cluster.wait(lambda: cluster.get("apps/v1", "Deployment", namespace, "legacy-web"), what="restored")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.10"
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "1"}
    assert "Deployment/%s/new-web" % namespace in result.pruned


def test_rollback_refuses_a_kind_without_replacement_before_any_change(cluster, namespace, tmp_path):
    key = ReleaseKey("psp", "psp", "prod")
    cluster.apply(ingress_v1(namespace, "legacy-ing"))
    write_old_history(cluster, namespace, key, "1.0.0", [ingress_v1beta1(namespace, "legacy-ing"), psp("restricted"),
                                                         configmap("settings", namespace=namespace, v="1")])
    deploy_new(cluster, namespace, key, "2.0.0", [configmap("settings", namespace=namespace, v="2")], tmp_path, prune=False)
    before = resource_versions(cluster, namespace, REMOVED_API_KINDS)

    with pytest.raises(InputError) as err:
        rollback(cluster, namespace, key)

    text = str(err.value)
    assert "PodSecurityPolicy/restricted" in text and "policy/v1beta1" in text and "no replacement" in text
    assert "drop_removed: true" in text
    assert resource_versions(cluster, namespace, REMOVED_API_KINDS) == before


def test_api_server_deprecation_warnings_name_the_object(cluster, namespace, tmp_path):
    """v1 Endpoints is deprecated since 1.33: the API server says so in a Warning header."""
    key = ReleaseKey("warned", "warned", "prod")
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ext", "namespace": namespace},
                 "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}]}
    result = deploy_new(cluster, namespace, key, "1.0.0", [endpoints], tmp_path)
    server = [w for w in result.warnings if w.startswith("Endpoints/%s/ext: " % namespace)
              and "EndpointSlice" in w]
    assert server, result.warnings


# ---- the whole removal table, through manent_history (Ansible ad-hoc runs of the module)

PAUSE = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
# Kinds of the table left out on purpose (their conversion is unit-tested in tests/unit/test_apiversions.py):
# review objects are never stored (TokenReview, *SubjectAccessReview, SelfSubjectRulesReview: create-only, not
# persisted); APIService (a second APIService for a group breaks discovery for every client of the shared cluster);
# CSINode and VolumeAttachment (owned by the kubelet and the attach/detach machinery of real nodes).
NOT_STORED = {"TokenReview", "SubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectAccessReview",
              "SelfSubjectRulesReview", "APIService", "CSINode", "VolumeAttachment"}


def _csr_request(tmp_path):
    key, csr = tmp_path / "k.pem", tmp_path / "r.pem"
    subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
                    "-subj", "/CN=manent-test"], check=True, capture_output=True)
    return base64.b64encode(csr.read_bytes()).decode()


def _workload(api_version, kind, ns, name, **spec):
    body = {"template": {"metadata": {"labels": {"app": name}}, "spec": PAUSE}}
    body.update(spec)
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": body}


def legacy_release(ns, tmp_path):
    """One object of every kind the removal table lists that a 1.34 cluster no longer serves (but NOT_STORED),
    as an older manent stored them; cluster-scoped names carry the namespace."""
    group = "%s.manent.test" % ns
    meta = {"name": "x", "namespace": ns}
    cluster_meta = {"name": "%s-x" % ns}
    objects = [
        _workload("extensions/v1beta1", "Deployment", ns, "ext-deploy", replicas=1),
        _workload("apps/v1beta1", "Deployment", ns, "b1-deploy", replicas=1),
        _workload("apps/v1beta2", "Deployment", ns, "b2-deploy", replicas=1,
                  selector={"matchLabels": {"app": "b2-deploy"}}),
        _workload("extensions/v1beta1", "DaemonSet", ns, "ext-ds"),
        _workload("apps/v1beta2", "DaemonSet", ns, "b2-ds", selector={"matchLabels": {"app": "b2-ds"}}),
        _workload("extensions/v1beta1", "ReplicaSet", ns, "ext-rs", replicas=1),
        _workload("apps/v1beta2", "ReplicaSet", ns, "b2-rs", replicas=1, selector={"matchLabels": {"app": "b2-rs"}}),
        _workload("apps/v1beta1", "StatefulSet", ns, "b1-sts", replicas=1, serviceName="b1-sts"),
        _workload("apps/v1beta2", "StatefulSet", ns, "b2-sts", replicas=1, serviceName="b2-sts",
                  selector={"matchLabels": {"app": "b2-sts"}}),
        {"apiVersion": "extensions/v1beta1", "kind": "NetworkPolicy", "metadata": meta, "spec": {"podSelector": {}}},
        {"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "ext-ing", "namespace": ns},
         "spec": {"backend": {"serviceName": "web", "servicePort": 80},
                  "rules": [{"host": "a.example", "http": {"paths": [
                      {"path": "/", "backend": {"serviceName": "web", "servicePort": "http"}}]}}]}},
        {"apiVersion": "networking.k8s.io/v1beta1", "kind": "Ingress", "metadata": {"name": "net-ing", "namespace": ns},
         "spec": {"rules": [{"http": {"paths": [
             {"path": "/api", "backend": {"serviceName": "api", "servicePort": 8080}}]}}]}},
        {"apiVersion": "networking.k8s.io/v1beta1", "kind": "IngressClass", "metadata": cluster_meta,
         "spec": {"controller": "example.com/%s" % ns}},
        {"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": meta,
         "spec": {"minAvailable": 1, "selector": {}}},
        {"apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": meta,
         "spec": {"schedule": "0 0 1 1 *", "suspend": True, "jobTemplate": {"spec": {"template": {
             "spec": dict(PAUSE, restartPolicy="Never")}}}}},
        {"apiVersion": "batch/v2alpha1", "kind": "CronJob", "metadata": {"name": "alpha", "namespace": ns},
         "spec": {"schedule": "0 0 1 1 *", "suspend": True, "jobTemplate": {"spec": {"template": {
             "spec": dict(PAUSE, restartPolicy="Never")}}}}},  # not in the table: the mapping file renames it
        {"apiVersion": "autoscaling/v2beta1", "kind": "HorizontalPodAutoscaler",
         "metadata": {"name": "b1-hpa", "namespace": ns},
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "b2-deploy"},
                  "minReplicas": 1, "maxReplicas": 2,
                  "metrics": [{"type": "Resource", "resource": {"name": "cpu", "targetAverageUtilization": 80}},
                              {"type": "Pods", "pods": {"metricName": "rps", "targetAverageValue": "10"}}]}},
        {"apiVersion": "autoscaling/v2beta2", "kind": "HorizontalPodAutoscaler",
         "metadata": {"name": "b2-hpa", "namespace": ns},
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "b1-deploy"},
                  "minReplicas": 1, "maxReplicas": 2, "metrics": [{"type": "Resource", "resource": {
                      "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}},
        {"apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
         "metadata": {"name": "ext-1", "namespace": ns, "labels": {"kubernetes.io/service-name": "ext"}},
         "addressType": "IPv4", "ports": [{"port": 80}],
         "endpoints": [{"addresses": ["10.1.2.3"], "topology": {"topology.kubernetes.io/zone": "eu-1a"}}]},
        {"apiVersion": "events.k8s.io/v1beta1", "kind": "Event", "metadata": meta,
         "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal", "reason": "Deployed", "action": "Deploy",
         "reportingController": "manent.io/test", "reportingInstance": "test-1", "note": "stored long ago",
         "regarding": {"kind": "Deployment", "name": "b1-deploy", "namespace": ns}},
        {"apiVersion": "coordination.k8s.io/v1beta1", "kind": "Lease", "metadata": meta,
         "spec": {"holderIdentity": "nobody", "leaseDurationSeconds": 15}},
        {"apiVersion": "storage.k8s.io/v1beta1", "kind": "CSIStorageCapacity", "metadata": meta,
         "storageClassName": "%s-x" % ns, "capacity": "1Gi"},
        {"apiVersion": "storage.k8s.io/v1beta1", "kind": "StorageClass", "metadata": cluster_meta,
         "provisioner": "example.com/%s" % ns},
        {"apiVersion": "storage.k8s.io/v1beta1", "kind": "CSIDriver", "metadata": {"name": "%s.csi.manent.test" % ns},
         "spec": {"attachRequired": False}},
        {"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "Role", "metadata": meta,
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1alpha1", "kind": "RoleBinding", "metadata": meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"},
         "subjects": [{"kind": "User", "name": "alice", "apiVersion": "rbac.authorization.k8s.io/v1alpha1"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1alpha1", "kind": "ClusterRole", "metadata": cluster_meta,
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "ClusterRoleBinding", "metadata": cluster_meta,
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "%s-x" % ns},
         "subjects": [{"kind": "Group", "name": "nobody", "apiGroup": "rbac.authorization.k8s.io"}]},
        {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PriorityClass", "metadata": cluster_meta, "value": 10},
        {"apiVersion": "node.k8s.io/v1beta1", "kind": "RuntimeClass", "metadata": cluster_meta, "handler": "runc"},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta2", "kind": "PriorityLevelConfiguration",
         "metadata": cluster_meta, "spec": {"type": "Limited", "limited": {
             "assuredConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}},
        {"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema", "metadata": cluster_meta,
         "spec": {"priorityLevelConfiguration": {"name": "%s-x" % ns}, "matchingPrecedence": 9000,
                  "rules": [{"subjects": [{"kind": "User", "user": {"name": "nobody-%s" % ns}}],
                             "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
                                                "namespaces": [ns]}]}]}},
        {"apiVersion": "certificates.k8s.io/v1beta1", "kind": "CertificateSigningRequest", "metadata": cluster_meta,
         "spec": {"request": _csr_request(tmp_path), "signerName": "example.com/manent-test",
                  "usages": ["client auth"]}},
        {"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
         "metadata": {"name": "widgets.%s" % group},
         "spec": {"group": group, "version": "v1", "names": {"kind": "Widget", "plural": "widgets"},
                  "additionalPrinterColumns": [{"name": "Size", "type": "integer", "JSONPath": ".spec.size"}]}},
        psp("%s-restricted" % ns),
        dict(psp("%s-legacy" % ns), apiVersion="extensions/v1beta1"),
        configmap("settings", namespace=ns, v="1"),
    ]
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        objects.append({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": kind, "metadata": cluster_meta,
                        "webhooks": [{"name": "x.%s" % group, "sideEffects": "None",
                                      "clientConfig": {"service": {"name": "none", "namespace": ns}},
                                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                                      "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                                                 "resources": ["podtemplates"]}]}]})
    return objects


MAPPINGS = "mappings:\n  - from: batch/v2alpha1\n    to: batch/v1\n    kind: CronJob\n"


def _expected_api_version(obj):
    if obj["apiVersion"] == "batch/v2alpha1":
        return "batch/v1"
    entry = apiversions.lookup(obj["apiVersion"], obj["kind"])
    return entry.replacement if entry else obj["apiVersion"]


def _current(cluster, api_version, obj):
    live = cluster.get(api_version, obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
    return live is not None and status.compute(live).status == status.CURRENT


def _check_restored(cluster, namespace, objects):
    """Every object exists under its served apiVersion; workloads are Current; the converted fields hold."""
    for obj in objects:
        if obj["kind"] == "PodSecurityPolicy":
            continue
        api_version = _expected_api_version(obj)
        live = cluster.get(api_version, obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        assert live is not None, "%s %s missing" % (api_version, ref(obj))
        if obj["kind"] in ("Deployment", "DaemonSet", "ReplicaSet", "StatefulSet"):
            assert live["spec"]["selector"] == {"matchLabels": {"app": obj["metadata"]["name"]}}
            cluster.wait(lambda: _current(cluster, api_version, obj), what="%s Current" % ref(obj))
    ing = cluster.get("networking.k8s.io/v1", "Ingress", namespace, "ext-ing")
    assert ing["spec"]["defaultBackend"] == {"service": {"name": "web", "port": {"number": 80}}}
    assert ing["spec"]["rules"][0]["http"]["paths"][0] == {
        "path": "/", "pathType": "ImplementationSpecific", "backend": {"service": {"name": "web", "port": {"name": "http"}}}}
    hpa = cluster.get("autoscaling/v2", "HorizontalPodAutoscaler", namespace, "b1-hpa")
    assert hpa["spec"]["metrics"][0]["resource"]["target"] == {"type": "Utilization", "averageUtilization": 80}
    assert hpa["spec"]["metrics"][1]["pods"] == {"metric": {"name": "rps"},
                                                 "target": {"type": "AverageValue", "averageValue": "10"}}
    pdb = cluster.get("policy/v1", "PodDisruptionBudget", namespace, "x")
    assert pdb["spec"]["selector"]["matchExpressions"][0]["key"] == apiconvert.PDB_V1BETA1_LABEL
    daemonset = cluster.get("apps/v1", "DaemonSet", namespace, "ext-ds")
    assert daemonset["spec"]["updateStrategy"]["type"] == "OnDelete"
    plc = cluster.get("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", None, "%s-x" % namespace)
    assert plc["spec"]["limited"]["nominalConcurrencyShares"] == 1
    binding = cluster.get("rbac.authorization.k8s.io/v1", "RoleBinding", namespace, "x")
    assert binding["subjects"] == [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]


@pytest.fixture
def cluster_scoped(cluster, namespace):
    """Deletes the cluster-scoped objects of legacy_release(namespace) after the test."""
    yield
    for api_version, kind, name in [
            ("networking.k8s.io/v1", "IngressClass", "%s-x"), ("storage.k8s.io/v1", "StorageClass", "%s-x"),
            ("storage.k8s.io/v1", "CSIDriver", "%s.csi.manent.test"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole", "%s-x"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "%s-x"),
            ("scheduling.k8s.io/v1", "PriorityClass", "%s-x"), ("node.k8s.io/v1", "RuntimeClass", "%s-x"),
            ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "%s-x"),
            ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "%s-x"),
            ("certificates.k8s.io/v1", "CertificateSigningRequest", "%s-x"),
            ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "%s-x"),
            ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "%s-x"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.%s.manent.test")]:
        cluster.delete(api_version, kind, None, name % namespace)


def test_every_removed_kind_audit_rewrite_rollback(cluster, namespace, tmp_path, cluster_scoped):
    key = ReleaseKey("table", "table", "prod")
    objects = legacy_release(namespace, tmp_path)
    covered = {o["kind"] for o in objects if apiversions.lookup(o["apiVersion"], o["kind"])}
    assert {e.kind for e in apiversions.entries() if e.removed_in} - covered == NOT_STORED, "a removed kind is missing"
    write_old_history(cluster, namespace, key, "1.0.0", objects)
    deploy_new(cluster, namespace, key, "2.0.0", [configmap("settings", namespace=namespace, v="2")], tmp_path, prune=False)
    mappings = tmp_path / "api-mappings.yml"
    mappings.write_text(MAPPINGS)

    audit = run_history_module(cluster, namespace, key, operation="audit", api_mappings=str(mappings))
    assert not audit.get("failed"), audit
    found = {f["object"]: f for f in audit["findings"] if f["version"] == "1.0.0"}
    assert set(found) == {ref(o) for o in objects if o["kind"] != "ConfigMap"}
    assert {f["level"] for f in found.values()} == {"error"}
    rewrite_of = {ref(o): f["rewrite"] for o, f in ((o, found.get(ref(o))) for o in objects) if f}
    assert rewrite_of["Deployment/%s/ext-deploy" % namespace] == "convert"
    assert rewrite_of["Deployment/%s/b2-deploy" % namespace] == "rename"
    assert rewrite_of["CronJob/%s/alpha" % namespace] == "rename"
    assert rewrite_of["PodSecurityPolicy/%s-restricted" % namespace] == "refused"

    refused = run_history_module(cluster, namespace, key, operation="rewrite", api_mappings=str(mappings))
    assert refused["changed"] is False and [f["action"] for f in refused["findings"]] == ["error"]
    assert any("PodSecurityPolicy/%s-restricted" % namespace in e and "drop_removed: true" in e
               for e in refused["findings"][0]["errors"]), refused["findings"]
    assert HistoryStore(cluster.kube, namespace, key).load("1.0.0")[1] == objects, "a refused rewrite changes nothing"

    done = run_history_module(cluster, namespace, key, operation="rewrite", api_mappings=str(mappings), drop_removed=True)
    assert done["changed"] is True and [f["action"] for f in done["findings"]] == ["rewritten"], done
    assert sorted(done["findings"][0]["dropped"]) == sorted(
        ["PodSecurityPolicy/%s-restricted" % namespace, "PodSecurityPolicy/%s-legacy" % namespace])
    stored = HistoryStore(cluster.kube, namespace, key).load("1.0.0")[1]
    assert len(stored) == len(objects) - 2
    assert all(cluster.discovery.served(o["apiVersion"], o["kind"]) for o in stored)
    assert run_history_module(cluster, namespace, key, operation="rewrite", api_mappings=str(mappings),
                              drop_removed=True)["changed"] is False
    assert [f for f in run_history_module(cluster, namespace, key, operation="audit")["findings"]
            if f["version"] == "1.0.0"] == []

    # The record was written before manent anchored records (and then rewritten): nothing vouches for its
    # cluster-scoped objects, which do not exist on the cluster. Refused before any change, until trusted.
    untrusted = run_history_module(cluster, namespace, key, operation="rollback", wait_timeout="120s")
    assert "cluster-scoped object(s) that the history in %s cannot vouch for" % namespace in untrusted.get("msg", ""), \
        untrusted
    assert "restore_cluster_scoped: true" in untrusted["msg"], untrusted
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "2"}
    assert cluster.get("rbac.authorization.k8s.io/v1", "ClusterRole", None, "%s-x" % namespace) is None

    back = run_history_module(cluster, namespace, key, operation="rollback", wait_timeout="120s",
                              restore_cluster_scoped=True)
    assert not back.get("failed"), back
    assert back["status"] == "rolled-back" and back["in_service"]["version"] == "1.0.0", back
    _check_restored(cluster, namespace, objects)
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "1"}


def test_every_removed_kind_rollback_converts_in_memory(cluster, namespace, tmp_path, cluster_scoped):
    key = ReleaseKey("memory", "memory", "prod")
    objects = legacy_release(namespace, tmp_path)
    write_old_history(cluster, namespace, key, "1.0.0", objects)
    deploy_new(cluster, namespace, key, "2.0.0", [configmap("settings", namespace=namespace, v="2")], tmp_path, prune=False)
    mappings = tmp_path / "api-mappings.yml"
    mappings.write_text(MAPPINGS)

    # What manent_history operation=rollback runs (its action plugin runs it in the controller, local connection),
    # called here directly to read the warnings that Ansible's one-line output leaves out.
    params = {name: spec.get("default") for name, spec in history_task.argument_spec().items()}
    params.update(api_server=cluster.url, token="file:" + os.path.join(cluster.dir, "admin.token"),
                  ca_file=cluster.ca_file, application=key.application, environment=key.environment,
                  namespace=namespace, operation="rollback", wait_timeout="120s", api_mappings=str(mappings),
                  drop_removed=True, restore_cluster_scoped=True)  # a record written before anchors existed
    back = history_task.rollback(params, check_mode=False, diff=False)

    assert back["status"] == "rolled-back" and back["in_service"]["version"] == "1.0.0", back
    warned = " ".join(back["warnings"])
    assert "Deployment/%s/ext-deploy: stored as extensions/v1beta1" % namespace in warned
    assert "converted to apps/v1 Deployment: spec.selector set to the pod template labels" in warned
    assert "PodSecurityPolicy/%s-restricted: stored as policy/v1beta1" % namespace in warned
    assert "dropped from the release (drop_removed)" in warned
    assert "(mapping %s: mappings[0])" % mappings in warned
    _check_restored(cluster, namespace, objects)
    # the rollback records what it applied: the release's record now holds the converted objects
    stored = HistoryStore(cluster.kube, namespace, key).load("1.0.0")[1]
    assert len(stored) == len(objects) - 2 and all(cluster.discovery.served(o["apiVersion"], o["kind"]) for o in stored)


def test_a_rewrite_anchors_again_only_what_the_anchor_vouched_for(cluster, namespace, tmp_path):
    """A record whose cluster-scoped objects the anchor on the release Namespace vouched for (as manent wrote it
    when the cluster still served their apiVersion) is anchored again once rewritten: the rollback then writes
    them without restore_cluster_scoped. A record nothing vouched for stays without an anchor after the rewrite,
    and the rollback stops before any change."""
    name = "%s-pc" % namespace
    priority = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": 1000}
    try:
        for vouched, key in ((True, ReleaseKey("anchored", "anchored", "prod")),
                             (False, ReleaseKey("unanchored", "unanchored", "prod"))):
            write_old_history(cluster, namespace, key, "1.0.0", [priority, configmap("settings", namespace=namespace, v="1")])
            stored = HistoryStore(cluster.kube, namespace, key).load("1.0.0")[1]
            if vouched:
                cluster.kube.request("PATCH", "/api/v1/namespaces/%s" % namespace,
                                     content_type="application/merge-patch+json", body={"metadata": {"annotations": {
                                         history_anchor.annotation(key): json.dumps(
                                             {"1.0.0": history_anchor.digest(stored)})}}})
            deploy_new(cluster, namespace, key, "2.0.0", [configmap("settings", namespace=namespace, v="2")], tmp_path,
                       prune=False)
            done = run_history_module(cluster, namespace, key, operation="rewrite")
            assert done["changed"] is True, done
            rewritten = HistoryStore(cluster.kube, namespace, key).load("1.0.0")[1]
            assert {o["apiVersion"] for o in rewritten if o["kind"] == "PriorityClass"} == {"scheduling.k8s.io/v1"}
            annotations = cluster.get("v1", "Namespace", None, namespace)["metadata"].get("annotations") or {}
            anchors = json.loads(annotations.get(history_anchor.annotation(key)) or "{}")
            back = run_history_module(cluster, namespace, key, operation="rollback", wait=False)
            if vouched:
                assert anchors.get("1.0.0") == history_anchor.digest(rewritten), anchors
                assert not back.get("failed") and back.get("status") == "rolled-back", back
                assert cluster.get("scheduling.k8s.io/v1", "PriorityClass", None, name)["value"] == 1000
                cluster.delete("scheduling.k8s.io/v1", "PriorityClass", None, name)
            else:
                assert "1.0.0" not in anchors, anchors
                assert "PriorityClass/%s" % name in back.get("msg", "") and "cannot vouch for" in back["msg"], back
                assert cluster.get("scheduling.k8s.io/v1", "PriorityClass", None, name) is None
    finally:
        cluster.delete("scheduling.k8s.io/v1", "PriorityClass", None, name)


def test_a_rewrite_that_drops_every_cluster_scoped_object_keeps_the_record_vouched_for(
        cluster, namespace, tmp_path):
    """A record the anchor vouched for whose rewrite drops all its cluster-scoped objects (a removed kind, with
    drop_removed) is anchored again with no cluster-scoped object (""): a rollback to it prunes the cluster-scoped
    objects of the release in service, as it would for a record manent wrote without any. Left with its old digest,
    nothing would vouch for it and the rollback would leave them."""
    key = ReleaseKey("dropped", "dropped", "prod")
    added = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "%s-added" % namespace}, "rules": []}
    try:
        write_old_history(cluster, namespace, key, "1.0.0", [psp("%s-old" % namespace),
                                                             configmap("settings", namespace=namespace, v="1")])
        stored = HistoryStore(cluster.kube, namespace, key).load("1.0.0")[1]
        cluster.kube.request("PATCH", "/api/v1/namespaces/%s" % namespace, content_type="application/merge-patch+json",
                             body={"metadata": {"annotations": {history_anchor.annotation(key): json.dumps(
                                 {"1.0.0": history_anchor.digest(stored)})}}})
        deploy_new(cluster, namespace, key, "2.0.0", [configmap("settings", namespace=namespace, v="2"), added], tmp_path,
                   prune=False)
        done = run_history_module(cluster, namespace, key, operation="rewrite", drop_removed=True)
        assert done["changed"] is True, done
        rewritten = HistoryStore(cluster.kube, namespace, key).load("1.0.0")[1]
        assert not history_anchor.without_namespace(rewritten), rewritten
        annotations = cluster.get("v1", "Namespace", None, namespace)["metadata"].get("annotations") or {}
        assert json.loads(annotations[history_anchor.annotation(key)])["1.0.0"] == ""

        back = run_history_module(cluster, namespace, key, operation="rollback", wait=False, prune=True)
        assert not back.get("failed") and back.get("status") == "rolled-back", back
        cluster.assert_deleted("rbac.authorization.k8s.io/v1", "ClusterRole", None, added["metadata"]["name"])
        assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "1"}
    finally:
        cluster.delete("rbac.authorization.k8s.io/v1", "ClusterRole", None, added["metadata"]["name"])


def test_role_rollback_passes_api_mappings_and_drop_removed(cluster, inventory_path, namespace, tmp_path):
    """playbooks/rollback.yml with deploy_api_mappings, deploy_drop_removed and
    deploy_rollback_restore_cluster_scoped: the role hands them to manent_history."""
    key = ReleaseKey("legacy", "legacy", "test")
    alpha = {"apiVersion": "batch/v2alpha1", "kind": "CronJob", "metadata": {"name": "alpha", "namespace": namespace},
             "spec": {"schedule": "0 0 1 1 *", "suspend": True, "jobTemplate": {"spec": {"template": {
                 "spec": dict(PAUSE, restartPolicy="Never")}}}}}
    ingress_class = {"apiVersion": "networking.k8s.io/v1beta1", "kind": "IngressClass",
                     "metadata": {"name": "%s-legacy" % namespace}, "spec": {"controller": "example.com/legacy"}}
    write_old_history(cluster, namespace, key, "1.0.0", [ingress_v1beta1(namespace, "legacy-ing"), alpha,
                                                         psp("%s-role" % namespace), ingress_class,
                                                         configmap("settings", namespace=namespace, v="1")])
    deploy_new(cluster, namespace, key, "2.0.0", [configmap("settings", namespace=namespace, v="2")], tmp_path, prune=False)
    mappings = tmp_path / "api-mappings.yml"
    mappings.write_text(MAPPINGS)
    manifest = write_manifest(str(tmp_path / "unused.yaml"), [configmap("settings", namespace=namespace, v="3")])
    extra = base_vars(tmp_path, namespace, deploy_application="legacy", deploy_environment="test",
                      deploy_artifact=artifact("legacy", "2.0.0", manifest))

    refused = run_playbook("rollback", inventory_path, extra, tmp_path / "refused", limit=cluster.name)
    assert refused.rc != 0 and "drop_removed" in refused.output, refused.explain()
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "2"}

    extra.update(deploy_api_mappings=str(mappings), deploy_drop_removed=True)
    # a record written before anchors: its IngressClass (cluster-scoped, not on the cluster) needs trust
    untrusted = run_playbook("rollback", inventory_path, extra, tmp_path / "untrusted", limit=cluster.name)
    assert untrusted.rc != 0 and "IngressClass/%s-legacy" % namespace in untrusted.output, untrusted.explain()
    assert "deploy_rollback_restore_cluster_scoped" in untrusted.output, untrusted.explain()
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "2"}

    extra.update(deploy_rollback_restore_cluster_scoped=True)
    try:
        done = run_playbook("rollback", inventory_path, extra, tmp_path / "done", limit=cluster.name)
        assert done.rc == 0, done.explain()
        assert cluster.get("networking.k8s.io/v1", "IngressClass", None, "%s-legacy" % namespace) is not None
    finally:
        cluster.delete("networking.k8s.io/v1", "IngressClass", None, "%s-legacy" % namespace)
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"v": "1"}
    ing = cluster.get("networking.k8s.io/v1", "Ingress", namespace, "legacy-ing")
    assert ing["spec"]["defaultBackend"] == {"service": {"name": "web", "port": {"number": 80}}}
    assert cluster.get("batch/v1", "CronJob", namespace, "alpha")["spec"]["suspend"] is True
