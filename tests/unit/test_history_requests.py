# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The writes the history sends, as the API server gets them: POST, PUT and DELETE of its ConfigMaps and Secrets
(the DELETE conditioned on the uid read), the merge patch of the release Namespace's anchor, and how refusals
become errors (409 and 404 passed to the caller where it decides, else HistoryError with the server's text)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import error_from_status
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ConflictError, HistoryError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.history import anchor
from ansible_collections.manent.kubernetes.plugins.module_utils.history.client import HistoryClient

KEY = ReleaseKey(application="shop", artifact="shop-api", environment="prod")
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rec", "namespace": "ns", "uid": "u-1",
                                                            "resourceVersion": "7"}, "data": {}}
COLLECTION = "/api/v1/namespaces/ns/configmaps"


class _Answer:
    def __init__(self, data):
        self.data = data


class _Recording:
    """Answers every request with ``status`` (an error as the client raises it) or the body it got; ``sent`` holds
    each request as the server gets it: method, path, query string items, body, content type, and whether the
    client may repeat it."""

    def __init__(self, status=None, namespace=None):
        self.status = status
        self.namespace = namespace
        self.sent = []

    def request(self, method, path, query=None, body=None, content_type="application/json", subject=None,
                repeatable=None, **_kw):
        self.sent.append({"method": method, "path": path,
                          "query": {k: v for k, v in (query or {}).items() if v is not None},
                          "body": json.loads(json.dumps(body)) if body is not None else None,
                          "content_type": content_type if body is not None else None, "repeatable": repeatable})
        if self.status:
            raise error_from_status(self.status, {"message": "answered %d" % self.status}, subject=subject)
        return _Answer(body)

    def get_json(self, path, **_kw):
        return self.namespace


def client_of(kube):
    return HistoryClient(kube, "ns", KEY)


def test_create_posts_the_body_to_the_collection_and_may_be_repeated():
    kube = _Recording()
    assert client_of(kube).create(CM, "save it") == CM
    assert kube.sent == [{"method": "POST", "path": COLLECTION, "query": {}, "body": CM,
                          "content_type": "application/json", "repeatable": True}]


def test_put_replaces_the_object_conditioned_on_the_body_s_resource_version():
    kube = _Recording()
    client_of(kube).put(CM, "save it", resource="secrets", kind="Secret")
    assert kube.sent == [{"method": "PUT", "path": "/api/v1/namespaces/ns/secrets/rec", "query": {}, "body": CM,
                          "content_type": "application/json", "repeatable": None}]


def test_delete_is_conditioned_on_the_uid_read():
    kube = _Recording()
    assert client_of(kube).delete(CM, "delete it") is True
    assert kube.sent == [{"method": "DELETE", "path": COLLECTION + "/rec", "query": {},
                          "body": {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "u-1"}},
                          "content_type": "application/json", "repeatable": None}]


@pytest.mark.parametrize("status", [404, 409])
def test_delete_of_an_object_gone_or_replaced_deletes_nothing(status):
    assert client_of(_Recording(status)).delete(CM, "delete it") is False


WRITES = {
    "create": lambda client: client.create(CM, "save it"),
    "put": lambda client: client.put(CM, "save it"),
    "delete": lambda client: client.delete(CM, "save it"),
}
HINTS = [
    (403, "the deploy credentials need get, list, create, update, patch and delete on configmaps"),
    (404, "check that namespace ns exists"),
    (503, "the API server did not answer in time or is overloaded"),
]


@pytest.mark.parametrize("write", ["create", "put"])
def test_a_conflict_is_the_caller_s_to_decide(write):
    with pytest.raises(ConflictError):
        WRITES[write](client_of(_Recording(409)))


@pytest.mark.parametrize("write, status, hint", [
    (write, status, hint) for write in WRITES for status, hint in HINTS if (write, status) != ("delete", 404)])
def test_other_refusals_are_history_errors_with_the_server_s_text(write, status, hint):
    with pytest.raises(HistoryError) as info:
        WRITES[write](client_of(_Recording(status)))
    assert "cannot save it: answered %d" % status in str(info.value) and hint in info.value.hint


def test_the_anchor_is_a_merge_patch_of_the_release_namespace():
    objects = [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}]
    kube = _Recording(namespace={"metadata": {"name": "ns"}})
    assert anchor.write(kube, "ns", KEY, "1.0.0", objects) is None
    value = json.dumps({"1.0.0": anchor.digest(objects)}, separators=(",", ":"))
    assert kube.sent == [{"method": "PATCH", "path": "/api/v1/namespaces/ns", "query": {},
                          "body": {"metadata": {"annotations": {anchor.annotation(KEY): value}}},
                          "content_type": "application/merge-patch+json", "repeatable": None}]


def test_an_anchor_the_namespace_refuses_is_a_note():
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}]
    note = anchor.write(_Recording(403, namespace={"metadata": {"name": "ns"}}), "ns", KEY, "1.0.0", objects)
    assert note.startswith("the cluster-scoped objects of version 1.0.0 could not be anchored on Namespace/ns "
                           "(answered 403)")
