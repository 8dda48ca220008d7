# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus credentials never reach ansible-playbook's output, even with -vvv: manent_analysis in the
controller process (its action plugin) and as a module (async), with a token given as a value, from the
environment and from a file, basic auth, a tenant header and a provider from module_defaults
(group/manent.kubernetes.analysis), against a Prometheus that refuses connections (no server, no waiting). The
group of module_defaults that carries the cluster connection (group/manent.kubernetes.manent) does not reach it.
The values come from a vars file, as from inventory or vault: ansible-core 2.19 prints the playbook lines before a
failed task, which would show a value written literally there, whatever the module does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.unit.analysis_fakes import PASSWORD, TOKEN

pytestmark = pytest.mark.slow

TENANT = "tenant-sentinel-4b9e"
PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars_files: ["%(vars_file)s"]
  vars:
    checks:
      - {name: errors, query: 'sum(rate(x{service="${service}"}[${window}]))', max: 0.05}
    context: {candidate_service: shop-b, start: 1000000000}
  module_defaults:
    group/manent.kubernetes.manent: {api_server: "https://cluster.example", token: cluster-token}
    group/manent.kubernetes.analysis:
      provider: {url: "%(url)s", bearer_token: "{{ prometheus_token }}"}
  tasks:
    - name: Preflight in the controller process, the token as a value and a tenant header
      manent.kubernetes.manent_analysis:
        mode: preflight
        provider: {url: "%(url)s", bearer_token: "{{ prometheus_token }}", headers: {X-Scope-OrgID: "{{ tenant }}"}}
        context: "{{ context }}"
        checks: "{{ checks }}"
      ignore_errors: true
    - name: Analysis as a module, token from the environment
      manent.kubernetes.manent_analysis:
        provider: {url: "%(url)s", bearer_token: "env:PROM_TOKEN"}
        context: "{{ context }}"
        checks: "{{ checks }}"
        interval: 10ms
      async: 30
      poll: 1
      ignore_errors: true
    - name: Preflight with the provider of the play's module_defaults
      manent.kubernetes.manent_analysis:
        mode: preflight
        context: "{{ context }}"
        checks: "{{ checks }}"
      ignore_errors: true
    - name: Analysis in the controller process, basic auth with the password from a file
      manent.kubernetes.manent_analysis:
        provider: {url: "%(url)s", username: manent, password: "file:%(password_file)s"}
        context: "{{ context }}"
        checks: "{{ checks }}"
        interval: 10ms
      ignore_errors: true
"""


def test_credentials_are_absent_from_the_output_with_vvv(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = "http://127.0.0.1:%d" % sock.getsockname()[1]
    password_file = tmp_path / "password"
    password_file.write_text(PASSWORD)
    vars_file = tmp_path / "credentials.yml"
    vars_file.write_text("prometheus_token: %s\ntenant: %s\n" % (TOKEN, TENANT))
    playbook = tmp_path / "analysis.yml"
    playbook.write_text(PLAYBOOK % {"url": url, "vars_file": vars_file, "password_file": password_file})
    env = dict(os.environ, PROM_TOKEN=TOKEN, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-vvv",
               "-e", "ansible_python_interpreter=%s" % sys.executable, str(playbook)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert output.count("unreachable: Connection refused") >= 4, output
    assert "ASYNC FAILED" in output and "manent_analysis [localhost]: errors #1" in output
    assert "Invalid options" not in output
    for secret in (TOKEN, PASSWORD, TENANT):
        assert secret not in output
