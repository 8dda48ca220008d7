# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""unchanged.py: the decision of the redeploy fast path on recorded objects (the shapes a v1.32 API server
returns: managedFields of a server-side apply with field manager manent). Against real clusters:
tests/integration/test_noop_fastpath.py."""

from __future__ import annotations

import base64
import copy

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.unchanged import (
    UnchangedFinder, digest_values, holds, rendered_differently)
from tests.unit.fakes import FakeDiscovery, FakeKube

LABELS = {"app.kubernetes.io/managed-by": "manent", "manent.io/application": "shop", "manent.io/artifact": "shop",
          "manent.io/environment": "test", "manent.io/tenant": "untenanted"}
F_LABELS = {"f:" + k: {} for k in LABELS}

DESIRED = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "labels": dict(LABELS), "annotations": {"manent.io/version": "1"}},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "app", "image": "pause", "args": ["a", "b"],
                                                   "ports": [{"containerPort": 80}]}]}}},
}

# as listed: server defaults added, managedFields recorded
LIVE = {
    "metadata": {
        "name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "generation": 1,
        "labels": dict(LABELS), "annotations": {"manent.io/version": "1", "deployment.kubernetes.io/revision": "1"},
        "managedFields": [
            {"manager": "manent", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
             "fieldsV1": {
                 "f:metadata": {"f:annotations": {"f:manent.io/version": {}}, "f:labels": dict(F_LABELS)},
                 "f:spec": {"f:replicas": {}, "f:selector": {}, "f:template": {
                     "f:metadata": {"f:labels": {"f:app": {}}},
                     "f:spec": {"f:containers": {'k:{"name":"app"}': {
                         ".": {}, "f:args": {}, "f:image": {}, "f:name": {},
                         "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
             "subresource": "status", "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:replicas": {}}}},
        ]},
    "spec": {"replicas": 1, "revisionHistoryLimit": 10, "selector": {"matchLabels": {"app": "web"}},
             "strategy": {"type": "RollingUpdate"},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"restartPolicy": "Always", "containers": [{
                              "name": "app", "image": "pause", "args": ["a", "b"], "imagePullPolicy": "IfNotPresent",
                              "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}},
    "status": {"replicas": 1},
}


def _fields(live):
    return live["metadata"]["managedFields"][0]["fieldsV1"]


def test_recorded_deployment_holds_despite_server_defaults():
    assert holds(DESIRED, copy.deepcopy(LIVE)) is True


@pytest.mark.parametrize("edit", [
    lambda d, live: live["spec"].__setitem__("replicas", 3),  # value edited live
    lambda d, live: live["spec"]["template"]["spec"]["containers"][0].__setitem__("image", "other"),
    lambda d, live: live["spec"]["template"]["spec"]["containers"][0]["args"].append("c"),  # atomic list
    lambda d, live: live["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "x"}),
    lambda d, live: live["metadata"]["labels"].pop("manent.io/environment"),  # ownership label gone
    lambda d, live: live["metadata"]["labels"].__setitem__("manent.io/environment", "prod"),
    lambda d, live: live["metadata"].__setitem__("deletionTimestamp", "2026-01-01T00:00:00Z"),
    lambda d, live: live["metadata"]["managedFields"].pop(0),  # manent owns nothing
    lambda d, live: live["metadata"]["managedFields"][0].__setitem__("apiVersion", "apps/v1beta2"),
    lambda d, live: live["metadata"]["managedFields"][0].__setitem__("operation", "Update"),
    lambda d, live: live["metadata"]["managedFields"].append(dict(live["metadata"]["managedFields"][0])),
    lambda d, live: _fields(live)["f:spec"].pop("f:replicas"),  # another manager took the field
    lambda d, live: _fields(live)["f:spec"].__setitem__("f:paused", {}),  # manent owns a field the manifest lost
    lambda d, live: _fields(live)["f:spec"]["f:template"]["f:spec"]["f:containers"].__setitem__(
        'k:{"name":"gone"}', {".": {}, "f:name": {}}),  # ... or a list item
    lambda d, live: d["spec"].__setitem__("paused", False),  # desired field not live
    lambda d, live: d["spec"].__setitem__("replicas", True),  # True is not 1
    lambda d, live: d["spec"]["template"]["spec"]["containers"][0].__setitem__("imagePullPolicy", "IfNotPresent"),
    lambda d, live: d.__setitem__("status", {"replicas": 1}),
    lambda d, live: d["metadata"]["annotations"].__setitem__("note", None),
    lambda d, live: d["spec"]["selector"]["matchLabels"].__setitem__("tier", "x"),  # atomic map differs
], ids=["replicas", "image", "atomic-list", "extra-item", "label-gone", "label-other", "deleting", "no-entry",
        "other-version", "update-entry", "two-entries", "field-taken", "owned-extra-field", "owned-extra-item",
        "desired-not-live", "bool-vs-int", "default-not-owned", "status", "null", "atomic-map"])
def test_anything_edited_or_uncertain_does_not_hold(edit):
    desired, live = copy.deepcopy(DESIRED), copy.deepcopy(LIVE)
    edit(desired, live)
    assert holds(desired, live) is False


def _secret_pair(desired_value, live_value, field="stringData"):
    desired = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": "s", "namespace": "ns", "labels": dict(LABELS)}, field: {"k": desired_value}}
    live = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "s", "namespace": "ns", "labels": dict(LABELS), "managedFields": [
                {"manager": "manent", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:metadata": {"f:labels": dict(F_LABELS)}, "f:type": {}, "f:" + field: {"f:k": {}}}}]},
            "data": {"k": base64.b64encode(live_value.encode()).decode()}}
    if field == "data":
        desired["data"]["k"] = base64.b64encode(desired_value.encode()).decode()
    return desired, digest_values(live)


@pytest.mark.parametrize("field", ["stringData", "data"])
def test_secrets_compare_by_digest(field):
    desired, live = _secret_pair("s3cr3t-a", "s3cr3t-a", field)
    assert "s3cr3t-a" not in str(live) and base64.b64encode(b"s3cr3t-a").decode() not in str(live)
    assert holds(desired, live) is True
    desired, live = _secret_pair("s3cr3t-a", "s3cr3t-b", field)
    assert holds(desired, live) is False


def test_secret_key_owned_under_the_other_field_does_not_hold():
    desired, live = _secret_pair("v", "v", "stringData")
    fields = live["metadata"]["managedFields"][0]["fieldsV1"]
    fields["f:data"] = fields.pop("f:stringData")
    assert holds(desired, live) is False


class _Reader:
    discovery = FakeDiscovery(unserved=("Unserved",))
    concurrency = 1


def test_candidates_are_equal_to_the_stored_copy_and_not_recreated_each_deploy():
    same = copy.deepcopy(DESIRED)
    edited = copy.deepcopy(DESIRED)
    edited["metadata"]["name"] = "edited"
    stored_edited = copy.deepcopy(edited)
    stored_edited["spec"]["replicas"] = 2
    recreated = copy.deepcopy(DESIRED)
    recreated["metadata"]["name"] = "job"
    recreated["metadata"]["annotations"]["werf.io/delete-policy"] = "before-creation"
    unserved = dict(copy.deepcopy(DESIRED), kind="Unserved")
    unlabelled = copy.deepcopy(DESIRED)
    unlabelled["metadata"]["name"] = "plain"
    unlabelled["metadata"]["labels"] = {}
    new = copy.deepcopy(DESIRED)
    new["metadata"]["name"] = "new"
    finder = UnchangedFinder(_Reader(), [copy.deepcopy(o) for o in (same, recreated, unserved, unlabelled)]
                             + [stored_edited])
    assert finder.candidates([same, edited, recreated, unserved, unlabelled, new]) == [same]
    assert UnchangedFinder(_Reader(), None).candidates([same]) == []


def test_a_rerun_rendering_differently_from_its_stored_copy_is_found_but_not_objects_recreated_each_deploy():
    same = copy.deepcopy(DESIRED)
    regenerated = copy.deepcopy(DESIRED)
    regenerated["metadata"]["name"] = "tls"
    stored_regenerated = copy.deepcopy(regenerated)
    stored_regenerated["spec"]["template"]["metadata"]["annotations"] = {"checksum": "old"}
    hook = copy.deepcopy(regenerated)
    hook["metadata"]["name"] = "hook"
    hook["metadata"]["annotations"]["werf.io/delete-policy"] = "before-creation"
    stored_hook = copy.deepcopy(stored_regenerated)
    stored_hook["metadata"]["name"] = "hook"
    new = copy.deepcopy(DESIRED)
    new["metadata"]["name"] = "new"
    baseline = [copy.deepcopy(same), stored_regenerated, stored_hook]
    assert rendered_differently([same, regenerated, hook, new], baseline) == [regenerated]
    assert rendered_differently([same, regenerated], None) == []


class _PagedKube(FakeKube):
    """Answers LISTs in pages of one item; ``fail`` paths answer an API error."""

    def __init__(self, items, fail=()):
        super().__init__()
        self.items, self.fail = items, set(fail)

    def answer(self, method, path, query=None, **_kw):
        if path in self.fail:
            raise ApiError("etcd unavailable", status=503, transient=True)
        items = self.items.get(path, [])
        start = int(query.get("continue") or 0)
        page = {"items": [copy.deepcopy(i) for i in items[start:start + 1]], "metadata": {}}
        if start + 1 < len(items):
            page["metadata"]["continue"] = str(start + 1)
        return page


class _ListReader(_Reader):
    def __init__(self, kube):
        self.kube = kube

    def path(self, obj, with_name=True):
        return "/api/v1/namespaces/ns/%ss" % obj["kind"].lower()


def _named(kind, name, **extra):
    out = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "ns", "labels": dict(LABELS)}}
    out.update(extra)
    return out


def test_read_pages_each_kind_once_with_the_release_selector_and_digests_secrets():
    secret = _named("Secret", "s", data={"k": base64.b64encode(b"s3cr3t-zz").decode()})
    kube = _PagedKube({"/api/v1/namespaces/ns/configmaps": [_named("ConfigMap", "a"), _named("ConfigMap", "b"),
                                                            _named("ConfigMap", "other")],
                       "/api/v1/namespaces/ns/secrets": [secret]})
    wanted = [_named("ConfigMap", "a"), _named("ConfigMap", "b"), _named("Secret", "s")]
    live = UnchangedFinder(_ListReader(kube), wanted).read(wanted)
    assert sorted(k.name for k in live) == ["a", "b", "s"]
    assert "s3cr3t-zz" not in str(live) and base64.b64encode(b"s3cr3t-zz").decode() not in str(live)
    paths = [(p, q.get("continue")) for _m, p, q in kube.sent("query")]
    assert paths == [("/api/v1/namespaces/ns/configmaps", None), ("/api/v1/namespaces/ns/configmaps", "1"),
                     ("/api/v1/namespaces/ns/configmaps", "2"), ("/api/v1/namespaces/ns/secrets", None)]
    assert all("manent.io/application=shop" in q["labelSelector"] for _m, _p, q in kube.sent("query"))


def test_a_failed_list_leaves_its_objects_to_apply():
    kube = _PagedKube({"/api/v1/namespaces/ns/configmaps": [_named("ConfigMap", "a")]},
                      fail=["/api/v1/namespaces/ns/configmaps"])
    wanted = [_named("ConfigMap", "a")]
    assert UnchangedFinder(_ListReader(kube), wanted).find(wanted) == (set(), {})


def test_a_snapshot_is_read_once_and_a_failed_list_is_read_again_when_its_tier_comes():
    kube = _PagedKube({"/api/v1/namespaces/ns/configmaps": [_named("ConfigMap", "a")],
                       "/api/v1/namespaces/ns/secrets": [_named("Secret", "s")]},
                      fail=["/api/v1/namespaces/ns/secrets"])
    wanted = [_named("ConfigMap", "a"), _named("ConfigMap", "gone"), _named("Secret", "s")]
    finder = UnchangedFinder(_ListReader(kube), wanted)
    snapshot = finder.snapshot(finder.candidates(wanted))
    assert sorted(k.name for k in snapshot.live) == ["a"]
    assert sorted(k.name for k in snapshot.listed) == ["a", "gone"]  # listed: "gone" has no live object
    kube.calls.clear()
    finder.find(wanted[:2], snapshot)
    assert kube.calls == []  # both ConfigMaps were listed: nothing is read again
    finder.find(wanted, snapshot)
    assert [p for _m, p in kube.sent()] == ["/api/v1/namespaces/ns/secrets"]  # its LIST failed: read again
