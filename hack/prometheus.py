# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start and stop a real Prometheus for tests and by hand: the pinned server scraping synthetic traffic.

The traffic exporter (hack/traffic_exporter.py: http_requests_total and http_request_duration_seconds per
service and slot, steered over HTTP) and Prometheus (hack/build-tools.sh prometheus, PROMETHEUS_VERSION in
hack/versions.env) scraping it every second (scrape and evaluation interval 1 s), both on 127.0.0.1, the
server with its TSDB in <dir>/server/data (emptied by up and down) and --web.enable-lifecycle.

    python hack/prometheus.py up     [--dir .prometheus] [--port N] [--basic-auth USER:PASSWORD] [--bearer-token T]
    python hack/prometheus.py down   [--dir .prometheus]
    python hack/prometheus.py status [--dir .prometheus]

Run it with the virtualenv's python (`make prometheus`): the exporter runs with the same interpreter and needs
the prometheus-client package. `up` returns once Prometheus is ready and has scraped the exporter, and writes
<dir>/state.json (pids, ports, URLs); it reuses a healthy running set. The port is a free one of PORT_RANGE
(below the kernel's ephemeral ports) unless --port or MANENT_PROMETHEUS_PORT fixes it. --basic-auth makes
Prometheus require that user (--web.config.file with a bcrypt hash); --bearer-token (by hand only: a command
line is readable by every process) puts hack/bearer_proxy.py in front, whose URL then requires that token; one
of the two, not both.
The exporter starts with traffic on service "demo" (slots a and b); POST <exporter>/config changes it.

Importable: tests/integration/prometheus_helpers.py starts private instances with start_exporter,
start_prometheus, launch (a restart: same port, same data), start_bearer_proxy and stop.
"""

import argparse
import base64
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from clusters import _alive, cache_dir, versions  # pylint: disable=import-error

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
START_TIMEOUT = 60
JOB = "traffic"
DEMO_TRAFFIC = [
    {"service": "demo", "slot": "a", "rps": 10, "error_ratio": 0.01, "latency_seconds": 0.05},
    {"service": "demo", "slot": "b", "rps": 10, "error_ratio": 0.05, "latency_seconds": 0.12},
]


def binary(line="PROMETHEUS_VERSION"):
    """Path of the pinned prometheus of ``line`` (PROMETHEUS_VERSION, or PROMETHEUS_LTS_VERSION: 2.53); built by
    hack/build-tools.sh prometheus (prometheus-lts) when missing."""
    path = os.path.join(cache_dir(), "prometheus-%s" % versions()[line], "bin", "prometheus")
    if not os.path.exists(path):
        what = "prometheus-lts" if line == "PROMETHEUS_LTS_VERSION" else "prometheus"
        subprocess.run(["bash", os.path.join(HERE, "build-tools.sh"), what], check=True)
    return path


# Where a Prometheus port is picked: below the kernel's ephemeral range (net.ipv4.ip_local_port_range), so that
# neither an outgoing connection nor a process binding port 0 (the tests' HTTP stubs, the exporter, the bearer
# proxy) takes it while an instance is down for a restart; above the rig's fixed ports (clusters from 17443,
# delay proxies, fleet proxies and bench clusters up to about 20000).
PORT_RANGE = (21000, 32000)


class PortTaken(RuntimeError):
    """Another process answers at an instance's address: its port was taken while it was down."""


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(pick=random.SystemRandom().randrange):
    """A port of PORT_RANGE (below the ephemeral range) that nothing holds now."""
    low, high = PORT_RANGE[0], min(PORT_RANGE[1], _ephemeral_low())
    for _attempt in range(500):
        port = pick(low, high)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in %d-%d for prometheus" % (low, high))


def _spawn(d, name, argv):
    os.makedirs(os.path.join(d, "logs"), exist_ok=True)
    with open(os.path.join(d, "logs", name + ".log"), "ab") as log:
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True, cwd=d)
    return p.pid


def log_tail(d, name, lines=30):
    try:
        with open(os.path.join(d, "logs", name + ".log"), "rb") as f:
            return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child: its parent reaps it
        pass


def alive(pid):
    _reap(pid)
    return _alive(pid)


def stop(pid, timeout=20, sig=signal.SIGTERM):
    """Stop the process group of pid: ``sig``, then SIGKILL after ``timeout`` s; returns once it is gone."""
    try:
        os.killpg(pid, signal.SIGCONT)  # a paused process cannot act on SIGTERM
        os.killpg(pid, sig)
    except OSError:
        return
    deadline = time.time() + timeout
    while alive(pid) and time.time() < deadline:
        time.sleep(0.1)
    if alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        while alive(pid):
            time.sleep(0.05)


def _wait_ready_file(path, pid, what, d, deadline):
    while time.time() < deadline:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        if not alive(pid):
            break
        time.sleep(0.05)
    raise RuntimeError("%s did not start:\n%s" % (what, log_tail(d, what)))


def start_exporter(d, traffic=(), python=sys.executable):
    """Start hack/traffic_exporter.py in directory d; returns {"pid", "port", "url", "dir"}."""
    os.makedirs(d, exist_ok=True)
    ready = os.path.join(d, "exporter.ready")
    if os.path.exists(ready):
        os.unlink(ready)
    pid = _spawn(d, "exporter", [python, os.path.join(HERE, "traffic_exporter.py"), "--ready-file", ready,
                                 "--config", json.dumps(list(traffic))])
    port = _wait_ready_file(ready, pid, "exporter", d, time.time() + START_TIMEOUT)["port"]
    return {"pid": pid, "port": port, "url": "http://127.0.0.1:%d" % port, "dir": d}


def start_bearer_proxy(d, upstream, token, python=sys.executable):
    """Start hack/bearer_proxy.py in front of upstream (a URL); returns {"pid", "port", "url", "dir"}."""
    os.makedirs(d, exist_ok=True)
    token_file = os.path.join(d, "bearer.token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
        f.write(token)
    ready = os.path.join(d, "proxy.ready")
    if os.path.exists(ready):
        os.unlink(ready)
    pid = _spawn(d, "proxy", [python, os.path.join(HERE, "bearer_proxy.py"), "--upstream", upstream,
                              "--token-file", token_file, "--ready-file", ready])
    port = _wait_ready_file(ready, pid, "proxy", d, time.time() + START_TIMEOUT)["port"]
    return {"pid": pid, "port": port, "url": "http://127.0.0.1:%d" % port, "dir": d}


def write_config(d, targets, basic_auth=None):
    """prometheus.yml (one job scraping ``targets``, host:port strings, every second) and, with basic_auth
    (user, password), web.yml requiring it; returns the extra command-line flags."""
    lines = ["global:", "  scrape_interval: 1s", "  scrape_timeout: 1s", "  evaluation_interval: 1s",
             "scrape_configs:", "  - job_name: %s" % JOB, "    static_configs:",
             "      - targets: %s" % json.dumps(list(targets))]
    with open(os.path.join(d, "prometheus.yml"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    if not basic_auth:
        return []
    import bcrypt  # pylint: disable=import-outside-toplevel
    user, password = basic_auth
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=10)).decode()
    with open(os.path.join(d, "web.yml"), "w", encoding="utf-8") as f:
        f.write("basic_auth_users:\n  %s: %s\n" % (json.dumps(user), json.dumps(hashed)))
    return ["--web.config.file=" + os.path.join(d, "web.yml")]


def start_prometheus(d, targets, port=None, basic_auth=None, line="PROMETHEUS_VERSION"):
    """Start Prometheus in directory d (config, data, logs) scraping targets; returns once it is ready and has
    scraped them all: {"pid", "port", "url", "dir", "argv", "basic_auth": [user, password] or None}. Without
    a port a free one is picked (again if another process takes it first). ``line``: which pinned version
    (binary())."""
    os.makedirs(d, exist_ok=True)
    flags = write_config(d, targets, basic_auth)
    for attempt in range(3):
        chosen = port or free_port()
        inst = {"port": chosen, "url": "http://127.0.0.1:%d" % chosen, "dir": d, "targets": list(targets),
                "basic_auth": list(basic_auth) if basic_auth else None,
                "argv": [binary(line), "--config.file=" + os.path.join(d, "prometheus.yml"),
                         "--storage.tsdb.path=" + os.path.join(d, "data"), "--storage.tsdb.retention.time=1d",
                         "--web.listen-address=127.0.0.1:%d" % chosen, "--web.enable-lifecycle"] + flags}
        try:
            return launch(inst)
        except RuntimeError as e:
            if port or not (isinstance(e, PortTaken) or "address already in use" in str(e)) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def launch(inst, timeout=START_TIMEOUT):
    """Start the Prometheus process of ``inst`` (again: same port, config and data) and wait until it is ready
    and has scraped its targets; sets and returns inst with its new pid."""
    inst["pid"] = _spawn(inst["dir"], "prometheus", inst["argv"])
    deadline = time.time() + timeout
    try:
        wait_ready(inst, deadline)
        wait_scraped(inst, deadline)
    except BaseException:
        stop(inst["pid"])
        raise
    return inst


def _get(inst, path, timeout=5):
    req = urllib.request.Request(inst["url"] + path)
    if inst.get("basic_auth"):
        req.add_header("Authorization", "Basic " + base64.b64encode(":".join(inst["basic_auth"]).encode()).decode())
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def _check_alive(inst):
    if not alive(inst["pid"]):
        raise RuntimeError("prometheus exited during start (%s):\n%s" % (
            os.path.join(inst["dir"], "logs", "prometheus.log"), log_tail(inst["dir"], "prometheus")))


def _tsdb_path(inst):
    for arg in inst["argv"]:
        if arg.startswith("--storage.tsdb.path="):
            return arg.split("=", 1)[1]
    raise KeyError("--storage.tsdb.path")


def _check_ours(inst):
    """Raise PortTaken unless the server at inst's URL is inst's Prometheus (its --storage.tsdb.path): a process
    that took the port while it was down would otherwise answer for it, and inst's own would exit unseen."""
    ours = _tsdb_path(inst)
    try:
        theirs = json.loads(_get(inst, "/api/v1/status/flags")[1])["data"].get("storage.tsdb.path")
    except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        theirs = "(no answer to /api/v1/status/flags: %s)" % e
    if theirs != ours:
        raise PortTaken("another process answers at %s (storage.tsdb.path %s, not %s): its port was taken"
                        % (inst["url"], theirs, ours))


def wait_ready(inst, deadline):
    last = None
    while time.time() < deadline:
        try:
            if _get(inst, "/-/ready")[0] == 200:
                _check_ours(inst)
                return
        except (urllib.error.URLError, OSError) as e:
            last = e
        _check_alive(inst)
        time.sleep(0.2)
    raise RuntimeError("prometheus at %s not ready in time: %s\n%s" % (inst["url"], last,
                                                                       log_tail(inst["dir"], "prometheus")))


def wait_scraped(inst, deadline):
    """Until up{job="traffic"} is 1 for every target: each has been scraped once at least, successfully."""
    query = "/api/v1/query?" + urllib.parse.urlencode({"query": 'up{job="%s"} == 1' % JOB})
    last = None
    while time.time() < deadline:
        try:
            last = json.loads(_get(inst, query)[1])["data"]["result"]
            if len(last) >= len(inst["targets"]):
                return
        except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
            last = e
        _check_alive(inst)
        time.sleep(0.2)
    raise RuntimeError("prometheus at %s has not scraped %s in time (last answer: %s)" % (
        inst["url"], ", ".join(inst["targets"]), last))


def healthy(state):
    try:
        if not all(alive(part["pid"]) for part in _parts(state)):
            return False
        if _get({"url": state["exporter"]["url"]}, "/-/healthy")[0] != 200:
            return False
        return _get(state["prometheus"], "/-/ready")[0] == 200
    except (urllib.error.URLError, OSError, KeyError):
        return False


def _parts(state):
    return [state[k] for k in ("proxy", "prometheus", "exporter") if state.get(k)]


def load_state(root):
    try:
        with open(os.path.join(root, "state.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def save_state(root, state):
    path = os.path.join(root, "state.json")
    with open(os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
        json.dump(state, f, indent=1)
    os.replace(path + ".tmp", path)


def up(root, port=None, basic_auth=None, bearer_token=None):
    """Start exporter and Prometheus (and the bearer proxy) under root, or reuse a healthy running set;
    returns the state. Raises RuntimeError (with the log) when something does not start."""
    if basic_auth and bearer_token:
        raise ValueError("basic auth or a bearer token, not both: the bearer proxy passes no credentials on")
    root = os.path.abspath(root)
    state = load_state(root)
    if state and healthy(state):
        return state
    down(root)
    for part in ("exporter", "server", "proxy"):  # logs and data of an earlier set
        shutil.rmtree(os.path.join(root, part), ignore_errors=True)
    os.makedirs(root, exist_ok=True)
    state = {"created": time.time()}
    try:
        state["exporter"] = start_exporter(os.path.join(root, "exporter"), DEMO_TRAFFIC)
        save_state(root, state)
        state["prometheus"] = start_prometheus(os.path.join(root, "server"), ["127.0.0.1:%d" % state["exporter"]["port"]], port,
                                               basic_auth)
        save_state(root, state)
        if bearer_token:
            state["proxy"] = start_bearer_proxy(os.path.join(root, "proxy"), state["prometheus"]["url"], bearer_token)
            save_state(root, state)
    except BaseException:
        down(root)
        raise
    return state


def down(root):
    """Stop what root/state.json names and empty the TSDB; returns the number of processes stopped."""
    root = os.path.abspath(root)
    state = load_state(root)
    if not state:
        return 0
    parts = _parts(state)
    for part in parts:
        stop(part["pid"])
    shutil.rmtree(os.path.join(root, "server", "data"), ignore_errors=True)
    os.unlink(os.path.join(root, "state.json"))
    return len(parts)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("command", choices=("up", "down", "status"))
    p.add_argument("--dir", default=os.environ.get("MANENT_PROMETHEUS_DIR", os.path.join(ROOT, ".prometheus")))
    p.add_argument("--port", type=int, default=int(os.environ.get("MANENT_PROMETHEUS_PORT") or 0) or None,
                   help="Prometheus' port (default: a free one)")
    p.add_argument("--basic-auth", metavar="USER:PASSWORD", help="Prometheus requires this user")
    p.add_argument("--bearer-token", metavar="TOKEN", help="start hack/bearer_proxy.py in front, requiring TOKEN")
    args = p.parse_args(argv)
    if args.command == "down":
        print("stopped %d processes" % down(args.dir))
        return 0
    if args.command == "status":
        state = load_state(os.path.abspath(args.dir))
        ok = bool(state) and healthy(state)
        for name in ("exporter", "prometheus", "proxy"):
            if state and state.get(name):
                print("%-10s %-28s pid %d" % (name, state[name]["url"], state[name]["pid"]))
        print("ready" if ok else "NOT READY" if state else "not started")
        return 0 if ok else 1
    auth = tuple(args.basic_auth.split(":", 1)) if args.basic_auth else None
    if auth and len(auth) != 2:
        p.error("--basic-auth takes USER:PASSWORD")
    try:
        state = up(args.dir, args.port, auth, args.bearer_token)
    except (RuntimeError, ValueError) as e:
        print("prometheus rig start failed: %s" % e, file=sys.stderr)
        return 1
    print("exporter:   %s/metrics (POST /config to steer it)" % state["exporter"]["url"])
    print("prometheus: %s (%s)" % (state["prometheus"]["url"], os.path.join(state["prometheus"]["dir"], "logs")))
    if state.get("proxy"):
        print("bearer:     %s" % state["proxy"]["url"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
