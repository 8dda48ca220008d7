# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""manent_render's engine against real clusters: discovery checks, scope, labels, charts with real capabilities."""

import hashlib
import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ArtifactError, RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import HelmOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import RenderOptions, render
from tests.helpers import chart_path, helm_binary

pytestmark = pytest.mark.integration
RELEASE = Release(ReleaseKey("shop", "shop-api", "prod"), "1.4.0", "d1")
# What requirements §7 step 2 says RELEASE adds, written out here (not computed with the product's code)
RELEASE_LABELS = {"app.kubernetes.io/managed-by": "manent", "manent.io/application": "shop",
                  "manent.io/artifact": "shop-api", "manent.io/tenant": "untenanted", "manent.io/environment": "prod"}
RELEASE_ANNOTATIONS = {"manent.io/version": "1.4.0", "manent.io/deployment": "d1"}
TEMPLATE_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController", "Job")


def _expected_stamp(obj):
    """The release labels and annotations on the object; pod templates get the labels only."""
    meta = obj.setdefault("metadata", {})
    meta["labels"] = dict(meta.get("labels") or {}, **RELEASE_LABELS)
    meta["annotations"] = dict(meta.get("annotations") or {}, **RELEASE_ANNOTATIONS)
    template = (obj.get("spec") or {}).get("template") if obj.get("kind") in TEMPLATE_KINDS else None
    if obj.get("kind") == "CronJob":
        template = obj["spec"]["jobTemplate"]["spec"]["template"]
    if template is not None:
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = dict(tmeta.get("labels") or {}, **RELEASE_LABELS)


def write(tmp_path, docs, name="app.yaml"):
    path = tmp_path / name
    path.write_text("---\n".join(yaml.safe_dump(d) for d in docs) if isinstance(docs, list) else docs)
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


def run(cluster, path, sha, **kw):
    opts = RenderOptions(namespace=kw.pop("namespace", "shop-prod"), artifact_sha256=sha, **kw)
    return render(path, RELEASE, opts, cluster.discovery, cluster.kube.version(),
                  helm_options=HelmOptions(command=helm_binary()))


DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
          "spec": {"selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}


def test_objects_get_namespace_labels_annotations_and_order(cluster, tmp_path):
    docs = [DEPLOY,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "other"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "reader"},
             "rules": []},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop-prod"}}]
    path, sha = write(tmp_path, docs)
    bundle = run(cluster, path, sha)
    kinds = [o["kind"] for o in bundle.objects]
    assert kinds == ["Namespace", "ClusterRole", "ConfigMap", "Deployment"]
    by_kind = {o["kind"]: o for o in bundle.objects}
    assert by_kind["Deployment"]["metadata"]["namespace"] == "shop-prod"
    assert by_kind["ConfigMap"]["metadata"]["namespace"] == "other"  # an explicit namespace is kept
    assert "namespace" not in by_kind["ClusterRole"]["metadata"]
    assert "namespace" not in by_kind["Namespace"]["metadata"]
    labels = by_kind["Deployment"]["metadata"]["labels"]
    assert labels == {"app.kubernetes.io/managed-by": "manent", "manent.io/application": "shop",
                      "manent.io/artifact": "shop-api", "manent.io/tenant": "untenanted",
                      "manent.io/environment": "prod"}
    assert by_kind["Deployment"]["metadata"]["annotations"] == {"manent.io/version": "1.4.0",
                                                                "manent.io/deployment": "d1"}
    template = by_kind["Deployment"]["spec"]["template"]["metadata"]
    assert template["labels"]["app"] == "web" and template["labels"]["manent.io/application"] == "shop"
    assert "annotations" not in template  # no per-version annotation: it would restart pods at every release
    assert by_kind["Deployment"]["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert bundle.sources[kinds.index("Deployment")].startswith("app.yaml#1")


def test_unknown_kind_removed_api_and_scope_errors_are_reported_together(cluster, tmp_path):
    docs = [
        {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"}},
        {"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "old"}},
        {"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "old-web"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "r", "namespace": "x"}},
        {"apiVersion": "apps/v1", "kind": "Deploymnet", "metadata": {"name": "typo"}},
    ]
    path, sha = write(tmp_path, docs)
    with pytest.raises(RenderError) as err:
        run(cluster, path, sha)
    text = str(err.value)
    assert "5 problem(s)" in text
    assert "app.yaml#1" in text and "Gizmo" in text and "install the CRD" in text
    assert "extensions/v1beta1 Ingress was removed in Kubernetes 1.22" in text and "networking.k8s.io/v1" in text
    assert "apps/v1beta2 Deployment was removed in Kubernetes 1.16" in text and "apps/v1" in text
    assert "metadata.namespace is set on a cluster-scoped ClusterRole" in text
    assert "Deploymnet" in text
    assert "nothing was written to any cluster" in text


def test_sha256_mismatch_is_refused_before_reading(cluster, tmp_path):
    path, _sha = write(tmp_path, [DEPLOY])
    with pytest.raises(ArtifactError) as err:
        run(cluster, path, "0" * 64)
    assert "app.yaml" in str(err.value) and "0" * 64 in str(err.value)


def test_variables_substituted_and_others_untouched(cluster, tmp_path):
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\ndata:\n  replicas: \"${REPLICAS}\"\n"
            "  app: ${MANENT_APPLICATION}-${MANENT_ENVIRONMENT}-${MANENT_VERSION}-${MANENT_NAMESPACE}\n"
            "  script: echo ${HOME} $${REPLICAS} ${UNSET:-x}\n")
    path, sha = write(tmp_path, text)
    bundle = run(cluster, path, sha, variables={"REPLICAS": 3})
    data = bundle.objects[0]["data"]
    assert data == {"replicas": "3", "app": "shop-prod-1.4.0-shop-prod", "script": "echo ${HOME} $${REPLICAS} ${UNSET:-x}"}


def test_require_image_digest(cluster, tmp_path):
    path, sha = write(tmp_path, [DEPLOY])
    with pytest.raises(RenderError) as err:
        run(cluster, path, sha, require_image_digest=True)
    assert "spec.template.spec.containers[0].image 'nginx:1.27' is not pinned by digest" in str(err.value)
    pinned = dict(DEPLOY, spec=dict(DEPLOY["spec"], template={
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx@sha256:" + "a" * 64}]}}))
    path, sha = write(tmp_path, [pinned], name="pinned.yaml")
    assert len(run(cluster, path, sha, require_image_digest=True).objects) == 1


def test_duplicate_objects_name_both_sources(cluster, tmp_path):
    path, sha = write(tmp_path, [DEPLOY, DEPLOY])
    with pytest.raises(RenderError) as err:
        run(cluster, path, sha)
    assert "Deployment/shop-prod/web is defined twice: in app.yaml#1" in str(err.value)
    assert "app.yaml#2" in str(err.value)


def test_chart_gets_the_clusters_capabilities(cluster, tmp_path):
    chart = chart_path("manent-sample-0.1.0.tgz")
    with open(chart, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    bundle = run(cluster, chart, sha, slot="b", helm_value={"replicaCount": "3"})
    kinds = sorted(o["kind"] for o in bundle.objects)
    # The cluster serves gateway.networking.k8s.io/v1 HTTPRoute, so the chart's conditional route renders.
    assert "HTTPRoute" in kinds
    assert bundle.objects[0]["kind"] == "CustomResourceDefinition"  # crds/ first
    assert bundle.objects[0]["metadata"]["annotations"]["manent.io/source"] == "crds"
    deploy = [o for o in bundle.objects if o["kind"] == "Deployment"][0]
    assert deploy["spec"]["replicas"] == 3
    assert deploy["metadata"]["namespace"] == "shop-prod"
    assert any("hook" in h for h in bundle.hooks_skipped) and bundle.hooks_skipped
    # The same render against discovery that lacks HTTPRoute leaves the route out (as helm install would).
    limited = Discovery(cluster.kube)
    limited.resources()
    for key in [k for k in limited.resources() if k[0] == "gateway.networking.k8s.io"]:
        del limited._by_gvk[key]  # pylint: disable=protected-access
    limited._refreshed = True  # pylint: disable=protected-access
    opts = RenderOptions(namespace="shop-prod", artifact_sha256=sha)
    bundle2 = render(chart, RELEASE, opts, limited, cluster.kube.version(),
                     helm_options=HelmOptions(command=helm_binary()))
    assert "HTTPRoute" not in [o["kind"] for o in bundle2.objects]


def test_chart_render_equals_helm_template_with_cluster_capabilities(cluster, tmp_path):
    """Conformance on the real cluster's capabilities: our objects == helm template's, except what we add."""
    chart = chart_path("manent-sample-0.1.0.tgz")
    with open(chart, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    bundle = run(cluster, chart, sha)
    args = [helm_binary(), "template", "shop-api", chart, "--namespace", "shop-prod", "--include-crds",
            "--kube-version", cluster.kube.version()[2]]  # no slot: manent adds no values of its own
    for v in cluster.discovery.api_versions():
        args += ["--api-versions", v]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(args, capture_output=True, text=True, check=True, env=env).stdout
    theirs = [d for d in yaml.safe_load_all(out) if d and "helm.sh/hook" not in
              (d.get("metadata", {}).get("annotations") or {})]
    # What manent adds, applied to helm's own output: labels/annotations, and the default namespace.
    for o in theirs:
        _expected_stamp(o)
        res = cluster.discovery.find(o["apiVersion"], o["kind"])
        if res.namespaced and "namespace" not in o["metadata"]:
            o["metadata"]["namespace"] = "shop-prod"
    ours = []
    for o in bundle.objects:
        o = yaml.safe_load(yaml.safe_dump(o))
        o["metadata"]["annotations"].pop("manent.io/source", None)
        ours.append(o)
    assert len(ours) == len(theirs) >= 5
    assert sorted(ours, key=_kind_name) == sorted(theirs, key=_kind_name)


def test_strict_schema_chart_renders_without_slot_only(cluster):
    """A chart whose values.schema.json forbids unknown top-level keys: no slot, no manent values; a slot is a
    clear error naming the chart and its values.schema.json, before anything reaches the cluster."""
    chart = chart_path("strict-schema-0.1.0.tgz")
    with open(chart, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    bundle = run(cluster, chart, sha, helm_value={"replicaCount": "2"})
    assert sorted(o["kind"] for o in bundle.objects) == ["ConfigMap", "Deployment", "Service"]
    assert [o["spec"]["replicas"] for o in bundle.objects if o["kind"] == "Deployment"] == [2]
    with pytest.raises(RenderError) as err:
        run(cluster, chart, sha, slot="a")
    assert "values.schema.json of chart strict-schema-0.1.0.tgz rejects the key manent" in str(err.value)
    assert "additional properties 'manent' not allowed" in str(err.value)


def _kind_name(obj):
    return obj["kind"], obj["metadata"]["name"]


def test_ansible_doc_shows_every_module(inventory_path):
    env = dict(os.environ)
    for module in ("manent_render", "manent_apply", "manent_history"):
        ansible_doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
        out = subprocess.run([ansible_doc, "manent.kubernetes.%s" % module], capture_output=True, text=True,
                             env=env, check=False)
        assert out.returncode == 0, out.stderr
        assert "EXAMPLES:" in out.stdout and "RETURN VALUES:" in out.stdout and "api_server" in out.stdout


def test_sha256_is_checked_before_the_archive_is_opened(cluster, tmp_path):
    """A tampered archive fails on its digest, not on whatever its content would do to the reader."""
    path = tmp_path / "shop.tgz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"not really gzip" * 10)
    with pytest.raises(ArtifactError) as err:
        run(cluster, str(path), "1" * 64)
    assert "1" * 64 in str(err.value) and "not a valid" not in str(err.value)


def test_a_second_render_within_the_discovery_ttl_sends_no_request(cluster, tmp_path, monkeypatch):
    """manent_render run twice with the same work directory (two tasks of one run, each its own client): the first
    reads discovery and the version from the API server, the second only from the cache kept with them. Each
    reads the release in service (the history locator, one GET): live state, never cached."""
    from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import locator_name
    from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
    from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
    from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import render_task

    sent = []
    real = Kube.request

    def counted(kube, method, path, **kw):
        sent.append((method, path))
        return real(kube, method, path, **kw)

    monkeypatch.setattr(Kube, "request", counted)
    path, sha = write(tmp_path, [DEPLOY, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}])

    class Task:  # the task parameters
        params = {name: spec.get("default") for name, spec in common.argument_spec(
            common.RELEASE_SPEC, render_task.RENDER_SPEC).items()}
        params.update(api_server=cluster.url, token="file:" + os.path.join(cluster.dir, "admin.token"),
                      ca_file=cluster.ca_file, application="shop", environment="prod", namespace="shop-prod",
                      artifact=path, artifact_sha256=sha, version="1.0.0", work_dir=str(tmp_path / "work"))
        warnings = []

        def warn(self, text):
            self.warnings.append(text)

    first = render_task.run(Task.params)
    assert ("GET", "/version") in sent and any(p in ("/api", "/apis") for _m, p in sent), sent
    locator = "/api/v1/namespaces/shop-prod/configmaps/" + locator_name(common.release_key(Task.params))
    assert ("GET", locator) in sent, sent
    sent.clear()
    second = render_task.run(Task.params)
    assert sent == [("GET", locator)]  # kinds and version from the discovery cache; only the release in service
    assert second["objects"] == first["objects"] == 2 and second["cluster_version"] == first["cluster_version"]
    assert first["in_service"] is None and second["in_service"] is None  # nothing deployed yet
    with open(first["bundle"]) as f:
        assert [o["kind"] for o in json.load(f)["objects"]] == ["ConfigMap", "Deployment"]


def test_legacy_discovery_reads_the_same_kinds_as_aggregated(cluster, monkeypatch):
    """Servers without aggregated discovery (older clusters) are read through one document per group version, all
    at once. This server, asked for plain JSON, answers that way: the kinds found must be those of aggregated
    discovery (built-in groups compared: other tests add and remove CRDs meanwhile)."""
    from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import discovery

    def builtin(found):
        return {(r.group, r.version, r.kind, r.plural, r.namespaced) for r in found.resources().values()
                if r.group == "" or "." not in r.group or r.group.endswith(".k8s.io")}

    aggregated = Discovery(cluster.kube)
    expected = builtin(aggregated)
    monkeypatch.setattr(discovery, "AGGREGATED_ACCEPT", "application/json")
    legacy = Discovery(cluster.kube)
    assert builtin(legacy) == expected
    assert (aggregated.source, legacy.source) == ("aggregated", "legacy")
    assert legacy.find("apps/v1", "Deployment").plural == "deployments" and legacy.version() == aggregated.version()
