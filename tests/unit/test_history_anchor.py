# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Anchors of history records (history/anchor.py): the digest of a record's cluster-scoped objects, kept on the
release Namespace, that lets a rollback trust them. The rollback's use of it runs against real clusters
(tests/integration/test_hostile_deploy.py)."""

from __future__ import annotations

import copy
import json
import re

from ansible_collections.manent.kubernetes.plugins.module_utils.history import anchor as ha
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    decode_record, encode_record)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from tests.unit.fakes import FakeKube

SHOP = ReleaseKey(application="shop", artifact="shop-api", environment="prod")
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "shop-read"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
HOOK = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "shop"}, "webhooks": []}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "shop-prod"},
      "data": {"a": "1"}}
# annotation keys: an optional DNS-subdomain prefix, "/", a name of at most 63 characters
ANNOTATION_KEY = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def test_the_digest_covers_the_objects_without_a_namespace_in_any_order():
    first = ha.digest([ROLE, CM, HOOK])
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert ha.digest([HOOK, ROLE]) == first  # order and namespaced objects do not count
    assert ha.digest([CM]) == "" and ha.digest([]) == "" and ha.digest(None) == ""
    changed = copy.deepcopy(ROLE)
    changed["rules"][0]["verbs"].append("list")
    assert ha.digest([changed, HOOK]) != first
    assert ha.digest([ROLE]) != first  # an object left out
    moved = copy.deepcopy(HOOK)
    moved["metadata"]["namespace"] = "shop-prod"  # given a namespace, it leaves the digest (the rollback checks it)
    assert ha.digest([ROLE, moved]) == ha.digest([ROLE])


def test_the_digest_of_a_record_read_back_is_the_one_of_the_objects_saved():
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "shop-prod"},
              "data": {"k": "dmFsdWU="}}
    objects = [CM, ROLE, HOOK, secret]
    cm = encode_record(Release(SHOP, "1.0.0", "d1"), "shop-prod", objects)
    stored = decode_record(cm)[1]
    assert ha.digest(stored) == ha.digest(objects) != ""


def test_the_annotation_names_the_release_key_and_is_a_valid_key():
    name = ha.annotation(SHOP)
    assert ANNOTATION_KEY.match(name), name
    assert name != ha.annotation(ReleaseKey(application="shop", artifact="shop-api", environment="test"))
    assert name == ha.annotation(ReleaseKey(application="shop", artifact="shop-api", environment="prod"))


def test_anchors_keep_the_newest_versions_and_move_a_rewritten_one_last():
    anchors = {}
    for number in range(ha.KEEP + 3):
        anchors = ha.with_anchor(anchors, "1.%d" % number, "d%d" % number)
    assert len(anchors) == ha.KEEP
    assert list(anchors)[0] == "1.3" and list(anchors)[-1] == "1.%d" % (ha.KEEP + 2)
    again = ha.with_anchor(anchors, "1.3", "new")
    assert list(again)[-1] == "1.3" and again["1.3"] == "new" and len(again) == ha.KEEP


def test_an_unreadable_annotation_anchors_nothing():
    def namespace(value):
        return {"metadata": {"name": "shop-prod", "annotations": {ha.annotation(SHOP): value}}}

    assert ha.parse(namespace("not json"), SHOP) == {}
    assert ha.parse(namespace('["1.0.0"]'), SHOP) == {}
    assert ha.parse(namespace(json.dumps({"1.0.0": 7, "2.0.0": "abc"})), SHOP) == {"2.0.0": "abc"}
    assert ha.parse({"metadata": {}}, SHOP) == {} and ha.parse(None, SHOP) == {}


class _Namespace(FakeKube):
    """Answers a GET with ``namespace``; records the requests of history/anchor.py's write."""

    def __init__(self, namespace):
        super().__init__()
        self.namespace = namespace

    def answer(self, method, path, **kwargs):
        return self.namespace if method == "GET" else {}


def _sent(kube):
    return [(m, p, b, c if m != "GET" else None) for m, p, b, c in kube.sent("body", "content_type")]


def test_write_patches_only_its_annotation_and_only_when_it_changes():
    kube = _Namespace({"metadata": {"name": "shop-prod", "annotations": {"other": "x"}}})
    assert ha.write(kube, "shop-prod", SHOP, "1.0.0", [CM]) is None
    assert kube.calls == []  # nothing cluster-scoped: not even a read
    assert ha.write(kube, "shop-prod", SHOP, "1.0.0", [CM, ROLE]) is None
    method, path, body, content_type = _sent(kube)[-1]
    assert (method, path, content_type) == ("PATCH", "/api/v1/namespaces/shop-prod", "application/merge-patch+json")
    assert list(body["metadata"]["annotations"]) == [ha.annotation(SHOP)]
    assert json.loads(body["metadata"]["annotations"][ha.annotation(SHOP)]) == {"1.0.0": ha.digest([ROLE])}
    kube.namespace["metadata"]["annotations"].update(body["metadata"]["annotations"])
    kube.calls.clear()
    assert ha.write(kube, "shop-prod", SHOP, "1.0.0", [ROLE, CM]) is None
    assert [sent[0] for sent in _sent(kube)] == ["GET"]  # already anchored, newest


def test_a_namespace_that_cannot_be_patched_leaves_a_note():
    class Refusing(_Namespace):
        def answer(self, method, path, subject=None, **kwargs):
            if method == "GET":
                return self.namespace
            raise ApiError("namespaces \"shop-prod\" is forbidden", status=403, reason="Forbidden", subject=subject)

    note = ha.write(Refusing({"metadata": {"name": "shop-prod"}}), "shop-prod", SHOP, "1.0.0", [ROLE])
    assert "version 1.0.0" in note and "Namespace/shop-prod" in note and "forbidden" in note


def test_a_record_without_cluster_scoped_objects_is_anchored_once_the_key_has_anchors():
    anchored = {"metadata": {"name": "shop-prod", "annotations": {ha.annotation(SHOP): json.dumps({"1.0.0": "d"})}}}
    kube = _Namespace(copy.deepcopy(anchored))
    assert ha.write(kube, "shop-prod", SHOP, "2.0.0", [CM], namespace_obj={"metadata": {"name": "shop-prod"}}) is None
    assert kube.calls == []  # the key had no anchors when the deploy read the Namespace: nothing sent
    assert ha.write(kube, "shop-prod", SHOP, "2.0.0", [CM], namespace_obj=anchored) is None
    body = _sent(kube)[-1][2]
    assert json.loads(body["metadata"]["annotations"][ha.annotation(SHOP)]) == {"1.0.0": "d", "2.0.0": ""}


def test_only_an_anchor_of_the_version_vouches_for_its_record():
    anchors = {"1.0.0": ha.digest([ROLE]), "2.0.0": ""}
    assert ha.vouches(anchors, "1.0.0", [ROLE, CM])
    assert not ha.vouches(anchors, "1.0.0", [CM])  # its ClusterRole taken out
    assert not ha.vouches(anchors, "1.0.0", [ROLE, HOOK])  # one added
    assert ha.vouches(anchors, "2.0.0", [CM]) and not ha.vouches(anchors, "2.0.0", [CM, ROLE])
    assert not ha.vouches(anchors, "3.0.0", [CM])  # no anchor: not even a record without cluster-scoped objects
    assert not ha.vouches({}, "1.0.0", [ROLE])


def test_an_unreadable_namespace_reads_as_no_namespace_and_no_anchors():
    class Missing(_Namespace):
        def answer(self, method, path, subject=None, **kwargs):
            raise ApiError("namespaces \"shop-prod\" not found", status=404, reason="NotFound", subject=subject)

    assert ha.read_namespace(Missing(None), "shop-prod") is None and ha.read(Missing(None), "shop-prod", SHOP) == {}
    anchored = {"metadata": {"name": "shop-prod", "annotations": {ha.annotation(SHOP): json.dumps({"1.0.0": "d"})}}}
    kube = _Namespace(anchored)
    assert ha.read_namespace(kube, "shop-prod") is anchored and ha.read(kube, "shop-prod", SHOP) == {"1.0.0": "d"}
    assert [(m, p) for m, p, _b, _c in _sent(kube)] == [("GET", "/api/v1/namespaces/shop-prod")] * 2
