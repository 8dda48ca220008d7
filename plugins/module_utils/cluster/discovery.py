# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one cluster serves: kinds, their resource names, scope and versions.

Discovery is read once per cluster per run: aggregated discovery (``apidiscovery.k8s.io/v2``, two
requests: ``/api`` and ``/apis``) where the server offers it, the per-group documents otherwise.
The result is cached on the controller in the run's work directory (keyed by server URL, with a
TTL) so every module of the run shares it, with the server's version (:meth:`Discovery.version`: a render
within the TTL sends no request at all); a kind that is missing is looked up once more with a
fresh discovery (it may be a CRD applied a moment ago).
"""

from __future__ import annotations

import os
import threading
import time
from collections import namedtuple

from ansible_collections.manent.kubernetes.plugins.module_utils.base.cache_files import read_fresh, write_json
from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import sha256_text
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, DiscoveryError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import concurrently, together
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import split_api_version
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.schemas import Schemas

Resource = namedtuple("Resource", "group version kind plural namespaced verbs")

AGGREGATED_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                     "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")
CACHE_TTL = 600
LEGACY_CONCURRENCY = 16  # group-version documents read at once from a server without aggregated discovery


class Discovery:
    def __init__(self, kube, cache_dir=None, ttl=CACHE_TTL):
        self.kube = kube
        self.cache_dir = cache_dir
        self.ttl = ttl
        self._by_gvk = None
        self._version = None
        self._refreshed = False
        self._lock = threading.Lock()  # threads of one deploy (checks, tiers) share it: one of them reads
        self.source = None  # "cache", "aggregated" or "legacy"
        self._schemas = None

    # ---------------------------------------------------------------- loading

    def _cache_path(self):
        if not self.cache_dir:
            return None
        digest = sha256_text(self.kube.url)[:16]
        return os.path.join(self.cache_dir, "discovery-%s.json" % digest)

    def _load(self, fresh=False):
        path = self._cache_path()
        cached = None if fresh else read_fresh(path, self.kube.url, self.ttl)
        if cached is not None:
            try:
                self._index(cached["resources"])
                version = cached.get("version")
                if isinstance(version, list) and len(version) == 3:
                    self._version = (int(version[0]), int(version[1]), str(version[2]))
                self.source = "cache"
                return
            except (ValueError, KeyError, TypeError):
                pass
        resources, self._version = self._fetch()
        self._index(resources)
        if path:
            write_json(path, {"time": time.time(), "url": self.kube.url, "resources": resources,
                              "version": list(self._version)})

    def _index(self, resources):
        by_gvk = {}
        for r in resources:
            res = Resource(*r)
            by_gvk[(res.group, res.version, res.kind)] = res
        self._by_gvk = by_gvk  # whole, for the threads that do not take the lock

    def _fetch(self):
        """(resources, server version): /api, /apis and /version asked at once (one round trip); legacy
        discovery then reads every group version at once too. A failure of the discovery documents comes first."""
        def get(path):
            return self.kube.request("GET", path, accept=AGGREGATED_ACCEPT, subject="discovery").data

        def version():
            try:
                return self.kube.version(), None
            except ApiError as exc:  # raised after the discovery documents' own errors
                return None, exc

        try:
            core, groups, (server, failed) = together(lambda: get("/api"), lambda: get("/apis"), version)
        except ApiError as exc:
            raise DiscoveryError("discovery failed: %s" % exc, subject=self.kube.url)
        if failed is not None:
            raise failed
        if isinstance(groups, dict) and groups.get("kind") == "APIGroupDiscoveryList":
            self.source = "aggregated"
            return _from_aggregated(core) + _from_aggregated(groups), server
        self.source = "legacy"
        return self._fetch_legacy(groups), server

    def _fetch_legacy(self, groups):
        """Servers without aggregated discovery: one document per group version, all read at once."""
        paths = ["/api/v1"]
        for g in (groups or {}).get("groups", []):
            for v in g.get("versions", []):
                paths.append("/apis/" + v["groupVersion"])

        def read(path):
            try:
                return self.kube.get_json(path, subject="discovery")
            except ApiError:
                return None  # an unavailable aggregated API must not break the deploy

        out = []
        for doc in concurrently(read, paths, LEGACY_CONCURRENCY):
            if doc is None:
                continue
            group, version = split_api_version(doc.get("groupVersion", "v1"))
            for r in doc.get("resources", []):
                if "/" in r.get("name", ""):
                    continue
                out.append([group, version, r["kind"], r["name"], bool(r.get("namespaced")), r.get("verbs", [])])
        return out

    # ---------------------------------------------------------------- queries

    def resources(self):
        if self._by_gvk is None:
            with self._lock:
                if self._by_gvk is None:
                    self._load()
        return self._by_gvk

    def version(self):
        """The server's (major, minor, gitVersion), as cached with the kinds (the same TTL: a cluster upgraded
        meanwhile is seen when the kinds are read again), else read now."""
        self.resources()
        if self._version is None:
            self._version = self.kube.version()
        return self._version

    def schemas(self):
        """The cluster's published field schemas (schemas.py), cached beside the kinds with the same TTL."""
        if self._schemas is None:
            self._schemas = Schemas(self.kube, self.cache_dir, self.ttl)
        return self._schemas

    def refresh(self):
        with self._lock:
            self._load(fresh=True)
            self._refreshed = True

    def find(self, api_version, kind):
        """Resource for apiVersion/kind, or None. A miss refreshes discovery once per run."""
        group, version = split_api_version(api_version)
        res = self.resources().get((group, version, kind))
        if res is None and not self._refreshed:
            self.refresh()
            res = self._by_gvk.get((group, version, kind))
        return res

    def served(self, api_version, kind):
        return self.find(api_version, kind) is not None

    def versions_of(self, group, kind):
        return sorted(v for (g, v, k) in self.resources() if g == group and k == kind)

    def api_versions(self):
        """group/version and group/version/Kind strings, as helm's --api-versions expects."""
        out = set()
        for (g, v, k) in self.resources():
            gv = "%s/%s" % (g, v) if g else v
            out.add(gv)
            out.add("%s/%s" % (gv, k))
        return sorted(out)

    def require(self, api_version, kind, subject=None):
        res = self.find(api_version, kind)
        if res is None:
            raise DiscoveryError("the cluster does not serve %s %s" % (api_version, kind), subject=subject,
                                 hint="check apiVersion/kind, or install the CRD that defines it first")
        return res

    def path(self, api_version, kind, namespace=None, name=None, subject=None):
        res = self.require(api_version, kind, subject=subject)
        return resource_path(res, namespace, name)


def resource_path(res, namespace=None, name=None):
    base = "/api/%s" % res.version if not res.group else "/apis/%s/%s" % (res.group, res.version)
    if res.namespaced and namespace:
        base += "/namespaces/%s" % namespace
    base += "/" + res.plural
    if name:
        base += "/" + name
    return base


def _from_aggregated(doc):
    out = []
    for item in (doc or {}).get("items", []):
        group = (item.get("metadata") or {}).get("name", "")
        for v in item.get("versions", []):
            version = v.get("version")
            for r in v.get("resources", []):
                rk = r.get("responseKind") or {}
                kind = rk.get("kind")
                if not kind:
                    continue
                out.append([group, version, kind, r.get("resource"), r.get("scope") == "Namespaced",
                            r.get("verbs", [])])
    return out
