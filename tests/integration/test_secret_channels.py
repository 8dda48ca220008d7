# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets never leak (issue 14): one deploy of a chart with a Secret through ansible-playbook -vvv --diff, then a
deploy that fails, and every channel is searched for the real token and Secret value: the playbook output, the
summary file, helm's command line and environment (a wrapper helm dumps them) and the history ConfigMaps (what
the built-in view role may read); then the same channels with an inline client certificate and key instead of
the token. And the Prometheus credentials of the analysis: a proxy in front of Prometheus whose 502 page echoes the
request's credentials near its top (a 600-character token; basic auth with a password holding a backslash and a
quote, encoded and decoded; an API key header) fails the role's wave analysis preflight, and no piece of 8
characters of any of them is in any channel (-vvv output, ansible-runner's events and stdout; the traffic
preflight's summary file: test_analysis_playbooks.py). And the inventory plugin manent.kubernetes.clusters reading Argo
CD cluster Secrets: ``ansible-inventory --list``, its -vvv output and the inventory cache hold no token, key or
kubeconfig content, only the paths of the 0600 files of a 0700 directory that hold them."""

import base64
import json
import os
import secrets
import stat

import pytest

from tests.helpers import helm_binary
from tests.http_stubs import echoing_proxy, leaked_pieces, serve
from tests.integration.inventory_helpers import (
    argocd_fleet, ca_data, management_kubeconfig, run_inventory, write_source)
from tests.integration.playbook_helpers import (
    artifact, base_vars, labelled_history, run_playbook, shop_vars, write_inventory)
from tests.integration.module_helpers import packaged_chart
from tests.integration.runner_helpers import awx_environment, run_job, write_project
from tests.reliability import record

pytestmark = pytest.mark.integration

SECRET_VALUE = "pa55-w0rd-never-shown-7c1e"
TEMPLATE = ('apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ntype: Opaque\nstringData:\n'
            '  password: {{ .Values.password | quote }}\n---\n'
            'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: "{{ .Values.mode }}"\n')


def _wrapper(tmp_path):
    dump = tmp_path / "helm-calls.txt"
    path = tmp_path / "helm-wrapper"
    path.write_text("#!/bin/sh\n{ echo ARGV: \"$@\"; env; } >> %s\nexec %s \"$@\"\n" % (dump, helm_binary()))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), dump


def _deploy_then_fail(tmp_path, namespaces, inventory, cluster, name, env=None):
    """A chart with a Secret deployed through ansible-playbook -vvv --diff, then a deploy that fails (a values
    layer helm refuses: the message is helm's), both with the Secret value in the values (and ``env`` added to the
    environment); (runs, helm dump file)."""
    chart = packaged_chart(tmp_path, {"secret.yaml": TEMPLATE}, name=name)
    helm, dump = _wrapper(tmp_path)
    extra = base_vars(tmp_path, namespaces, deploy_application=name,
                      deploy_artifact=artifact(name, "0.1.0", chart), deploy_helm_command=helm,
                      deploy_helm_values="password: %s\nmode: one\n" % SECRET_VALUE)
    runs = [run_playbook("deploy", inventory, extra, tmp_path, limit=cluster.name, diff=True, verbosity=3, env=env)]
    assert runs[0].rc == 0, runs[0].explain()
    failing = dict(extra, deploy_artifact=artifact(name, "0.2.0", chart),
                   deploy_helm_values="password: %s\nmode: [x\n" % SECRET_VALUE)
    runs.append(run_playbook("deploy", inventory, failing, tmp_path, limit=cluster.name, diff=True, verbosity=3,
                             env=env))
    assert runs[1].rc != 0, runs[1].explain()
    return runs, dump


def _assert_absent(channels, values, what):
    """Each channel's text holds none of ``values``; one reliability record per channel."""
    for channel, text in channels.items():
        try:
            for value in values:
                assert value not in text, "a secret value (%s) appears in %s" % (what, channel)
        except BaseException:
            record("secret", channel, False, source=__name__)
            raise
        record("secret", channel, True, detail="%s absent" % what, source=__name__)


def test_no_secret_in_any_channel(clusters, inventory_path, namespaces, tmp_path):
    cluster = clusters[0]
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"))
    runs, dump = _deploy_then_fail(tmp_path, namespaces, inventory, cluster, "secretive")
    channels = {"ansible-playbook -vvv --diff output (success)": runs[0].output,
                "ansible-playbook -vvv --diff output (failure)": runs[1].output,
                "summary file": json.dumps(runs[0].summary),
                "helm argv and environment": dump.read_text(),
                "history ConfigMaps": json.dumps(labelled_history(cluster, namespaces, "secretive"))}
    assert "ARGV:" in channels["helm argv and environment"], "the wrapper helm was not used"
    assert channels["history ConfigMaps"] != "[]"
    assert cluster.get("v1", "Secret", namespaces, "creds") is not None
    _assert_absent(channels, [cluster.token, SECRET_VALUE], "token and Secret value")


def _credential_channels(runs, dump, given, short):
    """The channels of a deploy then a failed one (_deploy_then_fail) with the credential ``given`` (named ``short``
    in the run's labels): the -vvv --diff outputs, the summary file, helm's argv and environment."""
    channels = {"-vvv --diff output with %s (success)" % given: runs[0].output,
                "-vvv --diff output with %s (failure)" % given: runs[1].output,
                "summary file (%s run)" % short: json.dumps(runs[0].summary),
                "helm argv and environment (%s run)" % short: dump.read_text()}
    assert "ARGV:" in channels["helm argv and environment (%s run)" % short], "the wrapper helm was not used"
    return channels


def test_no_client_key_in_any_channel(clusters, inventory_path, namespaces, tmp_path):
    """The same channels with a client certificate and key given inline (host variables), no token."""
    cluster = clusters[0]
    with open("%s/admin.key" % cluster.dir, encoding="utf-8") as handle:
        key = handle.read()
    with open("%s/admin.crt" % cluster.dir, encoding="utf-8") as handle:
        cert = handle.read()
    key_lines = [line for line in key.splitlines() if len(line) >= 40 and "PRIVATE KEY" not in line]
    assert len(key_lines) >= 3, "the test key is not a PEM key"
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"), host_vars={
        cluster.name: {"manent_token": "", "manent_client_cert": cert, "manent_client_key": key}})
    runs, dump = _deploy_then_fail(tmp_path, namespaces, inventory, cluster, "keyed")
    channels = _credential_channels(runs, dump, "a client key", "client key")
    _assert_absent(channels, key_lines + [SECRET_VALUE], "client key and Secret value")


def test_no_exec_token_in_any_channel(clusters, inventory_path, namespaces, tmp_path):
    """The same channels with the cluster reached through an inline kubeconfig (a mapping in the host variables)
    whose exec plugin hands out short-lived ServiceAccount tokens (tests/integration/test_kubeconfig_exec.py): no
    8-character piece of any token it gave appears."""
    from tests.integration.exec_helpers import Plugin, exec_user, grant
    cluster = clusters[0]
    grant(cluster, namespaces, ["deployer-1"])
    plugin = Plugin(cluster, namespaces, tmp_path / "plugin", lifetime=4)
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "exec",
              "clusters": [{"name": "c", "cluster": {"server": cluster.url, "certificate-authority": cluster.ca_file}}],
              "users": [{"name": "u", "user": exec_user(plugin)}],
              "contexts": [{"name": "exec", "context": {"cluster": "c", "user": "u"}}]}
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"), host_vars={
        cluster.name: {"manent_api_server": "", "manent_token": "", "manent_ca_file": "", "manent_kubeconfig": config}})
    runs, dump = _deploy_then_fail(tmp_path, namespaces, inventory, cluster, "execed")
    tokens = [run["token"] for run in plugin.runs()]
    assert tokens, "the exec plugin did not run"
    pieces = sorted({token[i:i + 8] for token in tokens for i in range(len(token) - 7)})
    channels = _credential_channels(runs, dump, "an exec credential", "exec credential")
    _assert_absent(channels, pieces + [SECRET_VALUE], "exec token pieces and Secret value")


def test_no_awx_credential_token_in_any_channel(clusters, inventory_path, namespaces, tmp_path):
    """The same channels with the cluster reached through AWX's Kubernetes credential (K8S_AUTH_HOST,
    K8S_AUTH_API_KEY, ... in the environment; no connection host variables), and an AWX job (ansible-runner) with
    that environment: its events and stdout too."""
    cluster = clusters[0]
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"), host_vars={
        cluster.name: {"manent_api_server": "", "manent_token": "", "manent_ca_file": ""}})
    env = awx_environment(cluster)
    runs, dump = _deploy_then_fail(tmp_path, namespaces, inventory, cluster, "awxed", env=env)
    channels = _credential_channels(runs, dump, "AWX's Kubernetes credential", "AWX credential")
    job = run_job(tmp_path / "jobs", write_project(str(tmp_path / "project")), inventory, "deploy",
                  shop_vars(tmp_path / "job", namespaces, "1.0.0", "hello"), envvars=env, limit=cluster.name,
                  verbosity=3)
    assert job.rc == 0, job.explain()
    assert cluster.get("v1", "ConfigMap", namespaces, "shop-config") is not None
    channels.update({"ansible-runner events (AWX credential)": job.events_text,
                     "ansible-runner stdout (AWX credential)": job.stdout})
    _assert_absent(channels, [cluster.token, SECRET_VALUE], "AWX credential token and Secret value")


def _assert_no_piece(channels, values, what):
    """No channel holds a piece of 8 characters of any form of ``values``; one reliability record per channel."""
    for channel, text in channels.items():
        found = leaked_pieces(text, values)
        if found:
            record("secret", channel, False, source=__name__)
        assert len(found) == 0, "%d pieces of %s appear in %s" % (len(found), what, channel)  # the count only
        record("secret", channel, True, detail="no 8-character piece of %s" % what, source=__name__)


def test_no_piece_of_a_prometheus_credential_in_any_channel(clusters, inventory_path, namespaces, tmp_path):
    cluster = clusters[0]
    token = secrets.token_urlsafe(450)[:600]
    password = 'pw\\"%s"\\q' % secrets.token_hex(12)
    api_key = "key-" + secrets.token_hex(20)
    basic = base64.b64encode(("manent:%s" % password).encode()).decode()
    checks = [{"name": "errors", "query": 'sum(rate(http_requests_total{namespace="${namespace}"}[${window}]))',
               "max": 1}]
    seen = []
    forbidden = [token, password, basic, api_key]
    with serve(echoing_proxy(seen)) as url:
        providers = {"bearer": {"url": url, "bearer_token": token, "timeout": "5s"},
                     "basic": {"url": url, "username": "manent", "password": password, "timeout": "5s",
                               "headers": {"X-Api-Key": api_key, "X-Scope-OrgID": "prod"},
                               "secret_headers": ["X-Api-Key"]}}

        def role_vars(name):
            return shop_vars(tmp_path / name, namespaces, "1.0.0", "hello", deploy_analysis_provider=providers[name],
                             deploy_wave_analysis={"checks": checks, "min_window": "5s"})

        channels = {}
        for name in providers:
            run = run_playbook("deploy", inventory_path, role_vars(name), tmp_path / name, limit=cluster.name,
                               verbosity=3)
            _assert_no_piece({"-vvv output (%s)" % name: run.output}, forbidden, "the Prometheus credentials")
            assert run.rc != 0, run.explain()
            assert "analysis preflight failed, nothing was deployed" in run.output, run.explain()
            assert "502 Bad Gateway" in run.output and "Authorization: ********" in run.output, run.explain()
        job = run_job(tmp_path / "jobs", write_project(str(tmp_path / "project")), inventory_path, "deploy",
                      role_vars("basic"), limit=cluster.name, verbosity=3)
        _assert_no_piece({"ansible-runner events (basic)": job.events_text,
                          "ansible-runner stdout (basic)": job.stdout}, forbidden, "the Prometheus credentials")
        assert job.rc != 0 and "Authorization: ********" in job.stdout, job.explain()
    assert "Bearer " + token in seen and "Basic " + basic in seen  # the proxy did get the credentials
    assert cluster.get("v1", "ConfigMap", namespaces, "shop-config") is None


def test_no_credential_in_the_inventory_plugin_channels(clusters, namespaces, tmp_path):
    """Argo CD cluster Secrets (a bearer token, an exec plugin, a basic-auth password) read by the inventory plugin
    through a management kubeconfig with a client key: none of them, nor the kubeconfig content (the CA data), is in
    ansible-inventory --list, its -vvv output or the inventory cache; the private kubeconfigs are 0600 in 0700."""
    from tests.integration.exec_helpers import Plugin
    management, token_cluster, exec_cluster = clusters[0], clusters[1], clusters[2]
    plugin = Plugin(exec_cluster, namespaces, tmp_path / "plugin", lifetime=60)
    argocd_fleet(management, namespaces, token_cluster, exec_cluster, plugin)
    with open("%s/admin.key" % management.dir, encoding="utf-8") as handle:
        key_lines = [line for line in handle.read().splitlines() if len(line) >= 40 and "PRIVATE KEY" not in line]
    credentials, cache = tmp_path / "credentials", tmp_path / "cache"
    source = write_source(tmp_path / "clusters.manent.yml", [{"argocd": {
        "management": {"kubeconfig": management_kubeconfig(management, tmp_path / "mgmt.yaml"), "context": "mgmt"},
        "namespace": namespaces}}], credentials_dir=str(credentials), cache=True,
        cache_plugin="ansible.builtin.jsonfile", cache_connection=str(cache))
    code, listed, _err = run_inventory(source, "--flush-cache")
    assert code == 0, _err
    code, out, err = run_inventory(source, "-vvv")
    assert code == 0, err
    cached = "".join(open(os.path.join(cache, name), encoding="utf-8").read() for name in os.listdir(cache))
    assert token_cluster.name + "-argo" in cached and "host-%s-argo.kubeconfig" % token_cluster.name in cached
    channels = {"ansible-inventory --list": listed, "ansible-inventory --list -vvv": out + err,
                "inventory cache (jsonfile)": cached}
    forbidden = [token_cluster.token, ca_data(token_cluster), ca_data(exec_cluster), "not-used-1",
                 "certificate-authority-data", "bearerToken"] + key_lines
    _assert_absent(channels, forbidden, "token, key, password and kubeconfig content")
    assert stat.S_IMODE(os.stat(credentials).st_mode) == 0o700
    files = sorted(os.listdir(credentials))
    assert files == sorted("host-%s-argo.kubeconfig" % c.name for c in (token_cluster, exec_cluster))
    assert all(stat.S_IMODE(os.stat(credentials / name).st_mode) == 0o600 for name in files)
    with open(credentials / ("host-%s-argo.kubeconfig" % token_cluster.name), encoding="utf-8") as handle:
        assert token_cluster.token in handle.read()  # where the credential went instead
    record("secret", "inventory plugin private kubeconfigs: 0600 files in a 0700 directory", True, source=__name__)
