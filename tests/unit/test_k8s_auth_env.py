# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The connection of AWX's Kubernetes credential (K8S_AUTH_* in the environment: base/k8s_auth_env.py) and the
warnings about unverified TLS, whichever way it was turned off (tasks/common.py)."""

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base import k8s_auth_env
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common

TOKEN = "awx-injected-token-0123456789"
PARAMS = {"api_server": None, "port": 6443, "insecure_skip_tls_verify": False, "request_timeout": 30.0,
          "kubeconfig": None, "context": None}
NAMES = {"api_server": "manent_api_server", "token": "manent_token", "kubeconfig": "manent_kubeconfig"}


@pytest.fixture
def awx(monkeypatch):
    """The environment AWX's credential injects for a credential with Verify SSL on and a CA."""
    for name in (k8s_auth_env.HOST, k8s_auth_env.API_KEY) + k8s_auth_env.VERIFY + k8s_auth_env.CA_CERT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("K8S_AUTH_HOST", "https://k8s.example.com:6443/")
    monkeypatch.setenv("K8S_AUTH_API_KEY", TOKEN)
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "True")
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", "/runner/env/tmpca")
    return monkeypatch


@pytest.mark.parametrize("environ, expected", [
    ({}, None),
    ({"K8S_AUTH_HOST": ""}, None),
    ({"K8S_AUTH_HOST": "https://a:6443/", "K8S_AUTH_API_KEY": TOKEN},
     k8s_auth_env.EnvConnection("https://a:6443", "env:K8S_AUTH_API_KEY", True, "", "")),
    ({"K8S_AUTH_HOST": "a:6443", "K8S_AUTH_VERIFY_SSL": "False"},
     k8s_auth_env.EnvConnection("https://a:6443", "", False, "K8S_AUTH_VERIFY_SSL", "")),
    # kubernetes.core reads the module option's name first
    ({"K8S_AUTH_HOST": "https://a", "K8S_AUTH_VALIDATE_CERTS": "no", "K8S_AUTH_VERIFY_SSL": "True",
      "K8S_AUTH_CA_CERT": "/ca1", "K8S_AUTH_SSL_CA_CERT": "/ca2"},
     k8s_auth_env.EnvConnection("https://a", "", False, "K8S_AUTH_VALIDATE_CERTS", "/ca1")),
    ({"K8S_AUTH_HOST": "https://a", "K8S_AUTH_VERIFY_SSL": "0"},
     k8s_auth_env.EnvConnection("https://a", "", False, "K8S_AUTH_VERIFY_SSL", "")),
])
def test_read(environ, expected):
    assert k8s_auth_env.read(environ) == expected


def test_a_task_without_a_connection_uses_the_environment(awx):
    options = common.connection(dict(PARAMS))
    assert options.url == "https://k8s.example.com:6443" and options.ca_file == "/runner/env/tmpca"
    assert options.token == "env:K8S_AUTH_API_KEY" and not options.insecure_skip_tls_verify
    assert common.connection_warnings(dict(PARAMS)) == []
    awx.setenv("K8S_AUTH_HOST", "https://k8s.example.com")
    assert common.connection(dict(PARAMS)).url == "https://k8s.example.com:443"  # the URL's own port, as kubectl


def test_the_environment_without_verification_warns(awx):
    awx.setenv("K8S_AUTH_VERIFY_SSL", "False")  # what AWX writes for a credential without a CA
    awx.delenv("K8S_AUTH_SSL_CA_CERT")
    assert common.connection(dict(PARAMS)).insecure_skip_tls_verify
    warnings = common.connection_warnings(dict(PARAMS))
    assert len(warnings) == 1 and "https://k8s.example.com:6443 is turned off (K8S_AUTH_VERIFY_SSL is false)" in \
        warnings[0] and TOKEN not in warnings[0]


def test_a_task_connection_wins_over_the_environment_with_a_warning(awx):
    params = dict(PARAMS, api_server="https://other:6443", token="t", option_names=NAMES)
    options = common.connection(params)
    assert options.url == "https://other:6443" and options.token == "t"
    assert common.connection_warnings(params) == [
        "K8S_AUTH_HOST (AWX's Kubernetes credential) and manent_api_server, manent_token are both set: "
        "manent_api_server, manent_token are used, K8S_AUTH_HOST ignored (set one or the other for a host)"]
    params = dict(PARAMS, kubeconfig="/k", context="c", work_dir="/tmp/kcu", option_names=NAMES)
    assert common.connection(params).kubeconfig == "/k"
    assert "manent_kubeconfig is used, K8S_AUTH_HOST ignored" in common.connection_warnings(params)[0]


def test_the_environment_without_a_token_is_refused(awx):
    awx.delenv("K8S_AUTH_API_KEY")
    with pytest.raises(InputError) as err:
        common.connection(dict(PARAMS))
    assert "K8S_AUTH_HOST is set (https://k8s.example.com:6443) but K8S_AUTH_API_KEY is not" in str(err.value)


def test_no_connection_and_no_environment(awx):
    awx.delenv("K8S_AUTH_HOST")
    with pytest.raises(InputError) as err:
        common.connection(dict(PARAMS))
    assert "api_server, or kubeconfig" in str(err.value) and "K8S_AUTH_HOST" in err.value.hint


@pytest.mark.parametrize("insecure", [True, False])
def test_a_kubeconfig_that_skips_verification_warns(tmp_path, insecure):
    cluster = {"server": "https://k8s.example.com", "insecure-skip-tls-verify": insecure}
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx", "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}]}))
    warnings = common.connection_warnings(dict(PARAMS, kubeconfig=str(path)))
    if not insecure:
        assert warnings == []
        return
    assert warnings == [common.INSECURE_TEXT % (
        "https://k8s.example.com", "insecure-skip-tls-verify of cluster 'c', context 'ctx' of kubeconfig %s" % path,
        "give the cluster's certificate-authority-data (or certificate-authority) in the kubeconfig")]
    # the option given too: one warning, the option's
    warnings = common.connection_warnings(dict(PARAMS, kubeconfig=str(path), insecure_skip_tls_verify=True))
    assert len(warnings) == 1 and "(insecure_skip_tls_verify)" in warnings[0]
    # an unreadable kubeconfig: no warning here, the task reports it
    assert common.connection_warnings(dict(PARAMS, kubeconfig=str(tmp_path / "missing"))) == []
