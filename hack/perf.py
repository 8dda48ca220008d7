# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Performance measurements of the engine (docs/performance.md): generate a release of N objects, and time
the apply phase of a first install against a redeploy that changes nothing, with the requests counted; or the
rollout wait observed (LIST + WATCH) against the rollout wait polled, side by side in one run.

    python hack/perf.py generate 300 > /tmp/app-300.yaml         # N/3 ConfigMaps, Services, Deployments
    python hack/perf.py engine --objects 300 [--inventory .clusters/inventory.yml] [--host eu1a]
    python hack/perf.py wait --objects 300,3000 --runs 3 [--inventory ...] [--host eu1a] [--quiet-seconds 30]
    python hack/perf.py wait --objects 300,3000 --runs 3 --together [--inventory ...]

``engine`` renders and deploys through module_utils (what manent_render + manent_apply do, without Ansible)
into a fresh namespace, waits off, then deletes the namespace. ``wait`` applies a release the same way (waits
off, untimed), then runs the deploy's rollout wait on it (engine/wait.py wait_for, as Deployer._wait calls it,
progress reports on) in one of two modes, alternating from run to run: ``poll`` (no watch: one LIST per kind and
namespace each second) and ``watch`` (the default since issue #45). The wait talks to the API server through
hack/tcpproxy.py, which counts every HTTP request (retries and WATCHes included) and byte; the process's CPU time
is measured too. Then, on the rolled-out release plus one Deployment that never becomes ready, a quiet wait of
``--quiet-seconds`` in each mode: requests per second when nothing changes. With ``--together`` both modes wait
for the same rollout at once, each through its own proxy: what each takes to see one rollout end, and what it
asks for meanwhile (the CPU time is the process's, shared: not shown). Run it with the test virtualenv and the
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
    """A Kube whose requests are counted by method (nothing faked: every request goes to the server); with
    ``by_resource``, by method and resource ("LIST pods", "WATCH deployments")."""

    def __init__(self, kube, by_resource=False):
        self._kube = kube
        self.by_resource = by_resource
        self.calls = collections.Counter()
        self.trace = []  # (start s, duration s, verb, path) of every request, in order of their ends
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self._kube, name)

    def request(self, method, path, **kw):
        query = kw.get("query") or {}
        what = method if method != "GET" else ("LIST" if "limit" in query or "labelSelector" in query else "GET")
        with self._lock:
            self.calls[self._key(what, path)] += 1
        start = time.monotonic()
        try:
            return self._kube.request(method, path, **kw)
        finally:
            with self._lock:
                self.trace.append((start, time.monotonic() - start, what,
                                   path + ("?" + query["labelSelector"] if query.get("labelSelector") else "")))

    def get_json(self, path, **kw):
        return self.request("GET", path, **kw).data

    def stream(self, path, **kw):
        with self._lock:
            self.calls[self._key("WATCH", path)] += 1
        return self._kube.stream(path, **kw)

    def _key(self, what, path):
        if not self.by_resource:
            return what
        parts = path.rstrip("/").split("/")
        return "%s %s" % (what, parts[-2] if what == "GET" else parts[-1])


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


def _room_for_pods(cluster, pods):
    """Add kwok nodes (copies of the first fake node, labelled perf.manent.io/wait) until ``pods`` pods fit."""
    nodes = cluster.kube.get_json("/api/v1/nodes")["items"]
    room = sum(int(n["status"].get("allocatable", {}).get("pods", "0")) for n in nodes)
    template = next(n for n in nodes if (n["metadata"].get("annotations") or {}).get("kwok.x-k8s.io/node") == "fake")
    names = {n["metadata"]["name"] for n in nodes}
    index = 0
    while room < pods:
        name = "kwok-perf-wait-%d" % index
        index += 1
        if name in names:
            continue
        meta = template["metadata"]
        labels = dict(meta["labels"], **{"kubernetes.io/hostname": name, "perf.manent.io/wait": "true"})
        status = {key: template["status"][key] for key in ("capacity", "allocatable")}
        cluster.kube.request("POST", "/api/v1/nodes", body={
            "apiVersion": "v1", "kind": "Node", "spec": {}, "status": status,
            "metadata": {"name": name, "labels": labels, "annotations": meta["annotations"]}})
        room += int(template["status"]["allocatable"]["pods"])


def _gone(cluster, namespace, timeout=600):
    """Delete ``namespace`` and wait until it is gone: the next run starts on a cluster that settled."""
    cluster.delete_namespace(namespace)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and cluster.get("v1", "Namespace", None, namespace) is not None:
        time.sleep(2)


class _Waits:
    """The deploy's rollout wait on ``objects``, through a counting proxy, in mode ``poll`` or ``watch``."""

    def __init__(self, cluster, proxy):
        from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
        self.cluster, self.proxy = cluster, proxy
        self.kube = Counting(Kube(cluster.connection(server="https://127.0.0.1:%d" % proxy.port)), by_resource=True)

    def run(self, objects, mode, timeout=900.0):
        """(entries or the WaitError, wall s, CPU s of this process, {verb: requests}, proxy requests, bytes)."""
        from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import WaitError
        from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery
        from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import LiveReader
        from ansible_collections.manent.kubernetes.plugins.module_utils.engine import stages
        from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import pods_of, wait_for
        reader = LiveReader(self.kube, Discovery(self.kube))
        reader.discovery.resources()  # discovery is read once per run, before any wait: not counted
        witness = stages.PodWitness(reader.get, lambda obj: pods_of(self.kube, obj), reader.read_many)
        self.kube.calls.clear()
        before, cpu, started = dict(self.proxy.stats), time.process_time(), time.monotonic()
        try:
            outcome = wait_for(objects, witness.fetch, list_pods=witness.list_pods, timeout=timeout,
                               on_progress=lambda _workloads: None, fetch_many=witness.fetch_many,
                               select=lambda obj: stages.waited_in(obj, stages.MAIN),
                               watch=reader if mode == "watch" else None)
        except WaitError as exc:
            outcome = exc
        return (outcome, time.monotonic() - started, time.process_time() - cpu, dict(self.kube.calls),
                self.proxy.stats["requests"] - before["requests"], self.proxy.stats["bytes"] - before["bytes"])


def _release(cluster, tmp, namespace, count, extra=()):
    """Apply ``count`` objects (and ``extra``) into ``namespace``, waits off; the bundle's objects."""
    from ansible_collections.manent.kubernetes.plugins.module_utils.engine.deploy import Deployer, DeployOptions
    from tests.integration.deploy_helpers import render_bundle
    bundle = render_bundle(cluster, tmp, objects(count) + list(extra), namespace)
    Deployer(cluster.kube, cluster.discovery, DeployOptions(wait=False)).deploy(bundle)
    return bundle.objects


def _row(objects_count, case, mode, measured):
    outcome, wall, cpu, calls, requests, size = measured
    cpu = "n/a" if cpu is None else "%.2f s" % cpu
    status = "timed out" if isinstance(outcome, Exception) and not outcome.permanent else \
        "failed: %s" % outcome.message[:80] if isinstance(outcome, Exception) else \
        "%d Current" % sum(1 for e in outcome if e["status"] == "Current")
    rate = "; %.2f per second" % (requests / wall) if case.startswith("quiet") else ""
    return "| %s | %s | %s | %.2f s | %d (%s%s) | %.1f MB | %s | %s |" % (
        objects_count, case, mode, wall, requests, ", ".join("%s %d" % kv for kv in sorted(calls.items())), rate,
        size / 1e6, cpu, status)


def _in_namespace(cluster, work):
    namespace = "perf-wait-" + uuid.uuid4().hex[:8]
    cluster.create_namespace(namespace)
    try:
        return work(namespace)
    finally:
        _gone(cluster, namespace)


def _size(cluster, waits, tmp, size, args):
    """The rows of one release size: the rollout wait in both modes, alternating which goes first, in fresh
    namespaces; then, once, a wait on the release when all is Current and a quiet wait (nothing changes). With
    ``--together``, both modes wait for the same rollout at once, each through its own proxy (``waits`` by mode):
    the difference in wall time is what each takes to see the end of one rollout."""
    from tests.integration.deploy_helpers import NEVER_READY, deployment
    rows = []

    def rollout(namespace, run, mode):
        objs = _release(cluster, tmp, namespace, size)
        return _row(size, "rollout (run %d)" % run, mode, waits[mode].run(objs, mode))

    def settled(namespace):
        objs = _release(cluster, tmp, namespace, size)
        waits["watch"].run(objs, "watch")
        out = [_row(size, "all Current", mode, waits[mode].run(objs, mode)) for mode in ("poll", "watch")]
        stuck = _release(cluster, tmp, namespace, size, [deployment("stuck", template_annotations=NEVER_READY)])
        return out + [_row(size, "quiet, %g s" % args.quiet_seconds, mode,
                           waits[mode].run(stuck, mode, timeout=args.quiet_seconds)) for mode in ("poll", "watch")]

    def together(namespace, run):
        objs, out = _release(cluster, tmp, namespace, size), {}
        threads = [threading.Thread(target=lambda m=mode: out.update({m: waits[m].run(objs, m)}))
                   for mode in ("poll", "watch")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return [_row(size, "the same rollout (run %d)" % run, mode, out[mode][:2] + (None,) + out[mode][3:])
                for mode in ("poll", "watch")]

    for run in range(1, args.runs + 1):
        if args.together:
            rows.extend(_in_namespace(cluster, lambda namespace, r=run: together(namespace, r)))
            print("\n".join(rows[-2:]), file=sys.stderr)
            continue
        for mode in (("poll", "watch") if run % 2 else ("watch", "poll")):
            rows.append(_in_namespace(cluster, lambda namespace, r=run, m=mode: rollout(namespace, r, m)))
            print(rows[-1], file=sys.stderr)
    if not args.together:
        rows.extend(_in_namespace(cluster, settled))
    return rows


def _wait_modes(args):
    import tcpproxy  # pylint: disable=import-outside-toplevel,import-error  # hack/, beside this file
    import pathlib  # pylint: disable=import-outside-toplevel
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    from tests.integration.conftest import _load_inventory  # noqa: E402 (the inventory reader of the tests)
    clusters = {c.name: c for c in _load_inventory(args.inventory)}
    cluster = clusters[args.host] if args.host else next(iter(clusters.values()))
    sizes = [int(size) for size in args.objects.split(",")]
    _room_for_pods(cluster, 2 * max(sizes) // 3 + 60)
    proxies = {mode: tcpproxy.Proxy(("127.0.0.1", int(cluster.url.rsplit(":", 1)[1])), tls_dir=cluster.dir)
               for mode in ("poll", "watch")}
    for proxy in proxies.values():
        proxy.start()
    rows, started = [], time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for size in sizes:
                waits = {mode: _Waits(cluster, proxies[mode]) for mode in proxies}
                rows.extend(_size(cluster, waits, pathlib.Path(tmp), size, args))
    finally:
        for proxy in proxies.values():
            proxy.stop()
    print("cluster=%s objects=%s runs=%d started=%s load=%s" % (
        cluster.name, args.objects, args.runs, started, " ".join("%.1f" % v for v in os.getloadavg())))
    print("| objects | case | mode | wait | requests (by verb) | received + sent | CPU (this process) | outcome |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


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
    wait = sub.add_parser("wait", help="the rollout wait observed against polled, requests counted")
    wait.add_argument("--objects", default="300,3000", help="release sizes, comma separated (a third Deployments)")
    wait.add_argument("--runs", type=int, default=3)
    wait.add_argument("--quiet-seconds", type=float, default=30.0)
    wait.add_argument("--together", action="store_true",
                      help="both modes wait for the same rollout at once (no Current or quiet cases)")
    wait.add_argument("--inventory", default=eng.get_default("inventory"))
    wait.add_argument("--host", default="")
    args = parser.parse_args(argv)
    if args.command == "generate":
        yaml.safe_dump_all(objects(args.count, args.image), sys.stdout, sort_keys=False)
    elif args.command == "wait":
        _wait_modes(args)
    else:
        _engine(args)


if __name__ == "__main__":
    main()
