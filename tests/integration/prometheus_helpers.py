# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus test rig from a test's side: the shared instance, private ones, the traffic exporter.

hack/prometheus.py starts the processes (Prometheus scraping hack/traffic_exporter.py every second); this
module wraps them for tests (fixtures in conftest.py: ``prometheus``, ``traffic``, ``private_prometheus``):

- ``PrometheusRig`` (the session's shared set): ``url``, ``client`` (queries), ``exporter``, ``service()`` (a
  service label of its own for one test), ``start_private(directory, auth)``.
- ``Service``: one service label on the exporter; ``set("b", rps=20, error_ratio=0.2, latency_seconds=0.3)``.
- ``start_instance(directory, targets, line)``: a Prometheus a test owns scraping targets of its own, of either
  pinned version (the 2.53 LTS line too).
- ``Instance``: a Prometheus a test owns, scraping the shared exporter: ``stop()``, ``kill()``, ``pause()``,
  ``resume()``, ``start()`` (again, same URL and data), with basic auth or behind the bearer proxy.
- ``Client``: the HTTP API (``query``, ``query_raw``), ``wait_until`` polls a condition with a deadline.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import secrets
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.engine import wait

HACK = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "hack")
if HACK not in sys.path:
    sys.path.insert(0, HACK)
import prometheus as rig  # noqa: E402  pylint: disable=wrong-import-position,import-error

SLOTS = ("a", "b")


class PrometheusError(Exception):
    """An error answer of the HTTP API: ``status`` (HTTP), ``error_type`` (bad_data, ...), ``error``."""

    def __init__(self, status, body):
        self.status = status
        self.body = body
        self.error_type = body.get("errorType") if isinstance(body, dict) else None
        self.error = body.get("error") if isinstance(body, dict) else body
        super().__init__("HTTP %s %s: %s" % (status, self.error_type, self.error))


class Client:
    """The HTTP API of one Prometheus URL, optionally with basic auth (user, password) or a bearer token."""

    def __init__(self, url, basic_auth=None, bearer_token=None, timeout=10.0):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.headers = {}
        if basic_auth:
            self.headers["Authorization"] = "Basic " + base64.b64encode(":".join(basic_auth).encode()).decode()
        if bearer_token:
            self.headers["Authorization"] = "Bearer " + bearer_token

    def request(self, path, params=None, method="GET"):
        """(HTTP status, body: JSON decoded when it is JSON); 4xx/5xx are answers too. Network errors raise."""
        data = None
        url = self.url + path
        if params and method == "GET":
            url += "?" + urllib.parse.urlencode(params)
        elif params:
            data = urllib.parse.urlencode(params).encode()
        req = urllib.request.Request(url, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def query_raw(self, promql, **params):
        """POST /api/v1/query: (status, body) as they come."""
        return self.request("/api/v1/query", dict(params, query=promql), method="POST")

    def query(self, promql, **params):
        """The ``data`` of a successful instant query ({"resultType", "result"}); PrometheusError otherwise."""
        status, body = self.query_raw(promql, **params)
        if status != 200 or not isinstance(body, dict) or body.get("status") != "success":
            raise PrometheusError(status, body)
        return body["data"]

    def vector(self, promql):
        """The samples of an instant vector query as [(labels, float value)]."""
        data = self.query(promql)
        if data["resultType"] != "vector":
            raise PrometheusError(200, {"errorType": "test", "error": "not a vector: %s" % data})
        return [(s["metric"], float(s["value"][1])) for s in data["result"]]

    def scalar(self, promql):
        """The one value of a query answering a one-sample vector or a scalar; None for an empty vector."""
        data = self.query(promql)
        if data["resultType"] == "scalar":
            return float(data["result"][1])
        result = data["result"]
        if not result:
            return None
        if len(result) != 1:
            raise PrometheusError(200, {"errorType": "test", "error": "%d samples: %s" % (len(result), result)})
        return float(result[0]["value"][1])

    def ready(self):
        try:
            return self.request("/-/ready")[0] == 200
        except (urllib.error.URLError, OSError):
            return False


def wait_until(fetch, until=bool, timeout=120.0, interval=1.0, what="the condition"):
    """Poll ``fetch()`` until ``until(value)`` holds, then return that value; fail the test at the deadline naming
    ``what`` and the last value (or error) seen. ``until`` sees None for an empty vector (Client.scalar). For
    conditions on scraped data: the 30 s rate windows take up to half a minute to settle after a change."""
    seen = {}

    def attempt():
        try:
            seen["value"] = fetch()
        except (PrometheusError, urllib.error.URLError, OSError) as e:
            seen["value"] = e
            return False
        return bool(until(seen["value"]))

    if wait.poll(attempt, timeout, interval=interval):
        return seen["value"]
    pytest.fail("%s did not hold within %ss; last: %r" % (what, timeout, seen.get("value")), pytrace=False)
    return None


def within(low, high):
    """A predicate for wait_until: a number in (low, high]."""
    return lambda value: value is not None and low < value <= high


class Exporter:
    """The traffic exporter's control endpoint."""

    def __init__(self, url):
        self.url = url.rstrip("/")

    def _post(self, path, body):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise ValueError("exporter %s: HTTP %s %s" % (path, e.code, e.read().decode(errors="replace"))) from e

    def set(self, service, slot, **config):
        """Configure one slot (rps, error_ratio, error_code, latency_seconds, latency_spread); keys left out keep
        their value. Returns the slot's configuration."""
        return self._post("/config", dict(config, service=service, slot=slot))

    def reset(self, service=None):
        """Forget a service (None: every service): no more traffic, its series gone from /metrics."""
        return self._post("/reset", {"service": service} if service else {})

    def config(self):
        with urllib.request.urlopen(self.url + "/config", timeout=10) as r:
            return json.loads(r.read())["services"]


class Service:
    """One service label on the shared exporter, for one test: tests running at once do not meet."""

    def __init__(self, exporter, name):
        self.exporter = exporter
        self.name = name

    def set(self, slot, **config):
        return self.exporter.set(self.name, slot, **config)

    def reset(self):
        return self.exporter.reset(self.name)

    def selector(self, **labels):
        """A PromQL label matcher list for this service, e.g. selector(slot="b") -> service="svc-1",slot="b"."""
        labels = dict({"service": self.name}, **labels)
        return ",".join('%s="%s"' % (k, v) for k, v in labels.items())

    def error_ratio(self, slot="${slot}"):
        """The PromQL of this service's 5xx ratio in ``slot`` over ``${window}`` (0 without errors)."""
        svc = self.selector()
        return ('(sum(rate(http_requests_total{%s,slot="%s",code=~"5.."}[${window}])) or vector(0)) / '
                'sum(rate(http_requests_total{%s,slot="%s"}[${window}]))' % (svc, slot, svc, slot))


class Instance:
    """A Prometheus of one test (hack/prometheus.py start_prometheus), optionally behind the bearer proxy.

    ``url`` is what a client should use (the proxy's with auth="bearer"); ``client`` is authorized for it;
    ``basic_auth`` (user, password) or ``bearer_token`` are the credentials it requires."""

    def __init__(self, info, proxy=None, bearer_token=None):
        self.info = info
        self.proxy = proxy
        self.basic_auth = tuple(info["basic_auth"]) if info.get("basic_auth") else None
        self.bearer_token = bearer_token
        self.url = proxy["url"] if proxy else info["url"]
        self.prometheus_url = info["url"]
        self.client = Client(self.url, basic_auth=self.basic_auth, bearer_token=bearer_token)

    @property
    def running(self):
        return "pid" in self.info and rig.alive(self.info["pid"])

    def stop(self):
        """SIGTERM, as a shutdown: connections are then refused at its URL until start()."""
        rig.stop(self.info["pid"])

    def kill(self):
        """SIGKILL: gone at once, without a clean shutdown (start() replays its write-ahead log)."""
        rig.stop(self.info["pid"], sig=signal.SIGKILL)

    def pause(self):
        """SIGSTOP: the port still accepts connections, nothing answers (client timeouts) until resume()."""
        if not self.running:
            raise RuntimeError("prometheus %s is not running: nothing to pause" % self.info["url"])
        os.killpg(self.info["pid"], signal.SIGSTOP)

    def resume(self):
        os.killpg(self.info["pid"], signal.SIGCONT)

    def start(self, timeout=rig.START_TIMEOUT):
        """Start it again on the same port with the same data; returns once it has scraped again."""
        rig.launch(self.info, timeout)

    def close(self):
        for part in (self.proxy, self.info):
            if part and "pid" in part:
                rig.stop(part["pid"])


class PrometheusRig:
    """The shared exporter and Prometheus of the session (hack/prometheus.py up)."""

    def __init__(self, state):
        self.state = state
        self.url = state["prometheus"]["url"]
        self.client = Client(self.url)
        self.exporter = Exporter(state["exporter"]["url"])
        self.exporter_target = "127.0.0.1:%d" % state["exporter"]["port"]

    def service(self, prefix="svc"):
        """A service label no other test uses (its series exist once a slot gets traffic)."""
        return Service(self.exporter, "%s-%s" % (prefix, uuid.uuid4().hex[:10]))

    def start_private(self, directory, auth=None):
        """A Prometheus of its own in ``directory`` scraping the shared exporter, on a free port; ``auth``: None,
        "basic" (Prometheus requires a user and a random password) or "bearer" (hack/bearer_proxy.py in front,
        requiring a random token). Stop it with close()."""
        if auth not in (None, "basic", "bearer"):
            raise ValueError("auth: None, 'basic' or 'bearer', not %r" % (auth,))
        directory = str(directory)
        basic = ("manent", "pw-" + secrets.token_hex(16)) if auth == "basic" else None
        info = rig.start_prometheus(os.path.join(directory, "server"), [self.exporter_target], basic_auth=basic)
        if auth != "bearer":
            return Instance(info)
        token = "tok-" + secrets.token_hex(24)
        try:
            proxy = rig.start_bearer_proxy(os.path.join(directory, "proxy"), info["url"], token)
        except BaseException:
            rig.stop(info["pid"])
            raise
        return Instance(info, proxy, token)


def start_instance(directory, targets, line="PROMETHEUS_VERSION"):
    """A Prometheus of one test in ``directory`` scraping ``targets`` (host:port strings) every second, on a free
    port: the pinned version of ``line`` (hack/versions.env: PROMETHEUS_VERSION, or PROMETHEUS_LTS_VERSION for
    2.53), built when missing. Stop it with close()."""
    return Instance(rig.start_prometheus(str(directory), list(targets), line=line))


def start_shared(directory):
    """The shared rig under ``directory``: started by the first caller, reused by the others (pytest-xdist
    workers wait on a lock there). Returns (PrometheusRig, started); fails the session when it cannot start."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".fixture.lock"), "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = rig.load_state(directory)
        started = not (state and rig.healthy(state))
        if started:
            port = int(os.environ.get("MANENT_PROMETHEUS_PORT") or 0) or None
            try:
                state = rig.up(directory, port=port)
            except (RuntimeError, OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:
                pytest.fail("the Prometheus test rig did not start (hack/prometheus.py, logs in %s): %s"
                            % (directory, e), pytrace=False)
    return PrometheusRig(state), started


def stop_shared(directory):
    rig.down(directory)
