# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""delete.Deleter: the apiVersion an object stored in history is deleted through, and the DELETE it sends (a fake
discovery and API; the real deletes are tested against clusters in test_deploy, test_lifecycle, test_removed_apis)."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.engine.delete import DeleteOptions, Deleter
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApplyError, NotFoundError


class FakeDiscovery:
    def __init__(self, served):
        self.served_gvk = set(served)  # {("apps/v1", "Deployment"), ...}

    def served(self, api_version, kind):
        return (api_version, kind) in self.served_gvk

    def versions_of(self, group, kind):
        return sorted(av.split("/")[-1] for av, k in self.served_gvk
                      if k == kind and (av.split("/")[0] if "/" in av else "") == group)


class FakeReader:
    def __init__(self, live=None):
        self.live = live

    def path(self, obj):
        return "/%s/%s" % (obj["apiVersion"], obj["metadata"]["name"])

    def get(self, _obj):
        return self.live


class FakeKube:
    def __init__(self, missing=False):
        self.calls = []
        self.missing = missing

    def request(self, method, path, query=None, subject=None, body=None, content_type=None):
        self.calls.append((method, path, query, body))
        if self.missing:
            raise NotFoundError("not found", status=404, subject=subject)


def obj(api_version, kind, name="web"):
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "shop"}}


@pytest.mark.parametrize("stored, served, expected", [
    (obj("apps/v1", "Deployment"), {("apps/v1", "Deployment")}, "apps/v1"),
    (obj("apps/v1beta2", "Deployment"), {("apps/v1", "Deployment")}, "apps/v1"),
    (obj("extensions/v1beta1", "Deployment"), {("apps/v1", "Deployment")}, "apps/v1"),
    (obj("extensions/v1beta1", "Ingress"), {("networking.k8s.io/v1", "Ingress")}, "networking.k8s.io/v1"),
])
def test_served_version_of_a_stored_object(stored, served, expected):
    deleter = Deleter(FakeKube(), FakeDiscovery(served), FakeReader())
    assert deleter.served(stored)["apiVersion"] == expected
    assert stored["apiVersion"] != expected or deleter.served(stored) is stored


def test_no_served_version_names_the_object():
    deleter = Deleter(FakeKube(), FakeDiscovery(set()), FakeReader())
    with pytest.raises(ApplyError) as err:
        deleter.served(obj("extensions/v1beta1", "PodSecurityPolicy", "restricted"))
    assert str(err.value).startswith("PodSecurityPolicy/shop/restricted: cannot delete")


def test_delete_sends_its_options_in_the_body():
    kube = FakeKube()
    deleter = Deleter(kube, FakeDiscovery(set()), FakeReader(), DeleteOptions(dry_run=True))
    assert deleter.delete(obj("v1", "ConfigMap"), propagation="Background", uid="u-1") is True
    assert kube.calls == [("DELETE", "/v1/web", {"propagationPolicy": "Background", "dryRun": "All"},
                           {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
                            "preconditions": {"uid": "u-1"}, "dryRun": ["All"]})]


def test_absent_is_not_an_error_and_a_replaced_object_counts_as_gone():
    assert Deleter(FakeKube(missing=True), FakeDiscovery(set()), FakeReader()).delete(obj("v1", "ConfigMap")) is False
    replaced = FakeReader(live={"metadata": {"uid": "new"}})
    assert Deleter(FakeKube(), FakeDiscovery(set()), replaced).delete(obj("v1", "ConfigMap"), uid="old") is True
