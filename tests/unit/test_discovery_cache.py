# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The discovery cache (discovery.py): the kinds and the server's version are read once per cluster within the
TTL, every module of a run shares them from the work directory, and both aggregated documents are asked at once."""

from __future__ import annotations

import threading

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils import discovery as disc
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import ApiError, DiscoveryError

CORE = {"kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": ""}, "versions": [
    {"version": "v1", "resources": [{"resource": "configmaps", "responseKind": {"kind": "ConfigMap"},
                                     "scope": "Namespaced", "verbs": ["get", "patch"]}]}]}]}
GROUPS = {"kind": "APIGroupDiscoveryList", "items": [{"metadata": {"name": "apps"}, "versions": [
    {"version": "v1", "resources": [{"resource": "deployments", "responseKind": {"kind": "Deployment"},
                                     "scope": "Namespaced", "verbs": ["get", "patch"]}]}]}]}


class _Response:
    def __init__(self, data):
        self.data = data


class _Kube:
    """Answers discovery; ``gate``: both documents must be asked before either is answered."""

    url = "https://api.example:6443"

    def __init__(self, version=("1", "34", "v1.34.4"), fail=None, gate=False):
        self.calls, self.fail, self._version = [], fail, version
        self._barrier = threading.Barrier(2, timeout=5) if gate else None

    def request(self, method, path, **_kw):
        self.calls.append((method, path))
        if self.fail:
            raise ApiError(self.fail, status=503)
        if self._barrier is not None:
            self._barrier.wait()
        return _Response({"/api": CORE, "/apis": GROUPS}[path])

    def version(self):
        self.calls.append(("GET", "/version"))
        if self.fail:
            raise ApiError(self.fail, status=503)
        return int(self._version[0]), int(self._version[1]), self._version[2]


def test_both_documents_are_asked_at_once_and_cached_with_the_version(tmp_path):
    kube = _Kube(gate=True)  # a sequential fetch would wait for the second request forever (barrier timeout)
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
