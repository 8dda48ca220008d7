# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""make bench-fleet: what one controller spends per cluster, measured on fleets of 10, 30 and 100 clusters.

    python bench/fleet.py run    [--sizes 1,10,30,100] [--runs 3] [--forks 50] [--inventory DIR/inventory.yml]
                                 [--proxy-base-port 18500] [--out .build/bench-fleet] [--big-at 10] [--delay-at 30]
                                 [--reference COMMIT]
    python bench/fleet.py report [--results bench/fleet-results.json] [--before RESULTS]
                                 # the fleet section of BENCHMARKS.md and docs/bench-fleet.png
    python bench/fleet.py serve  [--size 100] [--write fleet-inventory.yml]
                                 # the proxies and an inventory, until interrupted: to profile one run by hand

Each inventory host is its own "cluster" as the role sees it: its own API server URL (a loopback port of
hack/tcpproxy.py in HTTP mode, which counts the requests, in front of one of the inventory's API servers), its own
release namespace (the host variable deploy_namespace) and so its own history; the hosts are split into 2 regions,
so the run has 2 waves. Every cell runs playbooks/deploy.yml as users run it (forks and deploy_parallel 50,
deploy_checkpoint_fields [version]) and records: wall seconds, the controller's CPU seconds (user + system of
ansible-playbook and every process it waited for), the peak memory of its process tree (PSS, so pages shared by the
forks count once) and of the parent alone (RSS), the API requests of each cluster (from its proxy), each cluster's
deploy seconds (the summary file), and the load average before and after.

Per fleet size and run, in fresh namespaces: first install of the sample app (examples/artifacts/shop.yaml, 4
objects, 1 replica), nothing changed, one image changed; at --big-at clusters also a 300-object release
(bench/gen.py: first install, nothing changed; in the first --big-runs runs only); at --delay-at clusters also
nothing changed with 50 ms added to every round trip; with --reference COMMIT, next to each nothing-changed cell
(after an unmeasured one, the order alternating by run), the same redeploy by that earlier commit (a git worktree),
whose figures bench/runs/ holds: the report then also gives the targets in the machine state of those recorded
figures (this machine's speed changes from day to day).
Size 1 is the reference for the requests per cluster. The namespaces are deleted after each size (not timed). Runs
interleave the sizes, so a slow spell of the shared machine does not fall on one size.

Clusters: the inventory's (start dedicated ones, e.g. `python hack/clusters.py up --dir /tmp/fleet-cl
--base-port 18400 --topology fl-1/fl-1a`; the bench never starts or stops clusters).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shlex
import signal
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(ROOT, "hack"))
import gen  # noqa: E402  pylint: disable=wrong-import-position
from bench import ensure_pod_room, load_clusters, log, write_results  # noqa: E402  pylint: disable=wrong-import-position
from scale import Sampler, summary_targets  # noqa: E402  pylint: disable=wrong-import-position,import-error
from tcpproxy import Proxy, ProxyGroup  # noqa: E402  pylint: disable=wrong-import-position,import-error

SAMPLE = os.path.join(ROOT, "examples", "artifacts", "shop.yaml")
KEPT = os.path.join(HERE, "fleet-results.json")
REGIONS = ("fleet-a", "fleet-b")
IMAGE = "registry.k8s.io/pause:3.10"
IMAGE_CHANGED = "registry.k8s.io/pause:3.9"
DELAY_MS = 50
CAP = 900  # seconds one playbook run may take before the bench stops it
SCENARIO_TITLES = {"install": "first install", "noop": "nothing changed", "image": "one image changed",
                   "install-300": "300 objects, first install", "noop-300": "300 objects, nothing changed",
                   "noop-50ms": "nothing changed, 50 ms per round trip",
                   "noop-ref": "nothing changed, reference commit"}
# The scenario of --reference: the reference commit's nothing-changed redeploy, next to this code's (Fleet.pair).
REF_SCENARIO = "noop-ref"
RUNS = os.path.join(HERE, "runs")
BEGIN, END = "<!-- bench-fleet: begin -->", "<!-- bench-fleet: end -->"


# --------------------------------------------------------------------------- the fleet


def host_name(i):
    return "c%03d" % (i + 1)


def artifacts(workdir):
    """{name: deploy_artifact}: the sample app, the same with one image changed, and the 300-object release."""
    with open(SAMPLE, encoding="utf-8") as handle:
        sample = handle.read()
    files = {"sample": ("1.0.0", sample), "sample-image": ("1.0.1", sample.replace(IMAGE, IMAGE_CHANGED)),
             "big": ("2.0.0", yaml.safe_dump_all(gen.objects(300, set_name="fleet"), sort_keys=False))}
    out = {}
    for name, (version, text) in files.items():
        path = os.path.join(workdir, "%s-%s.yaml" % (name, version))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        out[name] = {"type": "kubernetes", "name": "fleet-" + name.split("-", maxsplit=1)[0], "version": version,
                     "source": path, "sha256": sha256(path)}
    return out


def sha256(path):
    import hashlib  # pylint: disable=import-outside-toplevel
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def write_inventory(path, clusters, ports, count, prefix):
    """``count`` hosts, host i behind proxy port ``ports[i]`` onto cluster i % len(clusters), half of them in each
    region, each with its own release namespace ``<prefix>-<host>``."""
    hosts = {}
    for i in range(count):
        cluster = clusters[i % len(clusters)]
        hosts[host_name(i)] = {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
            "manent_api_server": "https://127.0.0.1:%d" % ports[i], "manent_ca_file": cluster.ca_file,
            "manent_token": cluster.vars["manent_token"], "region": REGIONS[0 if i < (count + 1) // 2 else 1],
            "deploy_namespace": "%s-%s" % (prefix, host_name(i))}
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"all": {"hosts": hosts}}, handle, sort_keys=False)
    return hosts


def extra_vars(workdir, artifact, forks):
    return {"deploy_application": "fleet", "deploy_environment": "bench", "deploy_create_namespace": True,
            "deploy_parallel": forks, "deploy_wait_timeout": "3m", "deploy_checkpoint_fields": ["version"],
            "deploy_artifact": artifact, "deploy_variables": {"REPLICAS": "1", "GREETING": "fleet"},
            "deploy_cache_dir": os.path.join(workdir, "cache"), "deploy_work_dir": os.path.join(workdir, "work"),
            "deploy_summary_file": os.path.join(workdir, "summary.json")}


# --------------------------------------------------------------------------- one measured playbook run


def tree_rss_of(pid):
    """RSS of one process in MiB (0 when it is gone)."""
    try:
        with open("/proc/%d/status" % pid, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return 0.0


def playbook(workdir, inventory, extra, forks, label, root=ROOT):
    """Run playbooks/deploy.yml of the checkout ``root`` once; returns the measurements of the run and its summary's
    targets."""
    vars_file = os.path.join(workdir, "extra-%s.json" % label)
    with open(vars_file, "w", encoding="utf-8") as handle:
        json.dump(extra, handle)
    if os.path.exists(extra["deploy_summary_file"]):
        os.unlink(extra["deploy_summary_file"])
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
               os.path.join(root, "playbooks", "deploy.yml"), "-e", "@" + vars_file, "-f", str(forks)]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(root, ".build", "collections"))
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    mine = time.process_time()
    started = time.monotonic()
    log_path = os.path.join(workdir, "%s.log" % label)
    with open(log_path, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
        sampler = Sampler(proc.pid, every=0.5)
        sampler.start()
        parent = 0.0
        while proc.poll() is None:
            parent = max(parent, tree_rss_of(proc.pid))
            if time.monotonic() - started > CAP:
                proc.kill()
            time.sleep(0.2)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler.stop.set()
    sampler.join()
    targets = summary_targets(extra["deploy_summary_file"])
    return {"rc": proc.returncode, "wall": round(wall, 2),
            "cpu": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
            "bench_cpu": round(time.process_time() - mine, 2),
            "pss_mib": round(sampler.peak_pss / 1024.0, 1), "parent_rss_mib": round(parent, 1),
            "processes": sampler.peak_count, "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2), "log": log_path,
            "statuses": sorted({t.get("status", "?") for t in targets}),
            "deploy_seconds": [t.get("seconds") for t in targets if isinstance(t.get("seconds"), (int, float))]}


# --------------------------------------------------------------------------- the reference commit


def recorded_results(commit):
    """The recorded raw results of ``commit`` (bench/runs/<date>-fleet-<commit>.json), as a path relative to the
    checkout; SystemExit when there is not exactly one."""
    found = sorted(name for name in os.listdir(RUNS) if name.endswith("-fleet-%s.json" % commit))
    if len(found) != 1:
        raise SystemExit("--reference %s: bench/runs/ holds %s fleet results of that commit (%s); give a commit whose "
                         "figures were recorded there by make bench-fleet" % (
                             commit, "no" if not found else len(found), ", ".join(found) or "none"))
    return os.path.relpath(os.path.join(RUNS, found[0]), ROOT)


class Reference:
    """A checkout of an earlier commit whose fleet figures bench/runs/ holds: a git worktree under the bench's output
    directory, with the collection link its playbooks need (.build/collections), removed at the end."""

    def __init__(self, commit, out):
        self.commit = commit
        self.recorded_path = recorded_results(commit)
        self.root = os.path.join(out, "reference-%s" % commit)
        self.remove()
        added = subprocess.run(["git", "worktree", "add", "--detach", "--force", self.root, commit], cwd=ROOT,
                               check=False, capture_output=True, text=True)
        if added.returncode != 0:
            raise SystemExit("--reference %s: git worktree add %s failed: %s" % (commit, self.root,
                                                                                 added.stderr.strip()))
        link = os.path.join(self.root, ".build", "collections", "ansible_collections", "manent", "kubernetes")
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(self.root, link)

    def remove(self):
        subprocess.run(["git", "worktree", "remove", "--force", self.root], cwd=ROOT, check=False, capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


# --------------------------------------------------------------------------- the bench


class Fleet:
    def __init__(self, args):
        self.args = args
        self.clusters = load_clusters(args.inventory)
        self.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix="fleet-", dir=self.out)
        self.artifacts = artifacts(self.workdir)
        biggest = max(self.sizes)
        self.proxies = [Proxy(("127.0.0.1", int(c.url.rsplit(":", 1)[1])), listen_port=args.proxy_base_port + i,
                              tls_dir=os.path.dirname(c.ca_file))
                        for i, c in ((i, self.clusters[i % len(self.clusters)]) for i in range(biggest))]
        self.group = ProxyGroup(self.proxies)
        self.results = []
        self.reference = Reference(args.reference, self.out) if args.reference else None

    def cell(self, size, scenario, run, inventory, hosts, artifact, root=None):
        extra = extra_vars(self.workdir, artifact, self.args.forks)
        counts = [p.stats["requests"] for p in self.proxies[:size]]
        label = "n%d-%s-r%d" % (size, scenario, run)
        got = playbook(self.workdir, inventory, extra, self.args.forks, label, root or os.path.abspath(self.args.root))
        requests = [p.stats["requests"] - c for p, c in zip(self.proxies[:size], counts)]
        got.update(size=size, scenario=scenario, run=run, hosts=len(hosts),
                   requests={"min": min(requests), "median": statistics.median(requests), "max": max(requests)})
        log("%-12s %3d clusters run %d: rc=%s %.1f s wall, %.1f CPU-s, %.0f MiB PSS, %.0f MiB parent, requests "
            "per cluster %s" % (scenario, size, run, got["rc"], got["wall"], got["cpu"], got["pss_mib"],
                                got["parent_rss_mib"], got["requests"]))
        if got["rc"] != 0:
            log("failed: see %s" % got["log"])
        self.results.append(got)
        self.save()
        return got

    def sequence(self, size, run):
        prefix = "fl%d-%s" % (run, os.path.basename(self.workdir)[-5:].lower().replace("_", "x"))
        inventory = os.path.join(self.workdir, "inventory-%d.yml" % size)
        hosts = write_inventory(inventory, self.clusters, [p.port for p in self.proxies], size, prefix)
        # Every sequence starts with the discovery cache empty: its install reads each cluster's discovery, and the
        # cells after it (minutes later) find it fresh. Otherwise a cell that came ten minutes after an earlier one on
        # the same proxies (the cache's time to live) refreshed it, and its request counts depended on the clock.
        shutil.rmtree(os.path.join(extra_vars(self.workdir, None, 0)["deploy_work_dir"], "discovery"),
                      ignore_errors=True)
        try:
            self.cell(size, "install", run, inventory, hosts, self.artifacts["sample"])
            if self.reference:
                self.pair(size, run, inventory, hosts)
            else:
                self.cell(size, "noop", run, inventory, hosts, self.artifacts["sample"])
            self.cell(size, "image", run, inventory, hosts, self.artifacts["sample-image"])
            if size == self.args.delay_at:
                for proxy in self.proxies[:size]:
                    proxy.set(delay_ms=DELAY_MS)
                try:
                    self.cell(size, "noop-50ms", run, inventory, hosts, self.artifacts["sample-image"])
                finally:
                    for proxy in self.proxies[:size]:
                        proxy.set(delay_ms=0)
            if size == self.args.big_at and run <= self.args.big_runs:
                self.cell(size, "install-300", run, inventory, hosts, self.artifacts["big"])
                self.cell(size, "noop-300", run, inventory, hosts, self.artifacts["big"])
        finally:
            self.clean([h["deploy_namespace"] for h in hosts.values()])

    def pair(self, size, run, inventory, hosts):
        """This code's nothing-changed redeploy and the reference commit's (REF_SCENARIO), one after the other:
        the machine's speed at that moment in the units of the reference's recorded figures. An unmeasured
        redeploy first lets the clusters settle after the install (the first nothing-changed redeploy after a first
        install of 100 clusters, measured first, took 2 s longer per cluster than the one after it), and the order
        alternates from run to run."""
        extra = extra_vars(self.workdir, self.artifacts["sample"], self.args.forks)
        settled = playbook(self.workdir, inventory, extra, self.args.forks, "n%d-settle-r%d" % (size, run),
                           os.path.abspath(self.args.root))
        log("settle       %3d clusters run %d: rc=%s %.1f s wall (not measured)" % (
            size, run, settled["rc"], settled["wall"]))
        cells = [("noop", None), (REF_SCENARIO, self.reference.root)]
        for scenario, root in (cells if run % 2 else cells[::-1]):
            self.cell(size, scenario, run, inventory, hosts, self.artifacts["sample"], root=root)

    def clean(self, namespaces):
        """Delete the namespaces of a sequence and wait until they are gone (not timed)."""
        start = time.monotonic()
        for cluster in self.clusters:
            for name in namespaces:
                cluster.request("DELETE", "/api/v1/namespaces/" + name)
        for cluster in self.clusters:
            for name in namespaces:
                cluster.delete_namespace(name, wait=300)
        log("deleted %d namespaces in %.0f s" % (len(namespaces), time.monotonic() - start))

    def save(self):
        write_results(self.meta, self.results, os.path.join(self.out, "fleet-results.json"))

    def run(self):
        self.meta = meta(self.args, self.clusters)
        if self.reference:
            self.meta["reference"] = {"commit": self.reference.commit, "recorded": self.reference.recorded_path}
        if self.args.big_at in self.sizes:
            for cluster in self.clusters:
                ensure_pod_room(cluster, 300 * self.args.big_at // len(self.clusters))
        self.group.start()
        try:
            for run in range(1, self.args.runs + 1):
                for size in self.sizes:
                    self.sequence(size, run)
        finally:
            self.group.stop()
            if self.reference:
                self.reference.remove()
        self.meta["finished"] = now()
        self.save()
        return self.results


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def meta(args, clusters):
    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.root, capture_output=True,
                                           text=True, check=False).stdout.strip()
    import ansible  # pylint: disable=import-outside-toplevel
    from ansible import release  # pylint: disable=import-outside-toplevel
    del ansible
    return {"started": now(), "commit": commit, "cpus": os.cpu_count(), "python": platform.python_version(),
            "ansible_core": release.__version__, "forks": args.forks, "clusters": [c.name for c in clusters],
            "api_servers": len(clusters), "runs": args.runs, "sizes": args.sizes,
            "command": "make bench-fleet" + (" FLEET_ARGS=%s" % shlex.quote(args.args_text) if args.args_text else ""),
            "load_at_start": list(os.getloadavg())}


# --------------------------------------------------------------------------- report


def medians(results):
    """{(size, scenario): {field: median over the runs that succeeded}}; the runs and failures counted."""
    cells = {}
    for r in results:
        cells.setdefault((r["size"], r["scenario"]), []).append(r)
    out = {}
    for key, runs in cells.items():
        ok = [r for r in runs if r["rc"] == 0]
        row = {"runs": len(ok), "failed": len(runs) - len(ok)}
        for field in ("wall", "cpu", "pss_mib", "parent_rss_mib", "bench_cpu", "load_before", "load_after"):
            row[field] = statistics.median([r[field] for r in ok]) if ok else None
        row["requests"] = statistics.median([r["requests"]["median"] for r in ok]) if ok else None
        # the most requests any cluster sent, median over the runs: as every field here, a run's own figure is
        # compared with the same run's (the one-cluster cell of one run against the 100-cluster cell of another
        # would count one run's discovery refresh as the fleet's cost)
        row["requests_max"] = statistics.median([r["requests"]["max"] for r in ok]) if ok else None
        seconds = [s for r in ok for s in r["deploy_seconds"]]
        row["deploy_median"] = statistics.median(seconds) if seconds else None
        row["deploy_max"] = max(seconds) if seconds else None
        out[key] = row
    return out


def _f(value, fmt="%.1f"):
    return "–" if value is None else fmt % value


def table(med):
    lines = ["| clusters | scenario | wall | controller CPU | CPU per cluster | peak memory (PSS, tree) | parent (RSS) "
             "| API requests per cluster | each cluster's deploy (median / max) | load before → after | runs |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    order = list(SCENARIO_TITLES)
    for (size, scenario) in sorted(med, key=lambda k: (k[0], order.index(k[1]) if k[1] in order else 99)):
        row = med[(size, scenario)]
        per = row["cpu"] / size if row["cpu"] is not None else None
        lines.append("| %d | %s | %s s | %s s | %s s | %s MiB | %s MiB | %s | %s / %s s | %s → %s | %d%s |" % (
            size, SCENARIO_TITLES.get(scenario, scenario), _f(row["wall"]), _f(row["cpu"]), _f(per, "%.2f"),
            _f(row["pss_mib"], "%.0f"), _f(row["parent_rss_mib"], "%.0f"), _f(row["requests"], "%g"),
            _f(row["deploy_median"]), _f(row["deploy_max"]), _f(row["load_before"]), _f(row["load_after"]),
            row["runs"], (" (%d failed)" % row["failed"]) if row["failed"] else ""))
    return lines


def slope(med, field, low, high, scenario="noop"):
    a, b = med.get((low, scenario), {}).get(field), med.get((high, scenario), {}).get(field)
    return (b - a) / (high - low) if a is not None and b is not None else None


def _target_values(med):
    """Issue 46's fleet targets measured in ``med`` (cells of medians, or of one run): (what, value, limit, format)."""
    wall100, wall10 = med.get((100, "noop"), {}).get("wall"), med.get((10, "noop"), {}).get("wall")
    one, hundred = med.get((1, "noop"), {}).get("requests"), med.get((100, "noop"), {}).get("requests_max")
    return [
        ("marginal controller CPU per cluster, nothing changed (slope 30 → 100 clusters)",
         slope(med, "cpu", 30, 100), 0.3, "%.2f CPU-s"),
        ("marginal memory per cluster, nothing changed (slope of the tree's peak PSS, 30 → 100)",
         slope(med, "pss_mib", 30, 100), 10, "%.1f MiB"),
        ("100 clusters, nothing changed, forks 50: wall", wall100, 25, "%.1f s"),
        ("wall(100) / wall(10), nothing changed", wall100 / wall10 if wall100 and wall10 else None, 5, "%.2f×"),
        ("API requests of each cluster, nothing changed: most of any cluster at 100 − one cluster alone",
         hundred - one if one is not None and hundred is not None else None, 0, "%+g")]


def targets(results, transform=None):
    """Issue 46's fleet targets, on the medians and on each run alone: a target is met only when every run that
    measured it met it (a median can hide a run over the limit). ``transform`` (cells of medians -> cells) is applied
    to the medians of all runs and to each run's before the targets are read from them (normalized())."""
    transform = transform or (lambda med: med)
    runs = sorted({r["run"] for r in results})
    per_run = [_target_values(transform(medians([r for r in results if r["run"] == run]))) for run in runs]
    rows = ["| target | median | %s | limit | |" % " | ".join("run %d" % run for run in runs),
            "|---|---|%s---|---|" % ("---|" * len(runs))]
    for index, (what, value, limit, shown) in enumerate(_target_values(transform(medians(results)))):
        values = [row[index][1] for row in per_run]
        measured = [(run, v) for run, v in zip(runs, values) if v is not None]
        over = ["run %d" % run for run, v in measured if v > limit]
        if value is None and not measured:
            verdict = "not measured"
        elif over:
            verdict = "**not met** (%s)" % ", ".join(over)
        elif value is not None and value > limit:
            verdict = "**not met** (median)"
        else:
            verdict = "met on every run" if len(runs) > 1 else "met"
        rows.append("| %s | %s | %s | %s | %s |" % (
            what, "–" if value is None else shown % value,
            " | ".join("–" if v is None else shown % v for v in values), limit, verdict))
    return rows


def _scaled(value, then, now):
    """``value`` measured when the reference measured ``now``, in the machine state in which it measured ``then``."""
    return value * then / now if None not in (value, then, now) and now > 0 else None


def normalized(med, recorded):
    """The nothing-changed cells of ``med`` in the machine state of the reference's recorded figures: each cell's wall
    and CPU multiplied by the reference's recorded median over its figure in the same run (REF_SCENARIO, next to
    this code's cell, on the same clusters and release). Memory and requests are left as measured: they do not follow
    the machine's speed. A cell without its reference (either one) gets no wall or CPU."""
    out = dict(med)
    for (size, scenario), row in med.items():
        if scenario != "noop":
            continue
        now, then = med.get((size, REF_SCENARIO)) or {}, recorded.get((size, "noop")) or {}
        out[(size, scenario)] = dict(row, cpu=_scaled(row["cpu"], then.get("cpu"), now.get("cpu")),
                                     wall=_scaled(row["wall"], then.get("wall"), now.get("wall")))
    return out


def _ratio(a, b):
    return a / b if a is not None and b else None


def speed_table(results, recorded, commit):
    """Per run and size: the reference commit now and as recorded, how much slower the machine is, and this code
    against the reference in the same run."""
    lines = ["| clusters | run | %s now: wall / CPU | %s recorded (median): wall / CPU | machine slower by (CPU) "
             "| this code ÷ %s, same run: wall / CPU |" % (commit, commit, commit), "|---:|---:|---:|---:|---:|---:|"]
    for run in sorted({r["run"] for r in results}):
        med = medians([r for r in results if r["run"] == run])
        for size in sorted(s for (s, scenario) in med if scenario == REF_SCENARIO):
            now, then, mine = med[(size, REF_SCENARIO)], recorded.get((size, "noop")) or {}, med.get((size, "noop"), {})
            lines.append("| %d | %d | %s / %s s | %s / %s s | %s× | %s / %s |" % (
                size, run, _f(now["wall"]), _f(now["cpu"]), _f(then.get("wall")), _f(then.get("cpu")),
                _f(_ratio(now["cpu"], then.get("cpu")), "%.2f"), _f(_ratio(mine.get("wall"), now["wall"]), "%.2f"),
                _f(_ratio(mine.get("cpu"), now["cpu"]), "%.2f")))
    return lines


def load_recorded(path):
    """(meta, cells of medians) of recorded raw results (a path relative to the checkout, or absolute)."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        data = json.load(handle)
    return data["meta"], medians(data["results"])


def reference_lines(meta_, results):
    """The targets in the reference's machine state and the speed table, when the run measured a reference."""
    reference = meta_.get("reference")
    if not reference or not any(r["scenario"] == REF_SCENARIO for r in results):
        return []
    then_meta, recorded = load_recorded(reference["recorded"])
    commit = reference["commit"]
    return ["### The same targets in the machine state of commit %s's recorded figures" % commit, "",
            "This shared machine's speed changes from day to day. Each run also redeployed the same release, nothing "
            "changed, with commit %s next to this code (scenario \"%s\" above; after an unmeasured redeploy that "
            "lets the clusters settle after the install, this code first in odd runs), whose figures were recorded "
            "on %s (%s: %s). Below, this code's nothing-changed wall and CPU are scaled by that commit's recorded "
            "figure over its figure in the same run, cell by cell; memory and requests as measured. Measured figures "
            "are the ones above; these say what they would have been in the machine state of the recorded run." % (
                commit, SCENARIO_TITLES[REF_SCENARIO], then_meta.get("started"), reference["recorded"],
                "medians of %s runs" % then_meta.get("runs")), ""] + \
        targets(results, lambda med: normalized(med, recorded)) + ["", "The reference in each run:", ""] + \
        speed_table(results, recorded, commit) + [""]


def plot(med, path, before=None):
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for scenario in ("install", "noop", "image"):
        sizes = sorted(s for (s, sc) in med if sc == scenario and s > 1 and med[(s, sc)]["wall"] is not None)
        for ax, field in zip(axes, ("wall", "cpu")):
            ax.plot(sizes, [med[(s, scenario)][field] for s in sizes], marker="o", label=SCENARIO_TITLES[scenario])
    if before:
        sizes = sorted(s for (s, sc) in before if sc == "noop" and s > 1 and before[(s, sc)]["wall"] is not None)
        for ax, field in zip(axes, ("wall", "cpu")):
            ax.plot(sizes, [before[(s, "noop")][field] for s in sizes], marker="x", linestyle="--", color="grey",
                    label="nothing changed, before (one run)")
    for ax, title in zip(axes, ("wall time (s)", "controller CPU (user + system, s)")):
        ax.set_xlabel("clusters (inventory hosts)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def section(meta_, results, before=None, notes=()):
    med = medians(results)
    lines = [BEGIN, "## Fleet: one controller, many clusters (`make bench-fleet`)", "",
             "Generated by `bench/fleet.py report` from bench/fleet-results.json, measured %s to %s on commit %s (%d "
             "cores shared with other work, Python %s, ansible-core %s). Reproduce: `%s` (it starts a dedicated "
             "cluster; run it on an otherwise idle machine)." % (
                 meta_.get("started"), meta_.get("finished", "?"), meta_.get("commit"), meta_.get("cpus", 0),
                 meta_.get("python"), meta_.get("ansible_core"), meta_.get("command")),
             "",
             "Each inventory host is its own cluster as the role sees it: its own API server URL (a loopback port of "
             "hack/tcpproxy.py, which counts the requests, in front of %d local API server(s)), its own release "
             "namespace (host variable) and history; 2 regions, so 2 waves. playbooks/deploy.yml as users run it, "
             "forks %s and deploy_parallel %s, deploy_checkpoint_fields [version]; the sample app (4 objects, one "
             "Deployment of 1 replica). Medians of %s runs; controller CPU is user + system of ansible-playbook and "
             "every process it waited for, peak memory the proportional set size of its process tree (pages shared "
             "by the forks counted once), parent the ansible-playbook process alone." % (
                 meta_.get("api_servers", 1), meta_.get("forks"), meta_.get("forks"), meta_.get("runs")), ""]
    lines += table(med) + ["", "![wall time and controller CPU against the number of clusters](docs/bench-fleet.png)",
                           "", "### Issue 46's fleet targets", ""] + targets(results) + [""]
    lines += reference_lines(meta_, results)
    if notes:
        lines += ["Notes:", ""] + ["- " + note for note in notes] + [""]
    if before:
        lines += ["### Before (the role at commit %s, %s)" % (before[0].get("commit"), before[0].get("started")), "",
                  "The same bench on the code before the per-cluster cuts, for comparison:", ""]
        lines += table(medians(before[1])) + [""]
    return lines + [END]


def splice(text, lines, begin=BEGIN, end=END):
    """BENCHMARKS.md with its section between ``begin`` and ``end`` (the fleet's) replaced, or appended when it has
    none."""
    block = "\n".join(lines)
    if begin in text and end in text:
        return text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def keep_section(old, new, begin=BEGIN, end=END):
    """``new`` (BENCHMARKS.md written by report.py) with the section of ``old`` between ``begin`` and ``end`` (the
    fleet's), when it has one."""
    if begin in old and end in old:
        return splice(new, old[old.index(begin):old.index(end) + len(end)].split("\n"), begin, end)
    return new


def cmd_report(args):
    with open(args.results, encoding="utf-8") as handle:
        data = json.load(handle)
    before = None
    if args.before:
        with open(args.before, encoding="utf-8") as handle:
            old = json.load(handle)
        before = (old["meta"], old["results"])
    med = medians(data["results"])
    md = os.path.join(ROOT, "BENCHMARKS.md")
    with open(md, encoding="utf-8") as handle:
        text = handle.read()
    with open(md, "w", encoding="utf-8") as handle:
        handle.write(splice(text, section(data["meta"], data["results"], before, data["meta"].get("notes") or args.note)))
    plot(med, os.path.join(ROOT, "docs", "bench-fleet.png"), medians(before[1]) if before else None)
    print("\n".join(table(med) + [""] + targets(data["results"]) + [""] + reference_lines(data["meta"], data["results"])))
    return 0


def cmd_run(args):
    fleet = Fleet(args)
    fleet.run()
    src = os.path.join(fleet.out, "fleet-results.json")
    if args.keep:
        with open(src, encoding="utf-8") as handle:
            data = json.load(handle)
        write_results(data["meta"], data["results"], KEPT)
        args.results, args.note = KEPT, []
        return cmd_report(args)
    print("\n".join(table(medians(fleet.results)) + [""] + targets(fleet.results) + [""]
                    + reference_lines(fleet.meta, fleet.results)))
    return 0


def cmd_serve(args):
    """Proxies and an inventory of --size hosts, until interrupted: for profiling one playbook run by hand."""
    clusters = load_clusters(args.inventory)
    proxies = [Proxy(("127.0.0.1", int(c.url.rsplit(":", 1)[1])), listen_port=args.proxy_base_port + i,
                     tls_dir=os.path.dirname(c.ca_file))
               for i, c in ((i, clusters[i % len(clusters)]) for i in range(args.size))]
    group = ProxyGroup(proxies)
    ports = group.start()
    inventory = os.path.abspath(args.write)
    write_inventory(inventory, clusters, ports, args.size, args.prefix)
    print("inventory: %s (%d hosts); interrupt or terminate to stop" % (inventory, args.size), flush=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM too (SIGINT is ignored under nohup)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        group.stop()
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--sizes", default="1,10,30,100")
    run.add_argument("--runs", type=int, default=3)
    run.add_argument("--forks", type=int, default=50)
    run.add_argument("--inventory", default="/tmp/fleet-cl/inventory.yml")
    run.add_argument("--proxy-base-port", type=int, default=18500)
    run.add_argument("--out", default=os.path.join(ROOT, ".build", "bench-fleet"))
    run.add_argument("--big-at", type=int, default=10, help="fleet size that also deploys the 300-object release")
    run.add_argument("--big-runs", type=int, default=1, help="runs that deploy the 300-object release (a first "
                     "install of 3,000 objects and 1,000 pods takes minutes)")
    run.add_argument("--delay-at", type=int, default=30, help="fleet size that also redeploys with 50 ms per round trip")
    run.add_argument("--root", default=ROOT, help="the checkout whose playbooks/deploy.yml and collection to run "
                     "(e.g. an older commit's, for comparison); its .build/collections must hold it")
    run.add_argument("--commit", help="the commit of --root, when it is no git checkout")
    run.add_argument("--keep", action="store_true", help="keep the results (bench/fleet-results.json) and report them")
    run.add_argument("--before", help="raw results of a run on older code, shown for comparison")
    run.add_argument("--reference", metavar="COMMIT", help="an earlier commit whose results bench/runs/ holds "
                     "(<date>-fleet-<COMMIT>.json): each run also redeploys with it, nothing changed, and the report "
                     "gives the targets in the machine state of its recorded figures")
    run.add_argument("--args-text", default="", help=argparse.SUPPRESS)
    report = sub.add_parser("report")
    report.add_argument("--results", default=KEPT)
    report.add_argument("--before", help="raw results of a run on older code, shown for comparison")
    report.add_argument("--note", action="append", default=[], help="a line for the Notes of the section")
    serve = sub.add_parser("serve")
    serve.add_argument("--size", type=int, default=10)
    serve.add_argument("--inventory", default="/tmp/fleet-cl/inventory.yml")
    serve.add_argument("--proxy-base-port", type=int, default=18500)
    serve.add_argument("--write", default="fleet-inventory.yml", help="the inventory to write")
    serve.add_argument("--prefix", default="fleet", help="namespaces: <prefix>-<host>")
    args = parser.parse_args(argv)
    return {"run": cmd_run, "report": cmd_report, "serve": cmd_serve}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
