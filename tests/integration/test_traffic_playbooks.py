# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Traffic rollouts through the playbooks (deploy.yml with deploy_strategy: traffic, then traffic.yml) on the
three local clusters, with -l region_… and check mode; a stand-in route controller per cluster reports each new
route generation as accepted (no data plane runs here)."""

from __future__ import annotations

import contextlib

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import routes
from tests.integration.playbook_helpers import run_playbook, traffic_vars
from tests.integration.route_helpers import AutoController, create, httproute, read, rule, weights

pytestmark = pytest.mark.integration


def app_weights(cluster, namespace):
    return weights(rule(read(cluster, routes.RouteRef("HTTPRoute", namespace, "shop")), "app"))


def replicas(cluster, namespace, name):
    live = cluster.get("apps/v1", "Deployment", namespace, name)
    return None if live is None else live["spec"]["replicas"]


def test_rollout_promote_abort_retire_with_limits_and_check_mode(clusters, inventory_path, namespaces, tmp_path):
    ns = namespaces
    with contextlib.ExitStack() as stack:
        for cluster in clusters:
            create(cluster, httproute(ns))
            stack.enter_context(AutoController(cluster, routes.RouteRef("HTTPRoute", ns, "shop")))

        def v2(operation):
            return traffic_vars(tmp_path, ns, "2.0.0", deploy_traffic_operation=operation)

        def play(name, version, **extra):
            run = run_playbook(name, inventory_path, traffic_vars(tmp_path, ns, version, **extra), tmp_path)
            assert run.rc == 0, run.explain()
            return run

        play("deploy", "1.0.0")
        for cluster in clusters:
            assert replicas(cluster, ns, "shop-a") == 1 and cluster.get("v1", "Service", ns, "shop-a")
        play("traffic", "1.0.0", deploy_traffic_operation="promote")
        for cluster in clusters:
            assert app_weights(cluster, ns) == {"a": 100, "b": 0} and replicas(cluster, ns, "shop-a") == 2

        play("deploy", "2.0.0")
        # Two steps with a pause, in one run, wave by wave.
        run = play("traffic", "2.0.0", deploy_traffic_operation="step",
                   deploy_traffic_steps=[{"percent": 10, "pause": "0s"}, {"percent": 50, "pause": "1s"}])
        eu = [c for c in clusters if c.region == "eu-1"]
        us = [c for c in clusters if c.region != "eu-1"]
        assert "host  operation  status  in service  candidate" in run.output
        for cluster in clusters:
            assert app_weights(cluster, ns) == {"a": 50, "b": 50}
        limited = run_playbook("traffic", inventory_path, v2("abort"),
                               tmp_path, limit="region_us1")
        assert limited.rc == 0, limited.explain()
        for cluster in us:
            assert app_weights(cluster, ns) == {"a": 100, "b": 0} and replicas(cluster, ns, "shop-b") == 0
        for cluster in eu:
            assert app_weights(cluster, ns) == {"a": 50, "b": 50} and replicas(cluster, ns, "shop-b") == 1

        checked = run_playbook("traffic", inventory_path, v2("promote"),
                               tmp_path, limit="region_eu1", check=True)
        assert checked.rc == 0, checked.explain()
        for cluster in eu:
            assert app_weights(cluster, ns) == {"a": 50, "b": 50}, "check mode changes nothing"

        done = run_playbook("traffic", inventory_path, v2("promote"),
                            tmp_path, limit="region_eu1")
        assert done.rc == 0, done.explain()
        summary = done.summary
        assert sorted(summary) == ["eu1a", "eu1b"] and all(entry["status"] == "done" for entry in summary.values())
        retired = run_playbook("traffic", inventory_path, v2("retire"),
                               tmp_path, limit="region_eu1")
        assert retired.rc == 0, retired.explain()
        for cluster in eu:
            assert app_weights(cluster, ns) == {"a": 0, "b": 100}
            assert replicas(cluster, ns, "shop-b") == 2 and replicas(cluster, ns, "shop-a") == 0

        # Nothing to promote on us-1 (aborted): a clear failure naming the cluster, the run fails.
        failed = run_playbook("traffic", inventory_path, v2("promote"),
                              tmp_path, limit="region_us1")
        assert failed.rc != 0 and "there is no candidate release to move traffic to" in failed.output
