# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Measure what one controller spends per cluster: run playbooks/deploy.yml (the sample "shop", 4 objects,
2 replicas) against the clusters of an inventory and sample the memory of the whole ansible-playbook process
tree (proportional set size, so pages shared between Ansible's forks count once) while it runs.

    python3 hack/clusters.py up --dir /tmp/scale6 --base-port 19500 \\
        --topology sc-1/sc-1a,sc-1/sc-1b,sc-1/sc-1c,sc-1/sc-1d,sc-1/sc-1e,sc-1/sc-1f
    python3 hack/scale.py --inventory /tmp/scale6/inventory.yml --limit sc1a,sc1b,sc1c --parallel 3
    python3 hack/scale.py --inventory /tmp/scale6/inventory.yml --parallel 6
    python3 hack/clusters.py down --dir /tmp/scale6

Prints one JSON line: clusters, forks, deploy_parallel, wall seconds, seconds per cluster, the CPU seconds of
the controller (user + system, the whole process tree), peak memory of the process tree and of the largest
single process (MiB), the most processes seen at once, and each cluster's deploy seconds from the role's
summary. Each run deploys into a fresh namespace (created by the deploy).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHOP = os.path.join(ROOT, "examples", "artifacts", "shop.yaml")


def _children():
    """{pid: parent pid} of every process."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as handle:
                out[int(name)] = int(handle.read().rsplit(") ", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return out


def _tree(root):
    parents = _children()
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return tree


def _kib(pid, field):
    """A field of /proc/<pid>/smaps_rollup (Pss, Rss) in KiB; 0 when the process is gone."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class Sampler(threading.Thread):
    def __init__(self, pid, every=0.2):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak_pss = self.peak_process = self.peak_count = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            tree = _tree(self.pid)
            pss = [_kib(pid, "Pss") for pid in tree]
            self.peak_pss = max(self.peak_pss, sum(pss))
            self.peak_process = max([self.peak_process] + [_kib(pid, "Rss") for pid in tree])
            self.peak_count = max(self.peak_count, len(tree))
            self.stop.wait(self.every)


def summary_targets(path):
    """The targets of the role's summary file (deploy_summary_file), [] when the run wrote none."""
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return json.load(handle).get("targets", [])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--limit", default="")
    parser.add_argument("--parallel", type=int, default=1, help="deploy_parallel")
    parser.add_argument("--forks", type=int, default=10)
    parser.add_argument("--namespace", default="")
    args = parser.parse_args(argv)

    work = tempfile.mkdtemp(prefix="manent-scale-")
    namespace = args.namespace or "scale-" + uuid.uuid4().hex[:8]
    with open(SHOP, "rb") as handle:
        import hashlib  # pylint: disable=import-outside-toplevel
        digest = hashlib.sha256(handle.read()).hexdigest()
    extra = {"deploy_application": "shop", "deploy_environment": "scale", "deploy_namespace": namespace,
             "deploy_create_namespace": True, "deploy_parallel": args.parallel, "deploy_wait_timeout": "3m",
             "deploy_artifact": {"type": "kubernetes", "name": "shop", "version": "1.0.0", "source": SHOP,
                                 "sha256": digest},
             "deploy_variables": {"REPLICAS": "2", "GREETING": "scale"},
             "deploy_cache_dir": os.path.join(work, "cache"), "deploy_work_dir": os.path.join(work, "work"),
             "deploy_summary_file": os.path.join(work, "summary.json")}
    vars_file = os.path.join(work, "extra.json")
    with open(vars_file, "w", encoding="utf-8") as handle:
        json.dump(extra, handle)
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", args.inventory,
               os.path.join(ROOT, "playbooks", "deploy.yml"), "-e", "@" + vars_file, "-f", str(args.forks)]
    if args.limit:
        command += ["-l", args.limit]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    started, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(work, "output.log"), "w", encoding="utf-8") as log:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        sampler = Sampler(proc.pid)
        sampler.start()
        rc = proc.wait()
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    sampler.stop.set()
    sampler.join()
    targets = summary_targets(extra["deploy_summary_file"])
    clusters = len(targets) or 1
    print(json.dumps({
        "rc": rc, "clusters": len(targets), "forks": args.forks, "deploy_parallel": args.parallel,
        "wall_seconds": round(wall, 1), "seconds_per_cluster": round(wall / clusters, 1),
        "controller_cpu_seconds": round(cpu, 1),
        "peak_tree_pss_mib": round(sampler.peak_pss / 1024.0, 1),
        "peak_process_rss_mib": round(sampler.peak_process / 1024.0, 1), "peak_processes": sampler.peak_count,
        "deploy_seconds": {t["host"]: t.get("seconds") for t in targets}, "namespace": namespace, "log": log.name}))
    return rc


if __name__ == "__main__":
    sys.exit(main())
