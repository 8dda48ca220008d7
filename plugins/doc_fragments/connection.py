# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared documentation of the connection options of every manent module."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    DOCUMENTATION = r"""
options:
  api_server:
    description:
      - The cluster's API server, as a host name/IP or an C(https://) URL.
      - In the roles this is the inventory host's C(manent_api_server) (default the host name).
      - Required unless O(kubeconfig) is given, or the task runs with AWX's Kubernetes credential ("OpenShift or
        Kubernetes API Bearer Token") - the environment variables it injects, read as kubernetes.core reads them -
        C(K8S_AUTH_HOST) (the API server URL), C(K8S_AUTH_API_KEY) (its bearer token, read from the environment when
        connecting, never a parameter), C(K8S_AUTH_VERIFY_SSL) (or C(K8S_AUTH_VALIDATE_CERTS); C(False), C(no) or
        C(0) turns verification off, with a warning) and C(K8S_AUTH_SSL_CA_CERT) (or C(K8S_AUTH_CA_CERT), a CA
        file). They are used only by a task given none of O(api_server), O(token), O(client_cert), O(client_key),
        O(ca), O(ca_file), O(kubeconfig); a task given one of them warns that C(K8S_AUTH_HOST) is ignored.
    type: str
  port:
    description:
      - API server port, used when O(api_server) has no port.
    type: int
    default: 6443
  token:
    description:
      - Bearer token (for example a ServiceAccount's).
      - Inline, C(file:/path) (for example C(file:/var/run/secrets/kubernetes.io/serviceaccount/token)) or C(env:NAME).
      - Never logged.
    type: str
  client_cert:
    description:
      - Client certificate (PEM), inline, C(file:/path) or C(env:NAME). Needs O(client_key).
    type: str
  client_key:
    description:
      - Client private key (PEM), inline, C(file:/path) or C(env:NAME). Never logged.
    type: str
  ca:
    description:
      - CA certificate (PEM) of the API server, inline, C(file:/path) or C(env:NAME).
      - When empty, O(ca_file) is used, else the system CAs.
    type: str
  ca_file:
    description:
      - Path of a CA bundle, for example the in-cluster C(/var/run/secrets/kubernetes.io/serviceaccount/ca.crt).
    type: path
  insecure_skip_tls_verify:
    description:
      - Do not verify the API server's certificate. For development only.
      - Every task that does not verify the certificate warns, on success and on failure - turned off by this option,
        by C(insecure-skip-tls-verify) in the cluster of the O(kubeconfig) context, or by C(K8S_AUTH_VERIFY_SSL).
    type: bool
    default: false
  kubeconfig:
    description:
      - A kubeconfig whose context reaches the cluster, as kubectl reads it - a path on the controller,
        C(env:NAME) (a variable holding a path or the YAML), or the kubeconfig itself (its YAML text, or a mapping).
      - "Read from its context: the cluster's C(server), C(certificate-authority) or C(certificate-authority-data),
        C(insecure-skip-tls-verify), C(tls-server-name), C(proxy-url) (an C(http://) proxy, HTTPS tunnelled with
        CONNECT; no socks), and the user's C(token), C(tokenFile) (read again after a 401), C(client-certificate(-data))
        and C(client-key(-data)), or C(exec): a credential plugin (client.authentication.k8s.io C(v1) or C(v1beta1))
        run without a terminal, whose credential is kept for the run and renewed shortly before its
        C(expirationTimestamp) and once after a 401 (see docs/reliability.md)."
      - C(username)/C(password) and C(auth-provider) are refused (use a token, a client certificate or the exec plugin
        that replaces the provider); so is C(interactiveMode=Always).
      - Used only when none of O(api_server), O(token), O(client_cert), O(client_key), O(ca), O(ca_file) is given;
        with one of them, those are used and the task warns that the kubeconfig is ignored.
      - In the roles this is the inventory host's C(manent_kubeconfig). Never logged.
    type: raw
  context:
    description:
      - The context of O(kubeconfig) to use. Default its C(current-context).
      - In the roles this is the inventory host's C(manent_context).
    type: str
  request_timeout:
    description:
      - Timeout of one API request, in seconds.
    type: float
    default: 30
  work_dir:
    description:
      - Controller directory for the run's files (bundles, the discovery cache shared by the modules of a run).
      - Defaults to C(~/.cache/manent/work).
    type: path
requirements:
  - python >= 3.11
  - kubernetes >= 29.0.0
  - PyYAML >= 6.0
"""
