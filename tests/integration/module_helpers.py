# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running the modules as Ansible runs them (the module file, its JSON arguments, its JSON result), the
connection arguments of a test's own release key, the small artifacts and kubeconfigs tests make, and the pinned
helm run against a test cluster."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from tests.helpers import helm_binary

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
MODULES = os.path.join(ROOT, "plugins", "modules")


def run_module(name, tmp_path, **args):
    """Run plugins/modules/<name>.py with ``args`` the way Ansible does; (failed, result)."""
    path = tmp_path / ("%s-args.json" % name)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=COLLECTIONS, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS)
    proc = subprocess.run([sys.executable, os.path.join(MODULES, name + ".py"), str(path)], capture_output=True,
                          text=True, timeout=300, check=False, env=env, cwd=str(tmp_path))
    try:
        result = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError:
        pytest.fail("%s printed no JSON result:\n%s\n%s" % (name, proc.stdout[-3000:], proc.stderr[-3000:]))
    return bool(result.get("failed")), result


def key_of_test(namespace):
    """A release key of this test alone (other tests run at the same time on the same clusters)."""
    return ReleaseKey(application="h-" + namespace, artifact="hostile", environment="test")


def connection(cluster, namespace, tmp_path):
    """The connection and release arguments of a module run for the test's release key in ``namespace``."""
    key = key_of_test(namespace)
    return {"api_server": cluster.url, "token": cluster.token, "ca_file": cluster.ca_file,
            "application": key.application, "artifact_name": key.artifact, "environment": key.environment,
            "namespace": namespace, "work_dir": str(tmp_path / "work")}


def targz(tmp_path, name, members):
    """A .tar.gz in ``tmp_path``; members: (name, bytes) for files, (name, None, linkname) for symlinks."""
    path = tmp_path / name
    with tarfile.open(str(path), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for member in members:
            info = tarfile.TarInfo(member[0])
            info.mode = 0o644
            if member[1] is None:
                info.type, info.linkname = tarfile.SYMTYPE, member[2]
                tar.addfile(info)
            else:
                info.size = len(member[1])
                tar.addfile(info, io.BytesIO(member[1]))
    return str(path)


def packaged_chart(tmp_path, templates, chart_yaml=None, name="hostile"):
    """A packaged chart ``name`` 0.1.0 with ``templates`` ({file name: text}) and empty values."""
    chart_yaml = chart_yaml or "apiVersion: v2\nname: %s\nversion: 0.1.0\n" % name
    members = [("%s/Chart.yaml" % name, chart_yaml.encode()), ("%s/values.yaml" % name, b"{}\n")]
    members += [("%s/templates/%s" % (name, file), text.encode()) for file, text in templates.items()]
    return targz(tmp_path, "%s-0.1.0.tgz" % name, members)


def run_helm(cluster, tmp_path, *args, timeout=300):
    """The pinned helm (tests/helpers.py helm_binary) run with ``args`` against ``cluster`` (a kubeconfig of its
    own, helm's home in ``tmp_path``); the finished process, whatever its exit code."""
    home = tmp_path / "helm-home"
    home.mkdir(exist_ok=True)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": str(home / "cache"),
           "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data")}
    return subprocess.run([helm_binary()] + list(args) + ["--kubeconfig", kubeconfig(cluster, home / "kubeconfig")],
                          env=env, capture_output=True, text=True, timeout=timeout, check=False)


def kubeconfig(cluster, path):
    """A kubeconfig of ``cluster`` (its CA file and token) at ``path``, mode 0600; its path."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": cluster.url, "certificate-authority": cluster.ca_file}}],
        "users": [{"name": "test", "user": {"token": cluster.token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))
    path.chmod(0o600)
    return str(path)
