# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Traffic rollouts on a real cluster (issue 11): slots rendered and deployed, then step, promote, abort,
retire and status through the engine, asserting on the objects. No data plane runs: the route's controller is
played by ``AutoController`` (it reports every new generation Accepted), and kwok makes pods Ready.
"""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    STATUS_ABORTED, STATUS_ROLLED_BACK, STATUS_SUPERSEDED, decode_record, with_objects)
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import routes
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import (
    RenderOptions, choose_traffic_slot, default_deployment_id, render, stamp)
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.operations import Traffic, TrafficOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import choose_slot
from tests.integration.deploy_helpers import KEY, deployer, locator, record_status, write_artifact
from tests.objects import deployment
from tests.integration.route_helpers import (
    TESTERS, AutoController, create, destination_rule, httproute, read, replicas, rule, virtualservice, weights)

pytestmark = pytest.mark.integration

ROUTE = routes.RouteRef("HTTPRoute", "", "shop")


def manifests(version, replicas=4):
    web = deployment("shop", replicas=replicas)
    web["spec"]["template"]["metadata"]["annotations"] = {"release": version}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop"},
               "spec": {"selector": {"app": "shop"}, "ports": [{"port": 8080}]}}
    worker = deployment("worker", replicas=2)
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "worker"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
                    "minReplicas": 2, "maxReplicas": 4,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                        "type": "Utilization", "averageUtilization": 80}}}]}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-config"}, "data": {"v": version}}
    return [config, service, web, worker, hpa]


def render_slot(cluster, tmp_path, namespace, version, router="gateway-api", proportional=True):
    """As manent_render with strategy traffic: the slot chosen from the locator (a rerun of the release in
    service stays in its slot), the deploy id from the parameters and the slot."""
    objects = manifests(version)
    path, sha = write_artifact(tmp_path, objects)
    options = RenderOptions(namespace=namespace, artifact_sha256=sha, traffic_router=router,
                            traffic_proportional=proportional)
    options.slot, deployment = choose_traffic_slot(deployer(cluster).context.store(namespace, KEY).locator(), version, sha,
                                                   options)
    return render(path, Release(KEY, version, deployment), options, Discovery(cluster.kube), cluster.kube.version())


def ship(cluster, tmp_path, namespace, version, **render_options):
    bundle = render_slot(cluster, tmp_path, namespace, version, **render_options)
    result = deployer(cluster, prune=True, wait_timeout=60).deploy(bundle)
    assert result.status == "deployed" and result.history.get("candidate") == bundle.slot
    return bundle.slot


def traffic(cluster, namespace, **options):
    defaults = dict(route="shop", service="shop", testers=TESTERS, proportional=True, settle_delay=0,
                    scale_down_delay=0, accept_timeout=20, wait_timeout=60)
    defaults.update(options)
    return Traffic(cluster.kube, Discovery(cluster.kube), namespace, KEY, TrafficOptions(**defaults))


def route_ref(namespace):
    return ROUTE._replace(namespace=namespace)


def foreign_route(route_namespace, services_namespace):
    """The test route in ``route_namespace``, its slot backendRefs naming the Services of ``services_namespace``."""
    route = httproute(route_namespace)
    for item in route["spec"]["rules"]:
        for backend in item["backendRefs"]:
            if backend["name"].startswith("shop-"):
                backend["namespace"] = services_namespace
    return route


def reference_grant(namespace, from_namespace, names=()):
    return {"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
            "metadata": {"name": "routes-from-infra", "namespace": namespace},
            "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute",
                               "namespace": from_namespace}],
                     "to": [dict({"group": "", "kind": "Service"}, **({"name": name} if name else {}))
                            for name in names or (None,)]}}


def digest(obj):
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def candidate_of(cluster, tmp_path, namespace, route=None):
    """Version 1.0.0 promoted in slot a and 2.0.0 the candidate in slot b (one replica, proportional), behind
    ``route`` (default: httproute); returns the route's RouteRef."""
    route = route or httproute(namespace)
    create(cluster, route)
    ref = routes.RouteRef(route["kind"], route["metadata"]["namespace"], route["metadata"]["name"])
    with AutoController(cluster, ref):
        ship(cluster, tmp_path, namespace, "1.0.0")
        traffic(cluster, namespace, route_namespace=ref.namespace).run("promote")
        ship(cluster, tmp_path, namespace, "2.0.0")
    return ref


def test_full_rollout_a_to_b_then_b_to_a(cluster, namespace, tmp_path):
    create(cluster, httproute(namespace))
    ref = route_ref(namespace)
    with AutoController(cluster, ref):
        assert ship(cluster, tmp_path, namespace, "1.0.0") == "a"
        assert replicas(cluster, namespace, "shop-a") == 1, "proportional: a candidate starts at one replica"
        first = traffic(cluster, namespace).run("promote")
        assert first.weights == {"a": 100, "b": 0} and replicas(cluster, namespace, "shop-a") == 4
        assert locator(cluster, namespace)["slot"] == "a"

        stable_before = cluster.get("apps/v1", "Deployment", namespace, "shop-a")["metadata"]["resourceVersion"]
        assert ship(cluster, tmp_path, namespace, "2.0.0") == "b"
        assert cluster.get("apps/v1", "Deployment", namespace, "shop-a")["metadata"]["resourceVersion"] == \
            stable_before, "the candidate's deploy (with prune) never touches the stable slot's workloads"
        assert replicas(cluster, namespace, "shop-b") == 1 and replicas(cluster, namespace, "worker-b") == 2

        testers_rules = []
        for percent, expected in ((0, 1), (10, 1), (50, 2)):
            step = traffic(cluster, namespace).run("step", percent)
            route = read(cluster, ref)
            assert weights(rule(route, "app")) == {"a": 100 - percent, "b": percent}
            assert step.weights == {"a": 100 - percent, "b": percent}
            assert step.route["accepted"] == "accepted"
            assert replicas(cluster, namespace, "shop-b") == expected, "ceil(4 x %d%%)" % percent
            assert replicas(cluster, namespace, "worker-b") == 2, "HPA-managed: untouched"
            testers_rules.append(digest(rule(route, "testers")))
            assert weights(rule(route, "testers")) == {"a": 0, "b": 100}
            assert weights(rule(route, "static")) == {}, "other rules keep their own backends"
        assert len(set(testers_rules)) == 1, "the testers' rule is byte-identical at every step"
        again = traffic(cluster, namespace).run("step", 50)
        assert again.changed is False and again.scaled == [], "a step already taken changes nothing"

        promoted = traffic(cluster, namespace).run("promote")
        assert promoted.weights == {"a": 0, "b": 100} and replicas(cluster, namespace, "shop-b") == 4
        loc = locator(cluster, namespace)
        assert (loc["version"], loc["slot"], loc["replaced"], loc["candidate"]) == ("2.0.0", "b", "1.0.0", "")
        assert record_status(cluster, namespace, "1.0.0") == STATUS_SUPERSEDED

        retired = traffic(cluster, namespace).run("retire")
        assert replicas(cluster, namespace, "shop-a") == 0 and replicas(cluster, namespace, "worker-a") == 0
        cluster.assert_deleted("autoscaling/v2", "HorizontalPodAutoscaler", namespace, "worker-a")
        assert cluster.get("autoscaling/v2", "HorizontalPodAutoscaler", namespace, "worker-b") is not None
        assert "HorizontalPodAutoscaler/%s/worker-a" % namespace in retired.deleted
        assert traffic(cluster, namespace).run("retire").changed is False, "retire again: nothing to do"

        assert ship(cluster, tmp_path, namespace, "3.0.0") == "a", "b -> a"
        assert replicas(cluster, namespace, "shop-a") == 1
        traffic(cluster, namespace).run("step", 25)
        assert replicas(cluster, namespace, "shop-a") == 1 and weights(rule(read(cluster, ref), "app")) == {
            "a": 25, "b": 75}
        done = traffic(cluster, namespace).run("promote")
        assert done.weights == {"a": 100, "b": 0} and locator(cluster, namespace)["slot"] == "a"
        status = traffic(cluster, namespace).run("status")
        assert status.history["in_service"] == {"version": "3.0.0", "slot": "a"}
        assert status.history["slots"]["a"]["ready"] is True and status.history["slots"]["a"]["weight"] == 100


def test_abort_at_half_moves_everything_back_then_scales_the_candidate_down(cluster, namespace, tmp_path):
    create(cluster, httproute(namespace))
    ref = route_ref(namespace)
    with AutoController(cluster, ref):
        ship(cluster, tmp_path, namespace, "1.0.0")
        traffic(cluster, namespace).run("promote")
        ship(cluster, tmp_path, namespace, "2.0.0")
        traffic(cluster, namespace).run("step", 50)
        assert replicas(cluster, namespace, "shop-b") == 2

        aborted = traffic(cluster, namespace).run("abort")

        route = read(cluster, ref)
        assert weights(rule(route, "app")) == {"a": 100, "b": 0}
        assert weights(rule(route, "testers")) == {"a": 100, "b": 0}, "testers go back to stable too"
        assert replicas(cluster, namespace, "shop-b") == 0 and replicas(cluster, namespace, "shop-a") == 4
        cluster.assert_deleted("autoscaling/v2", "HorizontalPodAutoscaler", namespace, "worker-b")
        assert replicas(cluster, namespace, "worker-b") == 0
        assert aborted.changed is True
        assert record_status(cluster, namespace, "2.0.0") == STATUS_ABORTED
        loc = locator(cluster, namespace)
        assert (loc["version"], loc["candidate"]) == ("1.0.0", "")
        rerun = traffic(cluster, namespace).run("abort")
        assert rerun.changed is False and "nothing to abort" in " ".join(rerun.warnings)


def test_an_abort_leaves_alone_a_slot_object_that_history_lists_but_the_release_does_not_own(
        cluster, namespace, tmp_path):
    """History is kept in ConfigMaps that whoever may edit them in the namespace can change: the candidate's record
    edited to list a Deployment of another tool as a slot object must not get it scaled to zero by an abort (nor
    deleted, nor waited for); the abort does the rest and says which object it left alone."""
    create(cluster, httproute(namespace))
    with AutoController(cluster, route_ref(namespace)):
        ship(cluster, tmp_path, namespace, "1.0.0")
        traffic(cluster, namespace).run("promote")
        slot = ship(cluster, tmp_path, namespace, "2.0.0")
        bystander = deployment("bystander", replicas=2)
        bystander["metadata"]["labels"] = {slots.TRACK_LABEL: slot}
        bystander["metadata"]["namespace"] = namespace
        cluster.apply(bystander)
        record = record_name(KEY, "2.0.0")
        cm = cluster.get("v1", "ConfigMap", namespace, record)
        stored = decode_record(cm)[1] + [stamp(json.loads(json.dumps(bystander)), Release(KEY, "2.0.0", "d2"))]
        cm = with_objects(cm, stored, record)
        cm["metadata"].pop("managedFields", None)
        cluster.kube.request("PUT", cluster.path("v1", "ConfigMap", namespace, record), body=cm)

        aborted = traffic(cluster, namespace).run("abort")

        assert replicas(cluster, namespace, "bystander") == 2
        assert replicas(cluster, namespace, "shop-" + slot) == 0, "the candidate's own workloads are scaled down"
        assert any("Deployment/%s/bystander left alone" % namespace in w for w in aborted.warnings), aborted.warnings
        assert record_status(cluster, namespace, "2.0.0") == STATUS_ABORTED


def test_route_without_the_b_backend_changes_nothing(cluster, namespace, tmp_path):
    create(cluster, httproute(namespace))
    ref = route_ref(namespace)
    with AutoController(cluster, ref):
        ship(cluster, tmp_path, namespace, "1.0.0", proportional=False)
        traffic(cluster, namespace).run("promote")
    only_a = httproute(namespace, slots=("a",))["spec"]["rules"]  # someone edits the route: shop-b is gone
    cluster.kube.request("PATCH", routes.path_of(ref), body={"spec": {"rules": only_a}},
                         content_type="application/merge-patch+json")
    before = read(cluster, ref)["metadata"]["resourceVersion"]
    ship(cluster, tmp_path, namespace, "2.0.0")
    with pytest.raises(InputError) as err:
        traffic(cluster, namespace, proportional=False).run("step", 10)
    assert "shop-b" in str(err.value) and "HTTPRoute/%s/shop" % namespace in str(err.value)
    assert read(cluster, ref)["metadata"]["resourceVersion"] == before
    assert locator(cluster, namespace)["weight"] == "0" and locator(cluster, namespace)["lockHolder"] == ""


def test_a_route_never_accepted_fails_clearly_with_weights_written(cluster, namespace, tmp_path):
    create(cluster, httproute(namespace))
    ref = route_ref(namespace)
    with AutoController(cluster, ref):
        ship(cluster, tmp_path, namespace, "1.0.0", proportional=False)
        traffic(cluster, namespace, proportional=False).run("promote")
    ship(cluster, tmp_path, namespace, "2.0.0", proportional=False)
    with pytest.raises(WaitError) as err:
        traffic(cluster, namespace, proportional=False, accept_timeout=2).run("step", 10)
    message = str(err.value)
    assert "HTTPRoute/%s/shop" % namespace in message and "generation" in message
    assert weights(rule(read(cluster, ref), "app")) == {"a": 90, "b": 10}, "documented: the weights stay written"
    assert locator(cluster, namespace)["lockHolder"] == "", "the lock is released after a failure"
    with AutoController(cluster, ref):
        rerun = traffic(cluster, namespace, proportional=False).run("step", 10)
    assert rerun.route["accepted"] == "accepted" and locator(cluster, namespace)["weight"] == "10"


def test_check_mode_changes_nothing(cluster, namespace, tmp_path):
    create(cluster, httproute(namespace))
    ref = route_ref(namespace)
    with AutoController(cluster, ref):
        ship(cluster, tmp_path, namespace, "1.0.0")
        traffic(cluster, namespace).run("promote")
    ship(cluster, tmp_path, namespace, "2.0.0")
    before = (read(cluster, ref)["metadata"]["resourceVersion"], dict(locator(cluster, namespace)),
              replicas(cluster, namespace, "shop-b"))
    for operation, percent in (("step", 50), ("promote", None), ("abort", None)):
        result = traffic(cluster, namespace, dry_run=True).run(operation, percent)
        assert result.changed is False
    assert (read(cluster, ref)["metadata"]["resourceVersion"], dict(locator(cluster, namespace)),
            replicas(cluster, namespace, "shop-b")) == before


def test_istio_virtual_service_weights(cluster, namespace, tmp_path):
    create(cluster, virtualservice(namespace))
    create(cluster, destination_rule(namespace))
    ref = routes.RouteRef("VirtualService", namespace, "shop")
    ship(cluster, tmp_path, namespace, "1.0.0", router="istio", proportional=False)
    assert cluster.get("v1", "Service", namespace, "shop") is not None, "Istio: the Service keeps its name"
    assert cluster.get("apps/v1", "Deployment", namespace, "shop-a")["spec"]["template"]["metadata"]["labels"][
        "manent.io/track"] == "a"
    istio = dict(router="istio", proportional=False)
    traffic(cluster, namespace, **istio).run("promote")
    ship(cluster, tmp_path, namespace, "2.0.0", router="istio", proportional=False)
    result = traffic(cluster, namespace, **istio).run("step", 30)
    http = {entry["name"]: entry for entry in read(cluster, ref)["spec"]["http"]}
    assert {d["destination"]["subset"]: d["weight"] for d in http["app"]["route"]} == {"a": 70, "b": 30}
    assert {d["destination"]["subset"]: d["weight"] for d in http["testers"]["route"]} == {"a": 0, "b": 100}
    assert result.weights == {"a": 70, "b": 30} and result.route["accepted"] == "not checked"


def test_grpc_route_weights(cluster, namespace, tmp_path):
    route = httproute(namespace)
    route["kind"] = "GRPCRoute"
    for item in route["spec"]["rules"]:
        item["matches"] = [{"headers": h["headers"]} if "headers" in h else {"method": {"service": "shop.Shop"}}
                           for h in item.get("matches") or []]
        item.pop("filters", None)
    create(cluster, route)
    ref = routes.RouteRef("GRPCRoute", namespace, "shop")
    with AutoController(cluster, ref):
        ship(cluster, tmp_path, namespace, "1.0.0", proportional=False)
        grpc = dict(route_kind="GRPCRoute", proportional=False)
        traffic(cluster, namespace, **grpc).run("promote")
        ship(cluster, tmp_path, namespace, "2.0.0", proportional=False)
        result = traffic(cluster, namespace, **grpc).run("step", 40)
    assert weights(rule(read(cluster, ref), "app")) == {"a": 60, "b": 40} and result.weights == {"a": 60, "b": 40}


def test_the_version_in_service_again_is_a_rerun_in_its_slot_or_refused_as_a_candidate(cluster, namespace, tmp_path):
    """One record per version. The same version and parameters again stay in the slot in service and change
    nothing. The same version with other parameters would be a candidate replacing that release's record with the
    other slot's objects (abort and prune would then work from the wrong slot): refused before any write."""
    create(cluster, httproute(namespace))
    with AutoController(cluster, route_ref(namespace)):
        ship(cluster, tmp_path, namespace, "1.0.0")
        traffic(cluster, namespace).run("promote")
        before = locator(cluster, namespace)
        record = cluster.get("v1", "ConfigMap", namespace, record_name(KEY, "1.0.0"))

        rerun = render_slot(cluster, tmp_path, namespace, "1.0.0")
        assert rerun.slot == "a" and rerun.release.deployment == before["deployment"]
        again = deployer(cluster, prune=True, wait_timeout=60).deploy(rerun)
        assert again.status == "deployed" and again.changed is False and again.history == {}, again.to_dict()
        assert {c.action for c in again.changes} == {"skipped"} and len(again.changes) == len(rerun.objects)
        assert any("already in service in traffic slot a" in w for w in again.warnings), again.warnings
        assert replicas(cluster, namespace, "shop-a") == 4  # the rendering starts at 1 (proportional): not applied

        other = render_slot(cluster, tmp_path, namespace, "1.0.0", proportional=False)  # other parameters
        assert other.slot == "b"
        for dry_run in (True, False):
            with pytest.raises(InputError) as refused:
                deployer(cluster, apply={"dry_run": dry_run}).deploy(other)
            assert "already in service in slot a" in str(refused.value) and "new version" in refused.value.hint
        assert locator(cluster, namespace) == before
        assert cluster.get("v1", "ConfigMap", namespace, record_name(KEY, "1.0.0")) == record
        assert cluster.get("apps/v1", "Deployment", namespace, "shop-b") is None
        assert ship(cluster, tmp_path, namespace, "1.0.1") == "b"  # a version of its own goes to slot b as usual


def test_a_candidate_replaced_by_a_newer_one_is_superseded(cluster, namespace, tmp_path):
    """A new version deployed while a candidate waits in the other slot takes that slot; the candidate it
    replaced, never promoted, is marked superseded (it stayed "candidate" before), and an abort then concerns
    the newer one only. While the candidate receives traffic, another version is refused before any write, by
    the rendering and, for a bundle rendered before the step, by the apply."""
    create(cluster, httproute(namespace))
    with AutoController(cluster, route_ref(namespace)):
        ship(cluster, tmp_path, namespace, "1.0.0")
        traffic(cluster, namespace).run("promote")
        assert ship(cluster, tmp_path, namespace, "1.1.0") == "b"
        assert record_status(cluster, namespace, "1.1.0") == "candidate"
        early = render_slot(cluster, tmp_path, namespace, "1.2.0")  # rendered while 1.1.0 had no traffic
        traffic(cluster, namespace).run("step", 10)
        with pytest.raises(InputError) as refused:
            render_slot(cluster, tmp_path, namespace, "1.2.0")
        assert "candidate 1.1.0 in slot b receives 10 % of the traffic" in str(refused.value)
        before = {name: cluster.get("apps/v1", "Deployment", namespace, name)["metadata"]["resourceVersion"]
                  for name in ("shop-a", "shop-b")}
        for dry_run in (True, False):
            with pytest.raises(InputError) as refused:
                deployer(cluster, apply={"dry_run": dry_run}).deploy(early)
            assert "abort the candidate first" in refused.value.hint
        assert {name: cluster.get("apps/v1", "Deployment", namespace, name)["metadata"]["resourceVersion"]
                for name in ("shop-a", "shop-b")} == before
        assert record_status(cluster, namespace, "1.2.0") is None
        traffic(cluster, namespace).run("step", 0)
        assert ship(cluster, tmp_path, namespace, "1.2.0") == "b"
        assert {v: record_status(cluster, namespace, v) for v in ("1.0.0", "1.1.0", "1.2.0")} == {
            "1.0.0": "deployed", "1.1.0": "superseded", "1.2.0": "candidate"}
        located = locator(cluster, namespace)
        assert (located["version"], located["candidate"], located["candidateSlot"]) == ("1.0.0", "1.2.0", "b")
        traffic(cluster, namespace).run("abort")
        assert {v: record_status(cluster, namespace, v) for v in ("1.0.0", "1.1.0", "1.2.0")} == {
            "1.0.0": "deployed", "1.1.0": "superseded", "1.2.0": "aborted"}


def test_a_bundle_rendered_for_a_slot_that_went_into_service_since_is_refused(cluster, namespace, tmp_path):
    """playbooks/deploy.yml renders before its waves: a bundle made for slot b while 1.0.0 served from a, applied
    after 1.1.0 was deployed to b and promoted, would replace the serving objects under the route's full weight.
    Refused before any write, in check mode too; rendered again, it goes to slot a."""
    create(cluster, httproute(namespace))
    with AutoController(cluster, route_ref(namespace)):
        ship(cluster, tmp_path, namespace, "1.0.0")
        traffic(cluster, namespace).run("promote")
        early = render_slot(cluster, tmp_path, namespace, "1.2.0")
        assert early.slot == "b"
        assert ship(cluster, tmp_path, namespace, "1.1.0") == "b"
        traffic(cluster, namespace).run("promote")
        serving = cluster.get("apps/v1", "Deployment", namespace, "shop-b")["metadata"]["resourceVersion"]
        for dry_run in (True, False):
            with pytest.raises(InputError) as refused:
                deployer(cluster, apply={"dry_run": dry_run}).deploy(early)
            assert "rendered for traffic slot b, where version 1.1.0 is in service now" in str(refused.value)
            assert "render it again" in refused.value.hint
        assert cluster.get("apps/v1", "Deployment", namespace, "shop-b")["metadata"]["resourceVersion"] == serving
        assert record_status(cluster, namespace, "1.2.0") is None
        assert ship(cluster, tmp_path, namespace, "1.2.0") == "a"


def test_first_traffic_release_over_an_unslotted_one_needs_migrate(cluster, namespace, tmp_path):
    deployer(cluster).deploy(render(*_plain(cluster, tmp_path, namespace)))
    store = deployer(cluster).context.store(namespace, KEY)
    with pytest.raises(InputError) as err:
        choose_slot(store.locator())
    assert "traffic_migrate" in err.value.hint
    assert choose_slot(store.locator(), migrate=True) == "a"


def _plain(cluster, tmp_path, namespace):
    path, sha = write_artifact(tmp_path, manifests("0.9.0"))
    options = RenderOptions(namespace=namespace, artifact_sha256=sha)
    release = Release(KEY, "0.9.0", default_deployment_id("0.9.0", sha, options))
    return path, release, options, Discovery(cluster.kube), cluster.kube.version()


def test_rollback_after_promote_puts_the_replaced_slot_back(cluster, namespace, tmp_path):
    create(cluster, httproute(namespace))
    ref = route_ref(namespace)
    with AutoController(cluster, ref):
        ship(cluster, tmp_path, namespace, "1.0.0")
        traffic(cluster, namespace).run("promote")
        ship(cluster, tmp_path, namespace, "2.0.0")
        traffic(cluster, namespace).run("promote")
        with pytest.raises(InputError) as refused:
            deployer(cluster).rollback(namespace, KEY)
        assert "manent_traffic" in refused.value.hint

        rolled = traffic(cluster, namespace).run("rollback")

        assert rolled.weights == {"a": 100, "b": 0} and replicas(cluster, namespace, "shop-a") == 4
        loc = locator(cluster, namespace)
        assert (loc["version"], loc["slot"], loc["replaced"]) == ("1.0.0", "a", "2.0.0")
        assert record_status(cluster, namespace, "2.0.0") == STATUS_ROLLED_BACK
        traffic(cluster, namespace).run("retire")
        assert replicas(cluster, namespace, "shop-b") == 0 and replicas(cluster, namespace, "shop-a") == 4
        with pytest.raises(InputError) as retired:
            traffic(cluster, namespace).run("rollback")
        assert "was retired" in str(retired.value)


def _managers(cluster, namespace, name):
    live = cluster.get("apps/v1", "Deployment", namespace, name)
    return {entry["manager"] for entry in live["metadata"].get("managedFields") or ()}


def test_a_refused_step_changes_nothing_and_says_so(cluster, namespace, tmp_path):
    """Every check of the route comes before the first write: a step whose route is refused (a testers' rule that
    lists one slot backend, as the seed's example route has) leaves the candidate at its size, and both the
    error and the result say that nothing was changed."""
    ref = candidate_of(cluster, tmp_path, namespace)
    rules = read(cluster, ref)["spec"]["rules"]
    rules[0]["backendRefs"] = [backend for backend in rules[0]["backendRefs"] if backend["name"] == "shop-a"]
    cluster.kube.request("PATCH", routes.path_of(ref), body={"spec": {"rules": rules}},
                         content_type="application/merge-patch+json")
    route_before = read(cluster, ref)["metadata"]["resourceVersion"]
    candidate_before = cluster.get("apps/v1", "Deployment", namespace, "shop-b")["metadata"]["resourceVersion"]

    with pytest.raises(InputError) as refused:
        traffic(cluster, namespace).run("step", 50)

    assert "the testers' rule 0 (testers) must list both shop-a and shop-b" in str(refused.value)
    assert "nothing was changed" in str(refused.value)
    assert cluster.get("apps/v1", "Deployment", namespace, "shop-b")["metadata"]["resourceVersion"] == \
        candidate_before and replicas(cluster, namespace, "shop-b") == 1
    assert "manent-traffic" not in _managers(cluster, namespace, "shop-b")
    assert read(cluster, ref)["metadata"]["resourceVersion"] == route_before
    partial = refused.value.partial.to_dict()
    assert (partial["changed"], partial["scaled"], partial["written"]) == (False, [], [])
    assert locator(cluster, namespace)["lockHolder"] == ""


def test_a_step_that_fails_after_a_write_says_exactly_what_was_written(cluster, namespace, tmp_path):
    """The candidate grew and the weights were written, then the route's controller never accepted them: the
    error and its partial result list both writes, never "nothing was changed". The step stays recorded in progress
    (with why it stopped) for status, and its rerun finishes it."""
    ref = candidate_of(cluster, tmp_path, namespace)

    with pytest.raises(WaitError) as failed:
        traffic(cluster, namespace, accept_timeout=2).run("step", 50)

    partial = failed.value.partial.to_dict()
    candidate = "Deployment/%s/shop-b" % namespace
    assert partial["changed"] is True
    assert partial["scaled"] == [{"object": candidate, "from": 1, "to": 2}]
    assert partial["written"] == ["%s: replicas 1 -> 2" % candidate,
                                  "HTTPRoute/%s/shop: weights a 50, b 50" % namespace]
    assert partial["weights"] == {"a": 50, "b": 50}
    message = str(failed.value)
    assert "written before the failure: %s: replicas 1 -> 2; HTTPRoute/%s/shop: weights a 50, b 50" % (
        candidate, namespace) in message and "nothing was changed" not in message
    assert replicas(cluster, namespace, "shop-b") == 2

    record = json.loads(locator(cluster, namespace)["inProgress"])
    assert (record["operation"], record["percent"], record["weights"], record["replicas"]) == (
        "step", 50, {"a": 50, "b": 50}, {candidate: 2}), "worker-b is HPA-managed: %r" % record
    assert record["stopped"] and "not accepted after 2s" in record["reason"], record
    summary = traffic(cluster, namespace).run("status").history["in_progress"]["summary"]
    assert summary.startswith("step to 50 %% interrupted: started %s by " % record["started"]), summary
    assert "the route sends a 50, b 50, target a 50, b 50;" in summary and "rerun the step to 50 %" in summary
    with AutoController(cluster, ref):
        again = traffic(cluster, namespace).run("step", 50)
    assert "the step to 50 %% started %s by %s did not finish: this step to 50 %% finishes it" % (
        record["started"], record["by"]) in again.warnings, again.warnings
    assert "inProgress" not in locator(cluster, namespace)


def _resource_versions(cluster, namespace, names=("shop-a", "worker-a", "shop-b", "worker-b")):
    out = {name: cluster.get("apps/v1", "Deployment", namespace, name)["metadata"]["resourceVersion"] for name in names}
    out["hpa"] = cluster.get("autoscaling/v2", "HorizontalPodAutoscaler", namespace, "worker-a")["metadata"][
        "resourceVersion"]
    return out


def _observed(route):
    """The generation the stand-in controller last reported on ``route``."""
    parents = (route.get("status") or {}).get("parents") or [{}]
    return min(c.get("observedGeneration") or 0 for c in parents[0].get("conditions") or [{}])


def test_retire_is_refused_while_any_rule_still_sends_to_the_slot(cluster, namespace, tmp_path):
    """After the promotion of 2.0.0 (slot b), the route gets a second rule for /api that still sends everything to
    shop-a (one the infrastructure wrote, listing only that slot), then a second weighted rule turned back to slot a
    by hand: retire names the rule each time and writes nothing (route, workloads, HPA, history), then retires once
    no rule sends to slot a."""
    ref = candidate_of(cluster, tmp_path, namespace)
    api = {"path": {"type": "PathPrefix", "value": "/api"}}
    with AutoController(cluster, ref):
        traffic(cluster, namespace).run("promote")
        for backends in ([{"name": "shop-a", "port": 8080, "weight": 100}],
                         [{"name": "shop-a", "port": 8080, "weight": 100},
                          {"name": "shop-b", "port": 8080, "weight": 0}]):
            rules = [item for item in read(cluster, ref)["spec"]["rules"] if item.get("name") != "api"]
            rules.append({"name": "api", "matches": [api], "backendRefs": backends})
            generation = cluster.kube.request("PATCH", routes.path_of(ref), body={"spec": {"rules": rules}},
                                              content_type="application/merge-patch+json").data["metadata"]["generation"]
            cluster.wait(lambda: _observed(read(cluster, ref)) == generation, what="the controller's status")
            route_before = read(cluster, ref)["metadata"]["resourceVersion"]
            before = _resource_versions(cluster, namespace)
            loc_before = {k: v for k, v in locator(cluster, namespace).items() if not k.startswith("lock")}

            with pytest.raises(InputError) as refused:
                traffic(cluster, namespace).run("retire")

            message = str(refused.value)
            assert 'cannot retire slot a: the route still sends it traffic in rule 3 (api) matching [{"path":' \
                in message and '"/api"' in message and ": a 100, b 0" in message, message
            assert ("manent weighs only the rules that list both" in message) == (len(backends) == 1), message
            assert ("promote again" in message) == (len(backends) == 2), message
            assert "nothing was changed" in message
            assert read(cluster, ref)["metadata"]["resourceVersion"] == route_before
            assert _resource_versions(cluster, namespace) == before
            assert replicas(cluster, namespace, "shop-a") == 4
            loc = locator(cluster, namespace)
            assert {k: v for k, v in loc.items() if not k.startswith("lock") and k != "updated"} == \
                {k: v for k, v in loc_before.items() if k != "updated"} and loc["lockHolder"] == ""
            assert "inProgress" not in loc
            status = traffic(cluster, namespace).run("status")
            assert any("rule 3 (api)" in rule_["rule"] and rule_["weights"] == {"a": 100, "b": 0}
                       for rule_ in status.route["rules"]), status.route

        rules = [item for item in read(cluster, ref)["spec"]["rules"] if item.get("name") != "api"]
        cluster.kube.request("PATCH", routes.path_of(ref), body={"spec": {"rules": rules}},
                             content_type="application/merge-patch+json")
        traffic(cluster, namespace).run("retire")
    assert replicas(cluster, namespace, "shop-a") == 0 and locator(cluster, namespace)["retired"] == "1.0.0"


def test_abort_keeps_the_candidate_up_while_a_rule_manent_does_not_weigh_sends_to_it(cluster, namespace, tmp_path):
    """A /preview rule that lists only shop-b: abort moves the weighted rules (and the testers') back to slot a, then
    refuses to scale shop-b down, naming the rule; once the rule is gone, abort again finishes it."""
    ref = candidate_of(cluster, tmp_path, namespace)
    rules = read(cluster, ref)["spec"]["rules"]
    rules.append({"name": "preview", "matches": [{"path": {"type": "PathPrefix", "value": "/preview"}}],
                  "backendRefs": [{"name": "shop-b", "port": 8080}]})
    cluster.kube.request("PATCH", routes.path_of(ref), body={"spec": {"rules": rules}},
                         content_type="application/merge-patch+json")
    with AutoController(cluster, ref):
        traffic(cluster, namespace).run("step", 50)
        with pytest.raises(InputError) as refused:
            traffic(cluster, namespace).run("abort")
        message = str(refused.value)
        assert "cannot scale down slot b: the route still sends it traffic in rule 3 (preview) matching" in message
        assert ": a 0, b 1 (" in message and "then abort again" in message, message
        assert weights(rule(read(cluster, ref), "app")) == {"a": 100, "b": 0}
        assert replicas(cluster, namespace, "shop-b") == 2 and locator(cluster, namespace)["candidate"] == "2.0.0"

        rules = [item for item in read(cluster, ref)["spec"]["rules"] if item.get("name") != "preview"]
        cluster.kube.request("PATCH", routes.path_of(ref), body={"spec": {"rules": rules}},
                             content_type="application/merge-patch+json")
        again = traffic(cluster, namespace).run("abort")
    assert any("this abort of 2.0.0 finishes it" in warning for warning in again.warnings), again.warnings
    assert replicas(cluster, namespace, "shop-b") == 0 and record_status(cluster, namespace, "2.0.0") == STATUS_ABORTED


def test_a_step_down_shrinks_the_candidate_after_the_settle_delay_and_says_so(cluster, namespace, tmp_path):
    """Proportional replicas shrink only once the traffic moved and the settle delay passed, and the result
    lists the shrink."""
    ref = candidate_of(cluster, tmp_path, namespace)
    at_settle = []

    def sleep(seconds):
        at_settle.append((seconds, replicas(cluster, namespace, "shop-b"),
                          weights(rule(read(cluster, ref), "app"))))

    with AutoController(cluster, ref):
        traffic(cluster, namespace).run("step", 50)
        down = traffic(cluster, namespace, settle_delay=7, sleep=sleep).run("step", 10)
    assert (7, 2, {"a": 90, "b": 10}) in at_settle, "at the settle delay: traffic moved, the candidate not shrunk"
    candidate = "Deployment/%s/shop-b" % namespace
    assert down.scaled == [{"object": candidate, "from": 2, "to": 1}] and replicas(cluster, namespace, "shop-b") == 1
    assert down.written[-1] == "%s: replicas 2 -> 1" % candidate and down.changed is True


def test_a_route_in_another_namespace_sends_to_the_services_a_reference_grant_allows(
        cluster, namespace, namespaces, tmp_path):
    """The platform team's HTTPRoute lives in its own namespace (``namespaces``: another fresh one) and names the
    slot Services with the release's namespace: refused before any write, naming the ReferenceGrant to create,
    until one lets it; then every operation weighs those backends."""
    infra = namespaces
    create(cluster, foreign_route(infra, namespace))
    ref = routes.RouteRef("HTTPRoute", infra, "shop")
    ship(cluster, tmp_path, namespace, "1.0.0")
    before = cluster.get("apps/v1", "Deployment", namespace, "shop-a")["metadata"]["resourceVersion"]

    with pytest.raises(InputError) as refused:
        traffic(cluster, namespace, route_namespace=infra).run("promote")

    message = str(refused.value)
    assert message.startswith("HTTPRoute/%s/shop: no ReferenceGrant of namespace %s lets HTTPRoutes of namespace %s "
                              "send to the Services shop-a and shop-b" % (infra, namespace, infra)), message
    assert json.dumps(reference_grant(namespace, infra, ["shop-a", "shop-b"])["spec"]) in message
    assert '"metadata": {"name": "httproutes-from-%s", "namespace": "%s"}' % (infra, namespace) in message
    assert "nothing was changed" in message
    assert cluster.get("apps/v1", "Deployment", namespace, "shop-a")["metadata"]["resourceVersion"] == before

    create_grant = reference_grant(namespace, infra)
    cluster.kube.request("POST", "/apis/gateway.networking.k8s.io/v1beta1/namespaces/%s/referencegrants"
                         % namespace, body=create_grant)
    with AutoController(cluster, ref):
        promoted = traffic(cluster, namespace, route_namespace=infra).run("promote")
        assert promoted.weights == {"a": 100, "b": 0} and replicas(cluster, namespace, "shop-a") == 4
        ship(cluster, tmp_path, namespace, "2.0.0")
        step = traffic(cluster, namespace, route_namespace=infra).run("step", 50)
    assert step.weights == {"a": 50, "b": 50} and step.route["accepted"] == "accepted"
    assert weights(rule(read(cluster, ref), "app")) == {"a": 50, "b": 50}
    assert weights(rule(read(cluster, ref), "testers")) == {"a": 0, "b": 100}
    assert replicas(cluster, namespace, "shop-b") == 2
    status = traffic(cluster, namespace, route_namespace=infra).run("status")
    assert status.weights == {"a": 50, "b": 50} and status.route["namespace"] == infra


def test_istio_finds_the_destination_rule_by_host_along_istios_lookup_path(cluster, namespace, namespaces, tmp_path):
    """The VirtualService lives in the platform team's namespace and names the Service by its full host: the
    DestinationRule is the one Istio uses for that host, whatever its name, looked up in the Services' namespace,
    then the VirtualService's, then the root namespace; a missing one is refused naming the host, every namespace
    searched and the rule to create."""
    infra, root = namespaces, "t-root-" + uuid.uuid4().hex[:8]
    host = "shop.%s.svc.cluster.local" % namespace
    route = virtualservice(infra)
    for entry in route["spec"]["http"]:
        for target in entry["route"]:
            if target["destination"]["host"] == "shop":
                target["destination"]["host"] = host
    create(cluster, route)
    istio = dict(router="istio", proportional=False, route_namespace=infra, istio_root_namespace=root)
    cluster.create_namespace(root)
    try:
        ship(cluster, tmp_path, namespace, "1.0.0", router="istio", proportional=False)
        with pytest.raises(InputError) as missing:
            traffic(cluster, namespace, **istio).run("promote")
        text = str(missing.value)
        assert text.startswith("VirtualService/%s/shop: no DestinationRule for host %s in namespace %s, %s or %s"
                               % (infra, host, namespace, infra, root)), text
        assert "create it in %s with metadata: {name: shop, namespace: %s}, spec: {host: %s, subsets: [{name: a" % (
            namespace, namespace, host) in text and "nothing was changed" in text

        rule = destination_rule(root)
        rule["metadata"]["name"], rule["spec"]["host"] = "mesh-wide", host
        create(cluster, rule)
        assert traffic(cluster, namespace, **istio).run("promote").weights == {"a": 100, "b": 0}, "root namespace"

        ship(cluster, tmp_path, namespace, "2.0.0", router="istio", proportional=False)
        rule = destination_rule(infra, subsets=())
        rule["metadata"]["name"], rule["spec"]["host"] = "gateway-side", host
        create(cluster, rule)
        with pytest.raises(InputError) as shadowed:
            traffic(cluster, namespace, **istio).run("step", 30)
        assert str(shadowed.value).startswith("DestinationRule/%s/gateway-side: subset a is missing; subset b is "
                                              "missing" % infra), str(shadowed.value)

        rule = destination_rule(namespace)
        rule["metadata"]["name"] = "shop-slots"
        create(cluster, rule)
        step = traffic(cluster, namespace, **istio).run("step", 30)
    finally:
        cluster.delete_namespace(root)
    http = {entry["name"]: entry for entry in read(cluster, routes.RouteRef("VirtualService", infra, "shop"))[
        "spec"]["http"]}
    assert {d["destination"]["subset"]: d["weight"] for d in http["app"]["route"]} == {"a": 70, "b": 30}
    assert step.weights == {"a": 70, "b": 30}
