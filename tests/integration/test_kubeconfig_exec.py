# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Clusters reached through kubeconfig contexts (manent_kubeconfig): an exec credential plugin whose credential
expires every few seconds (tests/integration/exec_plugin.py mints ServiceAccount tokens through the TokenRequest
API), the rotation of the ServiceAccount mid-deploy (401, the plugin runs again), plugins that fail, and the
kubeconfig variants (CA data or file, tls-server-name, proxy-url, the minimal CA on Python 3.13)."""

import base64
import json
import os
import select
import socket
import socketserver
import sys
import threading
import time

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import ConnectionOptions, Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from tests.integration.deploy_helpers import locator, record_status
from tests.integration.exec_helpers import HINT, Plugin, exec_user, grant, kubeconfig
from tests.integration.kube import whoami
from tests.reliability import record
from tests.integration.playbook_helpers import (
    SHOP_SECRET, app_objects, artifact, base_vars, labelled_history, resource_versions, run_playbook, start_playbook,
    write_manifest)

pytestmark = pytest.mark.integration

KEY = ReleaseKey(application="shop", artifact="shop", environment="test")
ADMIN = "manent-admin"  # the user of each cluster's admin.token and admin.crt (hack/clusters.py)


def inventory(clusters_inventory, path, hosts):
    """An inventory of ``hosts`` ({name: manent_kubeconfig}), each in the region and zone of eu1a, reached only
    through its kubeconfig."""
    with open(clusters_inventory, encoding="utf-8") as handle:
        base = yaml.safe_load(handle)["all"]["hosts"]["eu1a"]
    entries = {}
    for name, config in hosts.items():
        entries[name] = {"ansible_connection": "local", "ansible_python_interpreter": base["ansible_python_interpreter"],
                         "region": base["region"], "az": base["az"], "manent_kubeconfig": config}
    doc = {"all": {"hosts": entries}}
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(doc, handle)
    return str(path)


def shop(tmp_path, namespace, version, replicas=2, **extra):
    """Role variables of a deploy of the shop (ConfigMap, Secret, Service, Deployment) at ``version``."""
    objects = app_objects(version, SHOP_SECRET, replicas)
    # one pod replaced at a time: the rollout of many replicas is long enough to rotate the credential during it
    objects[-1]["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    os.makedirs(str(tmp_path), exist_ok=True)
    path = write_manifest(str(tmp_path / ("shop-%s.yaml" % version)), objects)
    return base_vars(tmp_path, namespace, deploy_application="shop", deploy_artifact=artifact("shop", version, path),
                     deploy_wait_timeout="120s", **extra)


def _no_piece(secret, text, what):
    for i in range(0, max(1, len(secret) - 7)):
        assert secret[i:i + 8] not in text, "a piece of %s appears in the output" % what


def test_exec_credentials_renewed_through_a_deploy_and_a_rollback(cluster, namespace, inventory_path, tmp_path):
    """A credential that expires every 4 s: the plugin runs again during the run (not at each request), the deploy
    and the rollback succeed, and no token, stderr or key appears in the output (-vvv) or the summary."""
    grant(cluster, namespace, ["deployer-1"])
    plugin = Plugin(cluster, namespace, tmp_path / "plugin", lifetime=4)
    inv = inventory(inventory_path, tmp_path / "inventory.yml",
                    {"eu1a-exec": kubeconfig(cluster, tmp_path / "kubeconfig", exec_user(plugin))})
    started = time.monotonic()
    first = run_playbook("deploy", inv, shop(tmp_path / "r1", namespace, "1.0.0", replicas=3), tmp_path / "r1",
                         verbosity=3)
    assert first.rc == 0, first.explain()
    second = run_playbook("deploy", inv, shop(tmp_path / "r2", namespace, "2.0.0", replicas=3), tmp_path / "r2")
    assert second.rc == 0, second.explain()
    back = run_playbook("rollback", inv, base_vars(tmp_path / "r3", namespace, deploy_application="shop"),
                        tmp_path / "r3")
    assert back.rc == 0, back.explain()
    elapsed = time.monotonic() - started
    runs = plugin.runs()
    # renewed within the runs, yet far from once per request: at most once per lifetime, plus the first of each run
    assert len(runs) >= 3, runs
    assert len(runs) <= elapsed / 3.0 + 6, (len(runs), elapsed)
    info = json.loads(runs[0]["exec_info"])
    assert info["spec"]["interactive"] is False and info["spec"]["cluster"]["server"] == cluster.url, info
    assert not any(run["stdin_tty"] for run in runs)
    assert locator(cluster, namespace, KEY)["version"] == "1.0.0"  # rolled back to it
    assert record_status(cluster, namespace, "2.0.0", KEY) == "rolled-back"
    assert len(labelled_history(cluster, namespace, "shop")) == 3  # locator and the two records
    summary = open(first.summary_file, encoding="utf-8").read() if os.path.exists(first.summary_file) else ""
    for run in runs:
        for text, what in ((first.output, "-vvv output"), (second.output + back.output, "output"), (summary, "summary")):
            _no_piece(run["token"], text, "the exec token in the " + what)
    detail = "4 s credentials: %d plugin runs in %.0f s (deploy -vvv, deploy, rollback)" % (len(runs), elapsed)
    print(detail)
    record("fault", "exec credential expiring every 4 s renewed through a deploy and a rollback", True, detail=detail,
           source=__name__)
    record("secret", "exec plugin token: no 8-character piece in stdout, -vvv, results or the summary", True,
           source=__name__)


def test_rotated_service_account_picked_up_after_a_401(cluster, namespace, inventory_path, tmp_path):
    """The ServiceAccount whose token the plugin handed out is deleted mid-wait: its token is refused (401) at once,
    the plugin runs again and hands out the new ServiceAccount's token, the deploy finishes, history consistent."""
    grant(cluster, namespace, ["deployer-1", "deployer-2"])
    plugin = Plugin(cluster, namespace, tmp_path / "plugin", lifetime=600)  # only the 401 renews it
    inv = inventory(inventory_path, tmp_path / "inventory.yml",
                    {"eu1a-exec": kubeconfig(cluster, tmp_path / "kubeconfig", exec_user(plugin))})
    first = run_playbook("deploy", inv, shop(tmp_path / "r1", namespace, "1.0.0", replicas=16), tmp_path / "r1")
    assert first.rc == 0, first.explain()
    # 2.0.0 replaces the 16 pods one at a time (maxSurge 1, maxUnavailable 0): a wait of half a minute, longer
    # than the API server caches a token's authentication (10 s), so the deleted account's token is refused
    proc = start_playbook("deploy", inv, shop(tmp_path / "r2", namespace, "2.0.0", replicas=16), tmp_path / "r2",
                          str(tmp_path / "deploy.log"))

    def rolling():
        dep = cluster.get("apps/v1", "Deployment", namespace, "shop") or {}
        annotations = dep.get("spec", {}).get("template", {}).get("metadata", {}).get("annotations") or {}
        return annotations.get("release") == "2.0.0" or proc.poll() is not None
    try:
        cluster.wait(rolling, timeout=120, what="the rollout of 2.0.0")
        assert proc.poll() is None, "the deploy ended before the rotation"
        plugin.use("deployer-2")
        cluster.delete("v1", "ServiceAccount", namespace, "deployer-1")
        rc = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = open(str(tmp_path / "deploy.log"), encoding="utf-8").read()
    assert rc == 0, log[-4000:]
    runs = plugin.runs()
    assert [run["sa"] for run in runs][:1] == ["deployer-1"] and runs[-1]["sa"] == "deployer-2", \
        [run["sa"] for run in runs]
    assert [run["sa"] for run in runs].count("deployer-2") == 1, [run["sa"] for run in runs]  # once, at the 401
    dep = cluster.get("apps/v1", "Deployment", namespace, "shop")
    assert dep["status"].get("readyReplicas") == 16, dep["status"]
    assert locator(cluster, namespace, KEY)["version"] == "2.0.0"
    assert record_status(cluster, namespace, "2.0.0", KEY) == "deployed"
    assert not locator(cluster, namespace, KEY).get("lockHolder")
    record("fault", "ServiceAccount of the exec token deleted mid-wait: 401, plugin run again, deploy finished", True,
           detail="plugin runs: %s" % [run["sa"] for run in runs], source=__name__)


def test_failing_plugins_stop_their_cluster_before_any_write(cluster, namespace, inventory_path, tmp_path):
    """A plugin that is missing, one that fails (a secret on its stderr), one that prints garbage: each host fails
    with the command, the context and the installHint, and nothing is written."""
    hosts = {}
    for mode in ("missing", "fail", "garbage"):
        plugin = Plugin(cluster, namespace, tmp_path / mode, lifetime=60, mode=mode)
        user = exec_user(plugin, command="/nonexistent/kube-login" if mode == "missing" else sys.executable)
        hosts["eu1a-" + mode] = kubeconfig(cluster, tmp_path / (mode + ".kubeconfig"), user, context="ctx-" + mode)
    inv = inventory(inventory_path, tmp_path / "inventory.yml", hosts)
    before = resource_versions(cluster, namespace)
    run = run_playbook("deploy", inv, dict(shop(tmp_path / "r1", namespace, "1.0.0"), deploy_parallel=3), tmp_path)
    assert run.rc != 0, run.explain()
    for mode, text in (("missing", "was not found"), ("fail", "exited with status 1"),
                       ("garbage", "not an ExecCredential")):
        assert run.recap["eu1a-" + mode]["failed"] >= 1, run.explain()
        assert text in run.output and "'ctx-%s'" % mode in run.output, run.explain()
    assert "/nonexistent/kube-login" in run.output and HINT in run.output
    assert "secret-stderr" not in run.output and "garbage-output" not in run.output
    assert resource_versions(cluster, namespace) == before
    record("fault", "exec plugin missing, failing, printing garbage: cluster stopped before any write, command, "
           "context and installHint named, stderr not shown", True, source=__name__)


class _Connect(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    tunnels = []


class _Tunnel(socketserver.BaseRequestHandler):
    """A minimal HTTP CONNECT proxy: records the target, then relays bytes both ways."""

    def handle(self):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0].decode()
        method, target = line.split(" ")[:2]
        if method != "CONNECT":
            self.request.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        self.server.tunnels.append(target)
        host, port = target.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        sockets = [self.request, upstream]
        try:
            while True:
                readable, _w, _x = select.select(sockets, [], [], 30)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is self.request else self.request).sendall(data)
        finally:
            upstream.close()


def _user(path, **options):
    """Who the API server sees for the kubeconfig's context (anonymous requests are refused: 401)."""
    with Kube(ConnectionOptions(server="", kubeconfig=path, **options)) as kube:
        return whoami(kube)


def test_kubeconfig_variants(clusters, tmp_path):
    """CA data or file, tls-server-name (the address dialled is not a name of the certificate), proxy-url (HTTP
    CONNECT), tokenFile and client certificate files, and the minimal CAs of eu1a/eu1b, all on this Python."""
    for c in clusters:  # eu1a/eu1b: minimal EKS-like CAs, verified on Python 3.13 as kubectl does
        token_file = os.path.join(c.dir, "admin.token")
        assert _user(kubeconfig(c, tmp_path / ("%s-file" % c.name), {"tokenFile": token_file})) == ADMIN
        with open(c.ca_file, "rb") as handle:
            data = base64.b64encode(handle.read()).decode()
        ca_data = {"certificate-authority": None, "certificate-authority-data": data}
        assert _user(kubeconfig(c, tmp_path / ("%s-data" % c.name), {"tokenFile": token_file}, **ca_data)) == ADMIN
    c = clusters[0]
    # the certificate names 127.0.0.1 and "kubernetes": dialled as 127.0.0.1, verified as "kubernetes" or refused
    # as a name it does not carry
    user = {"client-certificate": os.path.join(c.dir, "admin.crt"), "client-key": os.path.join(c.dir, "admin.key")}
    assert _user(kubeconfig(c, tmp_path / "sni", user, **{"tls-server-name": "kubernetes"})) == ADMIN
    with pytest.raises(ManentError) as err:
        _user(kubeconfig(c, tmp_path / "sni-wrong", user, **{"tls-server-name": "not-a-san.example"}))
    assert "TLS verification failed" in str(err.value) and "kubeconfig" in str(err.value), str(err.value)
    # an exec plugin (v1beta1) that answers a client certificate and key instead of a token
    plugin = Plugin(c, "default", tmp_path / "cert-plugin", lifetime=60, mode="cert")
    cert_user = exec_user(plugin)
    cert_user["exec"]["apiVersion"] = "client.authentication.k8s.io/v1beta1"
    assert _user(kubeconfig(c, tmp_path / "exec-cert", cert_user)) == ADMIN and len(plugin.runs()) == 1
    server = _Connect(("127.0.0.1", 0), _Tunnel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        proxy = "http://127.0.0.1:%d" % server.server_address[1]
        assert _user(kubeconfig(c, tmp_path / "proxy", user, **{"proxy-url": proxy})) == ADMIN
        assert server.tunnels and server.tunnels[0].endswith(c.url.rsplit(":", 1)[1]), server.tunnels
        record("tls", "kubeconfig: CA data and file, tokenFile, tls-server-name (right and wrong), proxy-url (CONNECT), "
               "minimal CAs on Python %d.%d" % sys.version_info[:2], True, source=__name__)
    finally:
        server.shutdown()
        server.server_close()


def test_todays_variables_win_over_a_kubeconfig_with_a_warning(cluster, namespace, inventory_path, tmp_path):
    """A host of the clusters' inventory (manent_api_server, manent_token, manent_ca_file) that also sets
    manent_kubeconfig, whose plugin is missing: reached as before, and warned that both are set."""
    from tests.integration.playbook_helpers import write_inventory
    plugin = Plugin(cluster, namespace, tmp_path / "plugin", lifetime=60)
    config = kubeconfig(cluster, tmp_path / "kubeconfig", exec_user(plugin, command="/nonexistent/kube-login"))
    inv = write_inventory(inventory_path, str(tmp_path / "inventory.yml"),
                          host_vars={cluster.name: {"manent_kubeconfig": config}})
    run = run_playbook("deploy", inv, shop(tmp_path / "r1", namespace, "1.0.0"), tmp_path / "r1", limit=cluster.name)
    assert run.rc == 0, run.explain()
    output = " ".join(run.output.split())
    assert "manent_kubeconfig and manent_api_server, manent_token, manent_ca_file or deploy_ca_file are both set" \
        in output and "manent_kubeconfig ignored" in output, run.explain()
    assert not plugin.runs()
