# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""LiveReader.absent: which objects a first apply may create without reading each (issue 13: a first install
costs a few metadata LISTs, not one GET per object), and what it must leave unknown."""

from __future__ import annotations

import copy

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import METADATA_LIST_ACCEPT, LiveReader
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of


class _Discovery:
    def __init__(self, unserved=()):
        self.unserved = set(unserved)

    def served(self, _api_version, kind):
        return kind not in self.unserved

    def path(self, _api_version, kind, namespace, name, subject=None):  # pylint: disable=unused-argument
        base = "/api/v1/namespaces/%s/%ss" % (namespace, kind.lower())
        return base + "/" + name if name else base


class _Response:
    def __init__(self, data):
        self.data = data


class _Kube:
    """Answers LISTs in pages of two names; ``fail``: path -> HTTP status of an error answer."""

    def __init__(self, names, fail=None):
        self.names, self.fail, self.calls = names, dict(fail or {}), []

    def request(self, method, path, query=None, accept=None, **_kw):
        self.calls.append((method, path, dict(query or {}), accept))
        if path in self.fail:
            raise ApiError("refused", status=self.fail[path])
        names = self.names.get(path, [])
        start = int((query or {}).get("continue") or 0)
        page = {"items": [{"metadata": {"name": n}} for n in names[start:start + 2]], "metadata": {}}
        if start + 2 < len(names):
            page["metadata"]["continue"] = str(start + 2)
        return _Response(copy.deepcopy(page))


def _obj(kind, name, namespace="ns"):
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}}


def _names(keys):
    return sorted(k.name for k in keys)


def test_absent_lists_each_kind_and_namespace_once_over_every_page():
    kube = _Kube({"/api/v1/namespaces/ns/configmaps": ["a", "x", "y", "z", "c"]})
    wanted = [_obj("ConfigMap", n) for n in ("a", "b", "c", "d")]
    absent = LiveReader(kube, _Discovery()).absent(wanted)
    assert _names(absent) == ["b", "d"]  # "c" is on the last page: every page was read
    assert [(m, p, q.get("continue"), a) for m, p, q, a in kube.calls] == [
        ("GET", "/api/v1/namespaces/ns/configmaps", None, METADATA_LIST_ACCEPT),
        ("GET", "/api/v1/namespaces/ns/configmaps", "2", METADATA_LIST_ACCEPT),
        ("GET", "/api/v1/namespaces/ns/configmaps", "4", METADATA_LIST_ACCEPT)]
    assert all("labelSelector" not in q for _m, _p, q, _a in kube.calls)  # unlabelled objects count as present


def test_small_groups_unserved_kinds_and_failed_lists_stay_unknown():
    kube = _Kube({}, fail={"/api/v1/namespaces/other/configmaps": 403, "/api/v1/namespaces/ns/services": 503})
    wanted = ([_obj("ConfigMap", "cm-%d" % i, "other") for i in range(5)] +   # LIST refused (403)
              [_obj("Service", "svc-%d" % i) for i in range(5)] +             # LIST failed (503)
              [_obj("Widget", "w-%d" % i) for i in range(5)] +                # kind not served yet (its CRD)
              [_obj("Secret", "s-%d" % i) for i in range(3)] +                # too few to LIST
              [_obj("ConfigMap", "cm-%d" % i) for i in range(4)])             # the one known group
    absent = LiveReader(kube, _Discovery(unserved=["Widget"])).absent(wanted)
    assert absent == {key_of(o) for o in wanted[-4:]}
    assert sorted(p for _m, p, _q, _a in kube.calls) == [
        "/api/v1/namespaces/ns/configmaps", "/api/v1/namespaces/ns/services", "/api/v1/namespaces/other/configmaps"]


def test_nothing_to_read_reads_nothing():
    kube = _Kube({})
    assert LiveReader(kube, _Discovery()).absent([]) == set()
    assert not kube.calls
