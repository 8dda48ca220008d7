# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubeconfig source of the inventory plugin ``manent.kubernetes.clusters``: one cluster per context of a
kubeconfig file (those matching ``contexts``, minus ``exclude_contexts``), referenced by the file's path and the
context's name, never copied.

Region and AZ, each from the first that gives it: the ``topology`` mapping (context -> region/az), the named groups
``region``/``az`` of ``context_pattern`` searched in the context name, the extension ``topology_extension`` (default
``manent.io/topology``) of the context, then of its cluster. Host name: ``host_names`` (context -> name), else the
context name sanitised (inventory_hosts.sanitize). The file is only parsed here; its credentials are read when a task
reaches the cluster (module_utils/base/kubeconfig.py)."""

from __future__ import annotations

import os
import re

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.plugin_utils.inventory_found import FoundCluster
from ansible_collections.manent.kubernetes.plugins.plugin_utils.inventory_hosts import matches, sanitize
from ansible_collections.manent.kubernetes.plugins.plugin_utils.inventory_management import default_kubeconfig

OPTIONS = ("path", "contexts", "exclude_contexts", "topology", "context_pattern", "topology_extension", "host_names")
DEFAULT_EXTENSION = "manent.io/topology"


def discover(spec, base_dir, label="kubeconfig"):
    """The FoundClusters of the kubeconfig ``spec`` (the source's options); ``base_dir`` resolves a relative path."""
    unknown = sorted(set(spec) - set(OPTIONS))
    if unknown:
        raise InputError("%s.kubeconfig: unknown option(s) %s" % (label, ", ".join(unknown)), subject="kubeconfig",
                         hint="one of: %s" % ", ".join(OPTIONS))
    path = resolve_path(spec.get("path"), base_dir)
    source = "kubeconfig %s" % path
    doc = read(path)
    pattern = compile_pattern(spec.get("context_pattern"), label)
    topology = _mapping(spec.get("topology"), label, "topology")
    names = _mapping(spec.get("host_names"), label, "host_names")
    extension = str(spec.get("topology_extension") or DEFAULT_EXTENSION)
    clusters = {str(item.get("name")): item.get("cluster") or {} for item in doc.get("clusters") or ()
                if isinstance(item, dict)}
    out = []
    for item in doc.get("contexts") or ():
        if not isinstance(item, dict) or not item.get("name"):
            continue
        context = str(item["name"])
        if spec.get("contexts") and not matches(context, spec["contexts"]):
            continue
        if matches(context, spec.get("exclude_contexts")):
            continue
        entry = item.get("context") or {}
        cluster = clusters.get(str(entry.get("cluster") or "")) or {}
        region, az = topology_of(context, topology.get(context), pattern, (entry, cluster), extension)
        out.append(FoundCluster(name=str(names.get(context) or sanitize(context)), source=source, region=region,
                                az=az, context=context, kubeconfig_path=path,
                                labels=_extension_labels(entry, cluster, extension),
                                variables={"manent_cluster_server": str(cluster.get("server") or "")}))
    if not out:
        present = [str(item.get("name")) for item in doc.get("contexts") or () if isinstance(item, dict)]
        raise InputError("%s.kubeconfig: no context of %s matches" % (label, path), subject="kubeconfig",
                         hint="contexts in it: %s" % (", ".join(present) or "(none)"))
    return out


def resolve_path(value, base_dir):
    """The absolute path of the kubeconfig (``~`` expanded, relative to ``base_dir``; default as kubectl's)."""
    path = os.path.expanduser(str(value or default_kubeconfig()))
    if not os.path.isabs(path):
        path = os.path.join(base_dir, path)
    return os.path.normpath(path)


def read(path):
    import yaml
    try:
        with open(path, "r", encoding="utf-8") as handle:
            doc = yaml.safe_load(handle)
    except OSError as exc:
        raise InputError("cannot read kubeconfig %s: %s" % (path, exc.strerror), subject="kubeconfig") from None
    except yaml.YAMLError:
        raise InputError("kubeconfig %s is not valid YAML" % path, subject="kubeconfig") from None
    if not isinstance(doc, dict):
        raise InputError("kubeconfig %s is not a kubeconfig (a mapping with clusters, users and contexts)" % path,
                         subject="kubeconfig")
    return doc


def compile_pattern(text, label):
    if not text:
        return None
    try:
        pattern = re.compile(str(text))
    except re.error as exc:
        raise InputError("%s.kubeconfig.context_pattern is not a regular expression: %s" % (label, exc),
                         subject="kubeconfig") from None
    if not {"region", "az"} & set(pattern.groupindex):
        raise InputError("%s.kubeconfig.context_pattern has no named group region or az" % label, subject="kubeconfig",
                         hint="e.g. '^eks-(?P<region>[a-z]+-[0-9])-(?P<az>.*)$'")
    return pattern


def topology_of(context, mapped, pattern, entries, extension):
    """(region, az) of a context: the mapping, the pattern, then the extension of the context, then of its cluster."""
    candidates = [mapped if isinstance(mapped, dict) else {}]
    match = pattern.search(context) if pattern is not None else None
    candidates.append(match.groupdict() if match else {})
    candidates.extend(_extension(entry, extension) for entry in entries)
    region = next((str(c["region"]) for c in candidates if c.get("region")), "")
    az = next((str(c["az"]) for c in candidates if c.get("az")), "")
    return region, az


def _extension(entry, name):
    for item in (entry or {}).get("extensions") or ():
        if isinstance(item, dict) and item.get("name") == name and isinstance(item.get("extension"), dict):
            return item["extension"]
    return {}


def _extension_labels(entry, cluster, name):
    """The non-topology keys of the topology extension (context over cluster), for compose and keyed_groups."""
    labels = {}
    for source in (cluster, entry):
        labels.update({str(k): v for k, v in _extension(source, name).items()
                       if k not in ("region", "az") and isinstance(v, (str, int, float, bool))})
    return labels


def _mapping(value, label, name):
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise InputError("%s.kubeconfig.%s must be a mapping" % (label, name), subject="kubeconfig")
    return value
