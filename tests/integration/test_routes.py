# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""routes on real clusters: weights written with a resourceVersion-conditioned merge patch, another writer's
change surviving the 409 and retry, refusals that write nothing, dry-run, and acceptance read from status.parents.

The clusters serve the Gateway API v1.4.1 and Istio CRDs but run no route controller: the routes point at
Services and a Gateway that do not exist (the API server validates only the schema), and the tests act as the
controller by writing ``status.parents`` through the status subresource. Nothing is mocked: ``OtherWriter`` only
lets another real write happen between manent's read and its patch.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import acceptance, destinations, grants, routes
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.weights import Target, current_weights
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ApiError, ConflictError, InputError, NotFoundError, WaitError)

pytestmark = pytest.mark.integration

from tests.integration.route_helpers import (
    MERGE, TESTERS, backends, controller, create, destination_rule, httproute, read, rule, set_status,
    virtualservice, weights)


class OtherWriter:
    """The real Kube, recording every request; before each of the first ``times`` PATCHes of the route's spec,
    ``write()`` changes the route through another connection, so the API server refuses manent's patch (409)."""

    def __init__(self, kube, write=None, times=1):
        self._kube = kube
        self.write = write
        self.times = times
        self.calls = []

    def __getattr__(self, name):
        return getattr(self._kube, name)

    def request(self, method, path, **kw):
        self.calls.append((method, dict(kw.get("query") or {})))
        if method == "PATCH" and self.write is not None and self.times > 0:
            self.times -= 1
            self.write()
        return self._kube.request(method, path, **kw)

    def get_json(self, path, **kw):
        return self.request("GET", path, **kw).data

    def methods(self):
        return [method for method, _query in self.calls]


# ------------------------------------------------------------------------------------------- weights

def test_steps_write_only_the_slot_weights(cluster, namespace):
    created = create(cluster, httproute(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    assert created["metadata"]["generation"] == 1 and "status" not in created  # accepted without Gateway/Services
    generation = 1
    for percent in (0, 10, 50):
        out = routes.update_weights(cluster.kube, ref, "shop", "b", percent, testers=TESTERS)
        stored = read(cluster, ref)
        generation += 1
        assert out["changed"] is True
        assert out["generation"] == stored["metadata"]["generation"] == generation
        assert out["resourceVersion"] == stored["metadata"]["resourceVersion"]
        assert out["after"] == {"a": 100 - percent, "b": percent}
        assert weights(rule(stored, "app")) == {"a": 100 - percent, "b": percent}
        assert weights(rule(stored, "testers")) == {"a": 0, "b": 100}
        assert rule(stored, "static") == rule(created, "static")
        assert stored["spec"]["parentRefs"] == created["spec"]["parentRefs"]
        assert current_weights(stored, "HTTPRoute", "shop", testers=TESTERS) == out["after"]
    assert out["before"] == {"a": 90, "b": 10}
    managers = {entry["manager"] for entry in stored["metadata"]["managedFields"]}
    assert routes.FIELD_MANAGER in managers


def test_weights_already_set_write_nothing(cluster, namespace):
    create(cluster, httproute(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    first = routes.update_weights(cluster.kube, ref, "shop", "b", 10, testers=TESTERS)
    kube = OtherWriter(cluster.kube)
    again = routes.update_weights(kube, ref, "shop", "b", 10, testers=TESTERS)
    assert again["changed"] is False
    assert again["resourceVersion"] == first["resourceVersion"] == read(cluster, ref)["metadata"]["resourceVersion"]
    assert again["generation"] == first["generation"]
    assert kube.methods() == ["GET"]


def test_another_writers_change_survives_the_conflict(cluster, namespace):
    create(cluster, httproute(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")

    def other_write():
        live = read(cluster, ref)
        rules = live["spec"]["rules"]
        rule(live, "static")["filters"][0]["requestHeaderModifier"]["set"][0]["value"] = "no-store"
        cluster.kube.request("PATCH", routes.path_of(ref), content_type=MERGE,
                             body={"metadata": {"labels": {"owner": "platform-team"}}, "spec": {"rules": rules}})

    kube = OtherWriter(cluster.kube, other_write)
    out = routes.update_weights(kube, ref, "shop", "b", 10, testers=TESTERS)
    stored = read(cluster, ref)
    assert out["conflicts"] == 1 and out["changed"] is True
    assert kube.methods() == ["GET", "PATCH", "GET", "PATCH"]
    assert stored["metadata"]["labels"] == {"owner": "platform-team"}
    assert rule(stored, "static")["filters"][0]["requestHeaderModifier"]["set"][0]["value"] == "no-store"
    assert weights(rule(stored, "app")) == {"a": 90, "b": 10}
    assert weights(rule(stored, "testers")) == {"a": 0, "b": 100}
    assert out["resourceVersion"] == stored["metadata"]["resourceVersion"]


def test_a_route_that_keeps_changing_fails_after_the_retries(cluster, namespace):
    create(cluster, httproute(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    counter = iter(range(100))

    def other_write():
        cluster.kube.request("PATCH", routes.path_of(ref), content_type=MERGE,
                             body={"metadata": {"labels": {"touched": str(next(counter))}}})

    kube = OtherWriter(cluster.kube, other_write, times=100)
    with pytest.raises(ConflictError) as caught:
        routes.update_weights(kube, ref, "shop", "b", 10, testers=TESTERS, tries=3)
    text = str(caught.value)
    assert text.startswith("HTTPRoute/%s/shop: another writer changed the route 3 times while manent set the "
                           "weights: Operation cannot be fulfilled on httproutes.gateway.networking.k8s.io \"shop\": "
                           "the object has been modified" % namespace)
    assert caught.value.status == 409
    assert kube.methods() == ["GET", "PATCH"] * 3
    assert weights(rule(read(cluster, ref), "app")) == {"a": 100, "b": 0}


def test_a_route_without_the_b_backend_is_refused_untouched(cluster, namespace):
    created = create(cluster, httproute(namespace, slots=("a",)))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    kube = OtherWriter(cluster.kube)
    with pytest.raises(InputError) as caught:
        routes.update_weights(kube, ref, "shop", "b", 10)
    assert str(caught.value).startswith("HTTPRoute/%s/shop: no rule lists both shop-a and shop-b (shop-b missing)"
                                        % namespace)
    assert kube.methods() == ["GET"]
    assert read(cluster, ref)["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def seed_route(namespace):
    """The example route of the product's documentation: its testers' rule lists one slot backend."""
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "shop", "namespace": namespace},
            "spec": {"parentRefs": [{"name": "public"}], "rules": [
                {"matches": [{"headers": [{"name": "x-canary", "value": "always"}]}],
                 "backendRefs": [{"name": "shop-a", "port": 80}]},
                {"backendRefs": [{"name": "shop-a", "port": 80, "weight": 100},
                                 {"name": "shop-b", "port": 80, "weight": 0}]}]}}


def test_a_testers_rule_with_one_backend_is_refused_naming_the_exact_change(cluster, namespace):
    """The refusal shows the backendRefs the testers' rule must have; written as shown, the step goes through."""
    created = create(cluster, seed_route(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    with pytest.raises(InputError) as refused:
        routes.update_weights(cluster.kube, ref, "shop", "b", 10, testers=TESTERS)
    text = str(refused.value)
    assert text.startswith("HTTPRoute/%s/shop: the testers' rule 0 must list both shop-a and shop-b, it lists shop-a"
                           % namespace), text
    block = ('{"backendRefs": [{"group": "", "kind": "Service", "name": "shop-a", "port": 80, "weight": 1}, '
             '{"group": "", "kind": "Service", "name": "shop-b", "port": 80, "weight": 0}]}')  # the server's defaults
    assert "make its backendRefs read %s" % block in text
    assert read(cluster, ref)["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    rules = created["spec"]["rules"]
    rules[0].update(json.loads(block))  # the platform team's change, as the error shows it
    cluster.kube.request("PATCH", routes.path_of(ref), body={"spec": {"rules": rules}}, content_type=MERGE)
    out = routes.update_weights(cluster.kube, ref, "shop", "b", 10, testers=TESTERS)
    testers, weighted = read(cluster, ref)["spec"]["rules"]
    assert out["after"] == {"a": 90, "b": 10} and weights(weighted) == {"a": 90, "b": 10}
    assert weights(testers) == {"a": 0, "b": 100}


def test_dry_run_changes_nothing(cluster, namespace):
    created = create(cluster, httproute(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    kube = OtherWriter(cluster.kube)
    out = routes.update_weights(kube, ref, "shop", "b", 10, testers=TESTERS, dry_run=True)
    assert out["changed"] is True
    assert out["before"] == {"a": 100, "b": 0} and out["after"] == {"a": 90, "b": 10}
    assert out["generation"] == 2  # what the write would make it
    assert out["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert kube.calls[-1] == ("PATCH", {"fieldManager": routes.FIELD_MANAGER, "dryRun": "All"})
    stored = read(cluster, ref)
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert stored["spec"] == created["spec"]


def test_a_missing_route_is_named(cluster, namespace):
    ref = routes.RouteRef("HTTPRoute", namespace, "nowhere")
    with pytest.raises(NotFoundError) as caught:
        routes.update_weights(cluster.kube, ref, "shop", "b", 10)
    assert str(caught.value).startswith("HTTPRoute/%s/nowhere: not found" % namespace)
    assert "the route belongs to the infrastructure: create it first" in str(caught.value)


# ------------------------------------------------------------------------------------------- acceptance

def test_wait_accepted_once_the_controller_reports_the_new_generation(cluster, namespace):
    create(cluster, httproute(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    set_status(cluster, ref, generation=1)
    out = routes.update_weights(cluster.kube, ref, "shop", "b", 10, testers=TESTERS)
    assert acceptance.acceptance(read(cluster, ref), out["generation"])[0] == "pending"
    thread = controller(cluster, ref, [(0.6, {"generation": out["generation"]})])
    started = time.monotonic()
    assert acceptance.wait_accepted(cluster.kube, ref, out["generation"], 30, interval=0.2) == "accepted"
    assert 0.5 < time.monotonic() - started < 10
    thread.join(5)
    # the status write did not bump the generation nor touch the weights
    stored = read(cluster, ref)
    assert stored["metadata"]["generation"] == out["generation"]
    assert weights(rule(stored, "app")) == {"a": 90, "b": 10}


def test_wait_accepted_fails_at_the_deadline_when_never_accepted(cluster, namespace):
    create(cluster, httproute(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    set_status(cluster, ref, generation=1)
    out = routes.update_weights(cluster.kube, ref, "shop", "b", 10, testers=TESTERS)
    started = time.monotonic()
    with pytest.raises(WaitError) as caught:
        acceptance.wait_accepted(cluster.kube, ref, out["generation"], 1.5, interval=0.3)
    assert 1.4 < time.monotonic() - started < 10
    text = str(caught.value)
    assert not caught.value.permanent
    assert text.startswith("HTTPRoute/%s/shop: generation 2 not accepted after 1.5s: parent Gateway/no-such-gateway "
                           "(controller manent.io/test-controller): Accepted=True Accepted (generation 1)" % namespace)
    assert "the weights are already written (generation 2)" in text and "rerun the step, or abort" in text


def test_wait_accepted_stops_when_the_parent_rejects(cluster, namespace):
    create(cluster, httproute(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    out = routes.update_weights(cluster.kube, ref, "shop", "b", 10, testers=TESTERS)
    set_status(cluster, ref, generation=out["generation"], accepted="False", reason="NoMatchingParent",
               message="Gateway no-such-gateway does not exist")
    started = time.monotonic()
    with pytest.raises(WaitError) as caught:
        acceptance.wait_accepted(cluster.kube, ref, out["generation"], 30, interval=0.2)
    assert time.monotonic() - started < 5
    assert caught.value.permanent
    assert "generation 2 was rejected: parent Gateway/no-such-gateway (controller manent.io/test-controller): " \
           "Accepted=False NoMatchingParent: Gateway no-such-gateway does not exist" in str(caught.value)


def test_wait_accepted_without_any_status(cluster, namespace):
    create(cluster, httproute(namespace))
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    out = routes.update_weights(cluster.kube, ref, "shop", "b", 10, testers=TESTERS)
    assert acceptance.wait_accepted(cluster.kube, ref, out["generation"], 0.5, interval=0.2) == "no-status"
    with pytest.raises(WaitError, match="no controller reported a status"):
        acceptance.wait_accepted(cluster.kube, ref, out["generation"], 0.5, interval=0.2, require_status=True)


# ------------------------------------------------------------------------------------------- GRPCRoute

def test_grpcroute_round_trip(cluster, namespace):
    grpc = {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "GRPCRoute",
        "metadata": {"name": "orders", "namespace": namespace},
        "spec": {"parentRefs": [{"name": "no-such-gateway"}], "rules": [
            {"matches": [{"method": {"service": "shop.v1.Orders"},
                          "headers": [{"name": "X-Canary", "value": "always"}]}],
             "backendRefs": [{"name": "orders-a", "port": 9090}, {"name": "orders-b", "port": 9090}]},
            {"matches": [{"method": {"service": "shop.v1.Orders"}}],
             "backendRefs": backends("orders", {"a": 100, "b": 0}, port=9090)},
            {"matches": [{"method": {"service": "grpc.health.v1.Health", "method": "Check"}}],
             "backendRefs": [{"name": "health", "port": 9090}]}]}}
    created = create(cluster, grpc)
    ref = routes.RouteRef("GRPCRoute", namespace, "orders")
    assert current_weights(created, "GRPCRoute", "orders") == {"a": 1, "b": 1}  # the server's default weight
    out = routes.update_weights(cluster.kube, ref, "orders", "b", 10, testers=TESTERS)
    stored = read(cluster, ref)
    testers, weighted, health = stored["spec"]["rules"]
    assert out["after"] == {"a": 90, "b": 10} and out["before"] == {"a": 100, "b": 0}
    assert weights(weighted, "orders") == {"a": 90, "b": 10}
    assert weights(testers, "orders") == {"a": 0, "b": 100}
    assert health == created["spec"]["rules"][2]
    assert routes.update_weights(cluster.kube, ref, "orders", "b", 10, testers=TESTERS)["changed"] is False


# ------------------------------------------------------------------------------------------- Istio

def test_virtualservice_round_trip(cluster, namespace):
    create(cluster, destination_rule(namespace))
    created = create(cluster, virtualservice(namespace))
    ref = routes.RouteRef("VirtualService", namespace, "shop")
    destinations.check(cluster.kube, Target("VirtualService", "shop", namespace, namespace), ref)
    for percent in (10, 50):
        out = routes.update_weights(cluster.kube, ref, "shop", "b", percent, testers=TESTERS)
        testers, static, app = read(cluster, ref)["spec"]["http"]
        assert [target["weight"] for target in app["route"]] == [100 - percent, percent]
        assert [target["weight"] for target in testers["route"]] == [0, 100]
        assert static == created["spec"]["http"][1]
        assert app["retries"] == created["spec"]["http"][2]["retries"]
        assert out["after"] == {"a": 100 - percent, "b": percent}
    assert routes.update_weights(cluster.kube, ref, "shop", "b", 50, testers=TESTERS)["changed"] is False


def test_destination_rules_the_identity_may_not_list_are_named(cluster, namespace):
    """Namespaces of Istio's lookup path that this identity may not read are named, not a bare 403."""
    ref = routes.RouteRef("VirtualService", "mesh", "shop")
    with Kube(cluster.connection(token=deployer_token(cluster))) as kube:
        with pytest.raises(InputError) as caught:
            destinations.check(kube, Target("VirtualService", "shop", "mesh", namespace), ref)
    assert str(caught.value) == (
        "VirtualService/mesh/shop: cannot find the DestinationRule of host shop.%s.svc.cluster.local: this identity "
        "may not list DestinationRules in %s, mesh or istio-system, where Istio looks for one (grant this identity "
        "get and list on destinationrules.networking.istio.io in %s, mesh or istio-system; Istio rollouts need one "
        "with the slot subsets)" % (namespace, namespace, namespace))


def test_istio_refusals_write_nothing(cluster, namespace):
    create(cluster, destination_rule(namespace, subsets=("a",)))
    with pytest.raises(InputError, match="DestinationRule/%s/shop: subset b is missing" % namespace):
        destinations.check(cluster.kube, Target("VirtualService", "shop", namespace, namespace),
                           routes.RouteRef("VirtualService", namespace, "shop"))
    created = create(cluster, virtualservice(namespace, testers_first=False))
    ref = routes.RouteRef("VirtualService", namespace, "shop")
    with pytest.raises(InputError, match=r"the testers' http entry 2 \(testers\) comes after the weighted http "
                                         r"entry 1 \(app\)"):
        routes.update_weights(cluster.kube, ref, "shop", "b", 10, testers=TESTERS)
    assert read(cluster, ref)["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


# ------------------------------------------------------------------------------------------- ReferenceGrant

def deployer_token(cluster):
    """The token of the local clusters' user manent-deployer, who has no RBAC rights unless a test grants them."""
    with open(os.path.join(cluster.dir, "deployer.token"), encoding="utf-8") as handle:
        return handle.read().strip()


def test_a_reference_grant_the_identity_may_not_read_is_named(cluster, namespace):
    """A deploy identity without RBAC rights on ReferenceGrants in the Services' namespace: the check says so and
    names the rights to grant, instead of a bare 403."""
    token = deployer_token(cluster)
    ref = routes.RouteRef("HTTPRoute", "infra", "shop")
    with Kube(cluster.connection(token=token)) as kube:
        with pytest.raises(ApiError) as caught:
            grants.check(kube, cluster.discovery, ref, "shop", namespace)
    text = str(caught.value)
    assert caught.value.status == 403
    assert text.startswith("HTTPRoute/infra/shop: this identity may not list the ReferenceGrants of namespace %s "
                           "(forbidden), so manent cannot check that HTTPRoute/infra/shop may send to shop-a and "
                           "shop-b" % namespace), text
    assert "grant it get and list on referencegrants.gateway.networking.k8s.io in %s" % namespace in text
    assert token not in text


def test_reference_grants_by_name_kind_and_namespace(cluster, namespace):
    """A grant for another kind, another namespace or one Service only does not let the route send to both."""
    ref = routes.RouteRef("HTTPRoute", "infra", "shop")
    collection = "/apis/gateway.networking.k8s.io/v1beta1/namespaces/%s/referencegrants" % namespace
    grant = {"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
             "metadata": {"name": "partial", "namespace": namespace},
             "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "GRPCRoute", "namespace": "infra"},
                               {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "other"},
                               {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "infra"}],
                      "to": [{"group": "", "kind": "Service", "name": "shop-a"}]}}
    cluster.kube.request("POST", collection, body=grant)
    with pytest.raises(InputError, match="lets HTTPRoutes of namespace infra send to the Service shop-b: "):
        grants.check(cluster.kube, cluster.discovery, ref, "shop", namespace)
    grant["metadata"]["name"] = "b-too"
    grant["spec"]["to"] = [{"group": "", "kind": "Service", "name": "shop-b"}]
    cluster.kube.request("POST", collection, body=grant)
    grants.check(cluster.kube, cluster.discovery, ref, "shop", namespace)
    grants.check(cluster.kube, cluster.discovery, ref._replace(kind="GRPCRoute"), "shop", namespace)
    with pytest.raises(InputError, match="send to the Services shop-a and shop-b"):
        grants.check(cluster.kube, cluster.discovery, ref._replace(namespace="elsewhere"), "shop", namespace)
