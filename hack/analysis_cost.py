# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one metric analysis costs the controller: a run of manent_analysis with 3 checks (an error ratio, a p99
latency, an error ratio against the stable slot) x 5 measurements, through `ansible localhost -m` as a playbook
task runs it, against a Prometheus of its own behind hack/bearer_proxy.py, which counts the queries it answers.

    python hack/analysis_cost.py [--runs 3] [--interval 2s]

Prints, per run and as medians: wall seconds, the CPU seconds of the whole ansible process tree (user + system),
the queries Prometheus answered, and the verdict; then the CPU seconds of the same command running
ansible.builtin.ping, the floor of any task. The analysis waits between measurements (``--interval``);
what it costs is the CPU seconds, not the wall time."""

import argparse
import json
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import prometheus as rig  # noqa: E402  pylint: disable=wrong-import-position,import-error

SERVICE = "cost"
WINDOW_SECONDS = 20


def checks():
    svc = 'service="%s"' % SERVICE
    ratio = ('(sum(rate(http_requests_total{%s,slot="${slot}",code=~"5.."}[${window}])) or vector(0)) / '
             'sum(rate(http_requests_total{%s,slot="${slot}"}[${window}]))' % (svc, svc))
    p99 = ('histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{%s,slot="${slot}"}'
           '[${window}])))' % svc)
    return [{"name": "error-ratio", "query": ratio, "max": 0.05},
            {"name": "p99", "query": p99, "max": 0.5},
            {"name": "error-ratio-vs-stable", "query": ratio, "baseline": {"max_factor": 1.5, "max_offset": 0.01}}]


def proxy_stats(url):
    with urllib.request.urlopen(url.rstrip("/") + "/-/bearer-proxy/stats", timeout=10) as answer:
        return json.loads(answer.read())


def one_run(url, token, interval):
    params = {"provider": {"url": url, "bearer_token": token}, "checks": checks(), "count": 5,
              "interval": interval, "min_window": "%ds" % WINDOW_SECONDS,
              "context": {"candidate_slot": "b", "stable_slot": "a", "namespace": "shop",
                          "start": int(time.time()) - WINDOW_SECONDS}}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_NOCOLOR="1")
    before_stats = proxy_stats(url)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-c", "local",
                          "-o", "-m", "manent.kubernetes.manent_analysis", "-a", json.dumps(params)],
                         env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    queries = proxy_stats(url)["authorized"] - before_stats["authorized"]
    line = next((l for l in out.stdout.splitlines() if l.startswith("localhost | ")), "")
    verdict = json.loads(line.split(" => ", 1)[1]).get("verdict") if " => " in line else out.stdout[-500:]
    return {"wall": wall, "cpu": cpu, "queries": queries, "verdict": verdict}


def floor():
    """CPU seconds of the same ansible command with a module that does nothing (ansible.builtin.ping)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-c", "local", "-o",
                    "-m", "ansible.builtin.ping"], capture_output=True, check=False,
                   env=dict(os.environ, ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING="0"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--interval", default="2s")
    args = parser.parse_args(argv)
    directory = tempfile.mkdtemp(prefix="manent-analysis-cost-")
    token = secrets.token_hex(16)
    try:
        state = rig.up(directory, bearer_token=token)
        exporter = state["exporter"]["url"]
        url = state["proxy"]["url"]
        for slot in ("a", "b"):
            body = json.dumps({"service": SERVICE, "slot": slot, "rps": 20, "error_ratio": 0.01,
                               "latency_seconds": 0.05}).encode()
            urllib.request.urlopen(urllib.request.Request(exporter + "/config", data=body, method="POST",
                                                          headers={"Content-Type": "application/json"}), timeout=10)
        time.sleep(WINDOW_SECONDS + 5)  # the window of the first measurement holds this traffic only
        runs = [one_run(url, token, args.interval) for _number in range(args.runs)]
    finally:
        rig.down(directory)
    for number, run in enumerate(runs, 1):
        print("run %d: wall %.1f s, controller CPU %.2f s, %d queries, verdict %s"
              % (number, run["wall"], run["cpu"], run["queries"], run["verdict"]))
    base = statistics.median(floor() for _number in range(args.runs))
    print("median: wall %.1f s, controller CPU %.2f s, %d queries (3 checks x 5 measurements); the same ansible "
          "command with ansible.builtin.ping: %.2f s CPU" % (statistics.median(r["wall"] for r in runs),
                                                             statistics.median(r["cpu"] for r in runs),
                                                             statistics.median(r["queries"] for r in runs), base))
    return 0 if all(r["verdict"] == "Successful" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
