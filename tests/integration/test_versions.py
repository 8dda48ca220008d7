# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One playbook deploy + rollback with the ansible-core and kubernetes client of the running Python: the test
each entry of the supported-versions matrix runs (hack/test-matrix.sh, hack/test-matrix.txt); in the main
suite it runs with the main venv's versions. The modules run on this same Python (the inventory's
ansible_python_interpreter is replaced), so the client under test is the one the modules import."""

from __future__ import annotations

import os
import sys

import pytest

from tests.integration.playbook_helpers import deployment_ready, run_playbook, shop_vars, write_inventory


def _installed():
    import ansible.release  # pylint: disable=import-outside-toplevel
    import kubernetes  # pylint: disable=import-outside-toplevel
    return ansible.release.__version__, kubernetes.__version__


def test_the_matrix_entry_runs_the_versions_it_names():
    """hack/test-matrix.sh names the versions of its venv; a stale or wrong venv fails here, not silently."""
    core, client = _installed()
    assert core == os.environ.get("MANENT_MATRIX_ANSIBLE_CORE", core)
    assert client == os.environ.get("MANENT_MATRIX_KUBERNETES", client)


@pytest.mark.integration
def test_playbook_deploy_then_rollback_with_this_ansible_and_client(clusters, inventory_path, namespaces, tmp_path):
    """Deploy 1.0.0 then 2.0.0 everywhere (waves by region), roll back everywhere: 1.0.0 again on every cluster."""
    ns = namespaces
    core, client = _installed()
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"), host_vars={
        c.name: {"ansible_python_interpreter": sys.executable} for c in clusters})
    v1 = shop_vars(tmp_path, ns, "1.0.0", "hello from 1.0.0")
    v2 = shop_vars(tmp_path, ns, "2.0.0", "hello from 2.0.0", replicas="3")
    names = sorted(c.name for c in clusters)

    run = run_playbook("deploy", inventory, v1, tmp_path)
    assert run.rc == 0, "ansible-core %s, kubernetes %s: %s" % (core, client, run.explain())
    assert {h: (e["status"], e["version"]) for h, e in run.summary.items()} == \
        {h: ("deployed", "1.0.0") for h in names}, run.explain()

    run = run_playbook("deploy", inventory, v2, tmp_path)
    assert run.rc == 0, "ansible-core %s, kubernetes %s: %s" % (core, client, run.explain())
    assert {h: (e["status"], e["version"], e["previous"]) for h, e in run.summary.items()} == \
        {h: ("deployed", "2.0.0", "1.0.0") for h in names}, run.explain()
    for c in clusters:
        assert c.get("v1", "ConfigMap", ns, "shop-config")["data"]["greeting"] == "hello from 2.0.0", c.name

    run = run_playbook("rollback", inventory, v2, tmp_path)
    assert run.rc == 0, "ansible-core %s, kubernetes %s: %s" % (core, client, run.explain())
    assert {h: (e["status"], e["version"], e["previous"]) for h, e in run.summary.items()} == \
        {h: ("rolled-back", "1.0.0", "2.0.0") for h in names}, run.explain()
    for c in clusters:
        assert c.get("v1", "ConfigMap", ns, "shop-config")["data"]["greeting"] == "hello from 1.0.0", c.name
        assert c.get("apps/v1", "Deployment", ns, "shop")["spec"]["replicas"] == 2, c.name
        assert deployment_ready(c, ns, "shop"), c.name
