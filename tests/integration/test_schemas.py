# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The field-type check (schemas.py) against a real API server: for each object below, the check finds a problem
exactly when the server refuses the object's server-side apply (dryRun=All), on built-in kinds and on a CRD; and a
release with such an object stops at render, naming it, before anything is written."""

import copy
import hashlib
import os
import re
import uuid

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import RenderOptions, render
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.schemas import Schemas

pytestmark = pytest.mark.integration

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                                         "env": [{"name": "A", "value": "1"}],
                                                         "ports": [{"containerPort": 80}],
                                                         "resources": {"limits": {"cpu": "1"}}}]}}}}
CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"}, "data": {"a": "aGVsbG8="}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}


def changed(obj, path, value):
    """A copy of obj with the field at path (keys and list indexes) set to value."""
    out = copy.deepcopy(obj)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


CONTAINER = ("spec", "template", "spec", "containers", 0)
BUILT_IN_CASES = [
    ("deployment as written", DEPLOY),
    ("replicas 2.0", changed(DEPLOY, ("spec", "replicas"), 2.0)),
    ("replicas 1.5", changed(DEPLOY, ("spec", "replicas"), 1.5)),
    ("replicas quoted", changed(DEPLOY, ("spec", "replicas"), "2")),
    ("paused quoted", changed(DEPLOY, ("spec", "paused"), "true")),
    ("env value integer", changed(DEPLOY, CONTAINER + ("env",), [{"name": "A", "value": 8080}])),
    ("env value boolean", changed(DEPLOY, CONTAINER + ("env",), [{"name": "A", "value": True}])),
    ("args integer", changed(DEPLOY, CONTAINER + ("args",), ["--port", 8080])),
    ("two env entries of one name",
     changed(DEPLOY, CONTAINER + ("env",), [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}])),
    ("same port, protocol defaulted",
     changed(DEPLOY, CONTAINER + ("ports",), [{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}])),
    ("same port, other protocol",
     changed(DEPLOY, CONTAINER + ("ports",), [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}])),
    ("port quoted", changed(DEPLOY, CONTAINER + ("ports",), [{"containerPort": "80"}])),
    ("cpu as a number", changed(DEPLOY, CONTAINER + ("resources",), {"limits": {"cpu": 1}})),
    ("cpu as a list", changed(DEPLOY, CONTAINER + ("resources",), {"limits": {"cpu": [1]}})),
    ("unknown spec field", changed(DEPLOY, ("spec", "replica"), 1)),
    ("unknown metadata field", changed(DEPLOY, ("metadata", "label"), {"a": "b"})),
    ("null creationTimestamp", changed(DEPLOY, ("metadata", "creationTimestamp"), None)),
    ("status written", changed(DEPLOY, ("status",), {})),
    ("configmap as written", CONFIG),
    ("configmap data null", changed(CONFIG, ("data", "a"), None)),
    ("configmap data integer", changed(CONFIG, ("data", "a"), 8080)),
    ("configmap data boolean", changed(CONFIG, ("data", "a"), True)),
    ("configmap data list", changed(CONFIG, ("data",), ["a"])),
    ("configmap binaryData", changed(CONFIG, ("binaryData",), {"b": "aGVsbG8="})),
    ("secret as written", SECRET),
    ("secret data not base64", changed(SECRET, ("data", "a"), "not base64!")),
    ("secret data unpadded", changed(SECRET, ("data", "a"), "aGVsbG8")),
    ("secret data with a line break", changed(SECRET, ("data", "a"), "aGVs\nbG8=")),
    ("secret data with a space", changed(SECRET, ("data", "a"), "aGVs bG8=")),
    ("secret data url-safe", changed(SECRET, ("data", "a"), "-_-_")),
    ("secret stringData integer", changed(SECRET, ("stringData",), {"n": 5})),
    ("service as written", SERVICE),
    ("service targetPort name", changed(SERVICE, ("spec", "ports", 0, "targetPort"), "http")),
    ("service targetPort boolean", changed(SERVICE, ("spec", "ports", 0, "targetPort"), True)),
    ("service port quoted", changed(SERVICE, ("spec", "ports", 0, "port"), "80")),
]


def server_refuses(cluster, obj, namespace):
    res = cluster.discovery.find(obj["apiVersion"], obj["kind"])
    body = changed(obj, ("metadata", "namespace"), namespace)
    try:
        cluster.kube.request("PATCH", cluster.path(obj["apiVersion"], obj["kind"], namespace, obj["metadata"]["name"]),
                             query={"fieldManager": "schema-test", "dryRun": "All", "force": "true"}, body=body,
                             content_type="application/apply-patch+yaml")
    except ApiError as exc:
        return exc.message
    assert res is not None
    return ""


def verdicts(cluster, namespace, cases, checker):
    """[(case, server's refusal or '', check's problems)] where the two disagree."""
    out = []
    for name, obj in cases:
        refusal = server_refuses(cluster, obj, namespace)
        found = checker.problems(changed(obj, ("metadata", "namespace"), namespace))
        if bool(refusal) != bool(found):
            out.append((name, refusal, found))
    return out


def test_the_check_refuses_exactly_what_the_server_refuses_on_built_in_kinds(cluster, namespace, tmp_path):
    checker = Schemas(cluster.kube, str(tmp_path))
    assert verdicts(cluster, namespace, BUILT_IN_CASES, checker) == []
    assert checker.index_source == "server" and checker.notes == []
    # the refusals were many, not a vacuous agreement
    refused = [name for name, obj in BUILT_IN_CASES if checker.problems(obj)]
    assert len(refused) == 22, refused


def _crd(group):
    spec_schema = {"type": "object", "properties": {
        "size": {"type": "integer"}, "name": {"type": "string"}, "port": {"x-kubernetes-int-or-string": True},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                  "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets." + group},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "properties": {"spec": spec_schema}}}}]}}


def _published(cluster, gv_path):
    return cluster.kube.get_json("/openapi/v3").get("paths", {}).get(gv_path, {}).get("serverRelativeURL")


def test_the_check_refuses_exactly_what_the_server_refuses_on_a_crd(cluster, namespace, tmp_path):
    group = "t%s.schemas.manent.io" % uuid.uuid4().hex[:8]
    cluster.apply(_crd(group))
    try:
        cluster.wait(lambda: _published(cluster, "apis/%s/v1" % group), what="the CRD's OpenAPI v3 document")
        cluster.wait(lambda: cluster.discovery.find(group + "/v1", "Widget") or cluster.discovery.refresh(),
                     what="the CRD served")
        widget = {"apiVersion": group + "/v1", "kind": "Widget", "metadata": {"name": "w"},
                  "spec": {"size": 1, "name": "n", "port": "http", "free": {"anything": [1]}, "tags": {"a": "b"},
                           "items": [{"id": "a"}, {"id": "b"}]}}
        cases = [("as written", widget), ("size 2.0", changed(widget, ("spec", "size"), 2.0)),
                 ("size quoted", changed(widget, ("spec", "size"), "1")),
                 ("name integer", changed(widget, ("spec", "name"), 5)),
                 ("port integer", changed(widget, ("spec", "port"), 8080)),
                 ("port boolean", changed(widget, ("spec", "port"), False)),
                 ("unknown spec field", changed(widget, ("spec", "bogus"), 1)),
                 ("unknown top-level field", changed(widget, ("bogus",), 1)),
                 ("free keeps unknown fields", changed(widget, ("spec", "free"), {"x": {"y": [True]}})),
                 ("tag integer", changed(widget, ("spec", "tags", "a"), 1)),
                 ("two items of one id", changed(widget, ("spec", "items"), [{"id": "a"}, {"id": "a"}]))]
        checker = Schemas(cluster.kube, str(tmp_path))
        assert verdicts(cluster, namespace, cases, checker) == []
        assert len([name for name, obj in cases if checker.problems(obj)]) == 7
    finally:
        cluster.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "widgets." + group)


def test_a_release_with_a_mistyped_field_stops_at_render_naming_file_object_and_field(cluster, tmp_path):
    bad = changed(changed(DEPLOY, CONTAINER + ("env",), [{"name": "PORT", "value": 8080}]), ("spec", "replica"), 2)
    docs = [CONFIG, bad, changed(SECRET, ("data", "a"), "s3cr3t!")]
    path = tmp_path / "app.yaml"
    path.write_text("---\n".join(yaml.safe_dump(d) for d in docs))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    release = Release(ReleaseKey("shop", "shop-api", "prod"), "1.0.0", "d1")
    namespace = "t-" + uuid.uuid4().hex[:10]  # never created: render writes nothing
    with pytest.raises(RenderError) as err:
        render(str(path), release, RenderOptions(namespace=namespace, artifact_sha256=sha), cluster.discovery,
               cluster.kube.version())
    text = str(err.value)
    assert "2 problem(s) in app.yaml" in text
    assert re.search(r"app\.yaml#2 \(line \d+\) Deployment/%s/web: [^\n]*spec\.replica: no such field" % namespace, text)
    assert "spec.template.spec.containers[0].env[0].value: expected a string, got an integer (quote it" in text
    assert re.search(r"app\.yaml#3 \(line \d+\) Secret/%s/sec: data\.a: is not valid base64" % namespace, text)
    assert "s3cr3t" not in text and "8080" not in text
    assert "nothing was written to any cluster" in text
    with pytest.raises(ApiError):
        cluster.kube.get_json("/api/v1/namespaces/" + namespace)


def test_a_crd_changed_since_the_cached_index_is_read_again(cluster, namespace, tmp_path):
    """Within the index's TTL a field added to a CRD a moment ago is not refused: the problem found with the cached
    index sends the check to the server's index again, which names the CRD's new schema."""
    group = "t%s.schemas.manent.io" % uuid.uuid4().hex[:8]
    crd = _crd(group)
    cluster.apply(crd)
    gv_path = "apis/%s/v1" % group
    try:
        cluster.wait(lambda: _published(cluster, gv_path), what="the CRD's OpenAPI v3 document")
        cluster.wait(lambda: cluster.discovery.find(group + "/v1", "Widget") or cluster.discovery.refresh(),
                     what="the CRD served")
        work = str(tmp_path / "work")
        widget = {"apiVersion": group + "/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"color": "red"}}
        assert Schemas(cluster.kube, work).problems(widget)  # caches the index: no field color yet
        before = _published(cluster, gv_path)
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"] = {
            "type": "string"}
        cluster.apply(crd)
        cluster.wait(lambda: _published(cluster, gv_path) != before, what="the CRD's new OpenAPI v3 document")
        path = tmp_path / "app.yaml"
        path.write_text(yaml.safe_dump(widget))
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery
        discovery = Discovery(cluster.kube, cache_dir=work)
        bundle = render(str(path), Release(ReleaseKey("shop", "shop-api", "prod"), "1.0.0", "d1"),
                        RenderOptions(namespace=namespace, artifact_sha256=sha), discovery, cluster.kube.version())
        assert [o["kind"] for o in bundle.objects] == ["Widget"]
        assert discovery.schemas().index_source == "server"  # read again after the cached index found a problem
        assert os.path.isdir(os.path.join(work, "openapi-v3"))
    finally:
        cluster.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "widgets." + group)
