# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plain HTTP servers of a test on loopback, standing where Prometheus would be: a proxy's error page, another API,
a web page, a tiny exporter. ``serve(answer)`` runs one in a thread for a ``with`` block and yields its URL;
``answer(method, path, headers, body)`` returns (status, content type, body bytes) for every request.

``echoing_proxy(seen)`` is such an answer: a proxy's 502 page that echoes the request's credentials near its top;
``leaked_pieces(text, values)`` the pieces of 8 characters of the values (as given, JSON, Python or HTML escaped)
that a text holds."""

from __future__ import annotations

import base64
import contextlib
import html
import http.server
import json
import threading

PIECE = 8


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
def serve(answer, port=0):
    """A loopback HTTP server answering every request with ``answer`` (on ``port``, else a free one); yields its
    base URL, stopped after."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _handler(answer))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def echoing_proxy(seen):
    """The answer of a proxy whose 502 page echoes, near its top, the request's Authorization header, the user and
    password of basic auth decoded (raw and HTML escaped) and the X-Api-Key header; ``seen`` (a list) gets each
    request's Authorization header."""
    def answer(_method, _path, headers, _body):
        authorization = headers.get("Authorization", "")
        decoded = base64.b64decode(authorization[6:]).decode() if authorization.startswith("Basic ") else ""
        seen.append(authorization)
        echoed = (authorization, headers.get("X-Api-Key", ""), decoded, html.escape(decoded))
        page = ("<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1>\n"
                "<pre>Authorization: %s\nX-Api-Key: %s\nuser: %s\nescaped: %s</pre>\n<p>upstream prometheus:9090 "
                "did not answer</p></body></html>" % echoed)
        return 502, "text/html", page.encode()
    return answer


def leaked_pieces(text, values):
    """The pieces of PIECE characters of ``values`` (as given, JSON, Python or HTML escaped) that ``text`` holds."""
    forms = {form for value in values for form in (value, json.dumps(value)[1:-1], repr(value)[1:-1],
                                                   html.escape(value))}
    return sorted({form[i:i + PIECE] for form in forms for i in range(len(form) - PIECE + 1)} & _windows(text))


def _windows(text):
    return {text[i:i + PIECE] for i in range(len(text) - PIECE + 1)}
