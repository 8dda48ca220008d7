# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The management cluster an inventory source reads (Argo CD cluster Secrets, Cluster API ``Cluster`` objects),
reached with the same client the modules use (module_utils/base/client.py's ``Kube``).

A source's ``management`` suboption gives it in one of two forms:

- a kubeconfig context: ``kubeconfig`` (a path, ``env:NAME`` or the YAML; default ``$KUBECONFIG``'s first file,
  else ``~/.kube/config``) and ``context`` (default its current context), exec credential plugins included;
- the host-variable style of the role: ``api_server`` (with ``port``), ``token`` (inline, ``file:`` or ``env:``),
  ``ca`` / ``ca_file``, ``client_cert`` and ``client_key``, ``validate_certs``.

Messages name the source (``label``) and the option, never a credential."""

from __future__ import annotations

import os

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import ConnectionOptions, Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

KUBECONFIG_STYLE = ("kubeconfig", "context")
STATIC_STYLE = ("api_server", "port", "token", "ca", "ca_file", "client_cert", "client_key")
COMMON = ("validate_certs", "request_timeout")
OPTIONS = KUBECONFIG_STYLE + STATIC_STYLE + COMMON


def connection_options(spec, label):
    """The ConnectionOptions of a management-cluster spec (a mapping; empty: the default kubeconfig)."""
    spec = dict(spec or {})
    unknown = sorted(set(spec) - set(OPTIONS))
    if unknown:
        raise InputError("%s: unknown option(s) %s" % (label, ", ".join(unknown)), subject="management",
                         hint="one of: %s" % ", ".join(OPTIONS))
    kubeconfig = spec.get("kubeconfig") or ""
    static = [name for name in STATIC_STYLE if spec.get(name) and name != "port"]
    if kubeconfig and static:
        raise InputError("%s: kubeconfig and %s are both given" % (label, ", ".join(static)), subject="management",
                         hint="give the cluster either as a kubeconfig context or as api_server with its credentials")
    if spec.get("context") and static:
        raise InputError("%s: context is given with %s" % (label, ", ".join(static)), subject="management",
                         hint="context names a context of kubeconfig; leave it out with api_server")
    insecure = not _bool(spec.get("validate_certs", True), label, "validate_certs")
    timeout = float(spec.get("request_timeout") or ConnectionOptions.timeout)
    if not static:
        return ConnectionOptions(server="", kubeconfig=kubeconfig or default_kubeconfig(), context=spec.get("context") or "",
                                 insecure_skip_tls_verify=insecure, timeout=timeout, retries=2, retry_time=10.0)
    if not spec.get("api_server"):
        raise InputError("%s: %s given without api_server" % (label, ", ".join(static)), subject="management",
                         hint="set api_server to the management cluster's https:// URL")
    try:
        port = int(spec.get("port") or 6443)
    except (TypeError, ValueError):
        raise InputError("%s: port is not a number" % label, subject="management") from None
    return ConnectionOptions(server=str(spec["api_server"]), port=port, token=str(spec.get("token") or ""),
                             client_cert=str(spec.get("client_cert") or ""),
                             client_key=str(spec.get("client_key") or ""), ca=str(spec.get("ca") or ""),
                             ca_file=os.path.expanduser(str(spec.get("ca_file") or "")),
                             insecure_skip_tls_verify=insecure, timeout=timeout, retries=2, retry_time=10.0)


def connect(spec, label):
    """A ``Kube`` for the management cluster of ``spec``; ``label`` names the source in messages
    (``sources[1].argocd.management``). Connection errors surface on the first request."""
    return Kube(connection_options(spec, label))


def relative_to(spec, base_dir):
    """``spec`` with a relative ``kubeconfig`` or ``ca_file`` path made absolute against ``base_dir`` (the inventory
    file's directory), as the kubeconfig source resolves its path."""
    spec = dict(spec or {})
    for key in ("kubeconfig", "ca_file"):
        value = spec.get(key)
        if isinstance(value, str) and value and not value.startswith("env:") and "\n" not in value \
                and not value.lstrip().startswith("{"):
            path = os.path.expanduser(value)
            spec[key] = path if os.path.isabs(path) else os.path.normpath(os.path.join(base_dir, path))
    return spec


def default_kubeconfig():
    """The kubeconfig kubectl reads by default: the first file of ``$KUBECONFIG``, else ``~/.kube/config``."""
    for path in (os.environ.get("KUBECONFIG") or "").split(os.pathsep):
        if path:
            return path
    return os.path.join(os.path.expanduser("~"), ".kube", "config")


def _bool(value, label, name):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("yes", "true", "on", "1", "y"):
        return True
    if text in ("no", "false", "off", "0", "n"):
        return False
    raise InputError("%s: %s is not a boolean" % (label, name), subject="management")
