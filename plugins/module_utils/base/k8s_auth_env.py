# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster of AWX's built-in Kubernetes credential: the K8S_AUTH_* variables it puts in a job's environment.

AWX's "OpenShift or Kubernetes API Bearer Token" credential injects these, read here as kubernetes.core reads them:

- ``K8S_AUTH_HOST``: the API server URL (the credential's host);
- ``K8S_AUTH_API_KEY``: its bearer token;
- ``K8S_AUTH_VERIFY_SSL``: ``True`` only when the credential has Verify SSL on *and* a CA, else ``False`` (AWX
  writes ``False`` for a credential without a CA even with Verify SSL on); kubernetes.core also reads
  ``K8S_AUTH_VALIDATE_CERTS`` first. A value of 0, false or no (any case) turns verification off; absent: on;
- ``K8S_AUTH_SSL_CA_CERT``: a file holding the credential's CA (kubernetes.core also reads ``K8S_AUTH_CA_CERT``
  first).

One API server for the whole job: the modules use it for a task given no connection options of its own
(tasks/common.py), and the deploy role refuses it for a play of more than one cluster. The token stays in the
environment: the connection names it ``env:K8S_AUTH_API_KEY`` (base/credentials.py reads it when connecting), so
it is never a module parameter, a result or a message."""

from __future__ import annotations

import os
from dataclasses import dataclass

HOST = "K8S_AUTH_HOST"
API_KEY = "K8S_AUTH_API_KEY"
# kubernetes.core reads K8S_AUTH_<module option> first, then K8S_AUTH_<client field>
VERIFY = ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL")
CA_CERT = ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT")
FALSE = ("0", "false", "no")


@dataclass
class EnvConnection:
    """The API server of the job's environment: its URL, the token as a reference (``env:K8S_AUTH_API_KEY``, empty
    when the variable is not set), whether its certificate is verified (and the variable that says so) and the CA
    file."""

    host: str
    token: str = ""
    verify: bool = True
    verify_name: str = ""
    ca_file: str = ""


def _first(names, environ):
    for name in names:
        if environ.get(name):
            return name, environ[name]
    return "", ""


def read(environ=None):
    """The EnvConnection of ``environ`` (default the process environment), or None when K8S_AUTH_HOST is not set."""
    environ = os.environ if environ is None else environ
    host = (environ.get(HOST) or "").strip().rstrip("/")
    if not host:
        return None
    if "://" not in host:  # kubernetes.core hands it to the client as is, which needs the scheme
        host = "https://" + host
    verify_name, verify = _first(VERIFY, environ)
    _name, ca_file = _first(CA_CERT, environ)
    return EnvConnection(host=host, token="env:" + API_KEY if environ.get(API_KEY) else "",
                         verify=verify.strip().lower() not in FALSE, verify_name=verify_name,
                         ca_file=ca_file.strip())
