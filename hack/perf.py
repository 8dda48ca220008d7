# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Performance measurements of the engine (docs/performance.md): generate a release of N objects, and time
the apply phase of a first install against a redeploy that changes nothing, with the requests counted.

    python hack/perf.py generate 300 > /tmp/app-300.yaml         # N/3 ConfigMaps, Services, Deployments
    python hack/perf.py engine --objects 300 [--inventory .clusters/inventory.yml] [--host eu1a]

``engine`` renders and deploys through module_utils (what manent_render + manent_apply do, without Ansible)
into a fresh namespace, waits off, then deletes the namespace. Run it with the test virtualenv and the
collection on the path (``ANSIBLE_COLLECTIONS_PATH=.build/collections``, see docs/performance.md).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import resource
import sys
import tempfile
import threading
import time
import uuid

import yaml

PAUSE = "registry.k8s.io/pause:3.10"


def objects(count, image=PAUSE):
    """``count`` objects: ConfigMaps, Services and Deployments in turn (a third each)."""
    out = []
    for i in range(count):
        name = "app-%04d" % (i // 3)
        kind = i % 3
        if kind == 0:
            out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                        "data": {"index": str(i), "greeting": "hello %d" % i}})
        elif kind == 1:
            out.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                        "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
        else:
            out.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
                        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                                 "template": {"metadata": {"labels": {"app": name}},
                                              "spec": {"containers": [{"name": "app", "image": image,
                                                                       "ports": [{"containerPort": 8080}]}]}}}})
    return out


NO_FAST_PATH = "nothing changed, fast path off"
RERUN = "same release again"  # the release in service redeployed as it is: no history write (the role's rerun)


class _NoFastPath:
    """An UnchangedFinder that finds nothing: every object goes to server-side apply (the cost before issue 13)."""

    def __init__(self, *_args, **_kw):
        pass

    def snapshot(self, _objects):
        return None

    def find(self, _objects, _snapshot=None):
        return set(), {}


class Counting:
    """A Kube whose requests are counted by method (nothing faked: every request goes to the server)."""

    def __init__(self, kube):
        self._kube = kube
        self.calls = collections.Counter()
        self.trace = []  # (start s, duration s, verb, path) of every request, in order of their ends
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self._kube, name)

    def request(self, method, path, **kw):
        query = kw.get("query") or {}
        what = method if method != "GET" else ("LIST" if "limit" in query or "labelSelector" in query else "GET")
        with self._lock:
            self.calls[what] += 1
        start = time.monotonic()
        try:
            return self._kube.request(method, path, **kw)
        finally:
            with self._lock:
                self.trace.append((start, time.monotonic() - start, what,
                                   path + ("?" + query["labelSelector"] if query.get("labelSelector") else "")))

    def get_json(self, path, **kw):
        return self.request("GET", path, **kw).data


def _print_trace(trace, t0, timings):
    """The requests of one run on stderr: when each started (s since the run started), how long it took, and
    which ran at the same time (a request that starts before the previous one ended overlaps it)."""
    print("requests (start s, duration ms, verb, path); phases %s" % (
        ", ".join("%s %.2f s" % item for item in sorted(timings.items()))), file=sys.stderr)
    for start, duration, verb, path in sorted(trace):
        print("  %6.3f %7.1f %-6s %s" % (start - t0, duration * 1000, verb, path[:200]), file=sys.stderr)


def _engine(args):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from tests.integration.conftest import _load_inventory  # noqa: E402 (the inventory reader of the tests)
    from ansible_collections.manent.kubernetes.plugins.module_utils.engine import apply as apply_module
    from ansible_collections.manent.kubernetes.plugins.module_utils.engine.apply import ApplyOptions
    from ansible_collections.manent.kubernetes.plugins.module_utils.engine.deploy import Deployer, DeployOptions
    from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery
    from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
    from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import (
        RenderOptions, default_deployment_id, render)

    finder = apply_module.UnchangedFinder
    apply_options = ApplyOptions(concurrency=args.concurrency) if args.concurrency else ApplyOptions()
    clusters = {c.name: c for c in _load_inventory(args.inventory)}
    cluster = clusters[args.host] if args.host else next(iter(clusters.values()))
    namespace = "perf-" + uuid.uuid4().hex[:8]
    key = ReleaseKey(application="perf", artifact="perf", environment="bench")
    cluster.create_namespace(namespace)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for run, (label, version, image) in enumerate((
                    ("first install", "1.0.0", PAUSE), (RERUN, "1.0.0", PAUSE), ("nothing changed", "1.0.1", PAUSE),
                    ("nothing changed (2)", "1.0.2", PAUSE), ("one image changed", "1.0.3", PAUSE + "-x"),
                    (NO_FAST_PATH, "1.0.4", PAUSE + "-x"))):
                objs = objects(args.objects)
                if image != PAUSE:
                    objs[2]["spec"]["template"]["spec"]["containers"][0]["image"] = image
                path = os.path.join(tmp, "app-%d.yaml" % run)
                with open(path, "w") as f:
                    yaml.safe_dump_all(objs, f, sort_keys=False)
                sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
                kube = Counting(cluster.kube)
                t0 = time.monotonic()
                discovery = Discovery(kube)
                options = RenderOptions(namespace=namespace, artifact_sha256=sha)
                bundle = render(path, Release(key, version, default_deployment_id(version, sha, options)), options,
                                discovery, kube.version())
                t1 = time.monotonic()
                deployer = Deployer(kube, discovery, DeployOptions(apply=apply_options, wait=False, prune=True))
                if label == NO_FAST_PATH:  # the same nothing-changed redeploy, every object server-side applied
                    apply_module.UnchangedFinder = _NoFastPath
                try:
                    result = deployer.deploy(bundle)
                finally:
                    apply_module.UnchangedFinder = finder
                t2 = time.monotonic()
                counts = collections.Counter(c.action for c in result.changes)
                rows.append((label, t1 - t0, result.timings.get("apply", 0.0), t2 - t1, dict(counts), dict(kube.calls)))
                if args.trace and label in (RERUN, "nothing changed (2)"):
                    print("%s:" % label, file=sys.stderr)
                    _print_trace(kube.trace, t0, result.timings)
    finally:
        cluster.delete_namespace(namespace)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("objects=%d cluster=%s peak_rss=%.0fMiB" % (args.objects, cluster.name, peak))
    print("| scenario | render s | apply phase s | deploy s | actions | requests |")
    print("|---|---|---|---|---|---|")
    for label, render_s, apply_s, deploy_s, counts, calls in rows:
        print("| %s | %.2f | %.2f | %.2f | %s | %s |" % (
            label, render_s, apply_s, deploy_s, ", ".join("%s %d" % kv for kv in sorted(counts.items())),
            ", ".join("%s %d" % kv for kv in sorted(calls.items()))))
    first = rows[0][2]
    fast = min(rows[2][2], rows[3][2])
    print("apply phase ratio nothing-changed/first-install: %.3f; nothing-changed/fast-path-off: %.3f"
          % (fast / first, fast / rows[5][2]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="print a multi-document manifest of N objects")
    gen.add_argument("count", type=int)
    gen.add_argument("--image", default=PAUSE)
    eng = sub.add_parser("engine", help="time first install and nothing-changed redeploys through module_utils")
    eng.add_argument("--objects", type=int, default=300)
    eng.add_argument("--inventory", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                         ".clusters", "inventory.yml"))
    eng.add_argument("--host", default="")
    eng.add_argument("--concurrency", type=int, default=0, help="objects applied at once (default: manent_apply's)")
    eng.add_argument("--trace", action="store_true", help="print every request of the same release again and of the second nothing-changed run")
    args = parser.parse_args(argv)
    if args.command == "generate":
        yaml.safe_dump_all(objects(args.count, args.image), sys.stdout, sort_keys=False)
    else:
        _engine(args)


if __name__ == "__main__":
    main()
