# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX's built-in Kubernetes credential ("OpenShift or Kubernetes API Bearer Token"): the job's environment holds
K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL and K8S_AUTH_SSL_CA_CERT as AWX's injector writes them
(awx/main/models/credential/injectors.py), and the inventory host has no connection variables. On the local
clusters: the deploy reaches the credential's cluster; a CA that is not the cluster's fails TLS verification; a
credential without a CA (AWX then writes K8S_AUTH_VERIFY_SSL=False) deploys with the insecure warning; a host's own
variables win with a warning naming both; a play of two hosts is refused before anything is contacted."""

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from tests.integration.deploy_helpers import locator
from tests.integration.playbook_helpers import run_playbook, shop_vars
from tests.integration.runner_helpers import awx_environment
from tests.reliability import record

pytestmark = pytest.mark.integration

KEY = ReleaseKey(application="shop", artifact="shop", environment="test")


def bare_inventory(clusters_inventory, path, hosts):
    """An inventory of ``hosts`` ({name: extra host variables}), each in eu1a's region and zone, with no connection
    variables of their own: what an AWX inventory of one cluster reached through the credential looks like."""
    with open(clusters_inventory, encoding="utf-8") as handle:
        base = yaml.safe_load(handle)["all"]["hosts"]["eu1a"]
    entries = {name: dict({"ansible_connection": "local", "region": base["region"], "az": base["az"],
                           "ansible_python_interpreter": base["ansible_python_interpreter"]}, **(extra or {}))
               for name, extra in hosts.items()}
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"hosts": entries}}, handle)
    return str(path)


def _flat(text):
    return " ".join(text.split())  # a long warning may be wrapped over lines


def test_the_credential_alone_deploys_and_a_wrong_ca_fails_verification(clusters, cluster, namespace, inventory_path,
                                                                        tmp_path):
    case = "AWX's Kubernetes credential (K8S_AUTH_*) alone: deploys; another CA fails TLS verification"
    try:
        inventory = bare_inventory(inventory_path, tmp_path / "inventory.yml", {"awx-cluster": None})
        run = run_playbook("deploy", inventory, shop_vars(tmp_path / "r1", namespace, "1.0.0", "hello"),
                           tmp_path / "r1", env=awx_environment(cluster), verbosity=3)
        assert run.rc == 0, run.explain()
        assert run.summary["awx-cluster"]["status"] == "deployed", run.explain()
        assert cluster.get("apps/v1", "Deployment", namespace, "shop") is not None
        assert "is turned off" not in _flat(run.output) and "K8S_AUTH_HOST ignored" not in run.output, run.explain()
        assert cluster.token not in run.output, "the credential's token appears in the -vvv output"

        other = [c for c in clusters if c.ca_file != cluster.ca_file][0]
        run = run_playbook("deploy", inventory, shop_vars(tmp_path / "r2", namespace, "2.0.0", "bye"), tmp_path / "r2",
                           env=awx_environment(cluster, ca_file=other.ca_file))
        assert run.rc != 0, run.explain()
        text = _flat(run.output)
        assert "TLS verification failed for %s with ca_file %s" % (cluster.url, other.ca_file) in text, run.explain()
        assert locator(cluster, namespace, KEY)["version"] == "1.0.0"  # nothing of 2.0.0 recorded
        assert cluster.token not in run.output
    except BaseException:
        record("fault", case, False, source=__name__)
        raise
    record("fault", case, True, source=__name__)


def test_a_credential_without_ca_warns_own_variables_win_and_two_hosts_are_refused(cluster, namespace,
                                                                                   inventory_path, tmp_path):
    case = "AWX's Kubernetes credential: no CA warns insecure; host variables win with a warning; two hosts refused"
    try:
        inventory = bare_inventory(inventory_path, tmp_path / "inventory.yml", {"awx-cluster": None})
        run = run_playbook("deploy", inventory, shop_vars(tmp_path / "r1", namespace, "1.0.0", "hello"),
                           tmp_path / "r1", env=awx_environment(cluster, ca_file=""))
        assert run.rc == 0, run.explain()
        text = _flat(run.output)
        assert "TLS verification of the API server %s is turned off (K8S_AUTH_VERIFY_SSL is false)" % cluster.url \
            in text, run.explain()

        # the host's own variables (the clusters' inventory: manent_api_server, manent_token, manent_ca_file) win
        own = bare_inventory(inventory_path, tmp_path / "own.yml", {"own-cluster": {
            key: cluster.hostvars[key] for key in ("manent_api_server", "manent_token", "manent_ca_file")}})
        wrong = dict(awx_environment(cluster), K8S_AUTH_HOST="https://127.0.0.1:9", K8S_AUTH_API_KEY="not-a-token")
        run = run_playbook("deploy", own, shop_vars(tmp_path / "r2", namespace, "2.0.0", "bye"), tmp_path / "r2",
                           env=wrong)
        assert run.rc == 0, run.explain()
        assert "K8S_AUTH_HOST (AWX's Kubernetes credential) and manent_api_server, manent_token, manent_ca_file or " \
            "deploy_ca_file are both set" in _flat(run.output), run.explain()

        two = bare_inventory(inventory_path, tmp_path / "two.yml", {"awx-a": None, "awx-b": None})
        run = run_playbook("deploy", two, shop_vars(tmp_path / "r3", namespace, "3.0.0", "again"), tmp_path / "r3",
                           env=awx_environment(cluster))
        assert run.rc != 0, run.explain()
        text = _flat(run.output)
        assert "K8S_AUTH_HOST: AWX's Kubernetes credential reaches one cluster, and host awx-a" in text, run.explain()
        assert "a custom credential type per cluster" in text
        assert locator(cluster, namespace, KEY)["version"] == "2.0.0"  # the refused play wrote nothing
    except BaseException:
        record("fault", case, False, source=__name__)
        raise
    record("fault", case, True, source=__name__)
