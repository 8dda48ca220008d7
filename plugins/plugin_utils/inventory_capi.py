# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Cluster API source of the inventory plugin ``manent.kubernetes.clusters``: the ``Cluster`` objects
(cluster.x-k8s.io) of a management cluster, one host each.

A cluster becomes a host when it is provisioned and its control plane is ready (:func:`readiness`, which reads
both served shapes: v1beta2 ``status.initialization`` with the ``ControlPlaneAvailable`` condition, v1beta1
``status.infrastructureReady``/``controlPlaneReady`` with the ``ControlPlaneReady`` condition). Its credentials are
the kubeconfig that Cluster API keeps in the Secret ``<name>-kubeconfig`` (key ``value``) of the Cluster's
namespace: handed over as ``FoundCluster.kubeconfig``, which the plugin writes 0600. A cluster left out carries the
reason in ``skipped``; no message holds anything read from the Secret."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import concurrently
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ApiError, DiscoveryError, InputError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.pages import list_items
from ansible_collections.manent.kubernetes.plugins.plugin_utils.inventory_found import FoundCluster
from ansible_collections.manent.kubernetes.plugins.plugin_utils.inventory_hosts import sanitize

GROUP = "cluster.x-k8s.io"
KNOWN_VERSIONS = ("v1beta2", "v1beta1")  # the shapes readiness() reads
SECRET_KEY = "value"  # the key of <name>-kubeconfig that holds the whole kubeconfig (Cluster API's contract)
REGION_LABEL = "topology.kubernetes.io/region"
AZ_LABEL = "topology.kubernetes.io/zone"
OPTIONS = ("management", "namespaces", "label_selector", "region_label", "az_label", "prefix_namespace")
SECRET_READS = 16  # kubeconfig Secrets read at once


@dataclass
class CapiOptions:
    """The ``cluster_api`` suboptions this module reads (``management`` is the plugin's: it connects)."""

    namespaces: tuple = ()  # empty: every namespace
    label_selector: str = ""
    region_label: str = REGION_LABEL
    az_label: str = AZ_LABEL
    prefix_namespace: bool = False  # host name <namespace>.<name> instead of <name>


def capi_options(item, label="source"):
    """The :class:`CapiOptions` of a source item (``{cluster_api: {...}}`` or the ``cluster_api`` mapping);
    ``label`` names the source in messages (``sources[2]``)."""
    spec = item.get("cluster_api", item) if isinstance(item, dict) else item
    where = label + ".cluster_api"
    if not isinstance(spec, dict):
        raise InputError("%s: not a mapping" % where)
    unknown = sorted(set(spec) - set(OPTIONS))
    if unknown:
        raise InputError("%s: unknown option(s) %s" % (where, ", ".join(unknown)),
                         hint="one of: %s" % ", ".join(OPTIONS))
    namespaces = spec.get("namespaces") or ()
    if isinstance(namespaces, str):
        namespaces = (namespaces,)
    if not isinstance(namespaces, (list, tuple)) or not all(isinstance(n, str) and n for n in namespaces):
        raise InputError("%s: namespaces is not a list of names" % where)
    prefix = spec.get("prefix_namespace", False)
    if not isinstance(prefix, bool):
        prefix = str(prefix).strip().lower() in ("yes", "true", "on", "1", "y")
    return CapiOptions(namespaces=tuple(dict.fromkeys(namespaces)), label_selector=str(spec.get("label_selector") or ""),
                       region_label=str(spec.get("region_label") or REGION_LABEL),
                       az_label=str(spec.get("az_label") or AZ_LABEL), prefix_namespace=prefix)


def served_version(kube, label="source"):
    """The ``cluster.x-k8s.io/<version>`` the API server prefers, among the versions whose shape we read."""
    try:
        group = kube.request("GET", "/apis/" + GROUP, subject="apis/" + GROUP).data or {}
    except NotFoundError:
        raise DiscoveryError("%s.cluster_api: the management cluster does not serve %s (no Cluster API there)"
                             % (label, GROUP),
                             hint="point management at the cluster where Cluster API runs (clusterctl init)") from None
    served = [v.get("groupVersion") for v in group.get("versions") or []]
    preferred = (group.get("preferredVersion") or {}).get("groupVersion")
    for candidate in [preferred] + served:
        if candidate and candidate.split("/")[-1] in KNOWN_VERSIONS:
            return candidate
    raise DiscoveryError("%s.cluster_api: %s serves %s, none of %s"
                         % (label, GROUP, ", ".join(filter(None, served)) or "nothing", ", ".join(KNOWN_VERSIONS)))


def _true(conditions, kind):
    """The status of condition ``kind`` ("True", "False", "Unknown"), "" when absent."""
    for cond in conditions or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return str(cond.get("status") or "Unknown")
    return ""


def _condition(conditions, kind):
    for cond in conditions or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return {}


def readiness(obj):
    """Why the Cluster ``obj`` is not ready to deploy to ("" when it is): deleted, not Provisioned, infrastructure
    not provisioned, control plane not initialized, or its control plane condition not True. Reads the v1beta2
    and the v1beta1 shape, whichever the object has (each version also carries the other's conditions)."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    if meta.get("deletionTimestamp"):
        return "being deleted"
    phase = status.get("phase") or ""
    if phase != "Provisioned":
        why = status.get("failureMessage") or ((status.get("deprecated") or {}).get("v1beta1") or {}).get("failureMessage")
        return "phase %s, not Provisioned%s" % (phase or "not set", " (%s)" % _cut(why) if why else "")
    init = status.get("initialization") or {}
    v1beta1 = (status.get("deprecated") or {}).get("v1beta1") or {}
    infra = init.get("infrastructureProvisioned", status.get("infrastructureReady"))
    if infra is not True:
        return "infrastructure not provisioned"
    initialized = init.get("controlPlaneInitialized", status.get("controlPlaneReady"))
    if initialized is not True:
        return "control plane not initialized"
    # The initialization flags never change once set: the conditions tell whether the control plane is up now.
    if str(obj.get("apiVersion") or "").endswith("/v1beta1"):
        v2_conditions, v1_conditions = (status.get("v1beta2") or {}).get("conditions"), status.get("conditions")
    else:
        v2_conditions, v1_conditions = status.get("conditions"), v1beta1.get("conditions")
    for conditions, kind in ((v2_conditions, "ControlPlaneAvailable"), (v1_conditions, "ControlPlaneReady")):
        state = _true(conditions, kind)
        if state and state != "True":
            cond = _condition(conditions, kind)
            detail = cond.get("reason") or ""
            if cond.get("message"):
                detail += (": " if detail else "") + _cut(cond["message"])
            return "control plane not ready (%s %s%s)" % (kind, state, ", " + detail if detail else "")
    return ""


def _cut(text, limit=200):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def list_clusters(kube, api_version, opts, label="source"):
    """The Cluster objects of ``opts.namespaces`` (every namespace when empty) matching ``opts.label_selector``."""
    query = {"labelSelector": opts.label_selector or None}
    base = "/apis/" + api_version
    paths = ["%s/namespaces/%s/clusters" % (base, ns) for ns in opts.namespaces] or [base + "/clusters"]
    out = []
    for path in paths:
        try:
            out.extend(list_items(kube, path, query=query, subject="Cluster"))
        except ApiError as err:
            if err.status != 403:
                raise
            where = "namespace " + path.split("/")[-2] if opts.namespaces else "all namespaces"
            raise ApiError("%s.cluster_api: the management cluster's credentials may not list Clusters in %s"
                           % (label, where), status=403, reason="Forbidden",
                           hint="grant list on clusters.cluster.x-k8s.io there%s"
                                % ("" if opts.namespaces else ", or give namespaces")) from None
    return out


def read_kubeconfig(kube, namespace, name):
    """``(kubeconfig, context, reason)`` from the Secret ``<name>-kubeconfig``: the parsed kubeconfig and the
    context to use, or ``({}, "", why not)``. The reason never quotes the Secret's content."""
    import yaml  # pylint: disable=import-outside-toplevel

    secret = "%s/%s-kubeconfig" % (namespace, name)
    try:
        data = kube.request("GET", "/api/v1/namespaces/%s/secrets/%s-kubeconfig" % (namespace, name),
                            subject="Secret/" + secret).data or {}
    except NotFoundError:
        return {}, "", "no Secret %s (Cluster API writes it once the control plane is up)" % secret
    except ApiError as err:
        return {}, "", "Secret %s not readable (%s %s)" % (secret, err.status or "", err.reason or "error")
    raw = (data.get("data") or {}).get(SECRET_KEY)
    if not raw:
        return {}, "", "Secret %s has no key %s" % (secret, SECRET_KEY)
    try:
        config = yaml.safe_load(base64.b64decode(raw, validate=True).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, yaml.YAMLError):
        return {}, "", "Secret %s: key %s is not a kubeconfig (not YAML)" % (secret, SECRET_KEY)
    if not isinstance(config, dict) or not isinstance(config.get("contexts"), list) or not config["contexts"]:
        return {}, "", "Secret %s: key %s is not a kubeconfig (no contexts)" % (secret, SECRET_KEY)
    names = [c.get("name") for c in config["contexts"] if isinstance(c, dict) and c.get("name")]
    context = config.get("current-context") or ""
    if context not in names:
        if len(names) != 1 and "%s-admin@%s" % (name, name) not in names:
            return {}, "", "Secret %s: its kubeconfig has %d contexts and no current-context" % (secret, len(names))
        context = names[0] if len(names) == 1 else "%s-admin@%s" % (name, name)
    return config, context, ""


def _server(config, context):
    """The server URL of ``context`` in ``config`` (not a secret: for the host's variables)."""
    ctx = next((c.get("context") or {} for c in config.get("contexts") or [] if c.get("name") == context), {})
    cluster = next((c.get("cluster") or {} for c in config.get("clusters") or []
                    if isinstance(c, dict) and c.get("name") == ctx.get("cluster")), {})
    return str(cluster.get("server") or "")


def discover(kube, item, label="source"):
    """The clusters of the management cluster ``kube`` for the source ``item``: one :class:`FoundCluster` per
    Cluster object (``skipped`` set for those not ready or without a usable kubeconfig Secret)."""
    opts = capi_options(item, label)
    api_version = served_version(kube, label)
    clusters = sorted(list_clusters(kube, api_version, opts, label),
                      key=lambda o: ((o.get("metadata") or {}).get("namespace") or "", (o.get("metadata") or {}).get("name")))
    _check_names(clusters, opts, label)

    def found(obj):
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name") or ""
        labels = dict(meta.get("labels") or {})
        spec = obj.get("spec") or {}
        topology = spec.get("topology") or {}
        cluster_class = topology.get("classRef", {}).get("name") if isinstance(topology.get("classRef"), dict) \
            else topology.get("class")
        result = FoundCluster(
            name=sanitize("%s.%s" % (namespace, name) if opts.prefix_namespace else name),
            source="Cluster API %s namespace %s" % (getattr(kube, "url", ""), namespace),
            region=str(labels.get(opts.region_label) or ""), az=str(labels.get(opts.az_label) or ""), labels=labels,
            variables={"manent_capi": {"namespace": namespace, "name": name, "api_version": api_version,
                                       "phase": (obj.get("status") or {}).get("phase") or "",
                                       "version": topology.get("version") or "", "cluster_class": cluster_class or ""}})
        result.skipped = readiness(obj)
        if result.skipped:
            return result
        config, context, reason = read_kubeconfig(kube, namespace, name)
        if reason:
            result.skipped = reason
            return result
        result.kubeconfig, result.context = config, context
        result.variables["manent_cluster_server"] = _server(config, context)
        return result

    return concurrently(found, clusters, SECRET_READS)


def _check_names(clusters, opts, label):
    """Two Clusters of one name in different namespaces make one host name unless ``prefix_namespace`` is set."""
    if opts.prefix_namespace:
        return
    seen = {}
    for obj in clusters:
        meta = obj.get("metadata") or {}
        seen.setdefault(meta.get("name"), []).append(meta.get("namespace") or "")
    twice = sorted((name, namespaces) for name, namespaces in seen.items() if len(namespaces) > 1)
    if twice:
        name, namespaces = twice[0]
        raise InputError("%s.cluster_api: Cluster %s exists in namespaces %s: its host name would not be unique"
                         % (label, name, ", ".join(namespaces)),
                         hint="set prefix_namespace: true (hosts <namespace>.<name>), or narrow namespaces or "
                              "label_selector")
