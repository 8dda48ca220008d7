# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""routes: slot weights of HTTPRoute, GRPCRoute and VirtualService, the DestinationRule check, acceptance,
and the wait_accepted loop (fake clock, scripted answers).

Route objects are the ones a local API server stored (tests/unit/fixtures/routes/*.yaml); invalid.yaml and
acceptance.yaml are tables of cases.
"""

from __future__ import annotations

import copy
import json
import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import acceptance, routes
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.destinations import check_subsets, lookup_path
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.istio import service_of
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.weights import (
    Target, current_weights, describe_share, sending_to, set_weights, shares)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, InputError, WaitError
from tests.integration.route_helpers import weights
from tests.unit.fakes import FakeClock

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "routes")
TESTERS = {"name": "x-canary", "value": "always"}
STEPS = [0, 10, 50, 100]
OTHER = {"a": "b", "b": "a"}


def load(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def table(name):
    return [pytest.param(case, id=case["name"]) for case in load(name)]


def without_weights(rule):
    rule = copy.deepcopy(rule)
    for ref in rule.get("backendRefs") or rule.get("route") or ():
        ref.pop("weight", None)
    return rule


def rule_named(spec, name):
    return next(rule for rule in spec["rules"] if rule.get("name") == name)


def expected(candidate, percent):
    return {candidate: percent, OTHER[candidate]: 100 - percent}


# ------------------------------------------------------------------------------------------- HTTPRoute

@pytest.mark.parametrize("candidate", ["a", "b"])
@pytest.mark.parametrize("percent", STEPS)
def test_httproute_step_sets_only_the_slot_weights(candidate, percent):
    route = load("httproute.yaml")
    before = copy.deepcopy(route)
    spec = set_weights(route, "HTTPRoute", "shop", candidate, percent, testers=TESTERS)
    assert route == before, "the input route must not change"
    assert weights(rule_named(spec, "app")) == expected(candidate, percent)
    assert weights(rule_named(spec, "testers")) == expected(candidate, 100)
    assert rule_named(spec, "static") == rule_named(before["spec"], "static")
    assert without_weights(rule_named(spec, "app")) == without_weights(rule_named(before["spec"], "app"))
    assert without_weights(rule_named(spec, "testers")) == without_weights(rule_named(before["spec"], "testers"))
    assert [rule["name"] for rule in spec["rules"]] == ["testers", "static", "app"]
    assert {k: v for k, v in spec.items() if k != "rules"} == {k: v for k, v in before["spec"].items() if k != "rules"}
    assert current_weights(dict(route, spec=spec), "HTTPRoute", "shop", testers=TESTERS) == \
        expected(candidate, percent)


def test_testers_rule_is_byte_identical_at_every_step():
    route = load("httproute.yaml")
    seen = set()
    for percent in STEPS:
        spec = set_weights(route, "HTTPRoute", "shop", "b", percent, testers=TESTERS)
        seen.add(json.dumps(rule_named(spec, "testers"), sort_keys=False))
        route = dict(route, spec=spec)
    assert len(seen) == 1
    assert weights(json.loads(seen.pop())) == {"a": 0, "b": 100}


def test_steps_do_not_depend_on_the_previous_step():
    route = load("httproute.yaml")
    stepped = route
    for percent in STEPS:
        stepped = dict(stepped, spec=set_weights(stepped, "HTTPRoute", "shop", "b", percent, testers=TESTERS))
        assert stepped["spec"] == set_weights(route, "HTTPRoute", "shop", "b", percent, testers=TESTERS)


def test_weights_already_set_give_the_same_spec():
    route = load("httproute.yaml")  # testers -> a, app a=100 b=0
    assert set_weights(route, "HTTPRoute", "shop", "a", 100, testers=TESTERS) == route["spec"]
    assert set_weights(route, "HTTPRoute", "shop", "b", 0, testers=TESTERS) != route["spec"]  # testers move


def test_other_backends_of_the_weighted_rule_keep_their_weights():
    route = {"metadata": {"name": "shop", "namespace": "shop"}, "spec": {"rules": [{"backendRefs": [
        {"name": "shop-legacy", "port": 80, "weight": 5},
        {"name": "shop-a", "port": 80},
        {"group": "", "kind": "Service", "name": "shop-b", "namespace": "shop", "port": 80}]}]}}
    spec = set_weights(route, "HTTPRoute", "shop", "b", 10)
    assert spec["rules"][0]["backendRefs"] == [
        {"name": "shop-legacy", "port": 80, "weight": 5},
        {"name": "shop-a", "port": 80, "weight": 90},
        {"group": "", "kind": "Service", "name": "shop-b", "namespace": "shop", "port": 80, "weight": 10}]


def test_a_route_of_another_namespace_weighs_the_backends_naming_the_services_namespace():
    route = {"metadata": {"name": "shop", "namespace": "infra"}, "spec": {"rules": [
        {"backendRefs": [{"name": "shop-a", "port": 80}, {"name": "shop-b", "port": 80}]},
        {"backendRefs": [{"name": "shop-a", "namespace": "shop-prod", "port": 80},
                         {"name": "shop-b", "namespace": "shop-prod", "port": 80, "weight": 0}]}]}}
    spec = set_weights(route, "HTTPRoute", "shop", "b", 10, namespace="shop-prod")
    assert spec["rules"][0] == route["spec"]["rules"][0], "the Services shop-a and shop-b of infra: not the slots"
    assert weights(spec["rules"][1]) == {"a": 90, "b": 10}
    assert current_weights(route, "HTTPRoute", "shop", namespace="shop-prod") == {"a": 1, "b": 0}
    assert current_weights(route, "HTTPRoute", "shop") == {"a": 1, "b": 1}, "default: the route's namespace"


def test_every_rule_with_both_slots_is_weighted():
    rule = {"backendRefs": [{"name": "shop-a", "port": 80}, {"name": "shop-b", "port": 80}]}
    route = {"metadata": {"name": "shop", "namespace": "shop"},
             "spec": {"rules": [dict(rule, matches=[{"path": {"type": "PathPrefix", "value": "/api"}}]), rule]}}
    spec = set_weights(route, "HTTPRoute", "shop", "a", 50)
    assert [weights(r) for r in spec["rules"]] == [{"a": 50, "b": 50}, {"a": 50, "b": 50}]


def test_without_testers_the_header_rule_is_just_another_weighted_rule():
    route = load("httproute.yaml")
    spec = set_weights(route, "HTTPRoute", "shop", "b", 10)
    assert weights(rule_named(spec, "testers")) == {"a": 90, "b": 10}
    # current_weights reads the first weighted rule: give the testers to skip theirs
    assert current_weights(route, "HTTPRoute", "shop") == {"a": 100, "b": 0}
    stepped = dict(route, spec=set_weights(route, "HTTPRoute", "shop", "b", 10, testers=TESTERS))
    assert current_weights(stepped, "HTTPRoute", "shop") == {"a": 0, "b": 100}
    assert current_weights(stepped, "HTTPRoute", "shop", testers=TESTERS) == {"a": 90, "b": 10}


def test_testers_header_name_is_case_insensitive_and_value_optional():
    route = load("httproute.yaml")  # the stored header name is X-Canary
    for testers in ({"name": "X-CANARY", "value": "always"}, {"name": "x-canary"}, {"name": "x-canary", "value": ""}):
        spec = set_weights(route, "HTTPRoute", "shop", "b", 10, testers=testers)
        assert weights(rule_named(spec, "testers")) == {"a": 0, "b": 100}


def test_a_backend_without_weight_has_weight_one():
    route = {"metadata": {"name": "shop", "namespace": "shop"},
             "spec": {"rules": [{"backendRefs": [{"name": "shop-a", "port": 80}, {"name": "shop-b", "port": 80}]}]}}
    assert current_weights(route, "HTTPRoute", "shop") == {"a": 1, "b": 1}


# ------------------------------------------------------------------------------------------- GRPCRoute

@pytest.mark.parametrize("candidate", ["a", "b"])
@pytest.mark.parametrize("percent", STEPS)
def test_grpcroute_step(candidate, percent):
    route = load("grpcroute.yaml")
    before = copy.deepcopy(route)
    spec = set_weights(route, "GRPCRoute", "orders", candidate, percent, testers=TESTERS)
    assert route == before
    testers, weighted, health = spec["rules"]
    assert weights(weighted, "orders") == expected(candidate, percent)
    assert weights(testers, "orders") == expected(candidate, 100)
    assert health == before["spec"]["rules"][2]
    assert without_weights(weighted) == without_weights(before["spec"]["rules"][1])
    assert testers["matches"] == before["spec"]["rules"][0]["matches"]


def test_grpcroute_current_weights():
    route = load("grpcroute.yaml")
    assert current_weights(route, "GRPCRoute", "orders") == {"a": 1, "b": 1}  # the testers rule, stored 1/1
    assert current_weights(route, "GRPCRoute", "orders", testers=TESTERS) == {"a": 100, "b": 0}


# ------------------------------------------------------------------------------------------- VirtualService

def destinations(entry):
    return {target["destination"]["subset"]: target.get("weight") for target in entry["route"]}


@pytest.mark.parametrize("candidate", ["a", "b"])
@pytest.mark.parametrize("percent", STEPS)
def test_virtualservice_step(candidate, percent):
    route = load("virtualservice.yaml")
    before = copy.deepcopy(route)
    spec = set_weights(route, "VirtualService", "shop", candidate, percent, testers=TESTERS)
    assert route == before
    testers, static, app = spec["http"]
    assert destinations(app) == expected(candidate, percent)
    assert sum(destinations(app).values()) == 100
    assert destinations(testers) == expected(candidate, 100)
    assert static == before["spec"]["http"][1]
    assert without_weights(app) == without_weights(before["spec"]["http"][2])
    assert {k: v for k, v in spec.items() if k != "http"} == {k: v for k, v in before["spec"].items() if k != "http"}
    assert current_weights(dict(route, spec=spec), "VirtualService", "shop", testers=TESTERS) == \
        expected(candidate, percent)


def test_virtualservice_without_weights_reads_zero():
    route = {"metadata": {"name": "shop", "namespace": "shop"}, "spec": {"http": [{"route": [
        {"destination": {"host": "shop", "subset": "a"}, "weight": 100},
        {"destination": {"host": "shop", "subset": "b"}}]}]}}
    assert current_weights(route, "VirtualService", "shop") == {"a": 100, "b": 0}


@pytest.mark.parametrize("host, service", [
    ("shop", ("shop", "mesh")), ("shop.shop", ("shop", "shop")), ("shop.shop.svc", ("shop", "shop")),
    ("shop.shop-prod.svc.cluster.local", ("shop", "shop-prod")), ("shopfront", ("shopfront", "mesh")),
    ("shop.shop.svc.cluster", None), ("shop.example.com", None), ("", None), (None, None), (".shop", None)])
def test_service_hosts_are_read_in_the_namespace_of_the_object_writing_them(host, service):
    assert service_of(host, "mesh") == service


def test_a_virtualservice_of_another_namespace_weighs_the_host_of_the_services_namespace():
    route = {"metadata": {"name": "shop", "namespace": "mesh"}, "spec": {"http": [
        {"name": "short", "route": [{"destination": {"host": "shop", "subset": "a"}, "weight": 100},
                                    {"destination": {"host": "shop", "subset": "b"}, "weight": 0}]},
        {"name": "full", "route": [
            {"destination": {"host": "shop.shop-prod.svc.cluster.local", "subset": "a"}, "weight": 100},
            {"destination": {"host": "shop.shop-prod.svc.cluster.local", "subset": "b"}, "weight": 0}]}]}}
    spec = set_weights(route, "VirtualService", "shop", "b", 30, namespace="shop-prod")
    assert spec["http"][0] == route["spec"]["http"][0], "shop read in mesh: shop.mesh, not the release's Service"
    assert [target["weight"] for target in spec["http"][1]["route"]] == [70, 30]
    with pytest.raises(InputError) as caught:
        set_weights(dict(route, spec={"http": route["spec"]["http"][:1]}), "VirtualService", "shop", "b", 30,
                    namespace="shop-prod")
    text = str(caught.value)
    assert "no http entry lists both subset a of host shop.shop-prod.svc.cluster.local and subset b of host " \
           "shop.shop-prod.svc.cluster.local" in text and "it names shop instead" in text
    assert "a short host names a Service of the VirtualService's namespace mesh" in text


# ------------------------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("case", table("invalid.yaml"))
def test_refusals(case):
    route = case["route"]
    before = copy.deepcopy(route)
    with pytest.raises(InputError) as caught:
        set_weights(route, case.get("kind", "HTTPRoute"), case.get("service", "shop"), case.get("candidate", "b"),
                    case.get("percent", 10), testers=case.get("testers"), namespace=case.get("namespace"))
    for text in case["error"]:
        assert text in str(caught.value)
    assert route == before


def test_current_weights_refuses_a_route_without_both_slots():
    route = {"metadata": {"name": "shop", "namespace": "shop"},
             "spec": {"rules": [{"backendRefs": [{"name": "shop-a", "port": 80}]}]}}
    with pytest.raises(InputError, match=r"HTTPRoute/shop/shop: no rule lists both shop-a and shop-b "
                                         r"\(shop-b missing\)"):
        current_weights(route, "HTTPRoute", "shop")


# ------------------------------------------------------------------------------------------- DestinationRule

SHOP = Target("VirtualService", "shop", "shop", "shop")


def test_destination_rule_with_both_subsets():
    check_subsets([load("destinationrule.yaml")], SHOP)


@pytest.mark.parametrize("change, message", [
    (lambda spec: spec["subsets"].pop(), "DestinationRule/shop/shop: subset b is missing"),
    (lambda spec: spec.pop("subsets"), "subset a is missing; subset b is missing"),
    (lambda spec: spec["subsets"][0].update(labels={"version": "v1"}),
     'subset a of DestinationRule/shop/shop must select manent.io/track: a, has labels {"version": "v1"}'),
    (lambda spec: spec["subsets"][1]["labels"].update({"manent.io/track": "a"}), "subset b of"),
])
def test_destination_rule_refusals(change, message):
    dr = load("destinationrule.yaml")
    change(dr["spec"])
    with pytest.raises(InputError) as caught:
        check_subsets([dr], SHOP)
    assert message in str(caught.value)
    assert "must read spec: {host: shop.shop.svc.cluster.local, subsets: [{name: a, labels: {manent.io/track: a}}" \
        in str(caught.value)


def test_destination_rules_of_one_host_are_merged_the_first_created_winning():
    first, second = load("destinationrule.yaml"), load("destinationrule.yaml")
    first["spec"]["subsets"].pop()  # a only
    second["metadata"].update(name="shop-more", creationTimestamp="2026-12-01T00:00:00Z")
    second["spec"]["subsets"][0]["labels"] = {"version": "v1"}  # its a is shadowed by the first's
    check_subsets([second, first], SHOP)
    first["spec"]["subsets"][0]["labels"] = {"version": "v1"}
    with pytest.raises(InputError, match="subset a of DestinationRule/shop/shop must select"):
        check_subsets([second, first], SHOP)


def test_the_destination_rule_lookup_path():
    assert lookup_path(Target("VirtualService", "shop", "mesh", "shop-prod")) == ["shop-prod", "mesh", "istio-system"]
    assert lookup_path(Target("VirtualService", "shop", "shop", "shop"), "istio-config") == ["shop", "istio-config"]


# ------------------------------------------------------------------------------------------- acceptance

@pytest.mark.parametrize("case", table("acceptance.yaml"))
def test_acceptance(case):
    route = {"metadata": {"name": "shop", "namespace": "shop", "generation": case["generation"]}}
    if case["status"] is not None:
        route["status"] = case["status"]
    state, reasons = acceptance.acceptance(route, case["generation"], case.get("tolerate", ()))
    assert state == case["expect"]["state"]
    joined = "; ".join(reasons)
    assert bool(reasons) == bool(case["expect"]["reasons"])
    for text in case["expect"]["reasons"]:
        assert text in joined


def test_acceptance_of_the_recorded_route():
    route = load("httproute.yaml")
    assert acceptance.acceptance(route, 1) == ("accepted", [])
    assert acceptance.acceptance(route, 2)[0] == "pending"


# ------------------------------------------------------------------------------------------- wait_accepted

class ScriptedKube:
    """get_json answers one per call (the last repeats); an exception answer is raised."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.paths = []

    def get_json(self, path, **_kw):
        self.paths.append(path)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


REF = routes.RouteRef("HTTPRoute", "shop", "shop")


def with_status(accepted="True", generation=2, resolved="True"):
    route = load("httproute.yaml")
    for condition in route["status"]["parents"][0]["conditions"]:
        condition["observedGeneration"] = generation
        condition["status"] = accepted if condition["type"] == "Accepted" else resolved
    return route


def test_wait_accepted_polls_until_the_generation_is_accepted():
    clock = FakeClock(100.0)
    kube = ScriptedKube(with_status(generation=1), with_status(generation=1), with_status(generation=2))
    assert acceptance.wait_accepted(kube, REF, 2, 30, clock=clock.clock, sleep=clock.sleep) == "accepted"
    assert clock.sleeps == [1.0, 1.0]
    assert kube.paths[0] == "/apis/gateway.networking.k8s.io/v1/namespaces/shop/httproutes/shop"


def test_wait_accepted_stops_at_once_when_rejected():
    clock = FakeClock(100.0)
    kube = ScriptedKube(with_status(accepted="False", generation=2))
    with pytest.raises(WaitError) as caught:
        acceptance.wait_accepted(kube, REF, 2, 30, clock=clock.clock, sleep=clock.sleep)
    assert caught.value.permanent
    assert clock.sleeps == []
    assert "HTTPRoute/shop/shop: generation 2 was rejected: parent Gateway/gateways/public/https" in str(caught.value)
    assert "abort" in str(caught.value)


def test_wait_accepted_times_out_naming_generation_and_parents():
    clock = FakeClock(100.0)
    kube = ScriptedKube(with_status(generation=1))
    with pytest.raises(WaitError) as caught:
        acceptance.wait_accepted(kube, REF, 2, 5, interval=2, clock=clock.clock, sleep=clock.sleep)
    text = str(caught.value)
    assert not caught.value.permanent
    assert clock.sleeps == [2, 2, 1]
    assert text.startswith("HTTPRoute/shop/shop: generation 2 not accepted after 5s: parent Gateway/gateways/public/"
                           "https (controller gateway.envoyproxy.io/gatewayclass-controller): Accepted=True Accepted: "
                           "Route is accepted (generation 1)")
    assert "the weights are already written (generation 2)" in text
    assert "rerun the step, or abort" in text
    assert caught.value.statuses == ["parent Gateway/gateways/public/https (controller gateway.envoyproxy.io/"
                                     "gatewayclass-controller): Accepted is for generation 1, not 2 yet"]


def test_wait_accepted_returns_no_status_at_the_deadline_unless_required():
    route = load("httproute.yaml")
    route.pop("status")
    clock = FakeClock(100.0)
    assert acceptance.wait_accepted(ScriptedKube(route), REF, 1, 3, clock=clock.clock, sleep=clock.sleep) == "no-status"
    assert clock.now == 103.0
    with pytest.raises(WaitError, match="generation 1 not accepted after 3s: no controller reported a status"):
        acceptance.wait_accepted(ScriptedKube(route), REF, 1, 3, clock=clock.clock, sleep=clock.sleep,
                                 require_status=True)


def test_wait_accepted_rides_out_a_transient_error():
    clock = FakeClock(100.0)
    kube = ScriptedKube(with_status(generation=1), ApiError("etcd leader changed", status=503, transient=True),
                        with_status(generation=2))
    assert acceptance.wait_accepted(kube, REF, 2, 30, clock=clock.clock, sleep=clock.sleep) == "accepted"
    with pytest.raises(ApiError, match="forbidden"):
        acceptance.wait_accepted(ScriptedKube(ApiError("forbidden", status=403)), REF, 2, 30, clock=clock.clock,
                                 sleep=clock.sleep)


# ------------------------------------------------------------------------------------------- refs

def test_route_refs_and_paths():
    ref = routes.RouteRef("GRPCRoute", "shop", "orders")
    assert str(ref) == "GRPCRoute/shop/orders"
    assert ref.api_version == "gateway.networking.k8s.io/v1"
    assert routes.path_of(ref, "status") == \
        "/apis/gateway.networking.k8s.io/v1/namespaces/shop/grpcroutes/orders/status"
    assert routes.path_of(routes.RouteRef("VirtualService", "mesh", "shop")) == \
        "/apis/networking.istio.io/v1/namespaces/mesh/virtualservices/shop"
    with pytest.raises(InputError, match="unsupported route kind 'Ingress'"):
        routes.path_of(routes.RouteRef("Ingress", "shop", "shop"))


# ------------------------------------------------------------------------------------------- every rule's shares


def with_api_rule(route, kind, slot, weight=None):
    """``route`` with a rule (entry) ``api`` for /api that lists only ``slot`` (weight ``weight``, or none)."""
    route = copy.deepcopy(route)
    if kind == "VirtualService":
        destination = {"destination": {"host": "shop.shop.svc.cluster.local", "subset": slot}}
        if weight is not None:
            destination["weight"] = weight
        route["spec"]["http"].insert(1, {"name": "api", "match": [{"uri": {"prefix": "/api"}}], "route": [destination]})
    else:
        backend = {"name": "shop-%s" % slot, "port": 8080}
        if weight is not None:
            backend["weight"] = weight
        route["spec"]["rules"].insert(1, {"name": "api", "matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                                          "backendRefs": [backend]})
    return route


@pytest.mark.parametrize("kind,fixture", [("HTTPRoute", "httproute.yaml"), ("VirtualService", "virtualservice.yaml")])
@pytest.mark.parametrize("weight,sends", [(None, True), (5, True), (0, False)])
def test_shares_read_every_rule_naming_a_slot_not_only_the_first_weighted(kind, fixture, weight, sends):
    route = with_api_rule(load(fixture), kind, "a", weight)
    found = shares(route, kind, "shop", testers=TESTERS)
    roles = [(share.index, share.role) for share in found]
    assert roles == [(0, "testers"), (1, "other"), (3, "weighted")], roles
    api = found[1]
    assert api.name.startswith("%s 1 (api) matching " % ("http entry" if kind == "VirtualService" else "rule"))
    assert "/api" in api.name
    expected_a = {None: 100 if kind == "VirtualService" else 1, 5: 5, 0: 0}[weight]
    assert api.weights == {"a": expected_a, "b": 0}
    assert [share.index for share in sending_to(found, "a")] == ([0, 1, 3] if sends else [0, 3])
    assert describe_share(api).endswith(": a %d, b 0" % expected_a)


def test_shares_of_a_second_weighted_rule_that_disagrees():
    route = load("httproute.yaml")
    second = copy.deepcopy(rule_named(route["spec"], "app"))
    second.update(name="api", matches=[{"path": {"type": "PathPrefix", "value": "/api"}}])
    route["spec"]["rules"].append(second)
    spec = set_weights(route, "HTTPRoute", "shop", "b", 100, testers=TESTERS)
    stepped = dict(route, spec=spec)
    rule_named(spec, "api")["backendRefs"][0]["weight"] = 100  # changed by hand after the promote
    found = shares(stepped, "HTTPRoute", "shop", testers=TESTERS)
    assert current_weights(stepped, "HTTPRoute", "shop", testers=TESTERS) == {"a": 0, "b": 100}, "the first"
    assert [(share.name.split(" matching")[0], share.weights) for share in sending_to(found, "a")] == \
        [("rule 3 (api)", {"a": 100, "b": 100})]
