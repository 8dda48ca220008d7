# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A bearer-token front for a test Prometheus: the reverse proxy of a gateway that checks tokens.

Prometheus' own web server knows basic authentication (--web.config.file), not bearer tokens. This proxy
answers a request carrying ``Authorization: Bearer <the token>`` with Prometheus' answer (the Authorization
header is not passed on) and any other with 401 and ``WWW-Authenticate: Bearer``. It counts both:
``GET /-/bearer-proxy/stats`` (no token needed, not passed on) answers {"authorized": n, "refused": n}.
Its log names method, path and status, never a header.

    python hack/bearer_proxy.py --upstream http://127.0.0.1:19090 --token-file F [--port 0] [--ready-file F]

The token is read from a file (not the command line, which other processes can read).
"""

import argparse
import hmac
import json
import os
import signal
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization",
              "proxy-authenticate", "authorization", "host", "content-length"}
STATS = "/-/bearer-proxy/stats"


def authorized(header, token):
    """Whether an Authorization header value carries the bearer token (the scheme in any case, RFC 7235)."""
    scheme, _sep, credentials = (header or "").strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(credentials.strip().encode(), token.encode())


def handler(upstream, token, stats, lock):

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status, headers, body):
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in HOP_BY_HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _count(self, what):
            with lock:
                stats[what] += 1

        def _proxy(self):
            if self.path == STATS:
                with lock:
                    body = json.dumps(stats).encode()
                return self._send(200, [("Content-Type", "application/json")], body)
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length else None
            if not authorized(self.headers.get("Authorization"), token):
                self._count("refused")
                body = b'{"status":"error","errorType":"unauthorized","error":"a valid bearer token is required"}\n'
                return self._send(401, [("Content-Type", "application/json"),
                                        ("WWW-Authenticate", 'Bearer realm="prometheus"')], body)
            self._count("authorized")
            req = urllib.request.Request(upstream + self.path, data=data, method=self.command)
            for name, value in self.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    req.add_header(name, value)
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    return self._send(r.status, r.getheaders(), r.read())
            except urllib.error.HTTPError as e:  # Prometheus' own 4xx/5xx answers pass through as they are
                return self._send(e.code, e.headers.items(), e.read())
            except (urllib.error.URLError, OSError) as e:
                return self._send(502, [("Content-Type", "text/plain")], ("upstream: %s\n" % e).encode())

        do_GET = do_POST = _proxy  # noqa: N815 (http.server's names)

        def log_message(self, format, *args):  # pylint: disable=redefined-builtin
            sys.stderr.write("%s %s %s %s\n" % (self.log_date_time_string(), self.command,
                                                self.path.split("?", 1)[0], args[1] if len(args) > 1 else ""))

    return Handler


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--upstream", required=True, help="Prometheus' URL, e.g. http://127.0.0.1:19090")
    p.add_argument("--token-file", required=True)
    p.add_argument("--listen", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0: a free port (see --ready-file)")
    p.add_argument("--ready-file", help="written with the pid and port once listening")
    args = p.parse_args(argv)
    with open(args.token_file, encoding="utf-8") as f:
        token = f.read().strip()
    if not token:
        p.error("the token file is empty")
    server = ThreadingHTTPServer((args.listen, args.port),
                                 handler(args.upstream.rstrip("/"), token, {"authorized": 0, "refused": 0},
                                         threading.Lock()))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    port = server.server_address[1]
    if args.ready_file:
        with open(args.ready_file + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"pid": os.getpid(), "port": port}, f)
        os.replace(args.ready_file + ".tmp", args.ready_file)
    print("bearer proxy on http://%s:%d -> %s" % (args.listen, port, args.upstream), file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
