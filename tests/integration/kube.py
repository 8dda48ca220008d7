# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A test-side handle on one real cluster, built on the collection's own client (no mocks)."""

import os
import time

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import ConnectionOptions, Kube, resolve_secret
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import DiscoveryError, ManentError, NotFoundError


class Cluster:
    def __init__(self, name, url, token, ca_file, region="", az="", hostvars=None):
        self.name = name
        self.url = url
        self.token = token
        self.ca_file = ca_file
        self.region = region
        self.az = az
        self.hostvars = hostvars or {}
        self._kube = None
        self._discovery = None

    @classmethod
    def from_hostvars(cls, name, hv):
        return cls(name, hv["manent_api_server"], resolve_secret(hv["manent_token"], "token"),
                   hv.get("manent_ca_file", ""), hv.get("region", ""), hv.get("az", ""), hv)

    @property
    def dir(self):
        return os.path.dirname(self.ca_file)

    def connection(self, **overrides):
        opts = dict(server=self.url, token=self.token, ca_file=self.ca_file)
        opts.update(overrides)
        return ConnectionOptions(**opts)

    @property
    def kube(self):
        if self._kube is None:
            self._kube = Kube(self.connection())
        return self._kube

    @property
    def discovery(self):
        if self._discovery is None:
            self._discovery = Discovery(self.kube)
        return self._discovery

    def path(self, api_version, kind, namespace=None, name=None):
        try:
            return self.discovery.path(api_version, kind, namespace, name)
        except DiscoveryError:
            # The shared handle lives for the whole session; the product refreshes once per run, tests may
            # look up kinds created long after: start a fresh discovery and ask again.
            self._discovery = Discovery(self.kube)
            return self.discovery.path(api_version, kind, namespace, name)

    def get(self, api_version, kind, namespace, name):
        try:
            return self.kube.get_json(self.path(api_version, kind, namespace, name))
        except NotFoundError:
            return None

    def list(self, api_version, kind, namespace=None, selector=None):
        q = {"labelSelector": selector} if selector else None
        return self.kube.get_json(self.path(api_version, kind, namespace), query=q)["items"]

    def apply(self, obj, manager="test-setup", force=True, token=None):
        meta = obj["metadata"]
        path = self.path(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])
        kube = self.kube if token is None else Kube(self.connection(token=token))
        return kube.request("PATCH", path, query={"fieldManager": manager, "force": force}, body=obj,
                            content_type="application/apply-patch+yaml").data

    def delete(self, api_version, kind, namespace, name):
        try:
            self.kube.request("DELETE", self.path(api_version, kind, namespace, name))
        except NotFoundError:
            pass

    def create_namespace(self, name):
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def delete_namespace(self, name):
        self.delete("v1", "Namespace", None, name)

    def assert_deleted(self, api_version, kind, namespace, name, timeout=30):
        """A deleted object (manent deletes with Foreground propagation by default and does not wait) is at once
        gone or being deleted (deletionTimestamp set); then the garbage collector removes it, later when the
        controllers are busy: waits up to ``timeout`` for that."""
        live = self.get(api_version, kind, namespace, name)
        what = "/".join(p for p in (kind, namespace, name) if p)
        assert live is None or (live.get("metadata") or {}).get("deletionTimestamp"), "%s was not deleted" % what
        self.wait(lambda: self.get(api_version, kind, namespace, name) is None, timeout=timeout,
                  what="%s gone" % what)

    def wait(self, predicate, timeout=60, interval=0.5, what="condition"):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(interval)
        raise AssertionError("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))


def whoami(kube):
    """The user the API server sees for ``kube``'s credentials (a SelfSubjectReview)."""
    review = kube.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                          body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                          subject="credentials check")
    return ((review.data.get("status") or {}).get("userInfo") or {}).get("username", "")


# A namespace Role with what a deploy of ConfigMaps, Secrets, Services and Deployments needs (no events, no other kind).
DEPLOYER_RULES = [{"apiGroups": [""], "resources": ["configmaps", "secrets", "services"], "verbs": ["*"]},
                  {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]}]


def deployer_token(cluster, namespace, rules=None):
    """The token of user manent-deployer (``deployer.token`` of the cluster's directory), bound to a Role of ``rules``
    (default DEPLOYER_RULES) in ``namespace`` only, once RBAC lets it list the ConfigMaps there."""
    with open(os.path.join(cluster.dir, "deployer.token"), encoding="utf-8") as handle:
        token = handle.read().strip()
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "deployer", "namespace": namespace}, "rules": rules or DEPLOYER_RULES})
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "deployer", "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "manent-deployer"}]})
    with Kube(cluster.connection(token=token)) as kube:
        cluster.wait(lambda: can_list(kube, namespace), what="RBAC for manent-deployer")
    return token


def can_list(kube, namespace, resource="configmaps"):
    """Whether ``kube``'s credentials may list ``resource`` in ``namespace`` (RBAC takes a moment to apply)."""
    try:
        kube.get_json("/api/v1/namespaces/%s/%s" % (namespace, resource))
        return True
    except ManentError:
        return False
