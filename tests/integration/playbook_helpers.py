# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the collection's playbooks with ``ansible-playbook`` (a real subprocess, from the repository root so
its ansible.cfg applies) and read what they leave behind: the PLAY RECAP, the summary file and the state of
the namespace in each cluster."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOKS = os.path.join(ROOT, "playbooks")
SHOP = os.path.join(ROOT, "examples", "artifacts", "shop.yaml")
SHOP_SECRET = "not-a-real-key-but-still-secret"  # stringData of the Secret in examples/artifacts/shop.yaml
PAUSE = "registry.k8s.io/pause:3.10"

RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)"
                   r"\s+rescued=(\d+)\s+ignored=(\d+)", re.MULTILINE)
RECAP_FIELDS = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
ROLE_TASK = re.compile(r"^TASK \[manent\.kubernetes\.deploy : (.*?)\] \*+$", re.MULTILINE)
HOST_OUTCOMES = ("ok", "changed", "skipping", "fatal", "included")
# What a namespace holds after a deploy of the samples: compared by resourceVersion to prove "no change".
WATCHED = (("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "Service"), ("apps/v1", "Deployment"))


@dataclass
class Run:
    """One finished ansible-playbook run."""

    args: list
    rc: int
    output: str
    summary_file: str

    @property
    def recap(self):
        """{host: {ok, changed, unreachable, failed, skipped, rescued, ignored}} from the PLAY RECAP."""
        return {m.group(1): dict(zip(RECAP_FIELDS, map(int, m.groups()[1:]))) for m in RECAP.finditer(self.output)}

    @property
    def summary(self):
        """The per-cluster summary the role wrote (deploy_summary_file) as {host: target}, {} when it wrote none."""
        return {target["host"]: target for target in self.result.get("targets", [])}

    @property
    def result(self):
        """The summary file as written: docs/requirements.md §11's {"plugin": "kubernetes", "operation", "targets": [...]}."""
        if not os.path.exists(self.summary_file):
            return {}
        with open(self.summary_file, encoding="utf-8") as handle:
            return json.load(handle)

    @property
    def tasks(self):
        """The names of the deploy role's tasks in the output, in the order they ran (a loop's task once)."""
        return ROLE_TASK.findall(self.output)

    def task_hosts(self, outcomes=HOST_OUTCOMES):
        """{task: [host, ...]} of the deploy role's tasks: the hosts whose line under the task shows one of
        ``outcomes``, once per run of the task (a delegation's ``-> host`` left out)."""
        line = re.compile(r"^(?:%s): \[([^\]]+?)(?: -> [^\]]+)?\]" % "|".join(outcomes), re.MULTILINE)
        parts, out = ROLE_TASK.split(self.output), {}
        for index in range(1, len(parts), 2):
            out.setdefault(parts[index], []).extend(line.findall(parts[index + 1].split("\nTASK [")[0]))
        return out

    def explain(self):
        return "ansible-playbook %s -> rc=%d\n%s" % (" ".join(self.args), self.rc, self.output[-12000:])


def sha256(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def artifact(name, version, path, **extra):
    """The artifact descriptor of a local file (docs/requirements.md §1)."""
    out = {"type": "kubernetes", "name": name, "version": version, "source": path, "sha256": sha256(path)}
    out.update(extra)
    return out


def write_manifest(path, objects):
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump_all(objects, handle, sort_keys=False)
    return path


def app_objects(version, secret, replicas=1, never_ready=False):
    """An application "shop" at ``version``: a ConfigMap, a Secret holding ``secret``, a Service and a Deployment
    whose pods never become ready with ``never_ready`` (its rollout waits until the run is stopped)."""
    annotations = {"release": version}
    if never_ready:
        annotations["manent.test/never-ready"] = "true"
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-config"}, "data": {"version": version}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shop-credentials"}, "type": "Opaque",
         "stringData": {"api-key": secret}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop"},
         "spec": {"selector": {"app": "shop"}, "ports": [{"port": 8080}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop"},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "shop"}},
                  "template": {"metadata": {"labels": {"app": "shop"}, "annotations": annotations},
                               "spec": {"containers": [{"name": "app", "image": PAUSE}]}}}},
    ]


def base_vars(tmp_path, namespace, **overrides):
    """Role variables every test run shares: a fresh cache/work dir, all clusters of a wave at once and a
    summary file."""
    out = {
        "deploy_namespace": namespace,
        "deploy_environment": "test",
        "deploy_wait_timeout": "60s",
        "deploy_parallel": 3,
        "deploy_cache_dir": str(tmp_path / "cache"),
        "deploy_work_dir": str(tmp_path / "work"),
        "deploy_summary_file": str(tmp_path / "summary.json"),
    }
    out.update(overrides)
    return out


def shop_vars(tmp_path, namespace, version, greeting, replicas="2", **overrides):
    return base_vars(tmp_path, namespace, deploy_application="shop",
                     deploy_artifact=artifact("shop", version, SHOP),
                     deploy_variables={"REPLICAS": replicas, "GREETING": greeting}, **overrides)


def traffic_objects(version):
    """The shop Service and Deployment a traffic release deploys into slots a/b."""
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shop"},
         "spec": {"selector": {"app": "shop"}, "ports": [{"port": 8080}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop"},
         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "shop"}},
                  "template": {"metadata": {"labels": {"app": "shop"}, "annotations": {"release": version}},
                               "spec": {"containers": [{"name": "app", "image": PAUSE}]}}}},
    ]


def traffic_vars(tmp_path, namespace, version, **extra):
    """Role variables of a traffic release of shop: route and service ``shop``, proportional replicas, no delays,
    the testers' header ``x-canary: always``."""
    path = write_manifest(str(tmp_path / ("shop-%s.yaml" % version)), traffic_objects(version))
    return base_vars(tmp_path, namespace, deploy_application="shop", deploy_artifact=artifact("shop", version, path),
                     deploy_strategy="traffic", deploy_traffic_route="shop", deploy_traffic_service="shop",
                     deploy_traffic_replicas="proportional", deploy_traffic_settle_delay="0s",
                     deploy_traffic_scale_down_delay="0s", deploy_traffic_accept_timeout="30s",
                     deploy_traffic_testers_header={"name": "x-canary", "value": "always"}, **extra)


def run_playbook(name, inventory, extra_vars, tmp_path, limit=None, check=False, diff=False, verbosity=0,
                 env=None, timeout=600):
    """Run playbooks/<name>.yml; extra variables go through a JSON file (-e @file), like Tower's extra vars."""
    args, run_env, summary = _command(name, inventory, extra_vars, tmp_path, limit, check, diff, verbosity, env)
    proc = subprocess.run(args, cwd=ROOT, env=run_env, capture_output=True, text=True, timeout=timeout, check=False)
    return Run(args=args[1:], rc=proc.returncode, output=proc.stdout + proc.stderr, summary_file=summary)


def start_playbook(name, inventory, extra_vars, tmp_path, log, limit=None, env=None):
    """Start playbooks/<name>.yml as run_playbook does, in a process group of its own (as a CI job or a terminal
    starts it), its output going to the file ``log``; the Popen."""
    args, run_env, _summary = _command(name, inventory, extra_vars, tmp_path, limit, False, False, 0, env)
    with open(log, "wb") as handle:
        return subprocess.Popen(args, cwd=ROOT, env=run_env, stdout=handle, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def _command(name, inventory, extra_vars, tmp_path, limit, check, diff, verbosity, env):
    """(ansible-playbook command, its environment, the summary file) of a run of playbooks/<name>.yml."""
    os.makedirs(str(tmp_path), exist_ok=True)
    summary = extra_vars.get("deploy_summary_file") or str(tmp_path / "summary.json")
    if os.path.exists(summary):
        os.unlink(summary)
    vars_file = str(tmp_path / "extra-vars.json")
    with open(vars_file, "w", encoding="utf-8") as handle:
        json.dump(extra_vars, handle)
    args = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
            os.path.join(PLAYBOOKS, name + ".yml"), "-e", "@" + vars_file]
    if limit:
        args += ["-l", limit]
    if check:
        args.append("--check")
    if diff:
        args.append("--diff")
    if verbosity:
        args.append("-" + "v" * verbosity)
    run_env = dict(os.environ)
    run_env.update({"ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "PYTHONUNBUFFERED": "1",
                    "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, ".build", "collections")})
    run_env.update(env or {})
    return args, run_env, summary


class Vaulted(str):
    """An Ansible Vault ciphertext, written to YAML as a ``!vault |`` scalar."""


def _represent_vaulted(dumper, value):
    return dumper.represent_scalar("!vault", str(value), style="|")


class _InventoryDumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
    pass


_InventoryDumper.add_representer(Vaulted, _represent_vaulted)


def vault_encrypt(value, password):
    """``value`` encrypted like ``ansible-vault encrypt_string`` does."""
    from ansible.parsing.vault import VaultLib, VaultSecret  # pylint: disable=import-outside-toplevel
    return Vaulted(VaultLib([("default", VaultSecret(password.encode()))]).encrypt(value).decode())


def write_inventory(clusters_inventory, path, group_vars=None, host_vars=None):
    """A copy of the clusters' inventory with extra group variables ({group: {var: value}}) and host variables
    ({host: {var: value}}; Vaulted values become ``!vault`` strings)."""
    with open(clusters_inventory, encoding="utf-8") as handle:
        inventory = yaml.safe_load(handle)
    for group, values in (group_vars or {}).items():
        target = inventory["all"] if group == "all" else inventory["all"]["children"][group]
        target.setdefault("vars", {}).update(values)
    for host, values in (host_vars or {}).items():
        inventory["all"]["hosts"][host].update(values)
    with open(path, "w", encoding="utf-8") as handle:
        yaml.dump(inventory, handle, Dumper=_InventoryDumper, sort_keys=False)
    return path


# --------------------------------------------------------------------------- cluster state


def resource_versions(cluster, namespace, kinds=WATCHED):
    """{Kind/name: resourceVersion} of everything the samples and the history put in ``namespace`` (``kinds``:
    (apiVersion, kind) pairs to read)."""
    out = {}
    for api_version, kind in kinds:
        for obj in cluster.list(api_version, kind, namespace):
            name = obj["metadata"]["name"]
            if kind == "ConfigMap" and name == "kube-root-ca.crt":
                continue
            if kind == "Secret" and obj.get("type") == "kubernetes.io/service-account-token":
                continue
            out["%s/%s" % (kind, name)] = obj["metadata"]["resourceVersion"]
    return out


def labelled_history(cluster, namespace, application):
    """The history ConfigMaps of ``application`` in ``namespace``, found by their labels."""
    selector = "app.kubernetes.io/managed-by=manent,manent.io/application=%s" % application
    return [cm for cm in cluster.list("v1", "ConfigMap", namespace, selector=selector)
            if "manent.io/history" in (cm["metadata"].get("labels") or {})]


def deployment_ready(cluster, namespace, name):
    dep = cluster.get("apps/v1", "Deployment", namespace, name)
    if dep is None:
        return False
    want = dep["spec"].get("replicas", 1)
    status = dep.get("status") or {}
    return (status.get("observedGeneration") == dep["metadata"]["generation"] and
            status.get("updatedReplicas", 0) == want and status.get("readyReplicas", 0) == want and
            status.get("availableReplicas", 0) == want)


def secret_values(clusters):
    """Every value that must never appear in output: the clusters' tokens and the sample Secret's value (plain
    and base64)."""
    values = [c.token for c in clusters if c.token]
    values += [SHOP_SECRET, base64.b64encode(SHOP_SECRET.encode()).decode()]
    return values


def run_history_module(cluster, namespace, key, check=False, timeout=300, **args):
    """One run of the manent_history module through ``ansible`` (ad hoc, local connection, the cluster's admin
    token file and CA) for release ``key`` in ``namespace``; its result."""
    params = dict(api_server=cluster.url, token="file:" + os.path.join(cluster.dir, "admin.token"),
                  ca_file=cluster.ca_file, application=key.application, environment=key.environment,
                  namespace=namespace, **args)
    return run_adhoc("manent_history", params, ["--check"] if check else [], timeout=timeout)


def run_adhoc(module, params, options=(), timeout=300):
    """One ad hoc run of ``manent.kubernetes.<module>`` on localhost (local connection) with ``params`` and more
    ``ansible`` command-line ``options`` (``--check``, ``-B 60 -P 1`` for async); its result."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0")
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-c", "local", "-o",
           "-m", "manent.kubernetes." + module, "-a", json.dumps(params)] + list(options)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=timeout)
    lines = [line for line in out.stdout.splitlines() if line.startswith("localhost | ")]
    assert len(lines) == 1, out.stdout + out.stderr
    return json.loads(lines[0].split(" => ", 1)[1])
