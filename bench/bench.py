# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make bench: manent against kubectl, Helm 3, Helm 4 and kubernetes.core's k8s module, side by side in one run.

    python bench/bench.py run    [--sizes 30,300,3000] [--runs 3] [--tools ...] [--no-remote] [--out .build/bench]
                                 [--inventory DIR/inventory.yml] [--cap 30=60,300=150,3000=300]
                                 [--size-scenarios 3000=install,noop] [--budget-minutes 60] [--proxy-base-port P]
    python bench/bench.py report [--out .build/bench] [--results bench/results.json]
                                 # BENCHMARKS.md and docs/bench.png from the raw results

Run it with the bench virtualenv (bench/requirements.txt; `make bench` builds it). Every tool deploys the
same objects (bench/gen.py; for Helm the chart bench/chart/manent-bench, packaged with the pinned helm at
bench time; manent-chart is the role deploying that same packaged chart, rendered by the pinned helm 3) into its
own fresh namespace of one local cluster, in this order of scenarios:

    install   first install                         (waits off where the tool allows it)
    noop      the same release again: nothing changed
    image     the image of one Deployment changed
    prune     the last 10 % of the objects removed  (kubectl: ApplySet prune; k8s: a state=absent task)
    rollback  back to the release before the prune  (kubectl, k8s: re-apply the old file; helm rollback;
                                                     manent: history rollback)
    check     check mode / server dry run of another image change

then, in a second fresh namespace, `install+wait`: the first install with the tool's own rollout wait.
Each (tool, size) sequence runs --runs times; BENCHMARKS.md shows medians. The remote section puts a
50 ms-per-round-trip delay proxy (hack/tcpproxy.py, loopback) in front of each API server.
Clusters: the running local clusters (.clusters/inventory.yml), started with hack/clusters.py up when
none run (and then stopped at the end: the bench never stops clusters it did not start), or the clusters of
--inventory (e.g. a dedicated set from `hack/clusters.py up --dir /tmp/bench-cl --base-port 19900`).
When the largest size's pods do not fit the kwok nodes, kwok nodes are added (and removed at the end).

Time: --cap stops a command that runs longer (its cell shows "> N s (capped)" and is not tried again in later
runs or at larger sizes), --budget-minutes stops starting cells, --size-scenarios narrows a size's scenarios.
Every such deviation from "every cell, median of --runs runs" is written in BENCHMARKS.md's Notes by report.py.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "hack"))
import pki  # noqa: E402  pylint: disable=wrong-import-position,import-error
import gen  # noqa: E402  pylint: disable=wrong-import-position
from clusters import cache_dir, versions as versions_env  # noqa: E402  pylint: disable=wrong-import-position,import-error

CONTROLLER_QPS = 200  # client QPS of the controller-manager and scheduler of clusters the bench starts itself
SETTLE_TIMEOUT = 180  # seconds a cell waits for the cluster to settle after the previous one (Cluster.settle)
SCENARIOS = ("install", "noop", "image", "prune", "rollback", "check", "install+wait")
SCENARIO_TITLES = {"install": "first install", "noop": "nothing changed", "image": "one image changed",
                   "prune": "10 % removed (prune)", "rollback": "rollback", "check": "check mode (dry run)",
                   "install+wait": "first install + rollout wait"}
TOOLS = ("manent-role", "manent-modules", "manent-chart", "kubectl", "helm3", "helm4", "k8s")
# run through ansible-playbook: they pay Ansible's floor
ANSIBLE_TOOLS = ("manent-role", "manent-modules", "manent-chart", "k8s")
TOOL_TITLES = {"manent-role": "manent, role (ansible-playbook playbooks/deploy.yml)",
               "manent-modules": "manent, modules (render + apply playbook)",
               "manent-apply": "manent apply task alone (from the modules playbook)",
               "manent-chart": "manent, role, Helm's packaged chart (rendered by helm template)",
               "kubectl": "kubectl apply --server-side (ApplySet prune)",
               "helm3": "helm 3 upgrade --install",
               "helm4": "helm 4 upgrade --install",
               "k8s": "kubernetes.core k8s module (ansible-playbook)"}
IMAGE_CHANGED = "registry.k8s.io/pause:3.9"
IMAGE_CHECK = "registry.k8s.io/pause:3.8"
RELEASE = "bench"
KEPT = os.path.join(HERE, "results.json")  # the raw results of the committed BENCHMARKS.md (report.py --keep)
CMD_TIMEOUT = 600
PODS_PER_NODE = 110


def write_results(meta, results, path, indent=1):
    """Write raw results ``{"meta", "results"}`` to ``path`` whole or not at all (a run stopped midway leaves the
    previous file): the results file of a run, and the kept results of BENCHMARKS.md (report.keep)."""
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump({"meta": meta, "results": results}, handle, indent=indent)
        handle.write("\n")
    os.replace(path + ".tmp", path)


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- clusters


class Cluster:
    """One API server of the local clusters' inventory (admin token, loopback)."""

    def __init__(self, name, hostvars):
        self.name = name
        self.vars = dict(hostvars)
        self.url = hostvars["manent_api_server"]
        self.ca_file = hostvars["manent_ca_file"]
        token = hostvars["manent_token"]
        self.token_file = token[len("file:"):] if token.startswith("file:") else None
        if self.token_file:
            with open(self.token_file, encoding="utf-8") as handle:
                self.token = handle.read().strip()
        else:
            self.token = token
        self._ctx = pki.client_context(self.ca_file)
        self.pids = {}  # control-plane component -> pid (load_clusters, from state.json)
        self.controller_qps = None  # hack/clusters.py --controller-qps (state.json); None: the components' defaults

    def request(self, method, path, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, context=self._ctx, timeout=timeout) as resp:
                raw = resp.read()
                try:
                    return resp.status, json.loads(raw or b"{}")
                except ValueError:  # /readyz answers "ok"
                    return resp.status, {}
        except urllib.error.HTTPError as err:
            return err.code, {}

    def healthy(self):
        try:
            return self.request("GET", "/readyz", timeout=20)[0] == 200
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def version(self):
        return self.request("GET", "/version")[1].get("gitVersion", "?")

    def create_namespace(self, name):
        body = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": {"bench.manent.io/bench": "true"}}}
        code = self.request("POST", "/api/v1/namespaces", body)[0]
        if code not in (200, 201, 409):
            raise RuntimeError("cannot create namespace %s in %s: HTTP %s" % (name, self.name, code))

    def delete_namespace(self, name, wait=600):
        self.request("DELETE", "/api/v1/namespaces/" + name)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.request("GET", "/api/v1/namespaces/" + name)[0] == 404:
                return
            time.sleep(1)
        log("namespace %s in %s still terminating after %ss, going on" % (name, self.name, wait))

    def settle(self, namespace, timeout=SETTLE_TIMEOUT):
        """Wait until the cluster has caught up with the namespace: every Deployment rolled out (observed, updated
        and available replicas as asked) and no pod beyond them (none terminating). The next cell then starts
        where a real redeploy does, on a settled cluster, instead of sharing the 2 cores with the controllers
        still creating the previous cell's pods. Returns the seconds waited (not part of any measurement)."""
        start = time.monotonic()
        base = "/namespaces/%s" % namespace
        while time.monotonic() - start < timeout:
            code, deployments = self.request("GET", "/apis/apps/v1" + base + "/deployments")
            code_pods, pods = self.request("GET", "/api/v1" + base + "/pods")
            if code == 200 and code_pods == 200:
                wanted = 0
                settled = True
                for item in deployments.get("items", []):
                    spec, status = item.get("spec", {}), item.get("status", {})
                    replicas = spec.get("replicas", 1)
                    wanted += replicas
                    if (status.get("observedGeneration", 0) < item["metadata"].get("generation", 1)
                            or status.get("replicas", 0) != replicas or status.get("updatedReplicas", 0) != replicas
                            or status.get("availableReplicas", 0) != replicas):
                        settled = False
                items = pods.get("items", [])
                if settled and len(items) == wanted and not any(p["metadata"].get("deletionTimestamp") for p in items):
                    return time.monotonic() - start
            time.sleep(0.5)
        log("namespace %s in %s not settled after %ss, going on" % (namespace, self.name, timeout))
        return time.monotonic() - start

    def kubeconfig(self, path, server=None):
        config = {"apiVersion": "v1", "kind": "Config", "current-context": self.name,
                  "clusters": [{"name": self.name,
                                "cluster": {"server": server or self.url, "certificate-authority": self.ca_file}}],
                  "users": [{"name": "admin", "user": {"token": self.token}}],
                  "contexts": [{"name": self.name, "context": {"cluster": self.name, "user": "admin"}}]}
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle)
        os.chmod(path, 0o600)
        return path


def load_clusters(inventory):
    """The inventory's clusters, with the pids of their control-plane processes when hack/clusters.py's state.json
    lies beside it (for the CPU each cell costs them)."""
    with open(inventory, encoding="utf-8") as handle:
        inv = yaml.safe_load(handle)
    clusters = [Cluster(name, hv) for name, hv in inv["all"]["hosts"].items()]
    state = os.path.join(os.path.dirname(os.path.abspath(inventory)), "state.json")
    if os.path.exists(state):
        with open(state, encoding="utf-8") as handle:
            known = {c["name"]: c for c in json.load(handle).get("clusters", [])}
        for cluster in clusters:
            cluster.pids = dict(known.get(cluster.name, {}).get("pids") or {})
            cluster.controller_qps = known.get(cluster.name, {}).get("controller_qps")
    return clusters


def ensure_clusters(inventory, python):
    """The running local clusters, or clusters started now (second value True: this run started them).
    python: the interpreter of hack/clusters.py (the dev virtualenv: it needs cryptography)."""
    state = os.path.join(os.path.dirname(os.path.abspath(inventory)), "state.json")
    if os.path.exists(state) or os.path.abspath(inventory) != os.path.join(ROOT, ".clusters", "inventory.yml"):
        # Clusters someone else started: never start, restart or stop them here (hack/clusters.py up would
        # restart clusters it finds unhealthy, e.g. slow to answer on a loaded machine).
        deadline = time.monotonic() + 120
        while True:
            clusters = load_clusters(inventory) if os.path.exists(inventory) else []
            if clusters and all(c.healthy() for c in clusters):
                return clusters, False
            if time.monotonic() > deadline:
                raise SystemExit("bench: the clusters of %s do not answer /readyz; check them (make clusters-status) "
                                 "and rerun" % inventory)
            time.sleep(5)
    log("no local clusters (no .clusters/state.json): starting them with hack/clusters.py up")
    subprocess.run([python, os.path.join(ROOT, "hack", "clusters.py"), "up", "--controller-qps", str(CONTROLLER_QPS)],
                   cwd=ROOT, check=True)
    return load_clusters(inventory), True


def reproduce_command(argv):
    """This invocation as a shell command for BENCHMARKS.md: without --clusters-python (a path of this machine)
    and --note (its text is in the Notes), quoted so that e.g. --sizes '' survives."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("--clusters-python", "--note"):
            skip = True
            continue
        if arg.startswith(("--clusters-python=", "--note=")):
            continue
        kept.append(arg)
    return shlex.join(["bench/bench.py"] + kept)


def parse_caps(text):
    """"120" -> {0: 120}; "30=60,300=120" -> {30: 60, 300: 120, 0: 120} (0: any other size: the largest)."""
    caps = {}
    for item in str(text).split(","):
        if "=" in item:
            size, seconds = item.split("=", 1)
            caps[int(size)] = int(seconds)
        elif item.strip():
            caps[0] = int(item)
    caps.setdefault(0, max(caps.values()) if caps else CMD_TIMEOUT)
    return caps


def ensure_pod_room(cluster, size):
    """Room for the pods of the largest size: every Deployment of bench/gen.py runs one pod, and the pods of the
    namespace deleted just before may still be terminating. hack/clusters.py makes 3 kwok nodes of 110 pods; add
    kwok nodes (labelled bench.manent.io/bench, like the first node otherwise) until twice the pods fit."""
    need = 2 * len([o for o in gen.objects(size) if o["kind"] == "Deployment"]) + 50
    nodes = cluster.request("GET", "/api/v1/nodes")[1].get("items", [])
    room = sum(int(n["status"].get("allocatable", {}).get("pods", "0")) for n in nodes)
    template = next((n for n in nodes if n["metadata"].get("annotations", {}).get("kwok.x-k8s.io/node") == "fake"),
                    None)
    index = 0
    added = []
    while room < need and template:
        name = "kwok-bench-%d" % index
        index += 1
        if any(n["metadata"]["name"] == name for n in nodes):
            continue
        labels = dict(template["metadata"]["labels"])
        labels.update({"kubernetes.io/hostname": name, "bench.manent.io/bench": "true"})
        body = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels,
                             "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
                "spec": {}, "status": {"capacity": template["status"]["capacity"],
                                       "allocatable": template["status"]["allocatable"]}}
        code = cluster.request("POST", "/api/v1/nodes", body)[0]
        if code not in (200, 201):
            raise SystemExit("bench: cannot add kwok node %s to %s (HTTP %s)" % (name, cluster.name, code))
        room += int(template["status"]["allocatable"].get("pods", PODS_PER_NODE))
        added.append(name)
        log("added kwok node %s to %s: room for %d pods (%d needed at %d objects)" % (
            name, cluster.name, room, need, size))
    return added


def write_inventory(path, clusters, python, servers=None):
    """An inventory of the clusters for the bench playbooks: modules run with the bench venv's python, and
    every host is in one region (one wave), so deploy_parallel can deploy them all at once."""
    hosts = {}
    for c in clusters:
        hv = dict(c.vars)
        hv["ansible_python_interpreter"] = python
        hv["region"] = "bench"
        if servers:
            hv["manent_api_server"] = servers[c.name]
        hosts[c.name] = hv
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"hosts": hosts}}, handle, sort_keys=False)
    return path


# --------------------------------------------------------------------------- running and timing


class Step:
    """One command to time: argv, environment additions, and the task whose seconds to keep (timer)."""

    def __init__(self, argv, env=None, timer_task=None):
        self.argv = argv
        self.env = env or {}
        self.timer_task = timer_task


class Failed(Exception):
    pass


class Capped(Exception):
    """A command ran longer than the per-command cap and was stopped (with its whole process group)."""


GNU_TIME = "/usr/bin/time"  # Debian package "time" (.ci/run installs it)


def _run_one(argv, env, cap):
    """Run argv in its own process group; stop the group when it runs longer than cap seconds.
    Returns (exit code, output, peak resident memory in MiB of the command's largest process, or None, CPU seconds
    (user + system) of the command and the processes it waited for, or None).

    The peak comes from GNU time (``-f %M``: the wait4 resource usage of the command, which covers the processes it
    waited for, e.g. ansible-playbook's workers). GNU time is a small process; the command must not be a direct
    child of this one: a process started from a large process carries that process's high-water mark through
    exec, so its own figure would never be below the bench's. Without GNU time: None."""
    report = None
    if os.access(GNU_TIME, os.X_OK):
        handle, report = tempfile.mkstemp(prefix="bench-peak-")
        os.close(handle)
        argv = [GNU_TIME, "-q", "-f", "%M %U %S", "-o", report] + list(argv)
    try:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        try:
            out = proc.communicate(timeout=cap)[0]
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
            raise Capped("%s: stopped after %d s (the per-command cap)" % (" ".join(argv[:6]), cap)) from None
        return (proc.returncode, out) + _usage(report)
    finally:
        if report:
            os.unlink(report)


def _usage(report):
    """(peak MiB, CPU seconds) from GNU time's report (its last line: peak KiB, user and system seconds); Nones
    when there is none."""
    if not report:
        return None, None
    with open(report, encoding="utf-8") as handle:
        lines = [line.strip() for line in handle if line.strip()]
    fields = lines[-1].split() if lines else []
    try:
        return int(fields[0]) / 1024.0, float(fields[1]) + float(fields[2])
    except (IndexError, ValueError):
        return None, None


def process_cpu(pids):
    """CPU seconds (user + system) used so far by the live processes among ``pids`` (from /proc)."""
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return total / float(os.sysconf("SC_CLK_TCK"))


def run_steps(steps, workdir, cap=CMD_TIMEOUT):
    """Run steps one after the other; returns (seconds, seconds of the timed task or None, peak memory MiB of
    the largest process of any step, CPU seconds of all steps or None).
    Raises Capped when the steps together run longer than cap seconds, Failed when one fails."""
    total = 0.0
    task_seconds = None
    peak = 0.0
    cpu = 0.0
    for step in steps:
        env = dict(os.environ)
        env.update(step.env)
        timer = None
        if step.timer_task:
            timer = os.path.join(workdir, "timer-%s.json" % uuid.uuid4().hex[:8])
            env.update({"BENCH_TIMER_FILE": timer, "ANSIBLE_CALLBACKS_ENABLED": "bench_timer",
                        "ANSIBLE_CALLBACK_PLUGINS": os.path.join(HERE, "callback_plugins")})
        start = time.monotonic()
        try:
            returncode, out, rss, used = _run_one(step.argv, env, max(1.0, cap - total))
        except Capped as err:
            if total:  # the cap is the cell's, not this step's: say so
                raise Capped("%s (this step's share of the cell's %d s cap, after %.0f s of earlier steps)"
                             % (err, cap, total)) from None
            raise
        total += time.monotonic() - start
        peak = max(peak, rss or 0.0)
        cpu = None if used is None or cpu is None else cpu + used
        if returncode != 0:
            raise Failed("%s -> rc=%d\n%s" % (" ".join(step.argv[:6]), returncode, out[-3000:]))
        if timer and os.path.exists(timer):
            with open(timer, encoding="utf-8") as handle:
                records = json.load(handle)
            found = [r["seconds"] for r in records if step.timer_task in r["task"]]
            if found:
                task_seconds = (task_seconds or 0.0) + max(found)
            os.unlink(timer)
    return total, task_seconds, peak, cpu


def sha256(path):
    import hashlib  # pylint: disable=import-outside-toplevel
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


class Release:
    """The files of one benchmark size: plain manifests per state, the removed objects, the chart."""

    def __init__(self, workdir, size, chart):
        self.size = size
        self.keep = size - size // 10
        d = os.path.join(workdir, "manifests-%d" % size)
        os.makedirs(d, exist_ok=True)
        self.files = {
            "v1": gen.write(os.path.join(d, "v1.yaml"), size),
            "v2": gen.write(os.path.join(d, "v2.yaml"), size, image_of_first=IMAGE_CHANGED),
            "v3": gen.write(os.path.join(d, "v3.yaml"), size, keep=self.keep, image_of_first=IMAGE_CHANGED),
            "v4": gen.write(os.path.join(d, "v4.yaml"), size, image_of_first=IMAGE_CHECK),
        }
        removed = list(gen.objects(size, image_of_first=IMAGE_CHANGED)[self.keep:])
        self.removed = os.path.join(d, "removed.yaml")
        with open(self.removed, "w", encoding="utf-8") as handle:
            yaml.safe_dump_all(removed, handle, sort_keys=False)
        self.chart = chart
        self.values = {"v1": ["count=%d" % size],
                       "v2": ["count=%d" % size, "imageOfFirst=%s" % IMAGE_CHANGED],
                       "v3": ["count=%d" % size, "keep=%d" % self.keep, "imageOfFirst=%s" % IMAGE_CHANGED],
                       "v4": ["count=%d" % size, "imageOfFirst=%s" % IMAGE_CHECK]}
        self.chart_sha256 = sha256(chart) if chart else ""

    def chart_values(self, state):
        """The chart's values of a state as a mapping (manent's helm_value), the same as Helm's --set list."""
        out = {}
        for item in self.values[state]:
            key, value = item.split("=", 1)
            out[key] = int(value) if value.isdigit() else value
        return out


# State each scenario deploys, the version manent records, and whether it is a dry run.
PLAN = {"install": ("v1", "1"), "noop": ("v1", "1"), "image": ("v2", "2"), "prune": ("v3", "3"),
        "rollback": ("v2", "2"), "check": ("v4", "4"), "install+wait": ("v1", "1")}


class Bench:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        self.work = os.path.join(self.out, "work")
        os.makedirs(self.work, exist_ok=True)
        self.cache = cache_dir()
        self.v = versions_env()
        self.python = sys.executable
        self.bin = os.path.dirname(sys.executable)
        self.kubectl = os.path.join(self.cache, "kubectl-%s" % self.v["K8S_VERSION"], "bin", "kubectl")
        self.helm = {"helm3": os.path.join(self.cache, "helm-%s" % self.v["HELM_VERSION"], "bin", "helm"),
                     "helm4": os.path.join(self.cache, "helm-%s" % self.v.get("HELM4_VERSION", "none"), "bin", "helm")}
        self.missing = {}
        for tool, path in (("kubectl", self.kubectl), ("helm3", self.helm["helm3"]), ("helm4", self.helm["helm4"])):
            if not os.path.exists(path):
                self.missing[tool] = "not built (%s missing; hack/build-tools.sh bench)" % path
        if "helm3" in self.missing:  # the pinned helm 3 packages the chart and renders it for manent-chart
            self.missing["manent-chart"] = self.missing["helm3"]
        self.scenarios = [x for x in args.scenarios.split(",") if x]
        self.results = []
        self.capped = {}
        self.caps = parse_caps(args.cap)
        self.size_scenarios = {}
        for item in args.size_scenarios:
            size, chosen = item.partition("=")[::2]
            self.size_scenarios[int(size)] = [x for x in chosen.split(",") if x]
        self.deadline = time.time() + 60 * args.budget_minutes if args.budget_minutes else None
        self.results_file = os.path.join(self.out, "results.json")
        self.invocation = None  # this invocation's "started": every result it records names it

    # ----------------------------------------------------------------- common helpers
    def ansible_env(self):
        return {"ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_STDOUT_CALLBACK": "default",
                "ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, ".build", "collections"),
                "ANSIBLE_LOCAL_TEMP": os.path.join(self.work, "ansible-tmp"),
                "PATH": self.bin + os.pathsep + os.environ.get("PATH", "")}

    def playbook(self, path, inventory, extra, limit=None, check=False, timer_task=None):
        vars_file = os.path.join(self.work, "vars-%s.json" % uuid.uuid4().hex[:8])
        with open(vars_file, "w", encoding="utf-8") as handle:
            json.dump(extra, handle)
        argv = [os.path.join(self.bin, "ansible-playbook"), "-i", inventory, path, "-e", "@" + vars_file]
        if limit:
            argv += ["-l", limit]
        if check:
            argv.append("--check")
        return Step(argv, self.ansible_env(), timer_task)

    def package_chart(self):
        """Package bench/chart/manent-bench with the pinned helm 3 (like hack/package-test-charts.sh)."""
        dest = os.path.join(self.work, "chart")
        os.makedirs(dest, exist_ok=True)
        scratch = os.path.join(self.work, "chart-src")
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(os.path.join(HERE, "chart", "manent-bench"), os.path.join(scratch, "manent-bench"))
        subprocess.run(["env", "-i", "HOME=" + scratch, "PATH=/usr/bin:/bin", self.helm["helm3"], "package",
                        os.path.join(scratch, "manent-bench"), "--destination", dest],
                       check=True, capture_output=True)
        return os.path.join(dest, "manent-bench-0.1.0.tgz")

    # ----------------------------------------------------------------- per tool steps
    def steps(self, tool, scenario, ctx):
        """The commands of one scenario of one tool in context ctx (namespace, release files, cluster...)."""
        state, version = PLAN[scenario]
        rel = ctx["release"]
        ns = ctx["namespace"]
        wait = scenario == "install+wait"
        check = scenario == "check"
        if tool == "kubectl":
            env = {"KUBECTL_APPLYSET": "true", "KUBECONFIG": ctx["kubeconfig"]}
            argv = [self.kubectl, "apply", "--server-side", "--force-conflicts", "-n", ns, "--prune",
                    "--applyset=" + RELEASE, "-f", rel.files[state]]
            if check:
                argv.append("--dry-run=server")
            steps = [Step(argv, env)]
            if wait:
                steps.append(Step([self.kubectl, "wait", "-n", ns, "--for=condition=Available", "deployment", "--all",
                                   "--timeout=300s"], env))
            return steps
        if tool in ("helm3", "helm4"):
            home = os.path.join(self.work, tool + "-home")
            env = {"HELM_CACHE_HOME": home + "/cache", "HELM_CONFIG_HOME": home + "/config",
                   "HELM_DATA_HOME": home + "/data", "KUBECONFIG": ctx["kubeconfig"]}
            helm = self.helm[tool]
            if scenario == "rollback":
                return [Step([helm, "rollback", RELEASE, "-n", ns], env)]
            argv = [helm, "upgrade", "--install", RELEASE, rel.chart, "-n", ns]
            for value in rel.values[state]:
                argv += ["--set", value]
            if check:
                argv.append("--dry-run=server")
            if wait:
                argv += ["--wait", "--timeout", "5m"] if tool == "helm3" else ["--wait=watcher", "--timeout", "5m"]
            return [Step(argv, env)]
        if tool == "k8s":
            extra = {"bench_manifest": rel.files[state], "bench_namespace": ns, "bench_kubeconfig": ctx["kubeconfig"],
                     "bench_wait": wait}
            if scenario == "prune":
                extra["bench_removed"] = rel.removed
            return [self.playbook(os.path.join(HERE, "playbooks", "k8s.yml"), ctx["inventory"], extra,
                                  limit=ctx["limit"], check=check)]
        work = os.path.join(self.work, "manent-work")
        if tool == "manent-modules":
            extra = {"bench_artifact": rel.files[state], "bench_sha256": sha256(rel.files[state]),
                     "bench_version": version, "bench_namespace": ns, "bench_wait": wait, "bench_work_dir": work}
            if scenario == "rollback":
                return [self.playbook(os.path.join(HERE, "playbooks", "manent-rollback.yml"), ctx["inventory"], extra,
                                      limit=ctx["limit"], timer_task="Roll back")]
            return [self.playbook(os.path.join(HERE, "playbooks", "manent-modules.yml"), ctx["inventory"], extra,
                                  limit=ctx["limit"], check=check, timer_task="Apply")]
        if tool in ("manent-role", "manent-chart"):
            if tool == "manent-role":
                artifact = {"type": "kubernetes", "source": rel.files[state], "sha256": sha256(rel.files[state])}
            else:  # the package Helm deploys (manent finds a chart in it), rendered by the pinned helm 3 (helm
                # template) with the same values
                artifact = {"type": "kubernetes", "source": rel.chart, "sha256": rel.chart_sha256}
            extra = {"deploy_artifact": dict(artifact, name="bench", version=version),
                     "deploy_application": "bench", "deploy_environment": "bench", "deploy_namespace": ns,
                     "deploy_prune": True, "deploy_wait": wait, "deploy_wait_timeout": "5m", "deploy_parallel": ctx.get("parallel", 1),
                     "deploy_cache_dir": os.path.join(self.work, "artifacts"), "deploy_work_dir": work}
            if tool == "manent-chart":
                extra.update(deploy_helm_command=self.helm["helm3"], deploy_helm_release=RELEASE,
                             deploy_helm_value=rel.chart_values(state))
            if scenario == "rollback":
                return [self.playbook(os.path.join(ROOT, "playbooks", "rollback.yml"), ctx["inventory"], extra,
                                      limit=ctx["limit"], timer_task="Rollback | Re-apply")]
            return [self.playbook(os.path.join(ROOT, "playbooks", "deploy.yml"), ctx["inventory"], extra,
                                  limit=ctx["limit"], check=check, timer_task="Deploy | Apply")]
        raise ValueError(tool)

    # ----------------------------------------------------------------- recording
    def record(self, **kw):
        if self.invocation:
            kw.setdefault("invocation", self.invocation)
        self.results.append(kw)
        write_results(self.meta, self.results, self.results_file)

    def cap_of(self, size):
        return self.caps.get(size, self.caps.get(0, CMD_TIMEOUT))

    def scenarios_at(self, size):
        return self.size_scenarios.get(size, self.scenarios)

    def past_deadline(self):
        return self.deadline is not None and time.time() > self.deadline

    def skip(self, section, tool, size, scenario, run, reason, bound=None):
        log("%s %s %d %s run %d SKIPPED: %s" % (section, tool, size, scenario, run, reason))
        self.record(section=section, tool=tool, size=size, scenario=scenario, run=run, ok=False, skipped=reason,
                    capped=bound)

    def timed(self, section, tool, size, scenario, run, steps, clusters=()):
        """Run and record one cell; returns "ok", "failed" or "capped". Besides the wall time it records the CPU
        seconds the cell used: the command's (with its workers), the control planes of ``clusters`` (their
        processes, from hack/clusters.py's state.json) and this process's (the remote section's delay proxies run
        in it), so a cell bound by the machine's cores shows it."""
        if self.past_deadline():
            self.skip(section, tool, size, scenario, run, "deadline")
            return "failed"
        cap = self.cap_of(size)
        pids = [pid for c in clusters for pid in c.pids.values()]
        planes, own = process_cpu(pids), sum(os.times()[:2])
        try:
            seconds, task_seconds, peak, cpu = run_steps(steps, self.work, cap)
        except Capped as err:
            log("%s %s %d %s run %d CAPPED: %s" % (section, tool, size, scenario, run, err))
            self.record(section=section, tool=tool, size=size, scenario=scenario, run=run, ok=False, capped=cap,
                        error=str(err))
            return "capped"
        except Failed as err:
            log("%s %s %d %s run %d FAILED: %s" % (section, tool, size, scenario, run, str(err)[-1500:]))
            self.record(section=section, tool=tool, size=size, scenario=scenario, run=run, ok=False,
                        error=str(err)[-600:])
            return "failed"
        log("%s %-14s %5d %-13s run %d: %6.2f s%s%s" % (
            section, tool, size, scenario, run, seconds,
            "" if task_seconds is None else " (task %.2f s)" % task_seconds, ", peak %.0f MiB" % peak if peak else ""))
        planes, own = process_cpu(pids) - planes, sum(os.times()[:2]) - own
        self.record(section=section, tool=tool, size=size, scenario=scenario, run=run, ok=True,
                    seconds=round(seconds, 3), task_seconds=None if task_seconds is None else round(task_seconds, 3),
                    peak_rss_mib=round(peak, 1) if peak else None,
                    cpu_seconds={"command": None if cpu is None else round(cpu, 2),
                                 "clusters": round(planes, 2) if pids else None, "bench": round(own, 2)})
        return "ok"

    def skip_reason(self, tool, size, scenario):
        """Why not to run a cell again: it hit the cap in an earlier run at this size, or at a smaller size
        (more objects take longer), so another attempt would only spend the cap again."""
        for (t, sz, sc), capped_size in self.capped.items():
            if t == tool and sc == scenario and sz <= size:
                if sz == size:
                    return "capped in an earlier run (> %d s), not repeated" % self.cap_of(sz), self.cap_of(sz)
                return ("capped at %d objects (> %d s), not tried at %d" % (capped_size, self.cap_of(sz), size),
                        self.cap_of(sz))
        return None, None

    def cell(self, section, tool, size, scenario, run, ctx, label=None):
        """One measured cell (label: the row name when it is not the tool's, e.g. "manent-role x3")."""
        label = label or tool
        reason, bound = self.skip_reason((section, label), size, scenario)
        if reason:
            self.skip(section, label, size, scenario, run, reason, bound)
            return "skipped"
        waited = sum(c.settle(ctx["namespace"], self.args.settle_timeout) for c in ctx["clusters"])
        if waited > 1:
            log("%s %s %d %s run %d: cluster settled in %.1f s (not measured)" % (section, label, size, scenario, run,
                                                                                  waited))
        result = self.timed(section, label, size, scenario, run, self.steps(tool, scenario, ctx), ctx["clusters"])
        if result == "capped":
            self.capped[((section, label), size, scenario)] = size
        return result

    # ----------------------------------------------------------------- sections
    def floor(self, cluster, inventory, run):
        """ansible-playbook with one debug task on the same inventory and limit: the floor under every Ansible
        cell (reported apart, section "floor")."""
        if self.past_deadline():
            return
        step = self.playbook(os.path.join(HERE, "playbooks", "floor.yml"), inventory, {}, limit=cluster.name)
        self.timed("floor", "ansible-playbook", 0, "floor", run, [step])

    def local(self, cluster, inventory, tools, sizes, runs):
        kubeconfig = cluster.kubeconfig(os.path.join(self.work, "kubeconfig-%s" % cluster.name))
        if sizes and any(t in ANSIBLE_TOOLS for t in tools):
            for run in range(1, runs + 1):
                self.floor(cluster, inventory, run)
        for size in sizes:
            rel = Release(self.work, size, self.chart)
            for run in range(1, runs + 1):
                # The tool order rotates with each run: no tool always runs first, right after the previous
                # size's namespaces were deleted (the cluster is still collecting their pods then).
                shift = (run - 1) % max(1, len(tools))
                for tool in list(tools[shift:]) + list(tools[:shift]):
                    if tool in self.missing:
                        continue
                    ns = "bench-%s-%d-%s" % (tool.replace("+", ""), size, uuid.uuid4().hex[:5])
                    ctx = {"release": rel, "namespace": ns, "kubeconfig": kubeconfig, "inventory": inventory,
                           "limit": cluster.name, "clusters": [cluster]}
                    chosen = self.scenarios_at(size)
                    sequence = [x for x in SCENARIOS[:-1] if x in chosen]
                    cluster.create_namespace(ns)
                    try:
                        for scenario in sequence:
                            result = self.cell("local", tool, size, scenario, run, ctx)
                            if result != "ok" and scenario == "install":
                                # nothing installed: the scenarios that follow have nothing to work on
                                for rest in sequence[1:]:
                                    self.skip("local", tool, size, rest, run, "first install did not finish")
                                break
                    finally:
                        cluster.delete_namespace(ns)
                    if "install+wait" not in chosen:
                        continue
                    ns = ctx["namespace"] = ns + "-w"
                    cluster.create_namespace(ns)
                    try:
                        self.cell("local", tool, size, "install+wait", run, ctx)
                    finally:
                        cluster.delete_namespace(ns)

    def remote(self, clusters, size, runs, delay_ms):
        """manent (1 cluster, 3 clusters in parallel) and kubectl over a delay proxy per API server."""
        sys.path.insert(0, os.path.join(ROOT, "hack"))
        from tcpproxy import Proxy  # pylint: disable=import-outside-toplevel
        proxies, servers = [], {}
        try:
            for c in clusters:
                host, port = c.url.split("://", 1)[1].rsplit(":", 1)
                listen = self.args.proxy_base_port + len(proxies) if self.args.proxy_base_port else 0
                proxy = Proxy((host, int(port)), listen_port=listen)
                proxy.set(delay_ms=delay_ms)
                servers[c.name] = "https://127.0.0.1:%d" % proxy.start()
                proxies.append(proxy)
            inventory = write_inventory(os.path.join(self.work, "inventory-remote.yml"), clusters, self.python, servers)
            first = clusters[0]
            kubeconfig = first.kubeconfig(os.path.join(self.work, "kubeconfig-remote"), server=servers[first.name])
            rel = Release(self.work, size, self.chart)
            cases = [("manent-role", 1), ("manent-role", len(clusters)), ("manent-modules", 1), ("kubectl", 1)]
            for run in range(1, runs + 1):
                for tool, count in cases:
                    if tool in self.missing:
                        continue
                    targets = clusters[:count]
                    label = "%s x%d" % (tool, count)
                    ns = "bench-remote-%s-%s" % (tool, uuid.uuid4().hex[:5])
                    ctx = {"release": rel, "namespace": ns, "kubeconfig": kubeconfig, "inventory": inventory,
                           "limit": ",".join(c.name for c in targets), "parallel": count, "clusters": targets}
                    for c in targets:
                        c.create_namespace(ns)
                    try:
                        for scenario in ("install", "noop"):
                            if self.cell("remote", tool, size, scenario, run, ctx, label=label) != "ok":
                                if scenario == "install":
                                    self.skip("remote", label, size, "noop", run, "deadline" if self.past_deadline()
                                              else "first install did not finish")
                                break
                    finally:
                        for c in targets:
                            c.delete_namespace(ns)
        finally:
            for proxy in proxies:
                proxy.stop()

    # ----------------------------------------------------------------- metadata
    def tool_versions(self, cluster):
        def out(argv):
            try:
                return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False).stdout.strip()
            except OSError as err:
                return "unavailable (%s)" % err
        versions = {"control plane (kube-apiserver, kwok nodes)": "%s (hack/versions.env K8S_VERSION %s, kwok %s)" % (
            cluster.version(), self.v["K8S_VERSION"], self.v["KWOK_VERSION"])}
        if "kubectl" in self.missing:
            versions["kubectl"] = self.missing["kubectl"]
        else:
            client = json.loads(out([self.kubectl, "version", "--client", "-o", "json"]) or "{}")
            versions["kubectl"] = "%s (built from k8s.io/kubernetes %s)" % (
                client.get("clientVersion", {}).get("gitVersion", "?"), self.v["K8S_VERSION"])
        for tool in ("helm3", "helm4"):
            versions[tool] = self.missing.get(tool) or out([self.helm[tool], "version", "--short"])
        ansible = out([os.path.join(self.bin, "ansible"), "--version"]).splitlines()
        versions["ansible-core"] = ansible[0] if ansible else "?"
        try:
            import importlib.metadata as md  # pylint: disable=import-outside-toplevel
            versions["ansible (PyPI package)"] = md.version("ansible")
            versions["kubernetes (Python client)"] = md.version("kubernetes")
            import ansible_collections.kubernetes.core as kc  # pylint: disable=import-outside-toplevel
            with open(os.path.join(list(kc.__path__)[0], "MANIFEST.json"), encoding="utf-8") as handle:
                versions["kubernetes.core"] = json.load(handle)["collection_info"]["version"]
        except Exception as err:  # pylint: disable=broad-except
            versions["kubernetes.core"] = "unavailable (%s)" % err
        with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
            galaxy = yaml.safe_load(handle)
        commit = out(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
        dirty = out(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
        versions["manent.kubernetes"] = "%s (commit %s%s)" % (galaxy.get("version"), commit,
                                                              ", with uncommitted changes" if dirty else "")
        versions["python"] = platform.python_version()
        return versions


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            mem = "%.1f GiB" % (int(handle.readline().split()[1]) / 1048576)
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "os": platform.platform()}


def writes_benchmarks_md(args):
    return os.path.abspath(args.md) == os.path.join(ROOT, "BENCHMARKS.md")


def appended_results(args, results_file):
    """The results --append adds to: those of the previous run in --out, else (a fresh clone, whose .build/ is
    empty) the kept raw results of the committed BENCHMARKS.md when this run rewrites it; None: start afresh."""
    if not args.append:
        return None
    if os.path.exists(results_file):
        return results_file
    if writes_benchmarks_md(args) and os.path.exists(KEPT):
        return KEPT
    return None


INVOCATION_KEYS = ("started", "command", "sizes", "runs", "cap", "caps", "size_scenarios", "budget_minutes",
                   "remote_size", "controller_qps", "manent_version")


def size_scenarios_of(invocations):
    """{size: scenarios} of the sizes that the joined invocations did not measure in every scenario: at each size, the
    scenarios of every invocation that measured it (its --size-scenarios, else all of them)."""
    measured = {}
    for inv in invocations:
        limits = inv.get("size_scenarios") or {}
        for size in inv.get("sizes") or []:
            measured.setdefault(str(size), set()).update(limits.get(str(size)) or SCENARIOS)
    return {size: [x for x in SCENARIOS if x in got] for size, got in measured.items() if not set(SCENARIOS) <= got}


def joined(previous, meta, sizes, replace=False, notes=()):
    """--append: the results and meta of the earlier invocations (previous: their results.json) that this run adds
    to; meta is this run's. replace: the earlier local cells of this run's sizes are dropped, and the earlier
    invocations left with nothing measured (their other sizes or a remote section) with them, and with them the
    results they recorded besides (their floor runs)."""
    results = [r for r in previous["results"] if r.get("section") != "meta"]
    old_meta = previous["meta"]
    old_meta["notes"] = old_meta.get("notes", []) + list(notes)
    # what each invocation measured and under which limits, for the Notes of the report
    old_meta.setdefault("invocations", [dict((k, old_meta.get(k)) for k in INVOCATION_KEYS)])
    if replace:
        results = [r for r in results if not (r.get("section") == "local" and r.get("size") in sizes)]
        kept = []
        for earlier in old_meta["invocations"]:
            left = [x for x in earlier.get("sizes") or [] if x not in sizes]
            if left or earlier.get("remote_size"):
                earlier["replaced"] = sorted(set(earlier.get("replaced") or []) | (
                    set(earlier.get("sizes") or []) - set(left)))
                earlier["sizes"] = left
                kept.append(earlier)
        old_meta["invocations"] = kept
        # what the dropped invocations measured besides those cells (Ansible's floor) goes with them: a floor is
        # compared with the cells of its own invocation, on the machine as fast as it was then
        started = {inv.get("started") for inv in kept}
        results = [r for r in results if r.get("invocation") is None or r["invocation"] in started]
        # the caps of the cells dropped go with them (their scenario limits: size_scenarios_of, from the invocations)
        old_meta["caps"] = {k: v for k, v in (old_meta.get("caps") or {}).items() if int(k) not in sizes}
    old_meta["invocations"].append(dict((k, meta.get(k)) for k in INVOCATION_KEYS))
    old_meta["caps"] = dict(old_meta.get("caps") or {}, **meta["caps"])
    old_meta["size_scenarios"] = size_scenarios_of(old_meta["invocations"])
    old_meta["cap"] = max([old_meta.get("cap") or 0, meta["cap"]])
    if not old_meta.get("settle_timeout"):  # cells of an older run started without waiting: say nothing
        old_meta["settle_timeout"] = None
    else:
        old_meta["settle_timeout"] = max(old_meta["settle_timeout"], meta["settle_timeout"])
    for key in ("remote_size", "delay_ms"):
        if meta[key]:
            old_meta[key] = meta[key]
    return results, old_meta


def cmd_run(args):
    if args.replace and not args.append:
        raise SystemExit("bench: --replace drops earlier results of --append; without --append there are none")
    bench = Bench(args)
    inventory = os.path.abspath(args.inventory)
    clusters, started = ensure_clusters(inventory, args.clusters_python)
    added_nodes, cluster = [], None
    try:
        by_name = {c.name: c for c in clusters}
        cluster = by_name.get(args.host) or clusters[0]
        tools = [t for t in args.tools.split(",") if t]
        sizes = [int(x) for x in args.sizes.split(",") if x]
        previous = None
        appended = appended_results(args, bench.results_file)
        if appended:
            log("adding to the results in %s" % appended)
            with open(appended, encoding="utf-8") as handle:
                previous = json.load(handle)
        bench.meta = {"started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                      "command": args.command_line or reproduce_command(sys.argv[1:]),
                      "machine": machine(), "load_before": os.getloadavg(), "runs": args.runs, "sizes": sizes,
                      "cluster": cluster.name, "missing": bench.missing, "delay_ms": args.delay_ms,
                      "remote_size": args.remote_size if not args.no_remote else None,
                      "versions": bench.tool_versions(cluster), "notes": list(args.note),
                      "cap": max(bench.caps.values()), "caps": {str(k): v for k, v in bench.caps.items() if k},
                      "size_scenarios": {str(k): v for k, v in bench.size_scenarios.items()},
                      "budget_minutes": args.budget_minutes, "inventory": inventory,
                      "settle_timeout": args.settle_timeout, "controller_qps": cluster.controller_qps}
        bench.meta["manent_version"] = bench.meta["versions"].get("manent.kubernetes")
        bench.invocation = bench.meta["started"]
        if previous:  # --append: add this run's sections to the results already there
            bench.results, bench.meta = joined(previous, bench.meta, sizes, args.replace, args.note)
        bench.chart = bench.package_chart()
        inv = write_inventory(os.path.join(bench.work, "inventory.yml"), clusters, bench.python)
        log("tools %s, sizes %s, %d runs, cluster %s; missing: %s"
            % (tools, sizes, args.runs, cluster.name, bench.missing or "none"))
        added_nodes = ensure_pod_room(cluster, max(sizes or [0]))
        # sizes up to the remote one, then the remote section, then the larger sizes: a run cut short by the
        # budget loses the largest size first
        small = [x for x in sizes if args.no_remote or x <= args.remote_size]
        if small:
            bench.local(cluster, inv, tools, small, args.runs)
        if not args.no_remote:
            bench.remote(clusters, args.remote_size, args.runs, args.delay_ms)
        large = [x for x in sizes if x not in small]
        if large:
            bench.local(cluster, inv, tools, large, args.runs)
        bench.meta["load_after"] = os.getloadavg()
        bench.meta["finished"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        bench.record(section="meta", tool="", size=0, scenario="", run=0, ok=True)
    finally:
        for name in added_nodes:
            cluster.request("DELETE", "/api/v1/nodes/" + name)
        if started:
            log("stopping the clusters this run started")
            subprocess.run([args.clusters_python, os.path.join(ROOT, "hack", "clusters.py"), "down"], cwd=ROOT,
                           check=False)
    import report  # pylint: disable=import-outside-toplevel
    keep = args.keep if args.keep is not None else (KEPT if writes_benchmarks_md(args) else "")
    report.main(["--out", args.out, "--md", args.md, "--png", args.png] + (["--keep", keep] if keep else []))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--sizes", default="30,300")
    run.add_argument("--runs", type=int, default=3)
    run.add_argument("--tools", default=",".join(TOOLS))
    run.add_argument("--inventory", default=os.path.join(ROOT, ".clusters", "inventory.yml"))
    run.add_argument("--host", default="", help="cluster of the local section (default: the first)")
    run.add_argument("--out", default=os.path.join(ROOT, ".build", "bench"))
    run.add_argument("--no-remote", action="store_true")
    run.add_argument("--scenarios", default=",".join(SCENARIOS), help="local scenarios to run (default: all)")
    run.add_argument("--append", action="store_true",
                     help="add to the results of the previous run in --out (none there: to bench/results.json, the "
                          "raw results of the committed BENCHMARKS.md, when this run rewrites it)")
    run.add_argument("--replace", action="store_true",
                     help="with --append: drop the earlier local cells of the sizes this run measures (and the "
                          "earlier invocations left with nothing), e.g. to measure them again on other clusters")
    run.add_argument("--note", action="append", default=[], help="a line for the Notes of BENCHMARKS.md")
    run.add_argument("--remote-size", type=int, default=300)
    run.add_argument("--cap", default="30=60,300=180,3000=%d" % CMD_TIMEOUT,
                     help="seconds one command (cell) may run, e.g. 120 or per size 30=60,300=120,3000=300; a longer "
                          "one is stopped and shown as capped")
    run.add_argument("--size-scenarios", action="append", default=[],
                     help="SIZE=s1,s2: only these scenarios at that size (to fit a run in its time; noted in the report)")
    run.add_argument("--md", default=os.path.join(ROOT, "BENCHMARKS.md"))
    run.add_argument("--png", default=os.path.join(ROOT, "docs", "bench.png"))
    run.add_argument("--keep", default=None,
                     help="where to keep the raw results of the report, to commit with it (default: bench/results.json "
                          "when the report is BENCHMARKS.md, else nowhere)")
    run.add_argument("--settle-timeout", type=int, default=SETTLE_TIMEOUT,
                     help="seconds to wait, untimed, for the cluster to settle before each command (default %d; "
                          "3,000 objects need more here: 900 pods)" % SETTLE_TIMEOUT)
    run.add_argument("--budget-minutes", type=float, default=0,
                     help="stop starting cells after this many minutes (0: no limit); the rest are shown as not run")
    run.add_argument("--proxy-base-port", type=int, default=0,
                     help="first loopback port of the remote section's delay proxies (default: any free port)")
    run.add_argument("--delay-ms", type=int, default=50)
    run.add_argument("--clusters-python", default="python3",
                     help="python for hack/clusters.py when the clusters must be started (make bench: the dev venv)")
    run.add_argument("--command-line", default="", help="the command to reproduce, as written in BENCHMARKS.md")
    rep = sub.add_parser("report")
    rep.add_argument("--out", default=os.path.join(ROOT, ".build", "bench"))
    rep.add_argument("--results", default="", help="raw results to report, e.g. bench/results.json")
    args = parser.parse_args(argv)
    if args.cmd == "run":
        cmd_run(args)
    else:
        import report  # pylint: disable=import-outside-toplevel
        report.main(["--out", args.out] + (["--results", args.results] if args.results else []))


if __name__ == "__main__":
    main()
