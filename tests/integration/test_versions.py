# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A playbook deploy + rollback and a traffic step with the ansible-core, kubernetes client and Python of the
running interpreter: the tests each entry of the supported-versions matrix runs (hack/test-matrix.sh, hack/test-matrix.txt); in the main
suite it runs with the main venv's versions. The modules run on this same Python (the inventory's
ansible_python_interpreter is replaced), so the client under test is the one the modules import."""

from __future__ import annotations

import contextlib
import os
import sys

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import routes
from tests.integration.playbook_helpers import (deployment_ready, run_playbook, shop_vars, traffic_vars,
                                                write_inventory)
from tests.integration.route_helpers import AutoController, create, httproute, read, rule, weights


def _installed():
    import ansible.release  # pylint: disable=import-outside-toplevel
    import kubernetes  # pylint: disable=import-outside-toplevel
    return ansible.release.__version__, kubernetes.__version__


def _versions():
    core, client = _installed()
    return "ansible-core %s, kubernetes %s, Python %d.%d" % ((core, client) + sys.version_info[:2])


def test_the_matrix_entry_runs_the_versions_it_names():
    """hack/test-matrix.sh names the versions of its venv; a stale or wrong venv fails here, not silently."""
    core, client = _installed()
    assert core == os.environ.get("MANENT_MATRIX_ANSIBLE_CORE", core)
    assert client == os.environ.get("MANENT_MATRIX_KUBERNETES", client)
    assert "%d.%d" % sys.version_info[:2] == os.environ.get("MANENT_MATRIX_PYTHON", "%d.%d" % sys.version_info[:2])


def _this_interpreter(clusters, inventory_path, tmp_path):
    return write_inventory(inventory_path, str(tmp_path / "inventory.yml"), host_vars={
        c.name: {"ansible_python_interpreter": sys.executable} for c in clusters})


@pytest.mark.integration
def test_playbook_deploy_then_rollback_with_this_ansible_and_client(clusters, inventory_path, namespaces, tmp_path):
    """Deploy 1.0.0 then 2.0.0 everywhere (waves by region), roll back everywhere: 1.0.0 again on every cluster."""
    ns = namespaces
    versions = _versions()
    inventory = _this_interpreter(clusters, inventory_path, tmp_path)
    v1 = shop_vars(tmp_path, ns, "1.0.0", "hello from 1.0.0")
    v2 = shop_vars(tmp_path, ns, "2.0.0", "hello from 2.0.0", replicas="3")
    names = sorted(c.name for c in clusters)

    run = run_playbook("deploy", inventory, v1, tmp_path)
    assert run.rc == 0, "%s: %s" % (versions, run.explain())
    assert {h: (e["status"], e["version"]) for h, e in run.summary.items()} == \
        {h: ("deployed", "1.0.0") for h in names}, run.explain()

    run = run_playbook("deploy", inventory, v2, tmp_path)
    assert run.rc == 0, "%s: %s" % (versions, run.explain())
    assert {h: (e["status"], e["version"], e["previous"]) for h, e in run.summary.items()} == \
        {h: ("deployed", "2.0.0", "1.0.0") for h in names}, run.explain()
    for c in clusters:
        assert c.get("v1", "ConfigMap", ns, "shop-config")["data"]["greeting"] == "hello from 2.0.0", c.name

    run = run_playbook("rollback", inventory, v2, tmp_path)
    assert run.rc == 0, "%s: %s" % (versions, run.explain())
    assert {h: (e["status"], e["version"], e["previous"]) for h, e in run.summary.items()} == \
        {h: ("rolled-back", "1.0.0", "2.0.0") for h in names}, run.explain()
    for c in clusters:
        assert c.get("v1", "ConfigMap", ns, "shop-config")["data"]["greeting"] == "hello from 1.0.0", c.name
        assert c.get("apps/v1", "Deployment", ns, "shop")["spec"]["replicas"] == 2, c.name
        assert deployment_ready(c, ns, "shop"), c.name


@pytest.mark.integration
def test_playbook_traffic_step_with_this_ansible_and_client(clusters, inventory_path, namespaces, tmp_path):
    """A traffic release promoted into slot a, the next one in slot b, one 10 % step through traffic.yml: the
    route's weights move on every cluster (a stand-in controller accepts each route generation)."""
    ns = namespaces
    versions = _versions()
    inventory = _this_interpreter(clusters, inventory_path, tmp_path)
    with contextlib.ExitStack() as stack:
        for cluster in clusters:
            create(cluster, httproute(ns))
            stack.enter_context(AutoController(cluster, routes.RouteRef("HTTPRoute", ns, "shop")))
        for playbook, version, extra in (("deploy", "1.0.0", {}),
                                         ("traffic", "1.0.0", {"deploy_traffic_operation": "promote"}),
                                         ("deploy", "2.0.0", {}),
                                         ("traffic", "2.0.0", {"deploy_traffic_operation": "step",
                                                               "deploy_traffic_steps": [{"percent": 10,
                                                                                         "pause": "0s"}]})):
            run = run_playbook(playbook, inventory, traffic_vars(tmp_path, ns, version, **extra), tmp_path)
            assert run.rc == 0, "%s: %s %s: %s" % (versions, playbook, version, run.explain())
        for cluster in clusters:
            route = read(cluster, routes.RouteRef("HTTPRoute", ns, "shop"))
            assert weights(rule(route, "app")) == {"a": 90, "b": 10}, (cluster.name, versions)
