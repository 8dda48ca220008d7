# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the inventory plugin ``manent.kubernetes.clusters`` makes of the clusters its sources found: host records
(what the inventory and its cache hold: names, groups, paths, never a credential), the private kubeconfig files of
the clusters whose credentials came from a Secret, and the host variables and groups the deploy role reads.

Private files: ``<credentials_dir>/host-<host>.kubeconfig``, 0600, written whole (a temporary file renamed over
the old one) in a directory that is 0700 and owned by the user (one that is a symlink or another user's is
refused, a wider mode is narrowed). Each reading of the sources rewrites the files of the hosts found and removes
those of hosts no longer found."""

from __future__ import annotations

import fnmatch
import os
import re
import tempfile

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

PRIVATE_PREFIX = "host-"
PRIVATE_SUFFIX = ".kubeconfig"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def sanitize(name):
    """A host name from a context or cluster name: characters other than letters, digits, ``_ - .`` become ``_``."""
    text = _UNSAFE.sub("_", str(name or "")).strip(".")
    return text or "_"


def group_name(prefix, value):
    """``region_eu1`` from ``region``, ``eu-1``: lower case, letters and digits only (as the role's docs and
    hack/clusters.py name the groups)."""
    return "%s_%s" % (prefix, "".join(ch for ch in str(value).lower() if ch.isalnum()))


def matches(name, patterns):
    """Whether ``name`` matches one of the glob ``patterns``."""
    return any(fnmatch.fnmatchcase(name, str(pattern)) for pattern in patterns or ())


def check_unique(found):
    """An InputError naming both sources when two clusters have one host name."""
    seen = {}
    for cluster in found:
        other = seen.get(cluster.name)
        if other is not None:
            raise InputError("host %s is found twice: by %s and by %s" % (cluster.name, other.source, cluster.source),
                             subject="manent.kubernetes.clusters",
                             hint="rename one with the source's host_names, or narrow a source's filter")
        seen[cluster.name] = cluster


def records(found, credentials_dir):
    """The host records of ``found`` (FoundCluster), the kubeconfigs read from Secrets written to ``credentials_dir``;
    files of hosts not found any more are removed."""
    out, written = [], set()
    for cluster in found:
        path, context, private = cluster.kubeconfig_path, cluster.context, False
        if cluster.kubeconfig:
            path = write_private(credentials_dir, cluster.name, cluster.kubeconfig)
            context = context or str(cluster.kubeconfig.get("current-context") or "")
            private = True
            written.add(os.path.basename(path))
        out.append({"name": cluster.name, "source": cluster.source, "region": cluster.region or "",
                    "az": cluster.az or "", "kubeconfig": path, "context": context, "private": private,
                    "labels": dict(cluster.labels or {}), "variables": dict(cluster.variables or {})})
    remove_stale(credentials_dir, written)
    return out


def missing_files(host_records):
    """The private kubeconfig paths of cached ``host_records`` that do not exist (any: the sources are read again)."""
    return [record["kubeconfig"] for record in host_records or ()
            if isinstance(record, dict) and record.get("private") and not os.path.isfile(record.get("kubeconfig") or "")]


def host_variables(record, python_interpreter):
    """The host variables of a record: what the role reads to reach the cluster, and the non-secret rest."""
    variables = dict(record.get("variables") or {})
    variables.update({"ansible_connection": "local", "ansible_python_interpreter": python_interpreter,
                      "manent_source": record["source"], "manent_labels": dict(record.get("labels") or {})})
    if record.get("kubeconfig"):
        variables["manent_kubeconfig"] = record["kubeconfig"]
    if record.get("context"):
        variables["manent_context"] = record["context"]
    for key in ("region", "az"):
        if record.get(key):
            variables[key] = record[key]
    return variables


def private_dir(credentials_dir):
    """Create (0700) or check the private directory; returns its absolute path."""
    path = os.path.abspath(os.path.expanduser(credentials_dir))
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if os.path.islink(path) or not os.path.isdir(path):
        raise InputError("credentials_dir %s is not a directory (a symlink is refused)" % path,
                         subject="manent.kubernetes.clusters")
    if info.st_uid != os.getuid():
        raise InputError("credentials_dir %s belongs to another user" % path, subject="manent.kubernetes.clusters",
                         hint="give a directory of your own")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def write_private(credentials_dir, host, kubeconfig):
    """Write ``kubeconfig`` (a mapping) 0600 for ``host``; returns the file's path."""
    import yaml
    directory = private_dir(credentials_dir)
    path = os.path.join(directory, PRIVATE_PREFIX + sanitize(host) + PRIVATE_SUFFIX)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)  # 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.safe_dump(kubeconfig, handle, default_flow_style=False, sort_keys=False)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def remove_stale(credentials_dir, keep):
    """Remove the private kubeconfigs in ``credentials_dir`` whose names are not in ``keep``."""
    directory = os.path.abspath(os.path.expanduser(credentials_dir))
    if not os.path.isdir(directory):
        return
    for name in os.listdir(directory):
        if name.startswith(PRIVATE_PREFIX) and name.endswith(PRIVATE_SUFFIX) and name not in keep:
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass
