# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin manent.kubernetes.clusters against the local clusters: a kubeconfig with one context per
cluster, Argo CD cluster Secrets for some clusters created on another, an inventory file of the plugin, and
``ansible-inventory`` run on it (a real subprocess from the repository root, like playbook_helpers' runs)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import yaml

from tests.integration.exec_helpers import HINT, PLUGIN, kubeconfig
from tests.integration.playbook_helpers import ROOT

TOPOLOGY = "manent.io/topology"


def group(prefix, value):
    """The group the role's docs name for a region or AZ: ``region_eu1`` for ``eu-1``."""
    return "%s_%s" % (prefix, "".join(ch for ch in value.lower() if ch.isalnum()))


def fleet_kubeconfig(clusters, path):
    """A kubeconfig with one context ``local-<host>`` per cluster (its CA file, its admin token by tokenFile), the
    region and AZ in the context's extension ``manent.io/topology``."""
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "local-" + clusters[0].name,
           "clusters": [], "users": [], "contexts": []}
    for cluster in clusters:
        doc["clusters"].append({"name": cluster.name, "cluster": {"server": cluster.url,
                                                                  "certificate-authority": cluster.ca_file}})
        doc["users"].append({"name": cluster.name, "user": {"tokenFile": os.path.join(cluster.dir, "admin.token")}})
        doc["contexts"].append({"name": "local-" + cluster.name, "context": {
            "cluster": cluster.name, "user": cluster.name,
            "extensions": [{"name": TOPOLOGY, "extension": {"region": cluster.region, "az": cluster.az}}]}})
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(doc, handle)
    return str(path)


def management_kubeconfig(cluster, path):
    """A kubeconfig reaching ``cluster`` (the management cluster) with its admin client certificate files."""
    return kubeconfig(cluster, path, {"client-certificate": os.path.join(cluster.dir, "admin.crt"),
                                      "client-key": os.path.join(cluster.dir, "admin.key")}, context="mgmt")


def _b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def argocd_secret(management, namespace, name, server, config, region="", az=""):
    """An Argo CD cluster Secret ``name`` in ``namespace`` of ``management`` (stringData as Argo CD's docs write it)."""
    labels = {"argocd.argoproj.io/secret-type": "cluster"}
    if region:
        labels["topology.kubernetes.io/region"] = region
    if az:
        labels["topology.kubernetes.io/zone"] = az
    management.apply({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                      "metadata": {"name": name, "namespace": namespace, "labels": labels},
                      "stringData": {"name": name, "server": server, "config": json.dumps(config)}})


def ca_data(cluster):
    with open(cluster.ca_file, encoding="utf-8") as handle:
        return _b64(handle.read())


def argocd_fleet(management, namespace, token_cluster, exec_cluster, plugin):
    """Argo CD cluster Secrets on ``management``: ``<host>-argo`` for ``token_cluster`` (its admin bearer token) and
    for ``exec_cluster`` (an execProviderConfig running the tests' exec plugin ``plugin``), with their region and
    zone labels; Argo CD's own cluster (left out by default) and one with basic authentication (left out, warned)."""
    argocd_secret(management, namespace, token_cluster.name + "-argo", token_cluster.url,
                  {"bearerToken": token_cluster.token, "tlsClientConfig": {"insecure": False,
                                                                           "caData": ca_data(token_cluster)}},
                  token_cluster.region, token_cluster.az)
    argocd_secret(management, namespace, exec_cluster.name + "-argo", exec_cluster.url,
                  {"execProviderConfig": {"command": sys.executable, "args": [PLUGIN, plugin.dir],
                                          "env": {"EXEC_TEST": "1"}, "installHint": HINT,
                                          "apiVersion": "client.authentication.k8s.io/v1"},
                   "tlsClientConfig": {"caData": ca_data(exec_cluster)}}, exec_cluster.region, exec_cluster.az)
    argocd_secret(management, namespace, "in-cluster", "https://kubernetes.default.svc", {"tlsClientConfig": {}})
    argocd_secret(management, namespace, "legacy", exec_cluster.url, {"username": "admin", "password": "not-used-1"})


def write_source(path, sources, **options):
    """An inventory file of the plugin (its name must end in clusters.manent.yml)."""
    doc = {"plugin": "manent.kubernetes.clusters", "sources": sources}
    doc.update(options)
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(doc, handle)
    return str(path)


def run_inventory(source, *args, env=None):
    """``ansible-inventory -i source --list`` (plus ``args``): (returncode, stdout, stderr)."""
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i", str(source), "--list"]
    run_env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    run_env.update(env or {})
    proc = subprocess.run(command + list(args), cwd=ROOT, env=run_env, capture_output=True, text=True, timeout=300,
                          check=False)
    return proc.returncode, proc.stdout, proc.stderr


def plain(value):
    """ansible-inventory's JSON without its ``{"__ansible_unsafe": value}`` wrappers."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def listing(source, *args, env=None):
    """The inventory as ``ansible-inventory --list`` gives it, unwrapped; fails the test when it fails."""
    code, out, err = run_inventory(source, *args, env=env)
    assert code == 0, err
    return plain(json.loads(out)), err
