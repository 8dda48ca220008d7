# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API-version table (its invariants and contents), check(), map_for_cluster() and delete_api_version()."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils import apiversions
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import InputError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "apiversions")


def _load(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


REMOVALS = _load("removals.yaml")
CHECK_CASES = _load("check_cases.yaml")


# ---- table invariants

def test_entries_are_unique():
    keys = [(e.api_version, e.kind) for e in apiversions.entries()]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("entry", apiversions.entries(), ids=lambda e: "%s-%s" % (e.api_version, e.kind))
def test_entry_invariants(entry):
    assert entry.deprecated >= (1, 2)
    if entry.removed_in is not None:
        assert entry.removed > entry.deprecated
    assert entry.note.strip()
    if entry.replacement is None:
        assert entry.rename is False
    else:
        assert entry.replacement != entry.api_version
        # the replacement is not itself removed
        replaced_by = apiversions.lookup(entry.replacement, entry.new_kind)
        assert replaced_by is None or replaced_by.removed_in is None
    if entry.replacement_kind:
        assert entry.rename is False


@pytest.mark.parametrize("api_version,kind,deprecated_in,removed_in,replacement,rename", REMOVALS,
                         ids=["%s-%s" % (r[0], r[1]) for r in REMOVALS])
def test_table_holds_every_documented_removal(api_version, kind, deprecated_in, removed_in, replacement, rename):
    entry = apiversions.lookup(api_version, kind)
    assert entry is not None
    assert (entry.deprecated_in, entry.removed_in, entry.replacement, entry.rename) == (
        deprecated_in, removed_in, replacement, rename)


def test_every_removal_release_from_1_16_to_1_32_is_covered():
    releases = {e.removed_in for e in apiversions.entries() if e.removed_in}
    assert releases == {"1.16", "1.22", "1.23", "1.25", "1.26", "1.27", "1.29", "1.32"}


def test_lookup_of_current_or_unknown_apis_is_none():
    assert apiversions.lookup("apps/v1", "Deployment") is None
    assert apiversions.lookup("extensions/v1beta1", "Widget") is None
    assert apiversions.lookup(None, None) is None


def test_entry_properties():
    entry = apiversions.lookup("v1", "Endpoints")
    assert (entry.group, entry.version, entry.api_version) == ("", "v1", "v1")
    assert entry.new_kind == "EndpointSlice"
    assert entry.replacement_text == "discovery.k8s.io/v1 EndpointSlice"
    assert entry.removed is None
    assert apiversions.lookup("policy/v1beta1", "PodSecurityPolicy").replacement_text == "no replacement"


# ---- versions

@pytest.mark.parametrize("value,expected", [
    ((1, 34), (1, 34)), ([1, 9], (1, 9)), ("1.34", (1, 34)), ("v1.34.2", (1, 34)), ("1.34+", (1, 34)),
    (" v1.8.0-gke.1 ", (1, 8)),
])
def test_parse_version(value, expected):
    assert apiversions.parse_version(value) == expected


@pytest.mark.parametrize("value", ["", None, "one.two", "1"])
def test_parse_version_rejects(value):
    with pytest.raises(ValueError):
        apiversions.parse_version(value)


def test_version_priority_orders_like_kubernetes():
    versions = ["v1beta1", "v1alpha1", "v2beta2", "v1", "v2", "v1beta2", "v11alpha2", "foo", "v10"]
    ordered = sorted(versions, key=apiversions.version_priority, reverse=True)
    assert ordered == ["v10", "v2", "v1", "v2beta2", "v1beta2", "v1beta1", "v11alpha2", "v1alpha1", "foo"]
    assert apiversions.version_priority("apps/v1") == apiversions.version_priority("v1")[:3] + ("v1",)


# ---- check()

@pytest.mark.parametrize("case", CHECK_CASES, ids=[c["id"] for c in CHECK_CASES])
def test_check(case):
    api_version, kind, cluster, served = case["args"]
    finding = apiversions.check(api_version, kind, cluster, served)
    if case["level"] is None:
        assert finding is None
        return
    assert finding.level == case["level"]
    assert finding.replacement == case["replacement"]
    assert finding.rename is case["rename"]
    assert finding.entry is apiversions.lookup(api_version, kind)
    for text in case["message"]:
        assert text in finding.message


@pytest.mark.parametrize("entry", [e for e in apiversions.entries() if e.removed_in],
                         ids=lambda e: "%s-%s" % (e.api_version, e.kind))
def test_every_removed_entry_is_an_error_on_1_34(entry):
    finding = apiversions.check(entry.api_version, entry.kind, (1, 34), served=False)
    assert finding.level == "error"
    assert "%s %s" % (entry.api_version, entry.kind) in finding.message
    assert "removed in Kubernetes %s" % entry.removed_in in finding.message
    if entry.replacement:
        assert entry.replacement in finding.message


# ---- map_for_cluster()

def _obj(api_version, kind, name="web", namespace="shop", **spec):
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
    if namespace:
        obj["metadata"]["namespace"] = namespace
    if spec:
        obj["spec"] = spec
    return obj


def _served(*pairs):
    served = set(pairs)
    return lambda api_version, kind: (api_version, kind) in served


def test_map_keeps_served_objects_untouched():
    obj = _obj("apps/v1", "Deployment")
    new_obj, note = apiversions.map_for_cluster(obj, _served(("apps/v1", "Deployment")))
    assert new_obj is obj
    assert note is None


def test_map_apps_v1beta1_deployment_is_not_a_rename():
    # apps/v1 requires spec.selector, which apps/v1beta1 defaulted from the template labels.
    obj = _obj("apps/v1beta1", "Deployment", template={"metadata": {"labels": {"app": "web"}}})
    with pytest.raises(InputError) as err:
        apiversions.map_for_cluster(obj, _served(("apps/v1", "Deployment")))
    text = str(err.value)
    assert err.value.subject == "Deployment/shop/web"
    assert "apps/v1beta1 Deployment (removed in Kubernetes 1.16)" in text
    assert "not a pure rename" in text
    assert "spec.selector is required" in text
    assert "rewrite the stored release history" in err.value.hint


def test_map_apps_v1beta2_deployment_is_a_rename():
    obj = _obj("apps/v1beta2", "Deployment", selector={"matchLabels": {"app": "web"}})
    original = copy.deepcopy(obj)
    new_obj, note = apiversions.map_for_cluster(obj, _served(("apps/v1", "Deployment")))
    assert new_obj == dict(original, apiVersion="apps/v1")
    assert obj == original
    assert note == ("Deployment/shop/web: stored as apps/v1beta2, which this cluster no longer serves "
                    "(removed in Kubernetes 1.16); using apps/v1 instead, a pure rename")


def test_map_rename_copies_deeply():
    obj = _obj("batch/v1beta1", "CronJob", schedule="* * * * *")
    new_obj, _note = apiversions.map_for_cluster(obj, _served(("batch/v1", "CronJob")))
    new_obj["spec"]["schedule"] = "0 * * * *"
    assert obj["spec"]["schedule"] == "* * * * *"
    assert obj["apiVersion"] == "batch/v1beta1"


def test_map_cluster_scoped_rename_note():
    obj = _obj("rbac.authorization.k8s.io/v1beta1", "ClusterRole", name="reader", namespace=None)
    new_obj, note = apiversions.map_for_cluster(obj, _served(("rbac.authorization.k8s.io/v1", "ClusterRole")))
    assert new_obj["apiVersion"] == "rbac.authorization.k8s.io/v1"
    assert note.startswith("ClusterRole/reader: stored as rbac.authorization.k8s.io/v1beta1")


def test_map_extensions_ingress_is_not_a_rename():
    obj = _obj("extensions/v1beta1", "Ingress", backend={"serviceName": "web", "servicePort": 80})
    with pytest.raises(InputError) as err:
        apiversions.map_for_cluster(obj, _served(("networking.k8s.io/v1", "Ingress")))
    assert err.value.subject == "Ingress/shop/web"
    assert "extensions/v1beta1 Ingress (removed in Kubernetes 1.22)" in str(err.value)
    assert "networking.k8s.io/v1 Ingress is not a pure rename" in str(err.value)


def test_map_without_replacement():
    obj = _obj("policy/v1beta1", "PodSecurityPolicy", name="restricted", namespace=None)
    with pytest.raises(InputError) as err:
        apiversions.map_for_cluster(obj, _served())
    assert err.value.subject == "PodSecurityPolicy/restricted"
    assert "has no replacement" in str(err.value)
    assert "Pod Security Admission" in err.value.hint


def test_map_rename_whose_replacement_is_not_served():
    obj = _obj("batch/v1beta1", "CronJob")
    with pytest.raises(InputError) as err:
        apiversions.map_for_cluster(obj, _served())
    assert "does not serve the replacement batch/v1 CronJob either" in str(err.value)


def test_map_unknown_kind_not_served():
    obj = _obj("example.com/v1", "Widget")
    with pytest.raises(InputError) as err:
        apiversions.map_for_cluster(obj, _served())
    assert err.value.subject == "Widget/shop/web"
    assert "example.com/v1" in str(err.value)
    assert "knows no replacement" in str(err.value)


# ---- delete_api_version()

@pytest.mark.parametrize("group,kind,served,expected", [
    ("apps", "Deployment", ["apps/v1"], "apps/v1"),
    ("apps", "Deployment", ["apps/v1beta2", "apps/v1", "apps/v1beta1"], "apps/v1"),
    ("extensions", "Deployment", ["apps/v1"], "apps/v1"),
    ("extensions", "Ingress", ["networking.k8s.io/v1"], "networking.k8s.io/v1"),
    ("extensions", "Ingress", ["networking.k8s.io/v1beta1"], "networking.k8s.io/v1beta1"),
    ("extensions", "NetworkPolicy", ["networking.k8s.io/v1"], "networking.k8s.io/v1"),
    ("extensions", "Ingress", ["extensions/v1beta1", "networking.k8s.io/v1"], "extensions/v1beta1"),
    ("policy", "PodDisruptionBudget", ["policy/v1"], "policy/v1"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema",
     ["flowcontrol.apiserver.k8s.io/v1beta3", "flowcontrol.apiserver.k8s.io/v1"], "flowcontrol.apiserver.k8s.io/v1"),
    ("", "Endpoints", ["v1"], "v1"),
    ("", "Endpoints", ["discovery.k8s.io/v1"], None),  # a different kind cannot delete it
    ("extensions", "PodSecurityPolicy", [], None),
    ("apps", "Deployment", [], None),
    ("apps", "Deployment", None, None),
])
def test_delete_api_version(group, kind, served, expected):
    assert apiversions.delete_api_version(group, kind, served) == expected


@pytest.mark.parametrize("group,kind,expected", [
    ("extensions", "Deployment", ["apps"]),
    ("extensions", "Ingress", ["networking.k8s.io"]),
    ("apps", "Deployment", []),  # apps/v1beta1 -> apps/v1: the same group
    ("", "Endpoints", []),  # replaced by another kind (EndpointSlice): not moved
    ("example.com", "Widget", []),
])
def test_moved_groups(group, kind, expected):
    assert apiversions.moved_groups(group, kind) == expected
