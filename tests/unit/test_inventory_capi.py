# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/inventory_capi.py: which Cluster objects become hosts (fixtures/capi/readiness.yaml, both served
API versions), and discover() over a FakeKube: the requests, names, region/az, credentials, skipped reasons."""

from __future__ import annotations

import base64
import copy
import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ApiError, DiscoveryError, InputError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.plugin_utils import inventory_capi

from .fakes import FakeKube

with open(os.path.join(os.path.dirname(__file__), "fixtures", "capi", "readiness.yaml"), encoding="utf-8") as _f:
    CASES = yaml.safe_load(_f)

TOKEN = "sekret-token-value-1234"


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_readiness(case):
    assert inventory_capi.readiness(case["object"]) == case["expect"]


def test_fixtures_hold_both_versions():
    versions = {c["object"]["apiVersion"] for c in CASES}
    assert versions == {"cluster.x-k8s.io/v1beta1", "cluster.x-k8s.io/v1beta2"}


def kubeconfig(name, contexts=None, current=True):
    contexts = contexts or ["%s-admin@%s" % (name, name)]
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": "https://%s.example:6443" % name,
                                                "certificate-authority-data": "Q0E="}}],
        "contexts": [{"name": c, "context": {"cluster": name, "user": "%s-admin" % name}} for c in contexts],
        "users": [{"name": "%s-admin" % name, "user": {"token": TOKEN}}],
    }
    if current:
        config["current-context"] = contexts[0]
    return config


def secret(config_or_text):
    text = config_or_text if isinstance(config_or_text, str) else yaml.safe_dump(config_or_text)
    return {"kind": "Secret", "type": "cluster.x-k8s.io/secret",
            "data": {"value": base64.b64encode(text.encode()).decode()}}


def cluster(name, namespace="fleet", version="v1beta2", labels=None, ready=True):
    by_name = {c["object"]["metadata"]["name"]: c["object"] for c in CASES}
    template = by_name["prod-eu1" if version == "v1beta2" else "legacy-eu1"] if ready else by_name["new-us1"]
    obj = copy.deepcopy(template)
    obj["apiVersion"] = "cluster.x-k8s.io/" + version if ready else obj["apiVersion"]
    obj["metadata"] = {"name": name, "namespace": namespace, "labels": labels or {}}
    return obj


class Management(FakeKube):
    """A management cluster: the cluster.x-k8s.io group (``preferred`` first), Cluster lists, kubeconfig Secrets."""

    def __init__(self, clusters, secrets, preferred="v1beta2", served=("v1beta2", "v1beta1")):
        super().__init__()
        self.clusters, self.secrets, self.preferred, self.served = clusters, secrets, preferred, served
        self.forbidden = set()

    def answer(self, method, path, **kwargs):
        assert method == "GET"
        if path == "/apis/cluster.x-k8s.io":
            if not self.served:
                raise NotFoundError("404 page not found", status=404, reason="NotFound")
            return {"kind": "APIGroup", "name": "cluster.x-k8s.io",
                    "versions": [{"groupVersion": "cluster.x-k8s.io/" + v, "version": v} for v in self.served],
                    "preferredVersion": {"groupVersion": "cluster.x-k8s.io/" + self.preferred,
                                         "version": self.preferred}}
        if path.endswith("/clusters"):
            if path in self.forbidden:
                raise ApiError("clusters.cluster.x-k8s.io is forbidden", status=403, reason="Forbidden")
            parts = path.split("/")
            namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts else None
            selector = (kwargs.get("query") or {}).get("labelSelector")
            items = [c for c in self.clusters if namespace in (None, c["metadata"]["namespace"])
                     and (not selector or all(c["metadata"]["labels"].get(k) == v
                                              for k, v in (p.split("=") for p in selector.split(","))))]
            return {"kind": "ClusterList", "metadata": {"resourceVersion": "7"}, "items": copy.deepcopy(items)}
        if "/secrets/" in path:
            namespace, name = path.split("/")[4], path.split("/")[6]
            found = self.secrets.get((namespace, name))
            if isinstance(found, Exception):
                raise found
            if found is None:
                raise NotFoundError('secrets "%s" not found' % name, status=404, reason="NotFound")
            return copy.deepcopy(found)
        raise AssertionError("unexpected request %s %s" % (method, path))


def by_name(found):
    return {f.name: f for f in found}


def test_discover_hosts_with_region_az_and_credentials():
    kube = Management(
        [cluster("eu1", labels={"topology.kubernetes.io/region": "eu1", "topology.kubernetes.io/zone": "eu1a",
                                "tier": "prod"}),
         cluster("us1", version="v1beta1", labels={"topology.kubernetes.io/region": "us1"}),
         cluster("new", ready=False)],
        {("fleet", "eu1-kubeconfig"): secret(kubeconfig("eu1")), ("fleet", "us1-kubeconfig"): secret(kubeconfig("us1"))})
    found = by_name(inventory_capi.discover(kube, {"cluster_api": {"management": {"context": "mgmt"}}}))
    assert sorted(found) == ["eu1", "new", "us1"]
    eu1 = found["eu1"]
    assert (eu1.region, eu1.az, eu1.context, eu1.skipped) == ("eu1", "eu1a", "eu1-admin@eu1", "")
    assert eu1.kubeconfig["users"][0]["user"]["token"] == TOKEN
    assert eu1.labels["tier"] == "prod"
    assert eu1.variables == {"manent_capi": {
        "namespace": "fleet", "name": "eu1", "api_version": "cluster.x-k8s.io/v1beta2", "phase": "Provisioned",
        "version": "v1.34.1", "cluster_class": "quick-start"}, "manent_cluster_server": "https://eu1.example:6443"}
    assert eu1.source == "Cluster API https://api.example:6443 namespace fleet"
    assert (found["us1"].region, found["us1"].az, found["us1"].skipped) == ("us1", "", "")
    assert found["new"].skipped == "phase Provisioning, not Provisioned"
    assert not found["new"].kubeconfig
    # the preferred version is listed across namespaces; no Secret is read for a cluster that is not ready
    assert kube.sent() == [("GET", "/apis/cluster.x-k8s.io"), ("GET", "/apis/cluster.x-k8s.io/v1beta2/clusters")] + [
        ("GET", "/api/v1/namespaces/fleet/secrets/%s-kubeconfig" % n) for n in ("eu1", "us1")]
    assert TOKEN not in repr(list(found.values()))


def test_preferred_v1beta1_is_listed_as_v1beta1():
    kube = Management([cluster("eu1", version="v1beta1")], {("fleet", "eu1-kubeconfig"): secret(kubeconfig("eu1"))},
                      preferred="v1beta1")
    [eu1] = inventory_capi.discover(kube, {})
    assert kube.sent()[1] == ("GET", "/apis/cluster.x-k8s.io/v1beta1/clusters")
    assert (eu1.skipped, eu1.variables["manent_capi"]["cluster_class"]) == ("", "quick-start")


def test_namespaces_label_selector_and_label_names():
    kube = Management(
        [cluster("a", "team-a", labels={"env": "prod", "example.com/region": "eu9", "example.com/az": "eu9b"}),
         cluster("b", "team-b", labels={"env": "dev"}), cluster("c", "team-c", labels={"env": "prod"})],
        {("team-a", "a-kubeconfig"): secret(kubeconfig("a")), ("team-b", "b-kubeconfig"): secret(kubeconfig("b"))})
    found = inventory_capi.discover(kube, {"namespaces": ["team-a", "team-b"], "label_selector": "env=prod",
                                           "region_label": "example.com/region", "az_label": "example.com/az"})
    assert [(f.name, f.region, f.az) for f in found] == [("a", "eu9", "eu9b")]
    assert kube.sent("query")[1:3] == [
        ("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/team-a/clusters", {"labelSelector": "env=prod", "limit": "500"}),
        ("GET", "/apis/cluster.x-k8s.io/v1beta2/namespaces/team-b/clusters", {"labelSelector": "env=prod", "limit": "500"})]


def test_same_name_in_two_namespaces_needs_prefix_namespace():
    clusters = [cluster("web", "team-a"), cluster("web", "team-b")]
    secrets = {(ns, "web-kubeconfig"): secret(kubeconfig("web")) for ns in ("team-a", "team-b")}
    with pytest.raises(InputError) as err:
        inventory_capi.discover(Management(clusters, secrets), {}, label="sources[2]")
    assert "sources[2].cluster_api: Cluster web exists in namespaces team-a, team-b" in str(err.value)
    assert "prefix_namespace" in err.value.hint
    found = inventory_capi.discover(Management(clusters, secrets), {"prefix_namespace": True})
    assert [f.name for f in found] == ["team-a.web", "team-b.web"]
    assert [f.variables["manent_capi"]["namespace"] for f in found] == ["team-a", "team-b"]


@pytest.mark.parametrize("stored, reason", [
    (None, "no Secret fleet/eu1-kubeconfig (Cluster API writes it once the control plane is up)"),
    (ApiError("forbidden", status=403, reason="Forbidden"), "Secret fleet/eu1-kubeconfig not readable (403 Forbidden)"),
    ({"data": {"other": "eA=="}}, "Secret fleet/eu1-kubeconfig has no key value"),
    (secret("users: [{token: %s" % TOKEN), "Secret fleet/eu1-kubeconfig: key value is not a kubeconfig (not YAML)"),
    ({"data": {"value": "%%%" + TOKEN}}, "Secret fleet/eu1-kubeconfig: key value is not a kubeconfig (not YAML)"),
    (secret({"token": TOKEN}), "Secret fleet/eu1-kubeconfig: key value is not a kubeconfig (no contexts)"),
    (secret(kubeconfig("eu1", contexts=["one", "two"], current=False)),
     "Secret fleet/eu1-kubeconfig: its kubeconfig has 2 contexts and no current-context"),
])
def test_unusable_secret_skips_the_cluster_without_its_content(stored, reason):
    secrets = {} if stored is None else {("fleet", "eu1-kubeconfig"): stored}
    [eu1] = inventory_capi.discover(Management([cluster("eu1")], secrets), {})
    assert eu1.skipped == reason
    assert (eu1.kubeconfig, eu1.context) == ({}, "")
    assert TOKEN not in repr(eu1) and TOKEN not in str(eu1.variables)


@pytest.mark.parametrize("contexts, current, expect", [
    (["eu1-admin@eu1", "other"], False, "eu1-admin@eu1"),  # Cluster API's own context name
    (["only"], False, "only"),
    (["a", "b"], True, "a"),
])
def test_context_choice(contexts, current, expect):
    config = kubeconfig("eu1", contexts=contexts, current=current)
    [eu1] = inventory_capi.discover(Management([cluster("eu1")], {("fleet", "eu1-kubeconfig"): secret(config)}), {})
    assert (eu1.skipped, eu1.context) == ("", expect)


def test_no_cluster_api_on_the_management_cluster():
    with pytest.raises(DiscoveryError) as err:
        inventory_capi.discover(Management([], {}, served=()), {}, label="sources[0]")
    assert "sources[0].cluster_api: the management cluster does not serve cluster.x-k8s.io" in str(err.value)


def test_only_an_unknown_version_served():
    with pytest.raises(DiscoveryError) as err:
        inventory_capi.discover(Management([], {}, preferred="v1alpha3", served=("v1alpha3",)), {})
    assert "serves cluster.x-k8s.io/v1alpha3, none of v1beta2, v1beta1" in str(err.value)


@pytest.mark.parametrize("item, message", [
    ({"namespace": "x"}, "source.cluster_api: unknown option(s) namespace"),
    ({"namespaces": [""]}, "cluster_api: namespaces is not a list of names"),
    ({"cluster_api": "mgmt"}, "cluster_api: not a mapping"),
])
def test_bad_options(item, message):
    with pytest.raises(InputError) as err:
        inventory_capi.capi_options(item)
    assert message in str(err.value)


def test_options_defaults_and_forms():
    assert inventory_capi.capi_options({}) == inventory_capi.CapiOptions()
    opts = inventory_capi.capi_options({"cluster_api": {"namespaces": "fleet", "prefix_namespace": "yes"}})
    assert (opts.namespaces, opts.prefix_namespace, opts.region_label, opts.az_label) == (
        ("fleet",), True, "topology.kubernetes.io/region", "topology.kubernetes.io/zone")


@pytest.mark.parametrize("item, path, message, hint", [
    ({}, "/apis/cluster.x-k8s.io/v1beta2/clusters",
     "sources[1].cluster_api: the management cluster's credentials may not list Clusters in all namespaces",
     "grant list on clusters.cluster.x-k8s.io there, or give namespaces"),
    ({"namespaces": ["a", "b"]}, "/apis/cluster.x-k8s.io/v1beta2/namespaces/b/clusters",
     "sources[1].cluster_api: the management cluster's credentials may not list Clusters in namespace b",
     "grant list on clusters.cluster.x-k8s.io there"),
])
def test_forbidden_list_names_where_and_what_to_grant(item, path, message, hint):
    kube = Management([], {})
    kube.forbidden.add(path)
    with pytest.raises(ApiError) as err:
        inventory_capi.discover(kube, item, label="sources[1]")
    assert (err.value.message, err.value.hint, err.value.status) == (message, hint, 403)
