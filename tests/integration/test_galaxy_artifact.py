# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Galaxy artifact as a user gets it: ``ansible-galaxy collection build`` from a copy of the checkout that also
holds what a developer's machine leaves there (caches, results, logs, a virtualenv, the local clusters), none of
which may reach the tarball (galaxy.yml build_ignore); ``ansible-galaxy collection install`` into an empty
collections path; then, in a virtualenv made only of requirements.txt and the ansible-core pin of
requirements-dev.txt, from a directory outside the clone, ``ansible-playbook manent.kubernetes.deploy`` (the
installed collection's playbook, by its name) on one local cluster: deploy, deploy again, the same again (nothing
changes), and ``manent.kubernetes.rollback``.

The virtualenv is cached in $MANENT_CACHE (``venv-galaxy-<key>``, the key the sha256 of those pins and the Python
version, as hack/test-matrix.sh keys its own), so a rerun does not install it again."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

from tests.integration.playbook_helpers import RECAP, RECAP_FIELDS, ROOT, SHOP, artifact

pytestmark = pytest.mark.integration

CACHE = os.environ.get("MANENT_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "manent")

# What a developer's checkout holds besides its sources: each must stay out of the tarball. A directory's entry
# stands for everything below it.
JUNK = {
    ".hypothesis/examples/0a1b2c/3d4e5f": "hypothesis example database",
    ".pytest_cache/v/cache/lastfailed": "{}",
    "tests/unit/.pytest_cache/v/cache/nodeids": "[]",
    "tests/.hypothesis/unicode_data/15.0.0/charmap.json.gz": "",
    "plugins/module_utils/__pycache__/deploy.cpython-311.pyc": "",
    "plugins/filter/manent_run.pyc": "",
    ".build/manent-kubernetes-0.0.9.tar.gz": "",
    ".build/collections/ansible_collections/manent/README": "make collection-link",
    ".clusters/eu1a/logs/kube-apiserver.log": "I1204 apiserver log",
    ".clusters/eu1a/admin.token": "a-token-of-a-local-cluster",
    ".prometheus/server/data/wal/00000000": "a Prometheus write-ahead log",
    "hack/tools/bin/etcd": "",
    "bench/results.json": "{}",
    "bench/runs/2099-01-01-local.json": "{}",
    "extensions/molecule/default/.molecule/state.yml": "converged: true",
    ".cache/roles/README": "ansible-lint",
    ".ansible/collections/README": "ansible-compat",
    ".venv/bin/python": "",
    ".mypy_cache/3.11/cache.db": "",
    "changelogs/.plugin-cache.yaml": "objects: {}",
    "tests/output/junit/sanity.xml": "<testsuites/>",
    "pytest.log": "a log",
    "tests/integration/run.log": "a log",
    "manent-kubernetes-0.0.9.tar.gz": "",
}
# Leading parts of JUNK entries that are directories (everything below is left out); the others are files.
JUNK_DIRS = (".hypothesis", ".pytest_cache", "tests/unit/.pytest_cache", "tests/.hypothesis",
             "plugins/module_utils/__pycache__", ".build", ".clusters", ".prometheus", "hack/tools", "bench/runs",
             "extensions/molecule/default/.molecule", ".cache", ".ansible", ".venv", ".mypy_cache", "tests/output")


def _pins():
    """requirements.txt's lines and the ansible-core pin of requirements-dev.txt: the virtualenv a user has."""
    with open(os.path.join(ROOT, "requirements.txt"), encoding="utf-8") as handle:
        runtime = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    with open(os.path.join(ROOT, "requirements-dev.txt"), encoding="utf-8") as handle:
        core = [line.strip() for line in handle if line.startswith("ansible-core==")]
    assert len(core) == 1, "requirements-dev.txt pins ansible-core once"
    return runtime + core


@pytest.fixture(scope="module")
def user_venv():
    """A virtualenv of requirements.txt + the ansible-core pin, made by this Python's version, cached by key."""
    pins = _pins()
    key = hashlib.sha256(("\n".join(pins) + "\n" + sys.version).encode()).hexdigest()[:12]
    venv = os.path.join(CACHE, "venv-galaxy-" + key)
    os.makedirs(CACHE, exist_ok=True)
    with open(venv + ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another pytest worker or checkout may be making it
        if not os.path.exists(os.path.join(venv, ".complete")):
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q",
                            "--disable-pip-version-check"] + pins, check=True, timeout=1200)
            open(os.path.join(venv, ".complete"), "w", encoding="utf-8").close()
    return venv


def _user_env(venv, tmp_path, collections):
    """The environment of a user's shell: that virtualenv first on the PATH, the empty-but-for-the-install
    collections path, nothing of this checkout or of the test session's Ansible settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "PYTHON"))}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(PATH=os.path.join(venv, "bin") + os.pathsep + "/usr/local/bin:/usr/bin:/bin", HOME=str(home),
               ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="False",
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    return env


def _source_copy(tmp_path):
    """The checkout's files (tracked, and untracked ones not ignored, as make sanity copies them) plus JUNK."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    source = tmp_path / "src"
    for name in filter(None, listed):
        if not os.path.isfile(os.path.join(ROOT, name)):
            continue  # deleted in the worktree, not yet in the index
        os.makedirs(source / os.path.dirname(name), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, name), source / name)
    for name, text in JUNK.items():
        os.makedirs(source / os.path.dirname(name), exist_ok=True)
        (source / name).write_text(text)
    return str(source)


def _run(args, env, cwd, timeout=600):
    proc = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_built_collection_installs_alone_and_deploys_from_anywhere(user_venv, cluster, namespace, tmp_path):
    collections = str(tmp_path / "collections")
    os.makedirs(collections)
    env = _user_env(user_venv, tmp_path, collections)
    galaxy = os.path.join(user_venv, "bin", "ansible-galaxy")

    # build: the junk stays out
    dist = str(tmp_path / "dist")
    rc, out = _run([galaxy, "collection", "build", "--output-path", dist, _source_copy(tmp_path)], env, str(tmp_path))
    assert rc == 0, out
    (tarball,) = [os.path.join(dist, name) for name in os.listdir(dist)]
    with tarfile.open(tarball) as tar:
        members = tar.getnames()
    for name in JUNK:
        assert name not in members, "%s is in the artifact" % name
    for directory in JUNK_DIRS:
        inside = [m for m in members if m == directory or m.startswith(directory + "/")]
        assert not inside, "%s is in the artifact: %s" % (directory, inside[:5])
    assert not [m for m in members if m.endswith((".pyc", ".log")) or "/__pycache__" in "/" + m]
    for needed in ("MANIFEST.json", "FILES.json", "plugins/modules/manent_apply.py",
                   "plugins/plugin_utils/stopping.py", "roles/deploy/tasks/main.yml", "playbooks/deploy.yml",
                   "playbooks/rollback.yml", "meta/runtime.yml", "requirements.txt"):
        assert needed in members, "%s is missing from the artifact" % needed

    # install into an empty collections path
    rc, out = _run([galaxy, "collection", "install", "-p", collections, tarball], env, str(tmp_path))
    assert rc == 0, out
    installed = os.path.join(collections, "ansible_collections", "manent", "kubernetes")
    assert os.path.isfile(os.path.join(installed, "MANIFEST.json")) and not os.path.islink(installed)
    assert sorted(os.listdir(os.path.join(collections, "ansible_collections"))) == ["manent"]

    # deploy from a directory outside the clone
    work = tmp_path / "elsewhere"
    work.mkdir()
    hostvars = dict(cluster.hostvars, ansible_python_interpreter=os.path.join(user_venv, "bin", "python"))
    inventory = work / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {cluster.name: hostvars}}}))
    shop = str(work / "shop.yaml")
    shutil.copy(SHOP, shop)

    def playbook(name, version=None, greeting=None):
        variables = {"deploy_application": "shop", "deploy_environment": "test", "deploy_namespace": namespace,
                     "deploy_wait_timeout": "60s", "deploy_cache_dir": str(work / "cache"),
                     "deploy_work_dir": str(work / "work"), "deploy_summary_file": str(work / "summary.json")}
        if version:
            variables.update(deploy_artifact=artifact("shop", version, shop),
                             deploy_variables={"REPLICAS": "1", "GREETING": greeting})
        (work / "vars.json").write_text(json.dumps(variables))
        rc, out = _run([os.path.join(user_venv, "bin", "ansible-playbook"), "-i", str(inventory),
                        "manent.kubernetes." + name, "-e", "@vars.json"], dict(env, PWD=str(work)), str(work))
        assert rc == 0, out[-12000:]
        recap = {m.group(1): dict(zip(RECAP_FIELDS, map(int, m.groups()[1:]))) for m in RECAP.finditer(out)}
        with open(str(work / "summary.json"), encoding="utf-8") as handle:
            (target,) = json.load(handle)["targets"]
        return recap[cluster.name], target

    _recap, first = playbook("deploy", "1.0.0", "hello")
    assert (first["status"], first["version"], first["counts"]) == ("deployed", "1.0.0", {"created": 4}), first
    _recap, second = playbook("deploy", "2.0.0", "hello again")
    assert (second["status"], second["version"], second["previous"]) == ("deployed", "2.0.0", "1.0.0"), second
    recap, same = playbook("deploy", "2.0.0", "hello again")
    assert recap["changed"] == 0 and recap["failed"] == 0, recap
    assert (same["status"], same["counts"]) == ("deployed", {"unchanged": 4}), same
    _recap, back = playbook("rollback")
    assert (back["status"], back["version"], back["previous"]) == ("rolled-back", "1.0.0", "2.0.0"), back
    assert cluster.get("v1", "ConfigMap", namespace, "shop-config")["data"]["greeting"] == "hello"
