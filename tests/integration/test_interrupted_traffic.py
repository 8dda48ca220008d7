# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A traffic rollout interrupted as AWX cancels a job: ansible-playbook's process group SIGKILLed (ansible-runner),
so no ``rescue`` or ``always`` of the role runs, at each stage of a step (weights written, scale-up in progress,
analysis running), of an abort (half done) and of a deploy wave's analysis; then ``status`` and the next operation.

Each stage is reached by watching the cluster (the route's weights, a Deployment's replicas, the locator), never
by sleeping. What must hold: ``status`` tells the truth (what the route sends where, the slot in service, the
operation that did not finish with its target and what of it is missing, the lock and its holder), the lock is
released by the worker that ran the operation (plugin_utils/stopping.py) or, when that worker died too, stays held
by it until it expires and is then taken over, and ``step``, ``abort`` or a rerun converge. One cluster; the
shared Prometheus rig is only queried."""

from __future__ import annotations

import json

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import locator_name, version_part
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import STATUS_ABORTED
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import routes
from tests import reliability
from tests.integration.deploy_helpers import locator, record_status
from tests.integration.playbook_helpers import run_playbook, shop_vars, start_playbook, traffic_vars
from tests.integration.process_helpers import kill_all, kill_group, new_marker, wait_for_moment
from tests.integration.route_helpers import AutoController, create, httproute, read, replicas, rule, weights

pytestmark = pytest.mark.integration

KEY = ReleaseKey(application="shop", artifact="shop", environment="test")
STOP_TIMEOUT = 120  # seconds the killed run's processes get to end
MOMENT_TIMEOUT = 180  # seconds until the run reaches the stage it is killed at
SOURCE = "tests/integration/test_interrupted_traffic.py"
SLOW = {"interval": "5s", "count": 100, "min_window": "5s"}  # an analysis that outlasts the test
FAST = {"interval": "1s", "count": 2, "min_window": "5s"}
CHECKS = [{"name": "always-fine", "query": "vector(0)", "max": 1}]


class Rollout:
    """shop 1.0.0 in service in slot a (2 replicas), 2.0.0 the candidate in slot b (1 replica), behind the HTTPRoute
    ``shop`` of ``namespace`` on ``cluster``; runs playbooks/traffic.yml on that cluster alone."""

    def __init__(self, cluster, inventory, namespace, tmp_path):
        self.cluster, self.inventory, self.namespace, self.tmp = cluster, inventory, namespace, tmp_path
        self.ref = routes.RouteRef("HTTPRoute", namespace, "shop")
        create(cluster, httproute(namespace))
        with AutoController(cluster, self.ref):
            self.play("deploy", version="1.0.0")
            self.play("traffic", deploy_traffic_operation="promote", version="1.0.0")
            self.play("deploy")

    def variables(self, version="2.0.0", **extra):
        out = traffic_vars(self.tmp, self.namespace, version)
        out.update(deploy_wait_timeout="10m", **extra)
        return out

    def play(self, name, version="2.0.0", ok=True, **extra):
        run = run_playbook(name, self.inventory, self.variables(version, **extra), self.tmp, limit=self.cluster.name)
        assert (run.rc == 0) == ok, run.explain()
        return run

    def killed(self, moment, what, workers_first=False, **extra):
        """playbooks/traffic.yml with ``extra``, its process group SIGKILLed once ``moment()`` holds; its output."""
        marker = new_marker()
        log = str(self.tmp / "killed.log")
        run = start_playbook("traffic", self.inventory, self.variables(**extra), self.tmp, log,
                             limit=self.cluster.name, env=marker)
        try:
            wait_for_moment(moment, run, log, MOMENT_TIMEOUT, what)
            left = kill_group(run, marker, STOP_TIMEOUT, workers_first=workers_first)
            assert not left, "processes of the killed run still alive (pids %s)" % left
        finally:
            kill_all(marker)
        with open(log, encoding="utf-8", errors="replace") as handle:
            return handle.read()

    def weights(self):
        return weights(rule(read(self.cluster, self.ref), "app"))

    def locator(self):
        return locator(self.cluster, self.namespace, KEY)

    def in_progress(self):
        text = self.locator().get("inProgress")
        return json.loads(text) if text else None

    def status(self):
        """The status operation's result on the cluster (the summary file's outcome)."""
        run = self.play("traffic", deploy_traffic_operation="status")
        return run.summary[self.cluster.name]["outcome"]

    def replicas(self, name):
        return replicas(self.cluster, self.namespace, name)


def said(run, text):
    """Whether the run's output holds ``text`` (Ansible wraps long warnings: whitespace is compared loosely)."""
    return " ".join(text.split()) in " ".join(run.output.replace("[WARNING]:", " ").split())


def record(case, detail=""):
    reliability.record("fault", case, True, detail=detail, source=SOURCE)


def test_step_killed_after_its_weights_were_written_then_rerun(cluster, inventory_path, namespace, tmp_path):
    """No route controller answers, so the step waits for the route to be accepted once its weights are written:
    killed there, its worker (its parent gone) stops, notes why in the record and releases the lock; status says
    the step to 10 % was interrupted with the route already at 90/10; the same step again finishes it."""
    shop = Rollout(cluster, inventory_path, namespace, tmp_path)
    shop.killed(lambda: shop.weights() == {"a": 90, "b": 10}, "the weights written",
                deploy_traffic_operation="step", deploy_traffic_percent=10, deploy_traffic_accept_timeout="10m")

    loc = shop.locator()
    assert (loc["version"], loc["slot"], loc["candidate"], loc["lockHolder"]) == ("1.0.0", "a", "2.0.0", ""), loc
    step = shop.in_progress()
    assert (step["operation"], step["percent"], step["weights"]) == ("step", 10, {"a": 90, "b": 10}), step
    assert "SIGTERM" in step["reason"] and step["stopped"], step
    outcome = shop.status()
    summary = outcome["history"]["in_progress"]["summary"]
    assert summary.startswith("step to 10 %% interrupted: started %s by %s, not finished (stopped %s: the run was "
                              "stopped (SIGTERM)" % (step["started"], step["by"], step["stopped"])), summary
    assert "the route sends a 90, b 10, target a 90, b 10;" in summary and "rerun the step to 10 %" in summary
    assert outcome["weights"] == {"a": 90, "b": 10} and outcome["history"]["in_service"]["slot"] == "a"
    assert outcome["history"]["lock"]["holder"] == ""

    with AutoController(cluster, shop.ref):
        again = shop.play("traffic", deploy_traffic_operation="step", deploy_traffic_percent=10)
    assert said(again, "the step to 10 %% started %s by %s did not finish: this step to 10 %% finishes it"
                % (step["started"], step["by"])), again.explain()
    assert shop.in_progress() is None and shop.locator()["weight"] == "10" and shop.weights() == {"a": 90, "b": 10}
    record("ansible-playbook's process group SIGKILLed (AWX cancel) during a traffic step, its weights written: "
           "status reports the interrupted step and the route's 90/10, the lock released; the same step finishes it",
           "interrupted %s, stopped %s" % (step["started"], step["stopped"]))


def test_step_killed_during_its_scale_up_then_aborted(cluster, inventory_path, namespace, tmp_path):
    """A ResourceQuota stops the candidate's second pod, so the step to 60 % waits for its scale-up (1 -> 2) before
    any weight moves: killed there, status says the route still sends 100/0 against the 40/60 target and that
    shop-b has 2 replicas, 1 ready; abort converges (route 100/0, shop-b at 0, the candidate aborted)."""
    shop = Rollout(cluster, inventory_path, namespace, tmp_path)
    pods = len(cluster.list("v1", "Pod", namespace))
    cluster.apply({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "no-more-pods",
                                                                             "namespace": namespace},
                   "spec": {"hard": {"pods": str(pods)}}})
    cluster.wait(lambda: (cluster.get("v1", "ResourceQuota", namespace, "no-more-pods").get("status") or {}).get(
        "used", {}).get("pods") == str(pods), what="the quota counts the namespace's pods")
    shop.killed(lambda: shop.replicas("shop-b") == 2, "the scale-up", deploy_traffic_operation="step",
                deploy_traffic_percent=60)

    assert shop.weights() == {"a": 100, "b": 0} and shop.locator()["lockHolder"] == ""
    summary = shop.status()["history"]["in_progress"]["summary"]
    assert summary.startswith("step to 60 % interrupted: started "), summary
    assert "the route sends a 100, b 0, target a 40, b 60 (weights not written yet);" in summary, summary
    assert "Deployment/%s/shop-b at 2 replicas, 1 ready" % namespace in summary, summary

    step = shop.in_progress()
    with AutoController(cluster, shop.ref):
        aborted = shop.play("traffic", deploy_traffic_operation="abort")
    assert said(aborted, "the step to 60 %% started %s by %s did not finish: this abort of 2.0.0 replaces it"
                % (step["started"], step["by"])), aborted.explain()
    assert shop.weights() == {"a": 100, "b": 0} and shop.replicas("shop-b") == 0 and shop.replicas("shop-a") == 2
    assert shop.in_progress() is None and shop.locator()["candidate"] == ""
    assert record_status(cluster, namespace, "2.0.0", KEY) == STATUS_ABORTED
    record("ansible-playbook's process group SIGKILLed during a traffic step's scale-up: status reports the route "
           "unchanged (100/0) against the step's target and the candidate's unready replicas; abort converges")


def test_abort_killed_half_done_with_its_worker_then_rerun_after_the_lock_expired(
        cluster, inventory_path, namespace, tmp_path):
    """The abort moved every weight back to slot a and waits the settle delay before scaling the candidate down:
    killed there with its worker (nothing can clean up), the lock stays held by that worker: status names it, the
    next abort is refused naming it until it expires; once expired (lockExpires moved to the past, as time would)
    the next abort takes it over, says so, and finishes: the candidate at zero and aborted."""
    shop = Rollout(cluster, inventory_path, namespace, tmp_path)
    with AutoController(cluster, shop.ref):
        shop.play("traffic", deploy_traffic_operation="step", deploy_traffic_percent=50)
        shop.killed(lambda: shop.weights() == {"a": 100, "b": 0}, "the weights moved back", workers_first=True,
                    deploy_traffic_operation="abort", deploy_traffic_settle_delay="10m")

    loc = shop.locator()
    abort = shop.in_progress()
    assert (abort["operation"], abort["weights"], "stopped" in abort) == ("abort", {"a": 100, "b": 0}, False), abort
    assert loc["lockHolder"] == abort["by"] and loc["candidate"] == "2.0.0", loc
    outcome = shop.status()
    summary = outcome["history"]["in_progress"]["summary"]
    assert summary.startswith("abort of 2.0.0 interrupted: started %s by %s, not finished (its run ended without "
                              "a word: killed)" % (abort["started"], abort["by"])), summary
    assert ("the route sends a 100, b 0, target a 100, b 0; scale-down of Deployment/%s/shop-b to 0 replicas not "
            "done (1 now); rerun abort to finish it" % namespace) in summary, summary
    assert outcome["history"]["lock"] == {"holder": abort["by"], "since": loc["lockSince"],
                                          "expires": loc["lockExpires"], "state": "held"}, outcome["history"]

    refused = shop.play("traffic", ok=False, deploy_traffic_operation="abort")
    assert said(refused, "deploy %r holds the release lock since %s until %s"
                % (abort["by"], loc["lockSince"], loc["lockExpires"])), refused.explain()
    assert shop.replicas("shop-b") == 1

    path = cluster.path("v1", "ConfigMap", namespace, locator_name(KEY))
    cluster.kube.request("PATCH", path, body={"data": {"lockExpires": "2000-01-01T00:00:00Z"}},
                         content_type="application/merge-patch+json")
    with AutoController(cluster, shop.ref):
        again = shop.play("traffic", deploy_traffic_operation="abort")
    assert said(again, "took over the expired release lock of deploy %r" % abort["by"]), again.explain()
    assert said(again, "the abort of 2.0.0 started %s by %s did not finish: this abort of 2.0.0 finishes it"
                % (abort["started"], abort["by"])), again.explain()
    assert shop.replicas("shop-b") == 0 and shop.in_progress() is None and shop.locator()["lockHolder"] == ""
    assert record_status(cluster, namespace, "2.0.0", KEY) == STATUS_ABORTED
    record("ansible-playbook and its worker SIGKILLed during an abort, after the weights moved back: status reports "
           "the half-done abort and the lock held by the dead worker; the next abort is refused naming it, takes it "
           "over once expired and finishes")


def test_step_killed_during_its_analysis_then_rerun(
        cluster, inventory_path, namespace, tmp_path, prometheus):
    """The step to 10 % finished (weights 90/10, no operation in progress, the lock free) and its analysis runs:
    killed there, status says just that (the verdict is not recorded anywhere: nothing judged the candidate); the
    same step with its analysis again writes nothing, judges the candidate and passes."""
    shop = Rollout(cluster, inventory_path, namespace, tmp_path)
    analysis = {"deploy_analysis_provider": {"url": prometheus.url, "timeout": "5s"}, "deploy_traffic_steps": [
        {"percent": 10, "analysis": dict(SLOW, checks=CHECKS)}]}
    output = []

    def analysing():
        with open(str(tmp_path / "killed.log"), encoding="utf-8", errors="replace") as handle:
            output[:] = [handle.read()]
        loc = shop.locator()
        return ("Traffic | Analysis of the step to 10 %" in output[0] and loc["weight"] == "10"
                and not loc.get("inProgress") and not loc["lockHolder"])

    with AutoController(cluster, shop.ref):
        shop.killed(analysing, "the analysis", deploy_traffic_operation="step", **analysis)
        outcome = shop.status()
        assert outcome["weights"] == {"a": 90, "b": 10} and outcome["history"]["in_progress"] == {}, outcome
        candidate = dict(outcome["history"]["candidate"])
        assert candidate.pop("record").endswith("-2-0-0-" + version_part("2.0.0")[-6:]), outcome
        assert candidate == {"version": "2.0.0", "slot": "b", "weight": "10"}
        assert outcome["history"]["lock"]["holder"] == ""
        route_version = read(cluster, shop.ref)["metadata"]["resourceVersion"]
        analysis["deploy_traffic_steps"][0]["analysis"] = dict(FAST, checks=CHECKS)
        again = shop.play("traffic", deploy_traffic_operation="step", **analysis)
    assert again.summary[cluster.name]["analysis"]["verdict"] == "Successful", again.summary
    assert read(cluster, shop.ref)["metadata"]["resourceVersion"] == route_version, "the step was already taken"
    record("ansible-playbook's process group SIGKILLed while a step's analysis ran: status reports the step taken "
           "(90/10) and nothing in progress; the rerun writes nothing and judges the candidate again")


def test_deploy_killed_during_its_wave_analysis_then_rerun(cluster, inventory_path, namespace, tmp_path, prometheus):
    """A deploy of 2.0.0 whose wave is being judged (the bake running): killed there, history says 2.0.0 is in
    service and the lock is free (the apply had finished); the rerun writes nothing, judges the wave again and
    passes."""
    provider = {"url": prometheus.url, "timeout": "5s"}
    first = run_playbook("deploy", inventory_path, shop_vars(tmp_path, namespace, "1.0.0", "hello"), tmp_path,
                         limit=cluster.name)
    assert first.rc == 0, first.explain()
    marker = new_marker()
    log = str(tmp_path / "killed.log")
    variables = shop_vars(tmp_path, namespace, "2.0.0", "v2", deploy_analysis_provider=provider,
                          deploy_wave_analysis=dict(SLOW, checks=CHECKS, bake="10m"))
    run = start_playbook("deploy", inventory_path, variables, tmp_path, log, limit=cluster.name, env=marker)

    def judging():
        with open(log, encoding="utf-8", errors="replace") as handle:
            started = "Analysis | Judge this cluster after the wave's rollout" in handle.read()
        loc = locator(cluster, namespace, KEY) or {}
        return started and loc.get("version") == "2.0.0" and not loc.get("lockHolder")

    try:
        wait_for_moment(judging, run, log, MOMENT_TIMEOUT, "the wave analysis")
        left = kill_group(run, marker, STOP_TIMEOUT)
        assert not left, "processes of the killed run still alive (pids %s)" % left
    finally:
        kill_all(marker)

    listed = run_playbook("history", inventory_path, shop_vars(tmp_path, namespace, "2.0.0", "v2"), tmp_path,
                          limit=cluster.name)
    assert listed.rc == 0, listed.explain()
    assert locator(cluster, namespace, KEY)["version"] == "2.0.0"
    config = cluster.get("v1", "ConfigMap", namespace, "shop-config")["metadata"]["resourceVersion"]
    again = run_playbook("deploy", inventory_path, shop_vars(
        tmp_path, namespace, "2.0.0", "v2", deploy_analysis_provider=provider,
        deploy_wave_analysis=dict(FAST, checks=CHECKS)), tmp_path, limit=cluster.name)
    assert again.rc == 0, again.explain()
    result = again.summary[cluster.name]
    assert result["status"] == "deployed" and result["analysis"]["verdict"] == "Successful", result
    assert cluster.get("v1", "ConfigMap", namespace, "shop-config")["metadata"]["resourceVersion"] == config
    record("ansible-playbook's process group SIGKILLed during a deploy wave's analysis (bake): history keeps the "
           "deployed release in service with the lock free; the rerun rewrites nothing and judges the wave again")
