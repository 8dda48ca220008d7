# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The discovery cache (discovery.py): the kinds and the server's version are read once per cluster within the
TTL, every module of a run shares them from the work directory, and both aggregated documents are asked at once."""

from __future__ import annotations

import threading

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import discovery as disc
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, DiscoveryError
from tests.unit.fakes import FakeKube, Response

CORE = {"kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": ""}, "versions": [
    {"version": "v1", "resources": [{"resource": "configmaps", "responseKind": {"kind": "ConfigMap"},
                                     "scope": "Namespaced", "verbs": ["get", "patch"]}]}]}]}
GROUPS = {"kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": "apps"}, "versions": [
    {"version": "v1", "resources": [{"resource": "deployments", "responseKind": {"kind": "Deployment"},
                                     "scope": "Namespaced", "verbs": ["get", "patch"]}]}]}]}


class _Kube(FakeKube):
    """Answers discovery; ``gate``: both documents and the version must be asked before any is answered;
    ``docs``: other answers by path (legacy discovery)."""

    def __init__(self, version=("1", "34", "v1.34.4"), fail=None, gate=False, version_fails=None, docs=None):
        super().__init__()
        self.fail, self._version, self.version_fails = fail, version, version_fails
        self.docs = dict({"/api": CORE, "/apis": GROUPS}, **(docs or {}))
        self._barrier = threading.Barrier(gate, timeout=5) if gate else None

    def request(self, method, path, **kwargs):
        self.calls.append((method, path))  # the order of paths is what these tests look at
        return Response(self.answer(method, path, **kwargs))

    def answer(self, method, path, **_kw):
        if self.fail:
            raise ApiError(self.fail, status=503)
        if self._barrier is not None:
            self._barrier.wait()
        return self.docs[path]

    def version(self):
        self.calls.append(("GET", "/version"))
        if self._barrier is not None:
            self._barrier.wait()
        if self.fail or self.version_fails:
            raise ApiError(self.fail or self.version_fails, status=401)
        return int(self._version[0]), int(self._version[1]), self._version[2]


def test_both_documents_and_the_version_are_asked_at_once_and_cached_together(tmp_path):
    kube = _Kube(gate=3)  # a sequential fetch would wait for the other requests forever (barrier timeout)
    first = disc.Discovery(kube, cache_dir=str(tmp_path))
    assert first.served("apps/v1", "Deployment")
    assert first.version() == (1, 34, "v1.34.4")
    assert sorted(kube.calls) == [("GET", "/api"), ("GET", "/apis"), ("GET", "/version")]

    again = _Kube(fail="must not be asked")
    second = disc.Discovery(again, cache_dir=str(tmp_path))
    assert second.version() == (1, 34, "v1.34.4")
    assert second.served("v1", "ConfigMap") and second.source == "cache"
    assert again.calls == []


def test_an_expired_cache_reads_kinds_and_version_again(tmp_path):
    disc.Discovery(_Kube(), cache_dir=str(tmp_path)).resources()
    upgraded = _Kube(version=("1", "35", "v1.35.0"))
    assert disc.Discovery(upgraded, cache_dir=str(tmp_path), ttl=0).version() == (1, 35, "v1.35.0")
    assert ("GET", "/version") in upgraded.calls and ("GET", "/apis") in upgraded.calls


def test_a_cache_without_a_version_asks_the_server(tmp_path):
    cached = disc.Discovery(_Kube(), cache_dir=str(tmp_path))
    cached.resources()
    path = cached._cache_path()  # pylint: disable=protected-access
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:  # written by a release before the version was kept
        f.write(text.replace(', "version": [1, 34, "v1.34.4"]', ""))
    kube = _Kube(version=("1", "33", "v1.33.2"))
    assert disc.Discovery(kube, cache_dir=str(tmp_path)).version() == (1, 33, "v1.33.2")
    assert kube.calls == [("GET", "/version")]


def test_a_failed_discovery_names_the_cluster(tmp_path):
    with pytest.raises(DiscoveryError, match="discovery failed: down") as caught:
        disc.Discovery(_Kube(fail="down"), cache_dir=str(tmp_path)).resources()
    assert caught.value.subject == _Kube.url


def test_threads_that_need_the_kinds_at_once_read_them_once(tmp_path):
    """The checks of a deploy run side by side and each needs the kinds: one of them reads, the others wait."""
    kube = _Kube()
    found = disc.Discovery(kube, cache_dir=str(tmp_path))
    start = threading.Barrier(4, timeout=5)
    answers = []

    def use():
        start.wait()
        answers.append(found.served("apps/v1", "Deployment"))

    threads = [threading.Thread(target=use) for _i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert answers == [True] * 4
    assert sorted(kube.calls) == [("GET", "/api"), ("GET", "/apis"), ("GET", "/version")]


def test_a_version_that_cannot_be_read_is_its_own_error_and_discovery_errors_come_first(tmp_path):
    with pytest.raises(ApiError, match="Unauthorized") as caught:
        disc.Discovery(_Kube(version_fails="Unauthorized"), cache_dir=str(tmp_path)).resources()
    assert not isinstance(caught.value, DiscoveryError)
    with pytest.raises(DiscoveryError, match="discovery failed: down"):  # both fail: the documents' error
        disc.Discovery(_Kube(fail="down"), cache_dir=str(tmp_path)).resources()


def test_legacy_discovery_reads_every_group_version_at_once(tmp_path):
    """A server without aggregated discovery: /api/v1 and each group version are asked together (over a distant
    link, one round trip instead of one per group); an unavailable group is left out, the others kept in order."""
    groups = {"kind": "APIGroupList", "groups": [
        {"name": "apps", "versions": [{"groupVersion": "apps/v1"}]},
        {"name": "metrics.k8s.io", "versions": [{"groupVersion": "metrics.k8s.io/v1beta1"}]},
        {"name": "batch", "versions": [{"groupVersion": "batch/v1"}]}]}
    docs = {"/apis": groups, "/api": {"kind": "APIVersions"},
            "/api/v1": {"groupVersion": "v1", "resources": [
                {"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": ["get"]},
                {"name": "configmaps/status", "kind": "ConfigMap", "namespaced": True, "verbs": ["get"]}]},
            "/apis/apps/v1": {"groupVersion": "apps/v1", "resources": [
                {"name": "deployments", "kind": "Deployment", "namespaced": True, "verbs": ["get"]}]},
            "/apis/batch/v1": {"groupVersion": "batch/v1", "resources": [
                {"name": "jobs", "kind": "Job", "namespaced": True, "verbs": ["get"]}]}}

    class Legacy(_Kube):
        def __init__(self):
            super().__init__(docs=docs)
            self.together = threading.Barrier(4, timeout=5)  # the four group-version documents

        def request(self, method, path, **kw):
            if path not in ("/api", "/apis"):
                self.together.wait()
                if path == "/apis/metrics.k8s.io/v1beta1":
                    self.calls.append((method, path))
                    raise ApiError("service unavailable", status=503)
            return super().request(method, path, **kw)

    kube = Legacy()
    found = disc.Discovery(kube, cache_dir=str(tmp_path))
    kinds = [(r.group, r.kind) for r in found.resources().values()]
    assert kinds == [("", "ConfigMap"), ("apps", "Deployment"), ("batch", "Job")]
    assert found.source == "legacy" and found.version() == (1, 34, "v1.34.4")
