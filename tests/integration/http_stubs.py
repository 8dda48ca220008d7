# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plain HTTP servers of a test on loopback, standing where Prometheus would be: a proxy's error page, another API,
a web page, a tiny exporter. ``serve(answer)`` runs one in a thread for a ``with`` block and yields its URL;
``answer(method, path, headers, body)`` returns (status, content type, body bytes) for every request."""

from __future__ import annotations

import contextlib
import http.server
import threading


def _handler(answer):
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            status, content_type, payload = answer(self.command, self.path, self.headers, body)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _answer  # noqa: N815  (http.server's names)

        def log_message(self, *_args):
            pass

    return Handler


@contextlib.contextmanager
def serve(answer):
    """A loopback HTTP server answering every request with ``answer``; yields its base URL, stopped after."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(answer))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
