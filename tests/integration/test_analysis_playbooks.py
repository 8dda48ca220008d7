# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's metric analysis (docs/analysis.md, "In the role") through the playbooks, on the local clusters and
the real Prometheus of the test rig scraping the traffic exporter: traffic steps gated by checks and promoted, a
failing candidate aborted by itself, a query refused by the preflight before any change, check mode, the token in
no output, deploy waves judged per cluster (a failed wave stops the run, and is rolled back when asked), and
Prometheus going away during a step's or a wave's analysis (on_error); an endpoint that is not Prometheus fails the
preflight with nothing changed; a proxy whose error page echoes the credentials fails the traffic preflight without a
piece of them in the output or the summary file."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import secrets
import urllib.parse

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import routes
from tests.http_stubs import echoing_proxy, leaked_pieces, serve
from tests.integration.module_helpers import run_module
from tests.integration.playbook_helpers import (
    labelled_history, resource_versions, run_playbook, shop_vars, traffic_vars, write_inventory)
from tests.integration.prometheus_helpers import wait_until, within
from tests.integration.route_helpers import AutoController, create, httproute, read, replicas, rule, weights

import tcpproxy  # noqa: E402  pylint: disable=wrong-import-order,import-error  # hack/, put on the path by prometheus_helpers

pytestmark = pytest.mark.integration
ROUTE = ("HTTPRoute", "shop")
FAST = {"interval": "1s", "count": 2, "min_window": "5s"}  # each analysis: about 6 s


def error_ratio(traffic, slot="${slot}"):
    svc = traffic.selector()
    return ('(sum(rate(http_requests_total{%s,slot="%s",code=~"5.."}[${window}])) or vector(0)) / '
            'sum(rate(http_requests_total{%s,slot="%s"}[${window}]))' % (svc, slot, svc, slot))


def seen(prometheus, traffic, slot, until):
    """Wait until Prometheus has scraped the slot's error ratio ``until`` holds over the last 10 s."""
    query = error_ratio(traffic, slot).replace("${window}", "10s")
    wait_until(lambda: prometheus.client.scalar(query), until, timeout=120, what="error ratio of slot %s" % slot)


def ran(run, task):
    """The hosts for which the role's task ``task`` ran (ok, changed or failed; not skipped), each time it ran."""
    return run.task_hosts(("ok", "changed", "fatal")).get(task, [])


def analysis(traffic, **settings):
    return dict(FAST, checks=[{"name": "error-ratio", "query": error_ratio(traffic), "max": 0.05}], **settings)


def app_weights(cluster, namespace):
    return weights(rule(read(cluster, routes.RouteRef(ROUTE[0], namespace, ROUTE[1])), "app"))


def state(cluster, namespace):
    """The resourceVersions of the route, the release's objects and its history: unchanged means nothing written."""
    route = read(cluster, routes.RouteRef(ROUTE[0], namespace, ROUTE[1]))
    out = {"route": route["metadata"]["resourceVersion"]}
    out.update(resource_versions(cluster, namespace))
    out.update({"history/" + cm["metadata"]["name"]: cm["metadata"]["resourceVersion"]
                for cm in labelled_history(cluster, namespace, "shop")})
    return out


@contextlib.contextmanager
def candidate_release(cluster, inventory_path, namespace, tmp_path):
    """On ``cluster``: shop 1.0.0 deployed and promoted (slot a in service), then 2.0.0 deployed as the candidate
    (slot b, no traffic yet), with a stand-in route controller; yields play(version, check, verbosity, **vars)."""
    create(cluster, httproute(namespace))
    with AutoController(cluster, routes.RouteRef(ROUTE[0], namespace, ROUTE[1])):
        def play(name, version, check=False, verbosity=0, **extra):
            return run_playbook(name, inventory_path, traffic_vars(tmp_path, namespace, version, **extra), tmp_path,
                                limit=cluster.name, check=check, verbosity=verbosity)

        promote = {"deploy_traffic_operation": "promote"}
        for name, version, extra in (("deploy", "1.0.0", {}), ("traffic", "1.0.0", promote), ("deploy", "2.0.0", {})):
            run = play(name, version, **extra)
            assert run.rc == 0, run.explain()
        assert app_weights(cluster, namespace) == {"a": 100, "b": 0}
        yield play


def test_healthy_candidate_steps_gated_by_checks_then_promoted_token_in_no_output(
        cluster, inventory_path, namespace, tmp_path, prometheus, traffic, private_prometheus):
    server = private_prometheus(auth="bearer")
    traffic.set("a", rps=20, error_ratio=0.01)
    traffic.set("b", rps=20, error_ratio=0.01)
    seen(server, traffic, "b", within(0, 0.05))
    provider = {"url": server.url, "bearer_token": server.bearer_token, "timeout": "5s"}
    with candidate_release(cluster, inventory_path, namespace, tmp_path) as play:
        run = play("traffic", "2.0.0", verbosity=3, deploy_traffic_operation="step",
                   deploy_traffic_steps=[{"percent": 10}, {"percent": 50, "pause": "20s"}],
                   deploy_traffic_promote=True, deploy_analysis_provider=provider,
                   deploy_traffic_analysis=analysis(traffic))
        assert run.rc == 0, run.explain()
        assert app_weights(cluster, namespace) == {"a": 0, "b": 100}  # promoted
        tasks = run.tasks
        assert [t for t in tasks if t.startswith("Traffic | Analysis of the step")] == [
            "Traffic | Analysis of the step to 10 %", "Traffic | Analysis of the step to 50 %"], tasks
        assert tasks.index("Traffic | Analysis of the step to 50 %") < tasks.index("Traffic | promote"), tasks
        # The analysis (about 7 s) passed within the 50 % step's pause of 20 s: the rest of the pause is waited.
        assert ran(run, "Traffic | The rest of the pause after the step to 50 %") == [cluster.name], run.explain()
        assert ran(run, "Traffic | The rest of the pause after the step to 10 %") == []  # no pause given
        assert "Traffic | Analysis preflight (every query once, before any weight change)" not in tasks  # a block
        assert "Traffic | Send every query of the analysis once" in tasks
        assert tasks.index("Traffic | Send every query of the analysis once") < tasks.index("Traffic | step")
        result = run.summary[cluster.name]
        assert result["status"] == "done" and result["analysis"]["verdict"] == "Successful", result
        assert result["analysis"]["step"] == 50 and result["analysis"]["checks"][0]["name"] == "error-ratio"
        assert "%s: analysis Successful" % cluster.name in run.output
        # The candidate's measurements came through the bearer proxy: the progress lines name slot b's check.
        assert "manent_analysis [" in run.output and "error-ratio #2" in run.output
        for text in (run.output, json.dumps(run.result)):
            assert server.bearer_token not in text
        with open(str(tmp_path / "extra-vars.json"), encoding="utf-8") as handle:
            assert server.bearer_token in handle.read()  # the test did give it


def test_failing_candidate_aborted_by_itself_preflight_and_check_mode_change_nothing(
        cluster, inventory_path, namespace, tmp_path, prometheus, traffic):
    traffic.set("a", rps=20, error_ratio=0.0)
    traffic.set("b", rps=20, error_ratio=0.3)
    seen(prometheus, traffic, "b", within(0.2, 0.4))
    provider = {"url": prometheus.url, "timeout": "5s"}
    steps = [{"percent": 10}, {"percent": 50}]
    with candidate_release(cluster, inventory_path, namespace, tmp_path) as play:
        before = state(cluster, namespace)

        # (c) A query Prometheus refuses: the preflight stops the run before the first weight change.
        broken = analysis(traffic)
        broken["checks"] = broken["checks"] + [{"name": "typo", "query": "sum(rate(http_requests_total[${window}])",
                                                "max": 1}]
        refused = play("traffic", "2.0.0", deploy_traffic_operation="step", deploy_traffic_steps=steps,
                       deploy_analysis_provider=provider, deploy_traffic_analysis=broken)
        assert refused.rc != 0, refused.explain()
        assert "analysis preflight failed, no weight changed" in refused.output and "typo" in refused.output
        assert "bad_data" in refused.output, refused.explain()
        assert state(cluster, namespace) == before
        assert refused.summary[cluster.name]["status"] == "failed"

        # (e) Check mode: the analysis runs and reports Failed; nothing is aborted or written.
        checked = play("traffic", "2.0.0", check=True, deploy_traffic_operation="step", deploy_traffic_steps=steps,
                       deploy_analysis_provider=provider, deploy_traffic_analysis=analysis(traffic))
        assert checked.rc == 0, checked.explain()
        assert checked.summary[cluster.name]["analysis"]["verdict"] == "Failed", checked.summary
        assert "%s: analysis Failed: check error-ratio Failed" % cluster.name in checked.output
        assert ran(checked, "Traffic | Analysis of the step to 50 %") == [cluster.name]  # check mode goes on
        assert ran(checked, "Traffic | abort") == [], checked.explain()
        assert state(cluster, namespace) == before

        # No data (a service without series) is Inconclusive: the run stops at 10 % and changes nothing more.
        nothing = {"name": "no-such-traffic", "min": 1,
                   "query": 'sum(rate(http_requests_total{service="%s-none"}[${window}]))' % traffic.name}
        unsure = play("traffic", "2.0.0", deploy_traffic_operation="step", deploy_traffic_steps=steps,
                      deploy_analysis_provider=provider, deploy_traffic_analysis=dict(FAST, checks=[nothing]))
        assert unsure.rc != 0, unsure.explain()
        assert app_weights(cluster, namespace) == {"a": 90, "b": 10} and ran(unsure, "Traffic | abort") == []
        message = unsure.summary[cluster.name]["message"]
        assert message.startswith("analysis of the step to 10 % Inconclusive: check no-such-traffic Inconclusive")
        assert "no data" in message.lower() and message.endswith(
            "weights left at a 90, b 10 on %s (on_inconclusive pause): run operation abort, or step again, after "
            "looking at the checks' data" % cluster.name), message

        # on_failure pause: the run fails at the 10 % step without the abort; the weights stay.
        paused = play("traffic", "2.0.0", deploy_traffic_operation="step", deploy_traffic_steps=steps,
                      deploy_analysis_provider=provider, deploy_traffic_analysis=analysis(traffic, on_failure="pause"))
        assert paused.rc != 0, paused.explain()
        assert app_weights(cluster, namespace) == {"a": 90, "b": 10} and ran(paused, "Traffic | abort") == []
        assert paused.summary[cluster.name]["message"].endswith(
            "weights left at a 90, b 10 on %s (on_failure pause): run operation abort, or step again, after looking "
            "at the failed check" % cluster.name), paused.summary

        # (b) The 10 % step fails its check during its pause of 10 minutes: the abort happens by itself, without
        # waiting the pause out, and the run fails saying why.
        run = play("traffic", "2.0.0", deploy_traffic_operation="step",
                   deploy_traffic_steps=[{"percent": 10, "pause": "10m"}, {"percent": 50}],
                   deploy_traffic_promote=True, deploy_analysis_provider=provider,
                   deploy_traffic_analysis=analysis(traffic))
        assert run.rc != 0, run.explain()
        assert app_weights(cluster, namespace) == {"a": 100, "b": 0}
        assert replicas(cluster, namespace, "shop-b") == 0 and replicas(cluster, namespace, "shop-a") == 2
        result = run.summary[cluster.name]
        message = result["message"]
        assert result["status"] == "failed" and result["analysis"]["verdict"] == "Failed", result
        assert message.startswith("analysis of the step to 10 % Failed: check error-ratio Failed"), message
        assert re.search(r"value 0\.[23]\d* > 0\.05 \(max\)", message), message  # the value and the condition
        assert 'query: (sum(rate(http_requests_total{%s,slot="b",code=~"5.."}' % traffic.selector() in message
        assert message.endswith("aborted (on_failure abort): all traffic back to the stable slot (weights a 100, "
                                "b 0), the candidate scaled to zero"), message
        assert ran(run, "Traffic | abort") == [cluster.name]
        assert "Traffic | The rest of the pause after the step to 10 %" not in run.output
        assert "Traffic | Analysis of the step to 50 %" not in run.output and "Traffic | promote" not in run.output
        assert "check error-ratio Failed" in run.output  # the run's error, as printed


def test_waves_a_failed_wave_stops_the_run_and_is_rolled_back_when_asked(
        clusters, inventory_path, namespaces, tmp_path, prometheus, traffic):
    ns = namespaces
    traffic.set("a", rps=20, error_ratio=0.3)
    seen(prometheus, traffic, "a", within(0.2, 0.4))
    checks = [{"name": "error-ratio", "query": error_ratio(traffic, "a"), "max": 0.05}]
    provider = {"url": prometheus.url, "timeout": "5s"}
    first = run_playbook("deploy", inventory_path, shop_vars(tmp_path, ns, "1.0.0", "hello"), tmp_path)
    assert first.rc == 0, first.explain()
    by_name = {c.name: c for c in clusters}
    wave1 = [c for c in clusters if c.region == "eu-1"]
    us = by_name["us1a"]
    untouched = resource_versions(us, ns)

    def greeting(cluster):
        return cluster.get("v1", "ConfigMap", ns, "shop-config")["data"]["greeting"]

    # Check mode: every wave is judged on the dry run and reported Failed; nothing fails, nothing is written.
    before = {c.name: resource_versions(c, ns) for c in clusters}
    checked = run_playbook("deploy", inventory_path, shop_vars(
        tmp_path, ns, "2.0.0", "v2", deploy_analysis_provider=provider,
        deploy_wave_analysis=dict(FAST, checks=checks, on_failure="rollback")), tmp_path, check=True)
    assert checked.rc == 0, checked.explain()
    for cluster in clusters:
        assert checked.summary[cluster.name]["analysis"]["verdict"] == "Failed", checked.summary
        assert "rolled_back" not in checked.summary[cluster.name]
        assert resource_versions(cluster, ns) == before[cluster.name]

    # on_failure rollback: wave 1 (eu-1) fails its analysis, is rolled back to 1.0.0; wave 2 (us-1) never starts.
    run = run_playbook("deploy", inventory_path, shop_vars(
        tmp_path, ns, "2.0.0", "v2", deploy_analysis_provider=provider,
        deploy_wave_analysis=dict(FAST, checks=checks, bake="2s", on_failure="rollback")), tmp_path)
    assert run.rc != 0, run.explain()
    for cluster in wave1:
        result = run.summary[cluster.name]
        assert result["status"] == "failed" and result["rolled_back"] is True, result
        assert result["analysis"]["verdict"] == "Failed", result
        assert result["message"].startswith("wave analysis failed: 0 of 2 cluster(s) of the wave passed"), result
        assert "value 0." in result["message"] and "> 0.05" in result["message"], result
        assert result["message"].endswith("rolled back to 1.0.0 (on_failure rollback)"), result
        assert greeting(cluster) == "hello"
    assert run.summary["us1a"]["status"] == "not started"
    assert resource_versions(us, ns) == untouched and greeting(us) == "hello"

    # on_failure stop (the default): wave 1 stays on 2.0.0, failed; wave 2 still never starts.
    stop = run_playbook("deploy", inventory_path, shop_vars(
        tmp_path, ns, "2.0.0", "v2", deploy_analysis_provider=provider,
        deploy_wave_analysis=dict(FAST, checks=checks)), tmp_path)
    assert stop.rc != 0, stop.explain()
    for cluster in wave1:
        result = stop.summary[cluster.name]
        assert result["status"] == "failed" and result["rolled_back"] is False, result
        assert "rolled back" not in result["message"] and greeting(cluster) == "v2"
    assert stop.summary["us1a"]["status"] == "not started" and resource_versions(us, ns) == untouched


class VanishingPrometheus:
    """A loopback TCP proxy (hack/tcpproxy.py) in front of the shared Prometheus: ``url`` answers as Prometheus does
    until it has taken a given number of connections, then stops listening and every later connection is refused. A
    Prometheus that goes away at a known point of a run (each query is one connection), without stopping the one
    other tests share."""

    def __init__(self, prometheus):
        target = urllib.parse.urlsplit(prometheus.url)
        self.proxy = tcpproxy.Proxy((target.hostname, target.port))
        self.url = "http://127.0.0.1:%d" % self.proxy.start()

    @property
    def closed_after(self):
        """The connections it had taken when it stopped listening; None while it still listens."""
        return self.proxy.stats["closed_at"]

    def close(self):
        self.proxy.stop()

    def close_during(self, play, connections):
        """Run ``play()`` (a playbook run) with the endpoint closing itself once it has taken ``connections``
        connections (the preflight's queries, then the analysis' first measurements); the run."""
        self.proxy.set(close_after=connections)
        return play()


@contextlib.contextmanager
def vanishing_prometheus(prometheus):
    endpoint = VanishingPrometheus(prometheus)
    try:
        yield endpoint
    finally:
        endpoint.close()


def outage_check(traffic, slot="${slot}"):
    """The error-ratio check of a healthy slot, 3 measurements out of at most 5: one measurement passes, then
    Prometheus goes away and the errors leave count out of reach (Error before consecutive_error_limit 4)."""
    return {"name": "error-ratio", "query": error_ratio(traffic, slot), "max": 0.05, "max_measurements": 5}


OUTAGE = {"interval": "2s", "count": 3, "min_window": "5s"}  # a measurement at 5 s after the start, then every 2 s


def test_prometheus_gone_during_a_step_aborts_the_candidate_or_pauses_when_asked(
        cluster, inventory_path, namespace, tmp_path, prometheus, traffic):
    traffic.set("a", rps=20, error_ratio=0.0)
    traffic.set("b", rps=20, error_ratio=0.0)
    seen(prometheus, traffic, "b", within(-1, 0.01))
    steps = [{"percent": 10}, {"percent": 50}]

    def step_with(endpoint, **settings):
        return lambda: play("traffic", "2.0.0", deploy_traffic_operation="step", deploy_traffic_steps=steps,
                            deploy_analysis_provider={"url": endpoint.url, "timeout": "5s"},
                            deploy_traffic_analysis=dict(OUTAGE, checks=[outage_check(traffic)], **settings))

    def check_error(run, endpoint):
        """The step to 10 % judged Error, naming Prometheus' failure: the first measurement went through (2
        connections: the preflight's and its), then the errors made count unreachable."""
        assert run.rc != 0, run.explain()
        assert endpoint.closed_after == 2, endpoint.closed_after
        result = run.summary[cluster.name]
        assert result["status"] == "failed" and result["analysis"]["verdict"] == "Error", result
        message = result["message"]
        # one measurement decided: the endpoint closed once it had served it
        assert re.match(r"analysis of the step to 10 % Error: check error-ratio Error: 1 of count 3 measurements "
                        r"decided and max_measurements 5 cannot reach it: [34] of [34] measurements were errors "
                        r"\(0 skipped for lack of data\); at ", message), message
        assert "query: Prometheus at %s: unreachable: " % endpoint.url in message, message
        assert "Traffic | Analysis of the step to 50 %" not in run.output
        return message

    with candidate_release(cluster, inventory_path, namespace, tmp_path) as play:
        # on_error pause: the weights stay as the step set them, and the message says so and what to run next.
        with vanishing_prometheus(prometheus) as endpoint:
            paused = endpoint.close_during(step_with(endpoint, on_error="pause"), connections=2)
        message = check_error(paused, endpoint)
        assert message.endswith("; weights left at a 90, b 10 on %s (on_error pause): run operation abort, or step "
                                "again, after checking Prometheus" % cluster.name), message
        assert app_weights(cluster, namespace) == {"a": 90, "b": 10} and ran(paused, "Traffic | abort") == []
        assert replicas(cluster, namespace, "shop-b") > 0
        assert paused.summary[cluster.name]["analysis"]["action"] == "pause"

        # The default (on_error abort): the automatic abort, all traffic back to the stable slot, the candidate at 0.
        with vanishing_prometheus(prometheus) as endpoint:
            aborted = endpoint.close_during(step_with(endpoint), connections=2)
        message = check_error(aborted, endpoint)
        assert message.endswith("; aborted (on_error abort): all traffic back to the stable slot (weights a 100, "
                                "b 0), the candidate scaled to zero"), message
        assert app_weights(cluster, namespace) == {"a": 100, "b": 0} and ran(aborted, "Traffic | abort") == [
            cluster.name]
        assert replicas(cluster, namespace, "shop-b") == 0 and replicas(cluster, namespace, "shop-a") == 2
        assert aborted.summary[cluster.name]["analysis"]["action"] == "abort"
        assert "check error-ratio Error" in aborted.output  # the run's error, as printed


def test_prometheus_gone_during_a_wave_rolls_it_back_on_error_or_stops_when_asked(
        clusters, inventory_path, namespaces, tmp_path, prometheus, traffic):
    ns = namespaces
    traffic.set("a", rps=20, error_ratio=0.0)
    seen(prometheus, traffic, "a", within(-1, 0.01))
    first = run_playbook("deploy", inventory_path, shop_vars(tmp_path, ns, "1.0.0", "hello"), tmp_path)
    assert first.rc == 0, first.explain()
    wave1 = [c for c in clusters if c.region == "eu-1"]
    us = next(c for c in clusters if c.name == "us1a")
    untouched = resource_versions(us, ns)
    # the plan's preflight sends one query per cluster, then each cluster of wave 1 measures once before the outage
    connections = len(clusters) + 1

    def deploy_with(endpoint, **settings):
        return lambda: run_playbook("deploy", inventory_path, shop_vars(
            tmp_path, ns, "2.0.0", "v2", deploy_analysis_provider={"url": endpoint.url, "timeout": "5s"},
            deploy_wave_analysis=dict(OUTAGE, checks=[outage_check(traffic, "a")], bake="2s", **settings)), tmp_path)

    def greeting(cluster):
        return cluster.get("v1", "ConfigMap", ns, "shop-config")["data"]["greeting"]

    def check_error(run, endpoint, cluster):
        assert run.rc != 0, run.explain()
        result = run.summary[cluster.name]
        assert result["status"] == "failed" and result["analysis"]["verdict"] == "Error", result
        assert result["message"].startswith("wave analysis failed: 0 of 2 cluster(s) of the wave passed"), result
        assert "this cluster: analysis Error: check error-ratio Error: " in result["message"], result
        assert "measurements were errors" in result["message"], result
        assert "query: Prometheus at %s: unreachable: " % endpoint.url in result["message"], result
        return result

    # on_error rollback (on_failure stays stop): wave 1 is rolled back to 1.0.0; wave 2 never starts.
    with vanishing_prometheus(prometheus) as endpoint:
        run = endpoint.close_during(deploy_with(endpoint, on_error="rollback"), connections)
    assert endpoint.closed_after == connections, endpoint.closed_after
    for cluster in wave1:
        result = check_error(run, endpoint, cluster)
        assert result["rolled_back"] is True and result["message"].endswith(
            "rolled back to 1.0.0 (on_error rollback)"), result
        assert greeting(cluster) == "hello"
    assert run.summary["us1a"]["status"] == "not started"
    assert resource_versions(us, ns) == untouched

    # on_error stop over on_failure rollback: wave 1 stays on 2.0.0 and the message says so; wave 2 never starts.
    with vanishing_prometheus(prometheus) as endpoint:
        stop = endpoint.close_during(deploy_with(endpoint, on_failure="rollback", on_error="stop"), connections)
    for cluster in wave1:
        result = check_error(stop, endpoint, cluster)
        assert result["rolled_back"] is False and result["message"].endswith(
            "; %s stays on 2.0.0 (on_error stop): run playbooks/rollback.yml, or deploy again, after checking "
            "Prometheus" % cluster.name), result
        assert greeting(cluster) == "v2"
    assert stop.summary["us1a"]["status"] == "not started" and resource_versions(us, ns) == untouched


def test_waves_pass_with_healthy_checks_and_a_bad_query_stops_before_any_write(
        clusters, inventory_path, namespaces, tmp_path, prometheus, traffic):
    ns = namespaces
    traffic.set("a", rps=20, error_ratio=0.0)
    seen(prometheus, traffic, "a", within(-1, 0.01))  # (low, high]: 0 included
    provider = {"url": prometheus.url, "timeout": "5s"}
    healthy = [{"name": "error-ratio", "query": error_ratio(traffic, "a"), "max": 0.05}]
    bad = run_playbook("deploy", inventory_path, shop_vars(
        tmp_path, ns, "1.0.0", "hello", deploy_analysis_provider=provider,
        deploy_wave_analysis=dict(FAST, checks=healthy + [{"name": "typo", "query": "rate(x[${window}]", "max": 1}])),
        tmp_path)
    assert bad.rc != 0, bad.explain()
    assert "analysis preflight failed, nothing was deployed" in bad.output and "bad_data" in bad.output
    for cluster in clusters:
        assert cluster.get("v1", "ConfigMap", ns, "shop-config") is None
    run = run_playbook("deploy", inventory_path, shop_vars(
        tmp_path, ns, "1.0.0", "hello", deploy_analysis_provider=provider,
        deploy_wave_analysis=dict(FAST, checks=healthy, quorum="50%")), tmp_path)
    assert run.rc == 0, run.explain()
    for cluster in clusters:
        result = run.summary[cluster.name]
        assert result["status"] == "deployed" and result["analysis"]["verdict"] == "Successful", result
        assert "%s: analysis Successful" % cluster.name in run.output


def test_waves_quorum_counts_the_clusters_that_passed(
        clusters, inventory_path, namespaces, tmp_path, prometheus, traffic):
    """eu1b's queries are about a slot with errors (its deploy_analysis_context, a host variable), eu1a's and us1a's
    about a healthy one: with quorum 50 % both waves pass; with quorum all, wave 1 fails as a whole (1 of 2) and both
    of its clusters are rolled back, the one that passed too."""
    ns = namespaces
    traffic.set("a", rps=20, error_ratio=0.0)
    traffic.set("b", rps=20, error_ratio=0.3)
    seen(prometheus, traffic, "b", within(0.2, 0.4))
    seen(prometheus, traffic, "a", within(-1, 0.01))
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"), host_vars={
        c.name: {"deploy_analysis_context": {"candidate_slot": "b" if c.name == "eu1b" else "a"}} for c in clusters})
    provider = {"url": prometheus.url, "timeout": "5s"}
    checks = [{"name": "error-ratio", "query": error_ratio(traffic), "max": 0.05}]
    half = run_playbook("deploy", inventory, shop_vars(
        tmp_path, ns, "1.0.0", "hello", deploy_analysis_provider=provider,
        deploy_wave_analysis=dict(FAST, checks=checks, quorum="50%")), tmp_path)
    assert half.rc == 0, half.explain()
    verdicts = {host: result["analysis"]["verdict"] for host, result in half.summary.items()}
    assert verdicts == {"eu1a": "Successful", "eu1b": "Failed", "us1a": "Successful"}, half.summary
    assert "eu1b: analysis Failed: check error-ratio Failed" in half.output

    everyone = run_playbook("deploy", inventory, shop_vars(
        tmp_path, ns, "2.0.0", "v2", deploy_analysis_provider=provider,
        deploy_wave_analysis=dict(FAST, checks=checks, on_failure="rollback")), tmp_path)
    assert everyone.rc != 0, everyone.explain()
    for name in ("eu1a", "eu1b"):
        result = everyone.summary[name]
        assert result["status"] == "failed" and result["rolled_back"] is True, result
        assert result["message"].startswith("wave analysis failed: 1 of 2 cluster(s) of the wave passed the "
                                            "analysis, 2 needed (not passed: eu1b)"), result
        assert next(c for c in clusters if c.name == name).get(
            "v1", "ConfigMap", ns, "shop-config")["data"]["greeting"] == "hello"
    assert everyone.summary["eu1a"]["analysis"]["verdict"] == "Successful"
    assert everyone.summary["us1a"]["status"] == "not started"


def test_bad_analysis_variables_stop_before_any_cluster_is_touched(inventory_path, tmp_path):
    extra = traffic_vars(tmp_path, "never-created-ns", "1.0.0", deploy_traffic_operation="step",
                         deploy_traffic_steps=[{"percent": 10, "analysis": {
                             "on_failure": "rollback", "on_error": "roll back"}}])
    run = run_playbook("traffic", inventory_path, extra, tmp_path)
    assert run.rc != 0, run.explain()
    assert "deploy_traffic_steps[0].analysis.checks: must be a list of checks" in run.output, run.explain()
    assert "deploy_traffic_steps[0].analysis.on_error: 'roll back' is not one of abort, pause" in run.output
    assert "deploy_traffic_steps[0].analysis.on_failure: 'rollback' is not one of abort, pause" in run.output
    assert "deploy_analysis_provider.url: is not set" in run.output
    assert "Traffic | step" not in run.output


LOKI_STREAMS = {"status": "success", "data": {"resultType": "streams", "result": [
    {"stream": {"app": "shop"}, "values": [["1733306400000000000", "GET / 200"]]}]}}


def _json(body):
    return lambda _method, _path, _headers, _body: (200, "application/json", json.dumps(body).encode())


def _api_server_version(cluster):
    """The body of the API server's /version, as it answers it."""
    return cluster.kube.get_json("/version")


def test_an_endpoint_that_is_not_prometheus_fails_the_preflight_with_nothing_changed(
        clusters, inventory_path, namespaces, tmp_path):
    """provider.url at another API answering success with data Prometheus never gives (Loki's streams): the role's
    wave preflight stops the run before any write, saying what was answered and where provider.url must point."""
    cluster = clusters[0]
    checks = [{"name": "errors", "query": "sum(rate(http_requests_total[${window}]))", "max": 0.05}]
    with serve(_json(LOKI_STREAMS)) as url:
        run = run_playbook("deploy", inventory_path, shop_vars(
            tmp_path, namespaces, "1.0.0", "hello", deploy_analysis_provider={"url": url, "timeout": "5s"},
            deploy_wave_analysis=dict(FAST, checks=checks)), tmp_path, limit=cluster.name)
    assert run.rc != 0, run.explain()
    assert "analysis preflight failed, nothing was deployed" in run.output, run.explain()
    assert "not a Prometheus query answer: unknown result type 'streams'" in run.output, run.explain()
    assert "provider.url must point at Prometheus" in run.output
    assert cluster.get("v1", "ConfigMap", namespaces, "shop-config") is None
    assert labelled_history(cluster, namespaces, "shop") == []
    # The same refusal for other answers that are not Prometheus', as the role's preflight task calls the module.
    others = {"a JSON document": _json({"status": "success", "data": {"foo": 1}}),
              "the API server's /version": _json(_api_server_version(cluster)),
              "a web page": lambda *_args: (200, "text/html", b"<html><body><h1>It works!</h1></body></html>")}
    for what, answer in others.items():
        with serve(answer) as url:
            failed, result = run_module("manent_analysis", tmp_path, mode="preflight", checks=checks,
                                        provider={"url": url, "timeout": "5s"}, context={"namespace": namespaces})
        assert failed and result["preflight"][0]["outcome"] == "refused", (what, result)
        assert "not a Prometheus" in result["msg"] and "provider.url" in result["msg"], (what, result["msg"])


def test_a_proxy_echoing_the_credentials_fails_the_traffic_preflight_without_a_piece_of_them(
        cluster, inventory_path, namespace, tmp_path):
    """A proxy in front of Prometheus answers 502 with a page that echoes the request's credentials near its top:
    the traffic preflight stops the step with nothing changed, and no piece of 8 characters of the token, or of the
    password (with a backslash and a quote) and its base64, is in the -vvv output or the summary file."""
    token = secrets.token_urlsafe(450)[:600]
    password = 'pw\\"%s"\\q' % secrets.token_hex(12)
    basic = base64.b64encode(("manent:%s" % password).encode()).decode()
    seen = []
    with candidate_release(cluster, inventory_path, namespace, tmp_path) as play, serve(echoing_proxy(seen)) as url:
        before = state(cluster, namespace)
        for provider in ({"url": url, "bearer_token": token, "timeout": "5s"},
                         {"url": url, "username": "manent", "password": password, "timeout": "5s"}):
            run = play("traffic", "2.0.0", verbosity=3, deploy_traffic_operation="step",
                       deploy_traffic_steps=[{"percent": 10}], deploy_analysis_provider=provider,
                       deploy_traffic_analysis=dict(FAST, checks=[{"name": "errors", "query": "sum(up)", "max": 1}]))
            for channel, text in (("-vvv output", run.output), ("summary file", json.dumps(run.result))):
                leaked = len(leaked_pieces(text, [token, password, basic]))  # the count only, never the pieces
                assert leaked == 0, "%d pieces of the credentials in the %s" % (leaked, channel)
            assert run.rc != 0, run.explain()
            assert "analysis preflight failed, no weight changed" in run.output, run.explain()
            message = run.summary[cluster.name]["message"]
            assert "502 Bad Gateway" in message and "Authorization: ********" in message, message
            assert state(cluster, namespace) == before
    assert "Bearer " + token in seen and "Basic " + basic in seen  # the proxy did get the credentials
