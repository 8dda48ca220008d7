# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TLS through the real modules: verified by default, on clusters whose CA is minimal (as EKS's) and on one whose
PKI is RFC 5280-strict; a wrong CA fails naming the server and where the CA came from; insecure_skip_tls_verify
works but warns on every run, and through the role once per cluster."""

import os
import socket
import ssl
import sys

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
from ansible_collections.manent.kubernetes.plugins.module_utils.base import tls

from tests.integration.playbook_helpers import run_playbook, shop_vars, write_inventory
from tests.integration.module_helpers import connection, run_module
from tests.helpers import ROOT
from tests.reliability import record

sys.path.insert(0, os.path.join(ROOT, "hack"))
import pki  # noqa: E402  pylint: disable=wrong-import-position,import-error

pytestmark = pytest.mark.integration


def _other_ca(cluster):
    root = os.path.dirname(cluster.dir)
    others = [os.path.join(root, name, "ca.crt") for name in sorted(os.listdir(root))
              if name != os.path.basename(cluster.dir) and os.path.isfile(os.path.join(root, name, "ca.crt"))]
    assert others, "needs a second cluster's CA"
    return others[0]


def _style(cluster):
    with open(cluster.ca_file, "rb") as handle:
        return pki.style_of(handle.read())


def _strict_checks_accept(cluster):
    """Whether a context with VERIFY_X509_STRICT (Python 3.13's default) completes a handshake with the cluster."""
    context = ssl.create_default_context(cafile=cluster.ca_file)
    context.verify_flags |= tls.VERIFY_X509_STRICT
    host, port = cluster.url[len("https://"):].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        try:
            with context.wrap_socket(sock, server_hostname=host):
                return True
        except ssl.SSLCertVerificationError:
            return False


def test_clusters_of_both_ca_styles_are_reached(clusters, namespaces, tmp_path):
    """The rig has both kinds of cluster (hack/clusters.py topology), and the modules reach each on this Python:
    the minimal CA fails strict X.509 checks (the EKS case), the strict PKI passes them."""
    case = "modules reach a minimal-CA (EKS-like) and an RFC-strict cluster on Python %d.%d" % sys.version_info[:2]
    try:
        styles = {c.name: _style(c) for c in clusters}
        assert set(styles.values()) == set(pki.STYLES), styles
        for c in clusters:
            assert _strict_checks_accept(c) == (styles[c.name] == "strict"), (c.name, styles[c.name])
            failed, result = run_module("manent_history", tmp_path,
                                        **{**connection(c, namespaces, tmp_path), "operation": "list"})
            assert not failed, (c.name, styles[c.name], result)
    except BaseException:
        record("tls", case, False, source=__name__)
        raise
    record("tls", case, True, detail=str(styles), source=__name__)


def test_wrong_ca_fails_naming_the_server_and_the_ca_source(cluster, namespace, tmp_path):
    case = "wrong CA refused, naming the server and the CA source"
    wrong = _other_ca(cluster)
    try:
        args = {**connection(cluster, namespace, tmp_path), "ca_file": wrong, "operation": "list"}
        failed, result = run_module("manent_history", tmp_path, **args)
        assert failed
        assert "TLS verification failed for %s with ca_file %s" % (cluster.url, wrong) in result["msg"], result["msg"]
        assert cluster.token not in str(result)
    except BaseException:
        record("tls", case, False, source=__name__)
        raise
    record("tls", case, True, detail=result["msg"][:300], source=__name__)


def test_insecure_skip_tls_verify_warns_on_every_run(cluster, namespace, tmp_path):
    case = "insecure_skip_tls_verify warns on every run (success and failure)"
    try:
        args = dict(connection(cluster, namespace, tmp_path), insecure_skip_tls_verify=True, operation="list")
        for run in range(2):
            failed, result = run_module("manent_history", tmp_path, **args)
            assert not failed, result
            assert any("insecure_skip_tls_verify" in str(w) for w in result.get("warnings", [])), (run, result)
        failed, result = run_module("manent_history", tmp_path, **{**args, "keep_releases": 1, "operation": "rollback"})
        assert failed and any("insecure_skip_tls_verify" in str(w) for w in result.get("warnings", [])), result
    except BaseException:
        record("tls", case, False, source=__name__)
        raise
    record("tls", case, True, source=__name__)


def test_role_warns_once_per_cluster_whose_certificate_is_not_verified(clusters, inventory_path, namespaces,
                                                                       tmp_path):
    """The role has no warning task of its own: the manent tasks warn (checkpoint read, render, apply), on the
    controller as in a module process, and Ansible shows each warning once per run. One cluster of two unverified:
    its API server is named once, the other's never."""
    case = "role: one insecure-TLS warning per unverified cluster, none for a verified one"
    unverified, verified = clusters[0], clusters[1]
    try:
        inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"),
                                    host_vars={unverified.name: {"manent_insecure_skip_tls_verify": True}})
        extra = shop_vars(tmp_path, namespaces, "1.0.0", "hello")
        run = run_playbook("deploy", inventory, extra, tmp_path, limit="%s,%s" % (unverified.name, verified.name))
        assert run.rc == 0, run.explain()
        text = " ".join(run.output.split())  # a long warning may be wrapped over lines

        def warned(url):  # how often the warning naming url was shown: its text up to the server and the space after
            return text.count(common.INSECURE_WARNING.split("%s", 1)[0] + url + " ")
        assert warned(unverified.url) == 1, run.explain()
        assert warned(verified.url) == 0, run.explain()
    except BaseException:
        record("tls", case, False, source=__name__)
        raise
    record("tls", case, True, source=__name__)


def test_a_kubeconfig_that_skips_verification_warns_as_the_option_does(cluster, namespace, inventory_path,
                                                                       tmp_path):
    """``insecure-skip-tls-verify: true`` in the kubeconfig's cluster (no certificate-authority, so only the skipped
    verification lets it through): the module warns on success and on failure, naming the kubeconfig, and
    the role (on the controller) warns once; the same kubeconfig verifying with the right CA does not warn."""
    case = "kubeconfig insecure-skip-tls-verify warns like insecure_skip_tls_verify (module and role)"
    from tests.integration.exec_helpers import kubeconfig
    wanted = "TLS verification of the API server %s is turned off (insecure-skip-tls-verify of cluster" % cluster.url
    try:
        unverified = kubeconfig(cluster, tmp_path / "unverified", {"token": cluster.token},
                                **{"certificate-authority": None, "insecure-skip-tls-verify": True})
        args = {**connection(cluster, namespace, tmp_path), "api_server": None, "token": None, "ca_file": None,
                "kubeconfig": unverified, "operation": "list"}
        failed, result = run_module("manent_history", tmp_path, **args)
        assert not failed, result
        assert wanted in str(result.get("warnings")), result
        failed, result = run_module("manent_history", tmp_path, **{**args, "keep_releases": 1, "operation": "rollback"})
        assert failed and wanted in str(result.get("warnings")), result
        assert cluster.token not in str(result)
        verified = kubeconfig(cluster, tmp_path / "verified", {"token": cluster.token})
        failed, result = run_module("manent_history", tmp_path, **{**args, "kubeconfig": verified})
        assert not failed and "is turned off" not in str(result.get("warnings")), result

        inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"), host_vars={cluster.name: {
            "manent_api_server": "", "manent_token": "", "manent_ca_file": "", "manent_kubeconfig": unverified}})
        run = run_playbook("deploy", inventory, shop_vars(tmp_path / "role", namespace, "1.0.0", "hello"),
                           tmp_path / "role", limit=cluster.name)
        assert run.rc == 0, run.explain()
        assert " ".join(run.output.split()).count(wanted) == 1, run.explain()
    except BaseException:
        record("tls", case, False, source=__name__)
        raise
    record("tls", case, True, source=__name__)
