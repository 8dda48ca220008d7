# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lookup manent.kubernetes.manent_connection (the deploy role's _deploy_connection): how a host is reached and
the connection options it gets, from its manent_* variables and the role's fallbacks; then through ansible itself,
with host variables that are templates."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.manent.kubernetes.plugins.lookup.manent_connection import connection, via

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWX = {"K8S_AUTH_HOST": "https://awx.example:6443"}
NAMES = {"token": "manent_token"}


def given(**host_vars):
    return lambda name: host_vars.get("manent_" + name)


@pytest.mark.parametrize("host_vars, environ, expected", [
    ({"manent_token": "t"}, {}, "host variables"),
    ({"manent_token": "t"}, AWX, "host variables"),
    ({"manent_ca_file": "/ca.crt", "manent_kubeconfig": "/k"}, {}, "host variables"),  # the kubeconfig is ignored
    ({"manent_kubeconfig": "/k", "manent_context": "eu"}, AWX, "kubeconfig"),
    ({}, AWX, "environment"),
    ({"manent_api_server": "", "manent_token": ""}, AWX, "environment"),  # empty is not set
    ({}, {}, "host variables"),  # nothing at all: the preflight says what is missing
    ({}, {"K8S_AUTH_HOST": ""}, "host variables"),
    ({}, {"K8S_AUTH_HOST": "  "}, "host variables"),  # as the modules read it (base/k8s_auth_env.py): not set
])
def test_how_a_host_is_reached(host_vars, environ, expected):
    assert via(given(**host_vars), environ) == expected


def test_a_host_with_its_own_variables_gets_them_and_the_roles_fallbacks():
    options = connection(given(manent_token="secret", manent_api_port=7443), "eu1a", {}, ca_file="/etc/ca.crt",
                         insecure="no", request_timeout=20, work_dir="", option_names=NAMES)
    assert options == {"api_server": "eu1a", "port": 7443, "insecure_skip_tls_verify": False, "request_timeout": 20,
                       "token": "secret", "ca_file": "/etc/ca.crt", "option_names": NAMES}


def test_the_hosts_own_settings_win_over_the_roles():
    options = connection(given(manent_api_server="https://api.eu:6443", manent_ca_file="/own/ca.crt",
                               manent_insecure_skip_tls_verify="yes", manent_client_cert="/c", manent_client_key="/k"),
                         "eu1a", {}, ca_file="/etc/ca.crt", insecure=False, work_dir="/work")
    assert options == {"api_server": "https://api.eu:6443", "port": 6443, "insecure_skip_tls_verify": True,
                       "request_timeout": 30, "client_cert": "/c", "client_key": "/k", "ca_file": "/own/ca.crt",
                       "work_dir": "/work"}


@pytest.mark.parametrize("host_vars, environ", [
    ({"manent_kubeconfig": "/k", "manent_context": "eu"}, {}),
    ({}, AWX),
])
def test_a_host_reached_elsewhere_gets_no_api_server_or_ca_file(host_vars, environ):
    options = connection(given(**host_vars), "eu1a", environ, ca_file="/etc/ca.crt", insecure=True)
    assert options["api_server"] == "" and "ca_file" not in options and "token" not in options
    assert options["insecure_skip_tls_verify"] is True
    assert {key: options.get(key) for key in ("kubeconfig", "context")} == {
        "kubeconfig": host_vars.get("manent_kubeconfig"), "context": host_vars.get("manent_context")}


def test_an_api_server_set_empty_stays_empty():
    assert connection(given(manent_api_server="", manent_token="t"), "eu1a", {})["api_server"] == ""


@pytest.mark.parametrize("value, expected", [
    (True, True), ("True", True), ("on", True), ("1", True), (1, True), ("false", False), ("", False), (None, False),
    (0, False), ("maybe", False)])
def test_insecure_is_read_as_the_bool_filter_reads_it(value, expected):
    assert connection(given(manent_insecure_skip_tls_verify=value), "h", {})["insecure_skip_tls_verify"] is expected


def _through_ansible(tmp_path, host_vars, template, environ=None):
    """``template`` rendered by ansible's debug module for one host with ``host_vars`` and the controller environment
    ``environ`` (none of AWX's variables otherwise): the value."""
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(json.dumps({"all": {"hosts": {"eu1a": dict(
        host_vars, ansible_connection="local", ansible_python_interpreter=sys.executable)}}}))  # JSON is YAML
    env = {key: value for key, value in os.environ.items() if not key.startswith("K8S_AUTH_")}
    env.update(environ or {}, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    command = [os.path.join(os.path.dirname(sys.executable), "ansible"), "all", "-i", str(inventory),
               "-m", "ansible.builtin.debug", "-a", json.dumps({"msg": template})]
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("eu1a | SUCCESS => "), proc.stdout  # the minimal callback: the result as JSON
    return json.loads(proc.stdout.split("=>", 1)[1])["msg"]


def test_through_ansible_host_variables_that_are_templates_are_templated(tmp_path):
    """ansible-core before 2.19 hands a lookup the host variables as written, later ones templated: either way the
    options hold the values."""
    host_vars = {"cluster_port": 7443, "secret_name": "s3cret", "manent_token": "{{ secret_name }}",
                 "manent_api_port": "{{ cluster_port }}", "manent_ca_file": "/ca/{{ inventory_hostname }}.crt"}
    options = _through_ansible(
        tmp_path, host_vars,
        "{{ lookup('manent.kubernetes.manent_connection', request_timeout=9, option_names={'token': 'manent_token'}) }}")
    assert options == {"api_server": "eu1a", "port": 7443, "insecure_skip_tls_verify": False, "request_timeout": 9,
                       "token": "s3cret", "ca_file": "/ca/eu1a.crt", "option_names": {"token": "manent_token"}}
    assert _through_ansible(tmp_path, {}, "{{ lookup('manent.kubernetes.manent_connection', 'via') }}",
                            AWX) == "environment"


def test_through_ansible_an_unknown_term_is_refused(tmp_path):
    with pytest.raises(AssertionError, match="takes no term .* or the term 'via'"):
        _through_ansible(tmp_path, {}, "{{ lookup('manent.kubernetes.manent_connection', 'how') }}")
