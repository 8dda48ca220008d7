# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""LiveReader.absent: which objects a first apply may create without reading each (issue 13: a first install
costs a few metadata LISTs, not one GET per object), and what it must leave unknown."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import METADATA_LIST_ACCEPT, LiveReader
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of
from tests.unit.fakes import FakeDiscovery, FakeKube


class _PagedLists(FakeKube):
    """Answers LISTs in pages of two names; ``fail``: path -> HTTP status of an error answer."""

    def __init__(self, names, fail=None):
        super().__init__()
        self.names, self.fail = names, dict(fail or {})

    def answer(self, method, path, query=None, **_kw):
        if path in self.fail:
            raise ApiError("refused", status=self.fail[path])
        names = self.names.get(path, [])
        start = int((query or {}).get("continue") or 0)
        page = {"items": [{"metadata": {"name": n}} for n in names[start:start + 2]], "metadata": {}}
        if start + 2 < len(names):
            page["metadata"]["continue"] = str(start + 2)
        return page


def _obj(kind, name, namespace="ns"):
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}}


def _calls(kube):
    return [(m, p, dict(q or {}), a) for m, p, q, a in kube.sent("query", "accept")]


def _names(keys):
    return sorted(k.name for k in keys)


def test_absent_lists_each_kind_and_namespace_once_over_every_page():
    kube = _PagedLists({"/api/v1/namespaces/ns/configmaps": ["a", "x", "y", "z", "c"]})
    wanted = [_obj("ConfigMap", n) for n in ("a", "b", "c", "d")]
    absent = LiveReader(kube, FakeDiscovery()).absent(wanted)
    assert _names(absent) == ["b", "d"]  # "c" is on the last page: every page was read
    assert [(m, p, q.get("continue"), a) for m, p, q, a in _calls(kube)] == [
        ("GET", "/api/v1/namespaces/ns/configmaps", None, METADATA_LIST_ACCEPT),
        ("GET", "/api/v1/namespaces/ns/configmaps", "2", METADATA_LIST_ACCEPT),
        ("GET", "/api/v1/namespaces/ns/configmaps", "4", METADATA_LIST_ACCEPT)]
    assert all("labelSelector" not in q for _m, _p, q, _a in _calls(kube))  # unlabelled objects count as present


def test_small_groups_unserved_kinds_and_failed_lists_stay_unknown():
    kube = _PagedLists({}, fail={"/api/v1/namespaces/other/configmaps": 403, "/api/v1/namespaces/ns/services": 503})
    wanted = ([_obj("ConfigMap", "cm-%d" % i, "other") for i in range(5)] +   # LIST refused (403)
              [_obj("Service", "svc-%d" % i) for i in range(5)] +             # LIST failed (503)
              [_obj("Widget", "w-%d" % i) for i in range(5)] +                # kind not served yet (its CRD)
              [_obj("Secret", "s-%d" % i) for i in range(3)] +                # too few to LIST
              [_obj("ConfigMap", "cm-%d" % i) for i in range(4)])             # the one known group
    absent = LiveReader(kube, FakeDiscovery(unserved=["Widget"])).absent(wanted)
    assert absent == {key_of(o) for o in wanted[-4:]}
    assert sorted(p for _m, p, _q, _a in _calls(kube)) == [
        "/api/v1/namespaces/ns/configmaps", "/api/v1/namespaces/ns/services", "/api/v1/namespaces/other/configmaps"]


def test_nothing_to_read_reads_nothing():
    kube = _PagedLists({})
    assert LiveReader(kube, FakeDiscovery()).absent([]) == set()
    assert not kube.calls
