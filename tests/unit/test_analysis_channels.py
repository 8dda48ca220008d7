# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus credentials never reach ansible-playbook's output, even with -vvv: manent_analysis in the
controller process (its action plugin) and as a module (async), with a token given as a value, from the
environment and from a file, basic auth, a tenant header and a provider from module_defaults
(group/manent.kubernetes.analysis), against a Prometheus that refuses connections (no server, no waiting). The
group of module_defaults that carries the cluster connection (group/manent.kubernetes.manent) does not reach it.
Then against a proxy on loopback whose 502 page echoes the request's credentials near its top (a 600-character
token; basic auth with a password holding a backslash and a quote, decoded), in the controller process and as a
module: no piece of 8 characters of them is in the output.
The values come from a vars file, as from inventory or vault: ansible-core 2.19 prints the playbook lines before a
failed task, which would show a value written literally there, whatever the module does."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys

import pytest

from tests.http_stubs import echoing_proxy, leaked_pieces, serve
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
        provider: {url: "%(url)s", bearer_token: "{{ prometheus_token }}", headers: {X-Scope-OrgID: "{{ tenant }}"},
                   secret_headers: [X-Scope-OrgID]}
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
    - name: Preflight in the controller process through the echoing proxy, a long token
      manent.kubernetes.manent_analysis:
        mode: preflight
        provider: {url: "%(proxy)s", bearer_token: "{{ long_token }}"}
        context: "{{ context }}"
        checks: "{{ checks }}"
      ignore_errors: true
    - name: Analysis as a module through the echoing proxy, basic auth with a backslash and a quote
      manent.kubernetes.manent_analysis:
        provider: {url: "%(proxy)s", username: manent, password: "{{ hard_password }}"}
        context: "{{ context }}"
        checks: "{{ checks }}"
        interval: 10ms
      async: 30
      poll: 1
      ignore_errors: true
"""
LONG_TOKEN = "".join("lt%05dZ" % (n * 7919 % 99991) for n in range(75))  # 600 characters
HARD_PASSWORD = 'hp\\"q83be17-x"\\'


def test_credentials_are_absent_from_the_output_with_vvv(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = "http://127.0.0.1:%d" % sock.getsockname()[1]
    password_file = tmp_path / "password"
    password_file.write_text(PASSWORD)
    vars_file = tmp_path / "credentials.yml"
    vars_file.write_text(json.dumps({"prometheus_token": TOKEN, "tenant": TENANT, "long_token": LONG_TOKEN,
                                     "hard_password": HARD_PASSWORD}))
    playbook = tmp_path / "analysis.yml"
    with serve(echoing_proxy([])) as proxy:
        playbook.write_text(PLAYBOOK % {"url": url, "vars_file": vars_file, "password_file": password_file,
                                        "proxy": proxy})
        env = dict(os.environ, PROM_TOKEN=TOKEN, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", no_proxy="*")
        command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-vvv",
                   "-e", "ansible_python_interpreter=%s" % sys.executable, str(playbook)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert output.count("unreachable: Connection refused") >= 4, output
    assert output.count("502 Bad Gateway") >= 2 and "Authorization: ********" in output, output
    assert "ASYNC FAILED" in output and "manent_analysis [localhost]: errors #1" in output
    assert "Invalid options" not in output
    for secret in (TOKEN, PASSWORD, TENANT):
        assert secret not in output
    basic = base64.b64encode(("manent:" + HARD_PASSWORD).encode()).decode()
    leaked = leaked_pieces(output, [LONG_TOKEN, HARD_PASSWORD, basic])
    assert len(leaked) == 0, "%d pieces of the credentials in the output" % len(leaked)
