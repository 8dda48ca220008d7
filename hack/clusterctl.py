# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stop and start ONE process of a local cluster of hack/clusters.py (fault injection).

    python3 hack/clusterctl.py stop  --dir /tmp/c eu1a kube-apiserver      # SIGKILL (default) or --signal TERM
    python3 hack/clusterctl.py start --dir /tmp/c eu1a kube-apiserver      # same command line, waits for /readyz
    python3 hack/clusterctl.py bounce --dir /tmp/c eu1a etcd --down 3      # stop, wait, start

The process is started again with the command line hack/clusters.py uses (same ports, data dir and
certificates); state.json is updated with the new pid so `clusters.py down` still stops everything.
Only for clusters you started yourself (never the shared ones).
"""

import argparse
import contextlib
import fcntl
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusters  # noqa: E402  pylint: disable=wrong-import-position

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


_LOCK = threading.Lock()


@contextlib.contextmanager
def _state_locked(root):
    """Hold state.json for a read-modify-write: other threads of this process and other processes wait (two
    restarts at once on different clusters would otherwise each write back the other's old pid)."""
    with _LOCK, open(os.path.join(root, "state.lock"), "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _cluster(root, name):
    state = clusters.load_state(os.path.abspath(root))
    if not state:
        raise RuntimeError("no clusters in %s" % root)
    for c in state["clusters"]:
        if c["name"] == name:
            return state, c
    raise RuntimeError("no cluster %s in %s (have: %s)" % (name, root, ", ".join(c["name"] for c in state["clusters"])))


def _check(component):
    if component not in COMPONENTS:
        raise ValueError("unknown component %r (one of %s)" % (component, ", ".join(COMPONENTS)))


def stop(root, name, component, sig=signal.SIGKILL, timeout=20):
    """Kill one process (its process group) and wait until it is gone; returns its pid."""
    _check(component)
    with _state_locked(os.path.abspath(root)):
        _state, c = _cluster(root, name)
    pid = c["pids"][component]
    try:
        os.killpg(pid, sig)
    except OSError:
        pass
    deadline = time.monotonic() + timeout
    while clusters._alive(pid):  # pylint: disable=protected-access
        try:  # reap this child only: waitpid(-1) could take the exit status of another thread's subprocess
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child (started by another process): _alive sees it go
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("%s of %s (pid %d) still running %ss after signal %s" % (component, name, pid, timeout, sig))
        time.sleep(0.05)
    return pid


def start(root, name, component, wait=True, timeout=120):
    """Start one process again with its usual command line; returns the new pid."""
    _check(component)
    root = os.path.abspath(root)
    with _state_locked(root):
        state, c = _cluster(root, name)
        if clusters._alive(c["pids"].get(component, 0) or 0):  # pylint: disable=protected-access
            return c["pids"][component]
        argv = dict(clusters.cluster_processes(clusters.binaries(), c["dir"], c["ports"], c["url"],
                                               c.get("controller_qps")))[component]
        pid = clusters.spawn(c["dir"], component, argv)
        c["pids"][component] = pid
        clusters.save_state(root, state)
    if wait and component in ("etcd", "kube-apiserver"):
        clusters.wait_ready(c, time.time() + timeout)
    return pid


def bounce(root, name, component, down=3.0, sig=signal.SIGKILL):
    stop(root, name, component, sig)
    time.sleep(down)
    return start(root, name, component)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("command", choices=("stop", "start", "bounce"))
    p.add_argument("cluster")
    p.add_argument("component", choices=COMPONENTS)
    p.add_argument("--dir", required=True)
    p.add_argument("--signal", default="KILL", help="signal for stop/bounce (KILL, TERM, STOP)")
    p.add_argument("--down", type=float, default=3.0, help="bounce: seconds between stop and start")
    args = p.parse_args(argv)
    try:
        return _run(args)
    except RuntimeError as exc:
        print("clusterctl: %s" % exc, file=sys.stderr)
        return 1


def _run(args):
    sig = getattr(signal, "SIG" + args.signal.upper())
    if args.command == "stop":
        print(stop(args.dir, args.cluster, args.component, sig))
    elif args.command == "start":
        print(start(args.dir, args.cluster, args.component))
    else:
        print(bounce(args.dir, args.cluster, args.component, args.down, sig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
