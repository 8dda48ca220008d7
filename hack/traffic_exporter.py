# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Synthetic HTTP traffic for the Prometheus test rig: metrics of made-up requests, steerable at run time.

For each service and slot it is told about it serves what an instrumented HTTP service would:

    http_requests_total{service, slot, code}               counter
    http_request_duration_seconds{service, slot}           histogram, buckets 5 ms to 10 s

and makes the requests up itself, in process (no network traffic): every 0.1 s each (service, slot) gets
rps x elapsed requests, of which a share error_ratio answered with error_code (spread evenly: every 5th at
0.2, so ratios settle within a few scrapes) and each observed with a latency drawn uniformly from
latency_seconds x (1 +- latency_spread). A series appears with its first request: a slot that never had
traffic has none (PromQL: an empty vector); a slot whose rps went to 0 keeps its series, unchanged (rate 0).

    python hack/traffic_exporter.py [--listen 127.0.0.1] [--port 0] [--ready-file F] [--config JSON]

--config is a JSON list of slot configurations as POST /config takes them. HTTP:

    GET  /metrics     the exposition (OpenMetrics or text, as the scraper asks)
    GET  /config      {"services": {service: {slot: configuration}}}
    POST /config      {"service": "checkout", "slot": "b", "rps": 20, "error_ratio": 0.2, "latency_seconds": 0.3}
                      keys left out keep their value (a new slot: the defaults); answers the slot's configuration
    POST /reset       {"service": "checkout"}, or {} for every service: its configuration and series are gone
    GET  /-/healthy   200

--ready-file gets {"pid": ..., "port": ...} once the port listens (written whole, then renamed).
Needs the prometheus-client package (requirements-dev.txt).
"""

import argparse
import json
import os
import random
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.exposition import choose_encoder

TICK = 0.1
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
DEFAULTS = {"rps": 0.0, "error_ratio": 0.0, "error_code": 500, "latency_seconds": 0.05, "latency_spread": 0.2}
LIMITS = {"rps": (0.0, 1000.0), "error_ratio": (0.0, 1.0), "error_code": (400, 599),
          "latency_seconds": (0.0, 60.0), "latency_spread": (0.0, 1.0)}
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,63}$")


class ConfigError(ValueError):
    pass


def validate(update, current=None):
    """The configuration of one slot after ``update`` (a dict of DEFAULTS' keys) over ``current``."""
    out = dict(current or DEFAULTS)
    unknown = sorted(set(update) - set(DEFAULTS))
    if unknown:
        raise ConfigError("unknown keys %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
    for key, value in update.items():
        low, high = LIMITS[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ConfigError("%s must be a number from %s to %s, not %r" % (key, low, high, value))
        out[key] = int(value) if key == "error_code" else float(value)
    return out


class _Slot:
    def __init__(self, config):
        self.config = config
        self.due = 0.0          # requests owed, fractional
        self.errors_due = 0.0   # errors owed, fractional
        self.codes = set()      # codes with a series


class Traffic:
    """The slots, their metrics and the generator; every method is safe across threads."""

    def __init__(self, seed=0):
        disable_created_metrics()  # no *_created series: only what the tests query
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("http_requests", "Requests served, by answer code.",
                                ("service", "slot", "code"), registry=self.registry)
        self.latency = Histogram("http_request_duration_seconds", "Time to answer a request.",
                                 ("service", "slot"), buckets=BUCKETS, registry=self.registry)
        self.slots = {}  # (service, slot) -> _Slot
        self.lock = threading.Lock()
        self.random = random.Random(seed)
        self.last = time.monotonic()

    def configure(self, body):
        service, slot = body.get("service"), body.get("slot")
        for what, value in (("service", service), ("slot", slot)):
            if not isinstance(value, str) or not NAME.match(value):
                raise ConfigError("%s must match %s, not %r" % (what, NAME.pattern, value))
        update = {k: v for k, v in body.items() if k not in ("service", "slot")}
        with self.lock:
            current = self.slots.get((service, slot))
            config = validate(update, current.config if current else None)
            if current:
                current.config = config
            else:
                self.slots[(service, slot)] = _Slot(config)
        return dict(config, service=service, slot=slot)

    def reset(self, service=None):
        with self.lock:
            for (name, slot) in [key for key in self.slots if service in (None, key[0])]:
                for code in self.slots.pop((name, slot)).codes:
                    self.requests.remove(name, slot, code)
                try:
                    self.latency.remove(name, slot)
                except KeyError:
                    pass

    def snapshot(self):
        with self.lock:
            services = {}
            for (service, slot), state in sorted(self.slots.items()):
                services.setdefault(service, {})[slot] = dict(state.config)
            return {"services": services}

    def tick(self, now):
        with self.lock:
            elapsed = min(max(now - self.last, 0.0), 5.0)  # after a stall, at most 5 s of requests at once
            self.last = now
            for (service, slot), state in self.slots.items():
                config = state.config
                state.due += config["rps"] * elapsed
                count = int(state.due)
                state.due -= count
                for _request in range(count):
                    state.errors_due += config["error_ratio"]
                    code = "200"
                    if state.errors_due >= 1.0 - 1e-9:
                        state.errors_due -= 1.0
                        code = str(config["error_code"])
                    state.codes.add(code)
                    self.requests.labels(service, slot, code).inc()
                    spread = config["latency_spread"] * self.random.uniform(-1.0, 1.0)
                    self.latency.labels(service, slot).observe(max(0.0, config["latency_seconds"] * (1.0 + spread)))

    def run(self, stop):
        while not stop.wait(TICK):
            self.tick(time.monotonic())


def handler(traffic):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status, body, content_type="application/json"):
            data = body if isinstance(body, bytes) else (json.dumps(body) + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ConfigError("the body must be a JSON object")
            return body

        def do_GET(self):  # noqa: N802 (http.server's name)
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
                with traffic.lock:
                    data = encoder(traffic.registry)
                self._send(200, data, content_type)
            elif path == "/config":
                self._send(200, traffic.snapshot())
            elif path == "/-/healthy":
                self._send(200, b"ok\n", "text/plain")
            else:
                self._send(404, {"error": "not found: %s" % path})

        def do_POST(self):  # noqa: N802
            path = self.path.split("?", 1)[0]
            try:
                body = self._body()
                if path == "/config":
                    self._send(200, traffic.configure(body))
                elif path == "/reset":
                    traffic.reset(body.get("service"))
                    self._send(200, traffic.snapshot())
                else:
                    self._send(404, {"error": "not found: %s" % path})
            except (ConfigError, ValueError) as e:
                self._send(400, {"error": str(e)})

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            if self.command != "GET":  # scrapes every second would drown the rest
                sys.stderr.write("%s %s\n" % (self.log_date_time_string(), format % args))

    return Handler


def _write_ready(path, port):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump({"pid": os.getpid(), "port": port}, f)
    os.replace(path + ".tmp", path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--listen", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0: a free port (see --ready-file)")
    p.add_argument("--ready-file", help="written with the pid and port once listening")
    p.add_argument("--config", default="[]", help="JSON list of slot configurations (as POST /config)")
    p.add_argument("--seed", type=int, default=0, help="of the latency draws")
    args = p.parse_args(argv)
    traffic = Traffic(args.seed)
    for body in json.loads(args.config):
        traffic.configure(body)
    server = ThreadingHTTPServer((args.listen, args.port), handler(traffic))
    server.daemon_threads = True
    stop = threading.Event()
    threading.Thread(target=traffic.run, args=(stop,), daemon=True, name="traffic").start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    port = server.server_address[1]
    if args.ready_file:
        _write_ready(args.ready_file, port)
    print("traffic exporter on http://%s:%d/metrics" % (args.listen, port), file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        stop.set()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
