# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exec credential plugin of the tests (tests/integration/exec_plugin.py: ServiceAccount tokens minted through the
TokenRequest API, with an expirationTimestamp a few seconds ahead): the ServiceAccounts and the Role it hands out,
its state for one test (:class:`Plugin`: which ServiceAccount, its runs), and the kubeconfig entries that run it."""

from __future__ import annotations

import json
import os
import sys

import yaml

PLUGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "exec_plugin.py")
HINT = "install the test plugin: see tests/integration/exec_plugin.py"
# The rights a deploy of the shop needs in its namespace (tests/integration/test_rbac_scoped.py) and what its waits
# and history read.
RULES = [{"apiGroups": [""], "resources": ["configmaps", "secrets", "services"], "verbs": ["*"]},
         {"apiGroups": ["apps"], "resources": ["deployments", "replicasets"], "verbs": ["*"]},
         {"apiGroups": [""], "resources": ["pods", "events", "namespaces"], "verbs": ["get", "list", "watch"]},
         {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["get", "list", "watch"]}]


def _service_account(cluster, namespace, name):
    cluster.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}})


def grant(cluster, namespace, accounts):
    """ServiceAccounts ``accounts`` in ``namespace``, bound to the deploy's Role there."""
    for name in accounts:
        _service_account(cluster, namespace, name)
    _rbac(cluster, namespace, accounts)


def _rbac(cluster, namespace, accounts):
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "exec-deployer", "namespace": namespace}, "rules": RULES})
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "exec-deployer", "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "exec-deployer"},
                   "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace} for name in accounts]})


class Plugin:
    """The state of tests/integration/exec_plugin.py for one test."""

    def __init__(self, cluster, namespace, directory, lifetime, mode="ok", sa="deployer-1"):
        self.dir = str(directory)
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, "config.json"), "w", encoding="utf-8") as handle:
            json.dump({"server": cluster.url, "ca_file": cluster.ca_file, "namespace": namespace, "mode": mode,
                       "admin_token_file": os.path.join(cluster.dir, "admin.token"), "lifetime": lifetime}, handle)
        self.use(sa)

    def use(self, sa):
        with open(os.path.join(self.dir, "sa"), "w", encoding="utf-8") as handle:
            handle.write(sa)

    def runs(self):
        path = os.path.join(self.dir, "runs.jsonl")
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]


def kubeconfig(cluster, path, user, context="exec", **cluster_fields):
    fields = {"server": cluster.url, "certificate-authority": cluster.ca_file}
    fields.update(cluster_fields)
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": context,
           "clusters": [{"name": "c", "cluster": fields}], "users": [{"name": "u", "user": user}],
           "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}]}
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(doc, handle)
    return str(path)


def exec_user(plugin, command=sys.executable):
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": command,
                     "args": [PLUGIN, plugin.dir], "env": [{"name": "EXEC_TEST", "value": "1"}],
                     "installHint": HINT, "provideClusterInfo": True, "interactiveMode": "Never"}}
