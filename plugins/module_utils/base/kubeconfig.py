# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A kubeconfig context as the connection to one cluster: what kubectl reads from it, read the same way.

The kubeconfig is a path, ``env:NAME`` (a variable holding a path, or the YAML itself) or the YAML inline. Its
context (default ``current-context``) names a cluster and a user:

- cluster: ``server``, ``certificate-authority`` / ``certificate-authority-data``, ``insecure-skip-tls-verify``,
  ``tls-server-name``, ``proxy-url`` (an http:// proxy, through which HTTPS goes with CONNECT);
- user: ``token``, ``tokenFile`` (read again after a 401, as client-go does), ``client-certificate(-data)`` /
  ``client-key(-data)``, ``exec`` (a credential plugin: exec_credentials.py).

``username``/``password`` (basic auth, removed from Kubernetes) and ``auth-provider`` (removed from client-go,
replaced by exec plugins) are refused with what replaces them. Relative file paths (and an exec command with a
path separator) are resolved against the kubeconfig's directory, as client-go does. Messages name the kubeconfig
(its path, ``env:NAME`` or "inline"), the context and the field, never a value."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
# The cluster extension client-go hands to exec plugins as spec.cluster.config (provideClusterInfo).
EXEC_EXTENSION = "client.authentication.k8s.io/exec"


@dataclass
class ExecConfig:
    """The ``exec`` entry of a kubeconfig user."""

    command: str
    args: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    api_version: str = EXEC_API_VERSIONS[0]
    install_hint: str = ""
    provide_cluster_info: bool = False
    interactive_mode: str = "IfAvailable"


@dataclass
class Target:
    """One kubeconfig context, resolved: where the cluster is, how to verify it and how to authenticate."""

    label: str  # the kubeconfig as messages name it: its path, env:NAME or "inline"
    context: str
    cluster_name: str = ""
    user_name: str = ""
    server: str = ""
    ca_data: str = ""  # PEM
    ca_file: str = ""
    insecure_skip_tls_verify: bool = False
    tls_server_name: str = ""
    proxy_url: str = ""
    token: str = ""
    token_file: str = ""
    client_cert: str = ""  # PEM, or the absolute path of a PEM file
    client_key: str = ""
    exec: ExecConfig | None = None
    cluster_config: object = None  # the exec extension of the cluster (provideClusterInfo)

    def where(self, entry=""):
        """``context 'c' of kubeconfig /path`` (with the field: ``users[u].exec.command``)."""
        text = "context %r of kubeconfig %s" % (self.context, self.label)
        return "%s (%s)" % (text, entry) if entry else text


def load(source, context=""):
    """The Target of ``context`` (default the current context) in the kubeconfig ``source``."""
    if isinstance(source, dict):  # a mapping in the inventory
        label, doc, base_dir = "inline", source, os.getcwd()
    else:
        label, doc, base_dir = _parse(*_read(source))
    if not isinstance(doc, dict):
        raise InputError("kubeconfig %s is not a kubeconfig (a mapping with clusters, users and contexts)" % label,
                         subject="kubeconfig")
    name = str(context or doc.get("current-context") or "")
    if not name:
        raise InputError("kubeconfig %s has no current-context and no context was given" % label,
                         subject="context", hint="set manent_context (the module's context) to one of: %s"
                         % _names(doc.get("contexts")))
    entry = _named(doc, "contexts", name, "context", label, name)
    target = Target(label=label, context=name)
    target.cluster_name = str(entry.get("cluster") or "")
    target.user_name = str(entry.get("user") or "")
    if not target.cluster_name:
        raise InputError("%s names no cluster" % target.where("contexts[%s].context.cluster" % name),
                         subject="kubeconfig")
    cluster = _named(doc, "clusters", target.cluster_name, "cluster", label, name)
    _read_cluster(target, cluster, base_dir)
    user = _named(doc, "users", target.user_name, "user", label, name) if target.user_name else {}
    _read_user(target, user, base_dir)
    return target


def _parse(label, text, base_dir):
    import yaml
    try:
        return label, yaml.safe_load(text), base_dir
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = " (line %d)" % (mark.line + 1) if mark is not None else ""
        raise InputError("kubeconfig %s is not valid YAML%s" % (label, where), subject="kubeconfig") from None


def _read(source):
    """(label, YAML text, directory relative paths are resolved against) of a kubeconfig reference."""
    source = str(source or "")
    label = "inline"
    if source.startswith("env:"):
        var = source[len("env:"):]
        if var not in os.environ:
            raise InputError("environment variable %s for the kubeconfig is not set" % var, subject="kubeconfig")
        label, source = source, os.environ[var]
    if _is_yaml(source):
        return label, source, os.getcwd()
    path = os.path.abspath(os.path.expanduser(source))
    label = path if label == "inline" else "%s (%s)" % (label, path)
    try:
        with open(path, "r", encoding="utf-8") as handle:
            return label, handle.read(), os.path.dirname(path)
    except OSError as exc:
        raise InputError("cannot read kubeconfig %s: %s" % (label, exc.strerror), subject="kubeconfig",
                         hint="give a readable kubeconfig file, env:NAME or the kubeconfig's YAML") from None


def _is_yaml(value):
    value = value.strip()
    return "\n" in value or value.startswith("{") or value.startswith("apiVersion:")


def _names(items):
    names = [str(item.get("name")) for item in items or () if isinstance(item, dict) and item.get("name")]
    return ", ".join(names) if names else "(none)"


def _named(doc, section, name, kind, label, context):
    for item in doc.get(section) or ():
        if isinstance(item, dict) and str(item.get("name")) == name:
            value = item.get(kind)
            if value is None:
                return {}
            if not isinstance(value, dict):
                raise InputError("%s %r of kubeconfig %s is not a mapping" % (kind, name, label), subject="kubeconfig")
            return value
    what = "context %r" % name if kind == "context" else "%s %r (context %r)" % (kind, name, context)
    raise InputError("kubeconfig %s has no %s" % (label, what), subject="context" if kind == "context" else "kubeconfig",
                     hint="%ss in it: %s" % (kind, _names(doc.get(section))))


def _path(value, base_dir):
    value = os.path.expanduser(str(value))
    return value if os.path.isabs(value) else os.path.normpath(os.path.join(base_dir, value))


def _pem(target, value, entry):
    """PEM text of a ``*-data`` field (base64 of the PEM, as kubeconfigs hold it)."""
    try:
        text = base64.b64decode(str(value), validate=False).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        text = ""
    if "-----BEGIN" not in text:
        raise InputError("%s is not base64 of PEM data" % target.where(entry), subject="kubeconfig")
    return text


def _file(target, value, entry, base_dir):
    path = _path(value, base_dir)
    if not os.path.isfile(path):
        raise InputError("%s: file %s does not exist" % (target.where(entry), path), subject="kubeconfig")
    return path


def _read_cluster(target, cluster, base_dir):
    where = "clusters[%s].cluster" % target.cluster_name
    target.server = str(cluster.get("server") or "")
    if not target.server:
        raise InputError("%s has no server" % target.where(where + ".server"), subject="kubeconfig")
    if not target.server.startswith("https://"):
        raise InputError("%s: only https:// servers are supported" % target.where(where + ".server"),
                         subject="kubeconfig")
    if cluster.get("certificate-authority-data"):
        target.ca_data = _pem(target, cluster["certificate-authority-data"], where + ".certificate-authority-data")
    elif cluster.get("certificate-authority"):
        target.ca_file = _file(target, cluster["certificate-authority"], where + ".certificate-authority", base_dir)
    target.insecure_skip_tls_verify = bool(cluster.get("insecure-skip-tls-verify"))
    target.tls_server_name = str(cluster.get("tls-server-name") or "")
    proxy = str(cluster.get("proxy-url") or "")
    if proxy and not proxy.startswith(("http://", "https://")):
        raise InputError("%s: only http:// and https:// proxies are supported (not socks)"
                         % target.where(where + ".proxy-url"), subject="kubeconfig")
    target.proxy_url = proxy
    for extension in cluster.get("extensions") or ():
        if isinstance(extension, dict) and extension.get("name") == EXEC_EXTENSION:
            target.cluster_config = extension.get("extension")


def _read_user(target, user, base_dir):
    where = "users[%s].user" % target.user_name
    if user.get("username") or user.get("password"):
        raise InputError("%s: basic authentication (username/password) is not supported: Kubernetes removed it"
                         % target.where(where + ".username"), subject="kubeconfig",
                         hint="use a token, a client certificate or an exec credential plugin")
    if user.get("auth-provider"):
        provider = (user.get("auth-provider") or {}).get("name") or "?"
        raise InputError("%s: auth-provider %r is not supported (client-go removed auth providers)"
                         % (target.where(where + ".auth-provider"), provider), subject="kubeconfig",
                         hint="use the exec credential plugin that replaces it (gke-gcloud-auth-plugin for gcp, "
                              "kubelogin for azure and oidc)")
    target.token = str(user.get("token") or "")
    if user.get("tokenFile") and not target.token:
        target.token_file = _file(target, user["tokenFile"], where + ".tokenFile", base_dir)
    if user.get("client-certificate-data"):
        target.client_cert = _pem(target, user["client-certificate-data"], where + ".client-certificate-data")
    elif user.get("client-certificate"):
        target.client_cert = _file(target, user["client-certificate"], where + ".client-certificate", base_dir)
    if user.get("client-key-data"):
        target.client_key = _pem(target, user["client-key-data"], where + ".client-key-data")
    elif user.get("client-key"):
        target.client_key = _file(target, user["client-key"], where + ".client-key", base_dir)
    if bool(target.client_cert) != bool(target.client_key):
        raise InputError("%s: a client certificate needs both client-certificate and client-key"
                         % target.where(where), subject="kubeconfig")
    if user.get("exec"):
        target.exec = _exec(target, user["exec"], where + ".exec", base_dir)


def _exec(target, spec, where, base_dir):
    if not isinstance(spec, dict) or not spec.get("command"):
        raise InputError("%s has no command" % target.where(where + ".command"), subject="kubeconfig")
    api_version = str(spec.get("apiVersion") or "")
    if api_version not in EXEC_API_VERSIONS:
        field_name = target.where(where + ".apiVersion")
        supported = ", ".join(EXEC_API_VERSIONS)
        raise InputError("%s: apiVersion %r is not supported (%s are)" % (field_name, api_version, supported),
                         subject="kubeconfig")
    mode = str(spec.get("interactiveMode") or "IfAvailable")
    if mode == "Always":
        raise InputError("%s: interactiveMode Always needs a terminal, and a deploy has none"
                         % target.where(where + ".interactiveMode"), subject="kubeconfig",
                         hint="log in before the run (the plugin then finds its cached login) and set "
                              "interactiveMode to Never or IfAvailable")
    if mode not in ("Never", "IfAvailable"):
        raise InputError("%s: interactiveMode %r is not one of Never, IfAvailable, Always"
                         % (target.where(where + ".interactiveMode"), mode), subject="kubeconfig")
    env = {}
    for item in spec.get("env") or ():
        if not isinstance(item, dict) or not item.get("name"):
            raise InputError("%s: each entry needs a name and a value" % target.where(where + ".env"),
                             subject="kubeconfig")
        env[str(item["name"])] = str(item.get("value") if item.get("value") is not None else "")
    command = str(spec["command"])
    if os.sep in command and not os.path.isabs(os.path.expanduser(command)):
        command = _path(command, base_dir)  # client-go: a relative path with a separator is the kubeconfig's
    return ExecConfig(command=os.path.expanduser(command), args=[str(arg) for arg in spec.get("args") or ()],
                      env=env, api_version=api_version, install_hint=str(spec.get("installHint") or ""),
                      provide_cluster_info=bool(spec.get("provideClusterInfo")), interactive_mode=mode)
