# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Cluster API management cluster made of the local clusters, for the inventory plugin's cluster_api source: the
real ``Cluster`` CRD (hack/build-tools.sh collects it from sigs.k8s.io/cluster-api) installed on one cluster,
``Cluster`` objects whose status is set through the status subresource as Cluster API's controllers set it, and
``<name>-kubeconfig`` Secrets holding a kubeconfig with the token of a ServiceAccount of each workload cluster."""

from __future__ import annotations

import base64
import os
import sys
import time

import yaml

from tests.integration import exec_helpers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "hack"))
import clusters as hack_clusters  # noqa: E402  pylint: disable=wrong-import-position,import-error

API_VERSION = "cluster.x-k8s.io/v1beta2"
CRD_NAME = "clusters.cluster.x-k8s.io"


def crd():
    """The Cluster CRD of the pinned Cluster API (hack/versions.env CLUSTER_API_VERSION), built if missing."""
    with open(hack_clusters.binaries()["capi_crds"], encoding="utf-8") as handle:
        return next(doc for doc in yaml.safe_load_all(handle) if doc and doc.get("kind") == "CustomResourceDefinition")


def install_crd(management):
    """Install the Cluster CRD on ``management`` and wait until the API server serves it."""
    management.apply(crd())
    management.wait(lambda: _served(management), timeout=60, what="the Cluster CRD served")


def _served(management):
    try:
        management.kube.get_json("/apis/cluster.x-k8s.io/v1beta2/clusters")
        return True
    except Exception:  # pylint: disable=broad-except
        return False


def remove_crd(management, fleet_label, uid):
    """Remove the Cluster CRD unless Clusters of another run (label ``fleet_label`` not ``uid``) still use it: the
    shared clusters may run this test twice at once."""
    try:
        others = [c for c in management.kube.get_json("/apis/%s/clusters" % API_VERSION).get("items") or []
                  if ((c.get("metadata") or {}).get("labels") or {}).get(fleet_label) != uid]
        if not others:
            management.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, CRD_NAME)
    except Exception:  # pylint: disable=broad-except
        pass


def service_account_token(cluster, namespace, name, seconds=3600):
    """A token of the ServiceAccount ``name`` (created, bound to the deploy's Role in ``namespace``) minted through
    the TokenRequest API."""
    exec_helpers.grant(cluster, namespace, [name])
    answer = cluster.kube.request(
        "POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (namespace, name),
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}},
        subject="TokenRequest").data
    return answer["status"]["token"]


def workload_kubeconfig(cluster, name, token):
    """The kubeconfig Cluster API's control plane providers write: one cluster, user ``<name>-admin``, context
    ``<name>-admin@<name>``, the CA inline."""
    with open(cluster.ca_file, "rb") as handle:
        ca = base64.b64encode(handle.read()).decode()
    user, context = "%s-admin" % name, "%s-admin@%s" % (name, name)
    return {"apiVersion": "v1", "kind": "Config", "current-context": context, "preferences": {},
            "clusters": [{"name": name, "cluster": {"server": cluster.url, "certificate-authority-data": ca}}],
            "contexts": [{"name": context, "context": {"cluster": name, "user": user}}],
            "users": [{"name": user, "user": {"token": token}}]}


def kubeconfig_secret(namespace, name, config):
    return {"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
            "metadata": {"name": "%s-kubeconfig" % name, "namespace": namespace,
                         "labels": {"cluster.x-k8s.io/cluster-name": name}},
            "data": {"value": base64.b64encode(yaml.safe_dump(config).encode()).decode()}}


def cluster_object(namespace, name, labels):
    return {"apiVersion": API_VERSION, "kind": "Cluster", "metadata": {"name": name, "namespace": namespace,
                                                                       "labels": labels},
            "spec": {"controlPlaneEndpoint": {"host": "127.0.0.1", "port": 6443}}}


def _condition(kind, status, reason):
    return {"type": kind, "status": status, "reason": reason, "message": "",
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "observedGeneration": 1}


def provisioned_status():
    """The status Cluster API's controllers give a Cluster whose control plane is up."""
    return {"phase": "Provisioned", "observedGeneration": 1,
            "initialization": {"infrastructureProvisioned": True, "controlPlaneInitialized": True},
            "conditions": [_condition("Available", "True", "Available"),
                           _condition("InfrastructureReady", "True", "Ready"),
                           _condition("ControlPlaneInitialized", "True", "Initialized"),
                           _condition("ControlPlaneAvailable", "True", "Available")]}


def provisioning_status():
    """The status of a Cluster whose infrastructure is still being provisioned."""
    return {"phase": "Provisioning", "observedGeneration": 1,
            "initialization": {"infrastructureProvisioned": False},
            "conditions": [_condition("InfrastructureReady", "False", "NotReady"),
                           _condition("ControlPlaneAvailable", "False", "NotAvailable")]}


def set_status(management, namespace, name, status):
    """Write ``status`` through the status subresource (a merge patch, as a controller would)."""
    management.kube.request("PATCH", "/apis/%s/namespaces/%s/clusters/%s/status" % (API_VERSION, namespace, name),
                            body={"status": status}, content_type="application/merge-patch+json",
                            subject="Cluster/%s/%s" % (namespace, name))
