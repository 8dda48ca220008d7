# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Argo CD source of the inventory plugin ``manent.kubernetes.clusters``: one cluster per Argo CD cluster Secret
(label ``argocd.argoproj.io/secret-type=cluster``) in a namespace of the management cluster, its credentials turned
into a kubeconfig (FoundCluster.kubeconfig, written 0600 by the plugin).

The Secret's fields are Argo CD's (pkg/apis/application/v1alpha1, ``ClusterConfig``): ``name``, ``server`` and
``config``, a JSON object with ``bearerToken``, ``tlsClientConfig`` (``caData``, ``certData``, ``keyData``: base64 of
PEM, as kubeconfig ``*-data`` fields hold them; ``insecure``, ``serverName``), ``execProviderConfig`` (``command``,
``args``, ``env`` a mapping, ``apiVersion``, ``installHint``), ``awsAuthConfig`` (``clusterName``, ``roleARN``,
``profile``) and ``proxyUrl``. As in Argo CD, ``awsAuthConfig`` wins over ``execProviderConfig``, which wins over
the token; ``awsAuthConfig`` becomes the exec plugin ``aws --profile <profile> eks get-token --cluster-name <name>
--role-arn <arn> --output json`` (the credential Argo CD's ``argocd-k8s-auth aws`` mints, from the AWS CLI).

A Secret that cannot be used (basic authentication, no server, a config that is not JSON) is handed back with
``skipped`` set (the plugin warns); messages name the Secret and the field, never a value. Argo CD's own cluster
(``https://kubernetes.default.svc``) is left out unless ``include_in_cluster``: it is then reached with the
management connection, whose kubeconfig file the host references."""

from __future__ import annotations

import base64
import json
import os

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.pages import list_items
from ansible_collections.manent.kubernetes.plugins.plugin_utils.inventory_found import FoundCluster
from ansible_collections.manent.kubernetes.plugins.plugin_utils.inventory_hosts import sanitize
from ansible_collections.manent.kubernetes.plugins.plugin_utils.inventory_management import default_kubeconfig

SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
IN_CLUSTER = "https://kubernetes.default.svc"
OPTIONS = ("management", "namespace", "label_selector", "region_label", "az_label", "include_in_cluster", "host_names")
DEFAULTS = {"namespace": "argocd", "region_label": "topology.kubernetes.io/region",
            "az_label": "topology.kubernetes.io/zone"}
EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"  # what Argo CD and aws eks update-kubeconfig write


def discover(kube, spec, label="argocd"):
    """The FoundClusters of the cluster Secrets the source ``spec`` names, read through ``kube``."""
    unknown = sorted(set(spec) - set(OPTIONS))
    if unknown:
        raise InputError("%s.argocd: unknown option(s) %s" % (label, ", ".join(unknown)), subject="argocd",
                         hint="one of: %s" % ", ".join(OPTIONS))
    options = dict(DEFAULTS, **{k: v for k, v in spec.items() if v not in (None, "")})
    namespace = str(options["namespace"])
    selector = "%s=cluster" % SECRET_TYPE_LABEL
    if options.get("label_selector"):
        selector += "," + str(options["label_selector"])
    source = "Argo CD %s" % namespace
    path = "/api/v1/namespaces/%s/secrets" % namespace
    names = options.get("host_names") or {}
    out = []
    for secret in list_items(kube, path, query={"labelSelector": selector}, subject="argocd cluster Secrets"):
        cluster = from_secret(secret, options, source, names)
        if cluster is not None:
            out.append(cluster)
    return out


def from_secret(secret, options, source, names):
    """The FoundCluster of one cluster Secret (None: Argo CD's own cluster, not asked for)."""
    meta = secret.get("metadata") or {}
    where = "Secret %s/%s" % (meta.get("namespace") or options.get("namespace"), meta.get("name"))
    data = _data(secret)
    server = data.get("server", "").strip()
    name = data.get("name", "").strip() or str(meta.get("name") or "")
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items() if k != SECRET_TYPE_LABEL}
    found = FoundCluster(name=str(names.get(name) or sanitize(name)), source="%s (%s)" % (source, where),
                         region=labels.get(str(options["region_label"]), ""), az=labels.get(str(options["az_label"]), ""),
                         labels=labels, variables={"manent_cluster_server": server,
                                                   "manent_argocd_secret": where.split(" ", 1)[1]})
    if server.rstrip("/") in (IN_CLUSTER, IN_CLUSTER + ":443"):
        return in_cluster(found, options) if options.get("include_in_cluster") else None
    if not server:
        found.skipped = "%s has no server" % where
        return found
    try:
        config = json.loads(data.get("config") or "{}")
    except ValueError:
        config = None
    if not isinstance(config, dict):
        found.skipped = "the config of %s is not a JSON object" % where
        return found
    try:
        found.kubeconfig = kubeconfig(found.name, server, config, where)
    except InputError as exc:
        found.skipped = exc.message
    found.context = found.name
    return found


def kubeconfig(name, server, config, where):
    """A kubeconfig (one context named ``name``) from Argo CD's cluster ``config``."""
    tls = config.get("tlsClientConfig") or {}
    cluster = {"server": server}
    for field, key in (("caData", "certificate-authority-data"), ("serverName", "tls-server-name")):
        if tls.get(field):
            cluster[key] = str(tls[field])
    if tls.get("insecure"):
        cluster["insecure-skip-tls-verify"] = True
    if config.get("proxyUrl"):
        cluster["proxy-url"] = str(config["proxyUrl"])
    user = {}
    if tls.get("certData") or tls.get("keyData"):
        user["client-certificate-data"] = str(tls.get("certData") or "")
        user["client-key-data"] = str(tls.get("keyData") or "")
    if config.get("awsAuthConfig"):
        user["exec"] = aws_exec(config["awsAuthConfig"], where)
    elif config.get("execProviderConfig"):
        user["exec"] = provider_exec(config["execProviderConfig"], where)
    elif config.get("bearerToken"):
        user["token"] = str(config["bearerToken"])
    elif config.get("username") or config.get("password"):
        raise InputError("%s uses basic authentication (username/password), which Kubernetes removed" % where,
                         hint="give the cluster a bearerToken, a client certificate or an execProviderConfig")
    if not user:
        raise InputError("%s has no credential (bearerToken, tlsClientConfig.certData/keyData, execProviderConfig or "
                         "awsAuthConfig)" % where)
    return {"apiVersion": "v1", "kind": "Config", "current-context": name,
            "clusters": [{"name": name, "cluster": cluster}], "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]}


def aws_exec(aws, where):
    if not isinstance(aws, dict) or not aws.get("clusterName"):
        raise InputError("%s: config.awsAuthConfig has no clusterName" % where)
    args = ["--profile", str(aws["profile"])] if aws.get("profile") else []
    args += ["eks", "get-token", "--cluster-name", str(aws["clusterName"])]
    if aws.get("roleARN"):
        args += ["--role-arn", str(aws["roleARN"])]
    args += ["--output", "json"]
    return {"apiVersion": EXEC_API_VERSION, "command": "aws", "args": args, "interactiveMode": "Never",
            "installHint": "the AWS CLI (v2) reads EKS tokens for this cluster, as Argo CD's awsAuthConfig does: "
                           "install it on the controller and give it credentials that may assume the role"}


def provider_exec(spec, where):
    if not isinstance(spec, dict) or not spec.get("command"):
        raise InputError("%s: config.execProviderConfig has no command" % where)
    env = spec.get("env") or {}
    if not isinstance(env, dict):
        raise InputError("%s: config.execProviderConfig.env is not a mapping" % where)
    out = {"apiVersion": str(spec.get("apiVersion") or EXEC_API_VERSION), "command": str(spec["command"]),
           "args": [str(arg) for arg in spec.get("args") or ()],
           "env": [{"name": str(k), "value": str(v)} for k, v in env.items()], "interactiveMode": "Never"}
    if spec.get("installHint"):
        out["installHint"] = str(spec["installHint"])
    return out


def in_cluster(found, options):
    """Argo CD's own cluster: the management cluster, reached through its kubeconfig file (a copy is never made)."""
    management = options.get("management") or {}
    if any(management.get(key) for key in ("api_server", "token", "client_cert")):
        found.skipped = ("include_in_cluster needs the management cluster given as a kubeconfig file "
                         "(management.kubeconfig and context), which the host then references")
        return found
    path = str(management.get("kubeconfig") or default_kubeconfig())
    if path.startswith("env:"):
        path = os.environ.get(path[len("env:"):], "")
    if not path or "\n" in path or path.lstrip().startswith("{"):
        found.skipped = "include_in_cluster needs management.kubeconfig to be a file's path, not the YAML"
        return found
    found.kubeconfig_path = os.path.abspath(os.path.expanduser(path))
    found.context = str(management.get("context") or "")
    return found


def _data(secret):
    """The Secret's data, decoded (stringData is merged into data by the API server)."""
    out = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[str(key)] = base64.b64decode(str(value)).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            out[str(key)] = ""
    return out
