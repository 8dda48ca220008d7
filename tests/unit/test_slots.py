# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The a/b slot transform of traffic rollouts: every slot kind for both routers and both naming modes,
shared kinds untouched, references, proportional replicas, and every error naming its object."""

from __future__ import annotations

import copy
import json
import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "slots")

with open(os.path.join(FIXTURES, "cases.yaml"), encoding="utf-8") as _handle:
    CASES = yaml.safe_load(_handle)
with open(os.path.join(FIXTURES, "shared.yaml"), encoding="utf-8") as _handle:
    SHARED = yaml.safe_load(_handle)

ROUTERS = ["gateway-api", "istio"]
OPTIONS = [pytest.param(router, rename, id="%s-%s" % (router, "rename" if rename else "keep"))
           for router in ROUTERS for rename in (True, False)]


def with_changes(obj, changes):
    """A copy of obj with each dotted path set to its value (intermediate maps created)."""
    out = copy.deepcopy(obj)
    for path, value in changes.items():
        node = out
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return out


def deployment(name, namespace="shop", replicas=None, labels=None):
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
           "spec": {"selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}}}}}
    if replicas is not None:
        obj["spec"]["replicas"] = replicas
    return obj


def statefulset(name, service_name, namespace="shop", replicas=None):
    obj = deployment(name, namespace, replicas)
    obj["kind"] = "StatefulSet"
    obj["spec"]["serviceName"] = service_name
    return obj


def service(name, namespace="shop"):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}


def hpa(name, kind, target, namespace="shop", api_version="autoscaling/v2"):
    return {"apiVersion": api_version, "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target}, "maxReplicas": 5}}


def by_ref(objects):
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}


# --- every slot kind, both routers, both naming modes ------------------------------------------------------

@pytest.mark.parametrize("router,rename", OPTIONS)
@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_slot_kind(case, router, rename):
    mode = "rename" if rename else "keep"
    changes = case["expect"][mode]
    if router == "istio" and "istio" in case:
        changes = case["istio"][mode]
    original = copy.deepcopy(case["object"])
    (result,) = slots.apply_slot([case["object"]], "b", rename=rename, router=router)
    assert result == with_changes(original, changes)
    assert case["object"] == original


def test_every_slot_kind_has_a_case():
    covered = {(case["object"]["apiVersion"].rpartition("/")[0], case["object"]["kind"]) for case in CASES}
    assert covered == {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("", "Service"),
                       ("autoscaling", "HorizontalPodAutoscaler"), ("policy", "PodDisruptionBudget")}


@pytest.mark.parametrize("router", ROUTERS)
def test_slot_a(router):
    (result,) = slots.apply_slot([deployment("web")], "a", router=router)
    assert result["metadata"] == {"name": "web-a", "namespace": "shop", "labels": {"manent.io/track": "a"}}
    assert result["spec"]["selector"]["matchLabels"] == {"app": "web", "manent.io/track": "a"}
    assert result["spec"]["template"]["metadata"]["labels"] == {"app": "web", "manent.io/track": "a"}


# --- shared kinds ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("proportional", [False, True], ids=["plain", "proportional"])
@pytest.mark.parametrize("router,rename", OPTIONS)
@pytest.mark.parametrize("obj", SHARED, ids=["%s %s" % (o["kind"], o["metadata"]["name"]) for o in SHARED])
def test_shared_kind_untouched(obj, router, rename, proportional):
    before = json.dumps(obj)
    (result,) = slots.apply_slot([obj], "b", rename=rename, router=router, proportional=proportional)
    assert json.dumps(result) == before
    assert result is not obj and result.get("metadata") is not obj.get("metadata")
    assert not slots.is_slot_kind(obj)


def test_shared_kinds_are_covered():
    assert {o["kind"] for o in SHARED} >= {"ConfigMap", "Secret", "Ingress", "ServiceAccount", "HTTPRoute", "Job",
                                           "CronJob"}


# --- references ---------------------------------------------------------------------------------------------

def _unslotted(name):
    """``name`` without the suffix slot b gives a renamed workload (a name without it stays as it is)."""
    return name[:-2] if name.endswith("-b") else name


def _statefulsets():
    return [
        service("db"),
        service("db", namespace="other"),
        statefulset("db", "db"),                     # its Service is renamed: follows
        statefulset("cache", "missing"),             # no such Service in the list: unchanged
        statefulset("queue", "db", namespace="elsewhere"),  # Service db exists, but not in its namespace
        statefulset("log", ""),                      # no serviceName at all
    ]


@pytest.mark.parametrize("router,rename,expected", [
    ("gateway-api", True, {"shop/db": "db-b", "shop/cache": "missing", "elsewhere/queue": "db", "shop/log": ""}),
    ("gateway-api", False, {"shop/db": "db", "shop/cache": "missing", "elsewhere/queue": "db", "shop/log": ""}),
    ("istio", True, {"shop/db": "db", "shop/cache": "missing", "elsewhere/queue": "db", "shop/log": ""}),
    ("istio", False, {"shop/db": "db", "shop/cache": "missing", "elsewhere/queue": "db", "shop/log": ""}),
])
def test_statefulset_service_name_follows_only_a_renamed_service(router, rename, expected):
    result = slots.apply_slot(_statefulsets(), "b", rename=rename, router=router)
    names = {"%s/%s" % (o["metadata"]["namespace"], _unslotted(o["metadata"]["name"])):
             o["spec"]["serviceName"] for o in result if o["kind"] == "StatefulSet"}
    assert names == expected


@pytest.mark.parametrize("api_version", ["autoscaling/v2", "autoscaling/v1"])
@pytest.mark.parametrize("rename,expected", [
    (True, {"web": "web-b", "db": "db-b", "wrong-kind": "db-only", "other-ns": "web", "outside": "absent"}),
    (False, {"web": "web", "db": "db", "wrong-kind": "db-only", "other-ns": "web", "outside": "absent"}),
])
def test_hpa_scale_target_follows(api_version, rename, expected):
    objects = [deployment("web"), statefulset("db", "db"), statefulset("db-only", ""),
               hpa("web", "Deployment", "web", api_version=api_version),
               hpa("db", "StatefulSet", "db", api_version=api_version),
               hpa("wrong-kind", "Deployment", "db-only", api_version=api_version),  # db-only is a StatefulSet
               hpa("other-ns", "Deployment", "web", namespace="other", api_version=api_version),
               hpa("outside", "Deployment", "absent", api_version=api_version)]
    result = slots.apply_slot(objects, "b", rename=rename)
    targets = {_unslotted(o["metadata"]["name"]): o["spec"]["scaleTargetRef"]["name"]
               for o in result if o["kind"] == "HorizontalPodAutoscaler"}
    assert targets == expected
    assert all(o["spec"]["scaleTargetRef"]["apiVersion"] == "apps/v1" for o in result
               if o["kind"] == "HorizontalPodAutoscaler")


# --- proportional replicas ---------------------------------------------------------------------------------

def _proportional_app():
    return [deployment("web", replicas=3), statefulset("db", "db"), deployment("api", replicas=5),
            deployment("idle", replicas=0), hpa("api", "Deployment", "api"),
            hpa("web", "Deployment", "web", namespace="other"),  # another namespace's web: not this one
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "shop"},
             "spec": {"selector": {"matchLabels": {"app": "agent"}}}}]


@pytest.mark.parametrize("rename", [True, False])
def test_proportional(rename):
    result = by_ref(slots.apply_slot(_proportional_app(), "b", rename=rename, proportional=True))
    name = (lambda n: n + "-b") if rename else (lambda n: n)
    web, db = result[("Deployment", "shop", name("web"))], result[("StatefulSet", "shop", name("db"))]
    api, idle = result[("Deployment", "shop", name("api"))], result[("Deployment", "shop", name("idle"))]
    agent = result[("DaemonSet", "shop", name("agent"))]
    assert (web["metadata"]["annotations"], web["spec"]["replicas"]) == ({"manent.io/replicas": "3"}, 1)
    assert (db["metadata"]["annotations"], db["spec"]["replicas"]) == ({"manent.io/replicas": "1"}, 1)
    assert (idle["metadata"]["annotations"], idle["spec"]["replicas"]) == ({"manent.io/replicas": "0"}, 0)
    assert "annotations" not in api["metadata"] and api["spec"]["replicas"] == 5  # HPA-managed
    assert "annotations" not in agent["metadata"] and "replicas" not in agent["spec"]


def test_not_proportional_keeps_replicas():
    result = by_ref(slots.apply_slot(_proportional_app(), "b"))
    assert result[("Deployment", "shop", "web-b")]["spec"]["replicas"] == 3
    assert "replicas" not in result[("StatefulSet", "shop", "db-b")]["spec"]
    assert not any("annotations" in o["metadata"] for o in result.values())


def test_proportional_keeps_existing_annotations():
    obj = deployment("web", replicas=4)
    obj["metadata"]["annotations"] = {"team": "shop"}
    (result,) = slots.apply_slot([obj], "a", proportional=True)
    assert result["metadata"]["annotations"] == {"team": "shop", "manent.io/replicas": "4"}
    assert result["spec"]["replicas"] == 1


# --- inputs, order ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("router,rename", OPTIONS)
def test_input_not_mutated_and_order_kept(router, rename):
    objects = [case["object"] for case in CASES] + SHARED + _proportional_app() + _statefulsets()
    before = copy.deepcopy(objects)
    result = slots.apply_slot(objects, "b", rename=rename, router=router, proportional=True)
    assert objects == before
    assert [(o["apiVersion"], o["kind"]) for o in result] == [(o["apiVersion"], o["kind"]) for o in objects]
    for out in result:  # nothing shared with the input: changing the result leaves the input alone
        out["metadata"]["name"] = "changed"
        out.setdefault("spec", {})["changed"] = True
    assert objects == before


# --- errors -------------------------------------------------------------------------------------------------

def _named(kind, name):
    if kind == "Service":
        return service(name)
    if kind == "Deployment":
        return deployment(name)
    return {"apiVersion": "policy/v1", "kind": kind, "metadata": {"name": name, "namespace": "shop"}}


@pytest.mark.parametrize("kind,length,limit", [
    ("Service", 62, 63),
    ("Deployment", 252, 253),
    ("PodDisruptionBudget", 252, 253),
])
def test_name_too_long(kind, length, limit):
    name = "s" * length
    with pytest.raises(InputError) as err:
        slots.apply_slot([_named(kind, name)], "b")
    text = str(err.value)
    assert "%s/shop/%s" % (kind, name) in text
    assert "slot b" in text and "limit of %d" % limit in text and "shorten" in text
    assert "at most %d characters" % (limit - 2) in text


@pytest.mark.parametrize("kind,length", [("Service", 61), ("Deployment", 251)])
def test_longest_name_that_fits(kind, length):
    (result,) = slots.apply_slot([_named(kind, "s" * length)], "a")
    assert result["metadata"]["name"] == "s" * length + "-a"


@pytest.mark.parametrize("router,rename", [("istio", True), ("gateway-api", False)])
def test_long_name_not_renamed_is_not_checked(router, rename):
    name = "s" * 63
    (result,) = slots.apply_slot([service(name)], "b", rename=rename, router=router)
    assert result["metadata"]["name"] == name


@pytest.mark.parametrize("path", [
    "metadata.labels",
    "spec.selector.matchLabels",
    "spec.template.metadata.labels",
])
@pytest.mark.parametrize("rename", [True, False])
def test_other_slot_track_label(path, rename):
    obj = deployment("web")
    node = obj
    for key in path.split("."):
        node = node.setdefault(key, {})
    node["manent.io/track"] = "a"
    with pytest.raises(InputError) as err:
        slots.apply_slot([obj], "b", rename=rename)
    text = str(err.value)
    assert text.startswith("Deployment/shop/web: ") and path in text
    assert "manent.io/track: a" in text and "slot b" in text and "other slot" in text


def test_other_slot_in_service_selector():
    obj = service("shop")
    obj["spec"]["selector"]["manent.io/track"] = "b"
    with pytest.raises(InputError, match=r"^Service/shop/shop: spec\.selector has manent\.io/track: b"):
        slots.apply_slot([obj], "a")
    (shared,) = slots.apply_slot([obj], "a", router="istio")  # an Istio Service is shared: not looked at
    assert shared == obj


def test_field_that_is_not_a_map():
    obj = deployment("web")
    obj["spec"]["template"]["metadata"] = "oops"
    with pytest.raises(InputError, match=r"^Deployment/shop/web: spec\.template\.metadata is not a map"):
        slots.apply_slot([obj], "b")


@pytest.mark.parametrize("slot", ["c", "", None, "A", "-b"])
def test_invalid_slot(slot):
    for call in (lambda: slots.apply_slot([deployment("web")], slot), lambda: slots.other_slot(slot),
                 lambda: slots.slot_name("web", slot),
                 lambda: slots.slot_objects([], slot)):
        with pytest.raises(InputError, match="unknown slot"):
            call()


@pytest.mark.parametrize("router", ["linkerd", "", "Istio"])
def test_unknown_router(router):
    with pytest.raises(InputError, match="unknown traffic router"):
        slots.apply_slot([deployment("web")], "a", router=router)


# --- replicas -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("percent,expected", [
    (0, (1, 1, 1)),
    (10, (1, 1, 1)),
    (25, (1, 1, 3)),
    (50, (1, 2, 5)),
    (100, (1, 3, 10)),
    (33.4, (1, 2, 4)),
])
def test_replicas_for(percent, expected):
    assert tuple(slots.replicas_for(replicas, percent) for replicas in (1, 3, 10)) == expected


def test_replicas_for_zero_replicas_stays_zero():
    assert slots.replicas_for(0, 50) == 0


@pytest.mark.parametrize("replicas,percent", [(3, -1), (3, 101), (3, 100.5), (3, True), (3, "50"), (-1, 50),
                                              (2.5, 50), (False, 50)])
def test_replicas_for_invalid(replicas, percent):
    with pytest.raises(InputError):
        slots.replicas_for(replicas, percent)


@pytest.mark.parametrize("metadata,spec,expected", [
    ({"annotations": {"manent.io/replicas": "7"}}, {"replicas": 1}, 7),
    ({"annotations": {"manent.io/replicas": " 0 "}}, {"replicas": 1}, 0),
    ({}, {"replicas": 4}, 4),
    ({}, {"replicas": 0}, 0),
    ({}, {}, 1),
    ({"annotations": {}}, None, 1),
])
def test_manifest_replicas(metadata, spec, expected):
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": dict(metadata, name="web"), "spec": spec}
    assert slots.manifest_replicas(obj) == expected


@pytest.mark.parametrize("metadata,spec,field", [
    ({"annotations": {"manent.io/replicas": "three"}}, {}, "annotation manent.io/replicas"),
    ({"annotations": {"manent.io/replicas": "-1"}}, {}, "annotation manent.io/replicas"),
    ({}, {"replicas": -2}, "spec.replicas"),
    ({}, {"replicas": 1.5}, "spec.replicas"),
])
def test_manifest_replicas_invalid(metadata, spec, field):
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": dict(metadata, name="web", namespace="shop"), "spec": spec}
    with pytest.raises(InputError) as err:
        slots.manifest_replicas(obj)
    assert str(err.value).startswith("Deployment/shop/web: %s is " % field)


# --- small helpers ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("in_service,candidate", [("", "a"), (None, "a"), ("a", "b"), ("b", "a")])
def test_candidate_slot(in_service, candidate):
    assert slots.candidate_slot(in_service) == candidate


def test_candidate_slot_unknown():
    with pytest.raises(InputError, match="unknown slot 'c'"):
        slots.candidate_slot("c")


def test_other_slot():
    assert (slots.other_slot("a"), slots.other_slot("b")) == ("b", "a")


@pytest.mark.parametrize("name,slot,suffixed", [
    ("shop", "a", "shop-a"),
    ("shop-a", "a", "shop-a-a"),
    ("shop-a", "b", "shop-a-b"),
    ("-b", "b", "-b-b"),
])
def test_slot_name(name, slot, suffixed):
    assert slots.slot_name(name, slot) == suffixed


@pytest.mark.parametrize("api_version,kind,expected", [
    ("apps/v1", "Deployment", True), ("apps/v1beta2", "StatefulSet", True), ("apps/v1", "DaemonSet", True),
    ("v1", "Service", True), ("autoscaling/v1", "HorizontalPodAutoscaler", True),
    ("autoscaling/v2", "HorizontalPodAutoscaler", True), ("policy/v1", "PodDisruptionBudget", True),
    ("policy/v1beta1", "PodDisruptionBudget", True),
    ("example.com/v1", "Deployment", False), ("serving.knative.dev/v1", "Service", False),
    ("apps/v1", "ReplicaSet", False), ("v1", "ConfigMap", False), ("batch/v1", "Job", False),
    ("gateway.networking.k8s.io/v1", "HTTPRoute", False),
])
def test_is_slot_kind(api_version, kind, expected):
    assert slots.is_slot_kind({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}) is expected


def test_slot_of_and_slot_objects():
    tracked_a = deployment("web", labels={"manent.io/track": "a"})
    tracked_b = service("web")
    tracked_b["metadata"]["labels"] = {"manent.io/track": "b"}
    untracked = deployment("api")
    shared = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert [slots.slot_of(o) for o in (tracked_a, tracked_b, untracked, shared)] == ["a", "b", "", ""]
    objects = [tracked_a, untracked, tracked_b, shared]
    assert slots.slot_objects(objects, "a") == [tracked_a]
    assert slots.slot_objects(objects, "b") == [tracked_b]


def test_slot_objects_of_a_transformed_release():
    result = slots.apply_slot([deployment("web"), service("web")] + SHARED, "b")
    assert [(o["kind"], o["metadata"]["name"]) for o in slots.slot_objects(result, "b")] == [
        ("Deployment", "web-b"), ("Service", "web-b")]
    # only the track label counts: the shared ConfigMap that carries track a is returned as it is
    assert [(o["kind"], o["metadata"]["name"]) for o in slots.slot_objects(result, "a")] == [
        ("ConfigMap", "shop-a-only")]


def test_hpa_targets():
    not_autoscaling = {"apiVersion": "example.com/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "fake"},
                       "spec": {"scaleTargetRef": {"kind": "X", "name": "y"}}}
    objects = [hpa("web", "Deployment", "web"),
               hpa("db", "StatefulSet", "db", namespace="data", api_version="autoscaling/v1"),
               deployment("web"), not_autoscaling]
    assert slots.hpa_targets(objects) == {("shop", "Deployment", "web"), ("data", "StatefulSet", "db")}
    assert slots.hpa_targets([]) == set()


def test_constants():
    assert slots.SLOTS == ("a", "b")
    assert (slots.TRACK_LABEL, slots.REPLICAS_ANNOTATION) == ("manent.io/track", "manent.io/replicas")
    assert (slots.ROUTER_GATEWAY, slots.ROUTER_ISTIO) == ("gateway-api", "istio")


@pytest.mark.parametrize("label, kind, kept", [
    ("b", "Deployment", True), ("a", "Deployment", False), ("", "Deployment", False), ("", "ConfigMap", True),
    ("a", "ConfigMap", False), ("", "Service", False), ("b", "Service", True),
])
def test_prunable_by_a_deploy_into_b(label, kind, kept):
    api = "apps/v1" if kind == "Deployment" else "v1"
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "x", "namespace": "ns",
                                                         "labels": {"manent.io/track": label} if label else {}}}
    assert (slots.prunable_by([obj], "b") == [obj]) is kept
