# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The public charts of hack/versions.env PUBLIC_CHARTS as the tests deploy them (test_public_charts.py through the
role, test_helm_parity.py with helm as well): the values of a first release and of an upgrade, with names of their
own from the test's namespace, what tells them apart on the cluster, the stages a run reported, and the clean-up of
what they leave outside their namespace."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import NotFoundError
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery, resource_path

CLEANUP = (("rbac.authorization.k8s.io/v1", "ClusterRole"), ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
           ("networking.k8s.io/v1", "IngressClass"),
           ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
           ("apiextensions.k8s.io/v1", "CustomResourceDefinition"))
SPANS_NAMESPACES = ("metrics-server",)  # its RoleBinding goes to kube-system
OUTSIDE = (("rbac.authorization.k8s.io/v1", "RoleBinding"), ("rbac.authorization.k8s.io/v1", "Role"))


def _deployment_replicas(name):
    def probe(cluster, ns):
        return cluster.get("apps/v1", "Deployment", ns, name)["spec"]["replicas"]
    return probe


def _container_args(name):
    def probe(cluster, ns):
        spec = cluster.get("apps/v1", "Deployment", ns, name)["spec"]["template"]["spec"]
        return sorted(arg for c in spec["containers"] for arg in c.get("args") or [] if arg.startswith("--log-level"))
    return probe


def _cronjob_schedule(name):
    def probe(cluster, ns):
        return cluster.get("batch/v1", "CronJob", ns, name)["spec"]["schedule"]
    return probe


def cases(ns):
    """chart -> (values of the first release, values of the upgrade, probe(cluster, ns), what the probe gives for
    each, extra role variables)."""
    return {
        "metrics-server": ({"fullnameOverride": "ms-" + ns, "apiService": {"create": False}},
                           {"fullnameOverride": "ms-" + ns, "apiService": {"create": False}, "replicas": 2},
                           _deployment_replicas("ms-" + ns), (1, 2), {}),
        "ingress-nginx": (
            {"fullnameOverride": "ing-" + ns,
             "controller": {"ingressClassResource": {"name": "nginx-" + ns, "controllerValue": "k8s.io/" + ns},
                            "ingressClass": "nginx-" + ns,
                            "admissionWebhooks": {"namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": ns}}}}},
            {"fullnameOverride": "ing-" + ns,
             "controller": {"ingressClassResource": {"name": "nginx-" + ns, "controllerValue": "k8s.io/" + ns},
                            "ingressClass": "nginx-" + ns, "replicaCount": 2,
                            "admissionWebhooks": {"namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": ns}}}}},
            _deployment_replicas("ing-%s-controller" % ns), (1, 2), {"deploy_helm_hooks": "apply"}),
        "external-dns": ({"fullnameOverride": "edns-" + ns},
                         {"fullnameOverride": "edns-" + ns, "logLevel": "debug"},
                         _container_args("edns-" + ns), (["--log-level=info"], ["--log-level=debug"]), {}),
        "descheduler": ({"fullnameOverride": "desched-" + ns},
                        {"fullnameOverride": "desched-" + ns, "schedule": "'*/5 * * * *'"},  # helm_value: YAML text
                        _cronjob_schedule("desched-" + ns), ("*/2 * * * *", "*/5 * * * *"), {}),
    }


def stages(run):
    """The lifecycle stages manent_apply reported (its result, printed with -v), in the order they ran."""
    for line in run.output.splitlines():
        found = re.search(r'"stages": (\[[^]]*\])', line)
        if found:
            return json.loads(found.group(1))
    raise AssertionError("no stages in the output:\n" + run.explain())


def cleanup(cluster, ns, application):
    selector = "manent.io/application=%s" % application
    for api_version, kind in CLEANUP:
        for obj in cluster.list(api_version, kind, selector=selector):
            cluster.delete(api_version, kind, None, obj["metadata"]["name"])
    for api_version, kind in OUTSIDE:
        for obj in cluster.list(api_version, kind, selector=selector):
            if obj["metadata"]["namespace"] != ns:
                cluster.delete(api_version, kind, obj["metadata"]["namespace"], obj["metadata"]["name"])


# --------------------------------------------------------------------------- what is on the cluster

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
EVENT_KINDS = {("", "Event"), ("events.k8s.io", "Event")}


def listable_kinds(cluster):
    """Every kind the cluster lists (one version of each group and kind), Events left out; read afresh (a test's
    CRDs add kinds)."""
    kinds = {}
    for res in Discovery(cluster.kube).resources().values():
        if "list" in (res.verbs or ()) and (res.group, res.kind) not in EVENT_KINDS:
            kinds.setdefault((res.group, res.kind), res)
    return sorted(kinds.values(), key=lambda res: (res.group, res.kind))


def live_inventory(cluster, namespace, kinds, elsewhere=("kube-system",)):
    """[(group, kind, namespace, name, metadata)] of what a release in ``namespace`` may have made: every object of
    ``kinds`` (listable_kinds) in ``namespace``, and those in the namespaces ``elsewhere`` and the cluster-scoped
    ones whose names contain ``namespace`` (the tests give every release names of its own from its namespace). Only
    metadata is read (one LIST per kind and namespace, sent together); objects being deleted are left out."""
    requests = []
    for res in kinds:
        if res.namespaced:
            requests += [(res, ns) for ns in (namespace,) + tuple(elsewhere)]
        else:
            requests.append((res, None))

    def read(request):
        res, ns = request
        try:
            items = cluster.kube.get_json(resource_path(res, ns), accept=METADATA_LIST).get("items") or []
        except NotFoundError:  # a kind gone since discovery (a CRD deleted by another test)
            return []
        return [(res.group, res.kind, ns or "", item["metadata"]["name"], item["metadata"]) for item in items
                if not item["metadata"].get("deletionTimestamp")
                and (ns == namespace or namespace in item["metadata"]["name"])]

    with ThreadPoolExecutor(max_workers=8) as pool:
        return [found for listed in pool.map(read, requests) for found in listed]


def hook_succeeded_left(cluster, namespace):
    """``Kind/namespace/name`` of every live object of the release in ``namespace`` (live_inventory) whose
    helm.sh/hook-delete-policy says hook-succeeded."""
    return sorted("/".join(part for part in (kind, ns, name) if part)
                  for _group, kind, ns, name, meta in live_inventory(cluster, namespace, listable_kinds(cluster))
                  if "hook-succeeded" in ((meta.get("annotations") or {}).get("helm.sh/hook-delete-policy") or ""))


def apply_result(run, host):
    """manent_apply's result for ``host`` as the run printed it (-v: ``changed: [host] => {...}``)."""
    for line in run.output.splitlines():
        if line.startswith(("changed: [%s]" % host, "ok: [%s]" % host)) and '"stages": [' in line:
            return json.loads(line[line.index("=> {") + 3:])
    raise AssertionError("no result of manent_apply for %s in the output:\n%s" % (host, run.explain()))


def deleted_by_policy(result, policy="succeeded"):
    """The subjects the delete policy ``policy`` deleted, in the order of the change set."""
    return [c["subject"] for c in result["changes"]
            if c["action"] == "deleted" and c.get("reason") == "delete-policy %s" % policy]
