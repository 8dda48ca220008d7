# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Loopback TCP proxy for fault injection (asyncio, standard library only).

Sits between a client and one API server and, controlled at run time, passes bytes through, delays
them (a fixed time per round trip), resets connections (after N bytes, or with a probability), refuses
new connections, or answers requests with HTTP 429 + Retry-After.

Byte mode (default) never looks inside TLS. HTTP mode (``--tls-dir <cluster dir>``) terminates TLS
with the cluster's own serving certificate (``serving.crt``/``serving.key`` written by
hack/clusters.py, valid for 127.0.0.1), re-originates TLS to the API server verified against
``ca.crt``, and can then answer single requests itself (429). Client certificates do not pass through
a terminating proxy: use bearer tokens in HTTP mode.

    python3 hack/tcpproxy.py --listen 19100 --target 127.0.0.1:17443 --delay-ms 50
    python3 hack/tcpproxy.py --listen 19100 --target 127.0.0.1:19000 --tls-dir /tmp/c/eu1a --control /tmp/ctl.json

The control file (JSON object) is re-read whenever its mtime changes (checked every 0.2 s); SIGHUP
forces a re-read. Keys (all optional; a missing key keeps its default):

    delay_ms            added per round trip (half on each direction), pure latency (no throughput limit)
    reset_after_bytes   abort (TCP RST) each connection after this many bytes in either direction
    reset_probability   per connection, chance of an abort at a random point within its first 64 KiB
    refuse              true: accept and immediately reset new connections (API server "down")
    close_after         stop listening once this many connections were accepted (later ones are refused by
                        the operating system, as by a server that went away); those accepted are served.
                        stats["closed_at"] is then the count of connections when it closed
    throttle_next       HTTP mode: answer the next N requests with 429 (decremented as used)
    throttle_probability HTTP mode: answer this fraction of requests with 429
    throttle_match      HTTP mode: only requests whose "METHOD /path" contains this string are throttled
    retry_after         HTTP mode: Retry-After seconds in the 429 answer (default 1)
    down_on_match       HTTP mode: the first request whose "METHOD /path" contains this string turns the
                        server "down": that request and every open connection are reset, ``refuse`` is set
    lose_response_next  HTTP mode: for the next N requests (matching lose_response_match, if set) forward the
                        request to the server, then reset the client's connection instead of passing the
                        answer: the request was handled, the client never learns it (a reset mid-request)
    lose_response_match HTTP mode: filter for lose_response_next ("METHOD /path" substring)

Importable: ``Proxy(target=("127.0.0.1", 17443)).start()`` runs it on a background thread and returns
its port; ``proxy.set(delay_ms=50)`` changes the behaviour; ``proxy.stats`` counts what it did.
"""

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import ssl
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pki  # noqa: E402  pylint: disable=wrong-import-position

DEFAULTS = {"delay_ms": 0, "reset_after_bytes": 0, "reset_probability": 0.0, "refuse": False, "close_after": 0,
            "throttle_next": 0, "throttle_probability": 0.0, "throttle_match": "", "retry_after": 1,
            "down_on_match": "", "lose_response_next": 0, "lose_response_match": ""}
CHUNK = 65536
MAX_HEAD = 1024 * 1024


class _Aborted(Exception):
    """The proxy decided to reset this connection."""


def _abort(writer):
    """Close with TCP RST (SO_LINGER 0) rather than FIN: what a crashed peer or middlebox looks like."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    transport = writer.transport
    try:
        transport.abort()
    except Exception:  # pylint: disable=broad-except
        pass


class Proxy:
    """One listening port forwarding to one target, with run-time controllable faults."""

    def __init__(self, target, listen_host="127.0.0.1", listen_port=0, tls_dir=None, control=None, seed=None):
        self.target = (target[0], int(target[1]))
        self.listen = (listen_host, int(listen_port))
        self.tls_dir = tls_dir
        self.control_path = control
        self.settings = dict(DEFAULTS)
        self.stats = {"connections": 0, "resets": 0, "refused": 0, "throttled": 0, "requests": 0, "bytes": 0,
                      "lost": 0, "closed_at": None}
        self.port = None
        self._lock = threading.Lock()
        self._rand = random.Random(seed)
        self._control_mtime = None
        self._loop = None
        self._server = None
        self._thread = None
        self._ready = threading.Event()
        self._writers = set()

    # ------------------------------------------------------------ control
    def set(self, **kw):
        """Change behaviour now; unknown keys are an error (typos must not silently do nothing)."""
        unknown = sorted(set(kw) - set(DEFAULTS))
        if unknown:
            raise ValueError("unknown proxy setting(s) %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(DEFAULTS))))
        with self._lock:
            self.settings.update(kw)

    def reset_settings(self):
        with self._lock:
            self.settings = dict(DEFAULTS)

    def get(self, key):
        with self._lock:
            return self.settings[key]

    def reload_control(self, force=False):
        if not self.control_path:
            return
        try:
            mtime = os.stat(self.control_path).st_mtime_ns
        except OSError:
            return
        if not force and mtime == self._control_mtime:
            return
        self._control_mtime = mtime
        try:
            with open(self.control_path, encoding="utf-8") as fh:
                data = json.load(fh) or {}
            new = dict(DEFAULTS)
            new.update({k: v for k, v in data.items() if k in DEFAULTS})
            with self._lock:
                self.settings = new
            print("tcpproxy: control %s" % json.dumps(new, sort_keys=True), file=sys.stderr, flush=True)
        except (OSError, ValueError) as e:
            print("tcpproxy: control file %s ignored: %s" % (self.control_path, e), file=sys.stderr, flush=True)

    def _count(self, key, n=1):
        with self._lock:
            self.stats[key] += n

    def _take_throttle(self, line):
        with self._lock:
            s = self.settings
            if s["throttle_match"] and s["throttle_match"] not in line:
                return None
            if s["throttle_next"] > 0:
                s["throttle_next"] -= 1
            elif not (s["throttle_probability"] and self._rand.random() < s["throttle_probability"]):
                return None
            self.stats["throttled"] += 1
            return s["retry_after"]

    def _take_lose(self, line):
        with self._lock:
            s = self.settings
            if s["lose_response_next"] <= 0 or (s["lose_response_match"] and s["lose_response_match"] not in line):
                return False
            s["lose_response_next"] -= 1
            self.stats["lost"] += 1
            return True

    def _take_down(self, line):
        with self._lock:
            match = self.settings["down_on_match"]
            if not match or match not in line:
                return False
            self.settings["down_on_match"] = ""
            self.settings["refuse"] = True
            self.stats["downed"] = line
        for w in list(self._writers):
            _abort(w)
        return True

    # ------------------------------------------------------------ connections
    def _budget(self):
        """Bytes this connection may carry before the proxy resets it (None: unlimited)."""
        with self._lock:
            after = self.settings["reset_after_bytes"]
            prob = self.settings["reset_probability"]
            if prob and self._rand.random() < prob:
                point = self._rand.randint(1, CHUNK)
                return point if not after else min(after, point)
            return after or None

    def _closing(self):
        """The connection just counted is the last one ``close_after`` lets in: stop listening now. True for a
        connection past it (accepted by the loop before the listener closed): it is refused."""
        limit = self.get("close_after")
        if not limit:
            return False
        with self._lock:
            count = self.stats["connections"]
            if count == limit:
                self.stats["closed_at"] = count
        if count == limit and self._server:
            self._server.close()
        return count > limit

    async def _handle(self, creader, cwriter):
        self._count("connections")
        if self.get("refuse") or self._closing():
            self._count("refused")
            _abort(cwriter)
            return
        try:
            if self.tls_dir:
                ctx = pki.client_context(os.path.join(self.tls_dir, "ca.crt"))
                sreader, swriter = await asyncio.open_connection(*self.target, ssl=ctx, server_hostname=self.target[0])
            else:
                sreader, swriter = await asyncio.open_connection(*self.target)
        except (OSError, ssl.SSLError):
            _abort(cwriter)
            return
        self._writers.update((cwriter, swriter))
        conn = {"budget": self._budget(), "done": False}
        up = self._http_pipe if self.tls_dir else self._pipe
        tasks = [asyncio.ensure_future(up(creader, swriter, cwriter, conn)),
                 asyncio.ensure_future(self._pipe(sreader, cwriter, None, conn))]
        try:
            _done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.wait(pending)
            aborted = any(not t.cancelled() and isinstance(t.exception(), _Aborted) for t in tasks)
            if aborted:
                self._count("resets")
                _abort(cwriter)
                _abort(swriter)
            else:
                for w in (cwriter, swriter):
                    try:
                        w.close()
                    except Exception:  # pylint: disable=broad-except
                        pass
        finally:
            for t in tasks:
                if not t.done():
                    t.cancel()
            self._writers.discard(cwriter)
            self._writers.discard(swriter)

    def _spend(self, conn, n):
        self._count("bytes", n)
        if conn["budget"] is not None:
            conn["budget"] -= n
            if conn["budget"] <= 0:
                raise _Aborted()

    async def _send(self, writer, data, conn):
        """Write after half the round-trip delay (latency, not throughput: writes are not serialized by it)."""
        delay = self.get("delay_ms") / 2000.0
        if delay:
            await asyncio.sleep(delay)
        self._spend(conn, len(data))
        writer.write(data)
        await writer.drain()

    async def _pipe(self, reader, writer, _reply, conn):
        """Copy one direction; with a delay, each chunk leaves delay/2 after it arrived (latency only)."""
        loop = asyncio.get_running_loop()
        queue = asyncio.Queue()

        async def _out():
            while True:
                due, data = await queue.get()
                if data is None:
                    return
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if conn.get("lose") and _reply is None:
                    raise _Aborted()  # the answer to a request whose response is to be lost
                self._spend(conn, len(data))
                writer.write(data)
                await writer.drain()

        sender = asyncio.ensure_future(_out())
        try:
            while True:
                read = asyncio.ensure_future(reader.read(CHUNK))
                await asyncio.wait({read, sender}, return_when=asyncio.FIRST_COMPLETED)
                if not read.done():
                    read.cancel()
                    break
                data = read.result()
                queue.put_nowait((loop.time() + self.get("delay_ms") / 2000.0, data or None))
                if not data:
                    break
            await sender
            try:
                if writer.can_write_eof():
                    writer.write_eof()
            except (OSError, RuntimeError):
                pass
        except (ConnectionError, ssl.SSLError, OSError):
            pass
        finally:
            if not sender.done():
                sender.cancel()
            conn["done"] = True

    async def _http_pipe(self, reader, swriter, cwriter, conn):
        """Client to server in HTTP mode: one request at a time (HTTP/1.1 clients do not pipeline)."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if len(head) > MAX_HEAD:
                    raise _Aborted()
                self._count("requests")
                first = head.split(b"\r\n", 1)[0].decode("latin-1")
                method_path = " ".join(first.split(" ")[:2])
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _sep, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip() or b"0")
                body = await reader.readexactly(length) if length else b""
                if self._take_down(method_path):
                    raise _Aborted()
                if self._take_lose(method_path):
                    conn["lose"] = True
                retry = self._take_throttle(method_path)
                if retry is not None:
                    msg = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 429,
                                      "reason": "TooManyRequests",
                                      "message": "tcpproxy: too many requests, please try again later",
                                      "details": {"retryAfterSeconds": int(retry)}}).encode()
                    await self._send(cwriter, (
                        "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: %s\r\n"
                        "Content-Length: %d\r\nConnection: close\r\n\r\n" % (retry, len(msg))).encode() + msg, conn)
                    conn["done"] = True
                    cwriter.close()
                    swriter.close()
                    return
                await self._send(swriter, head + body, conn)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError, OSError):
            pass
        try:
            if swriter.can_write_eof():
                swriter.write_eof()
        except (OSError, RuntimeError):
            pass

    # ------------------------------------------------------------ lifecycle
    async def _serve(self):
        ssl_ctx = None
        if self.tls_dir:
            ssl_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ssl_ctx.load_cert_chain(os.path.join(self.tls_dir, "serving.crt"), os.path.join(self.tls_dir, "serving.key"))
            ssl_ctx.set_alpn_protocols(["http/1.1"])
        self._server = await asyncio.start_server(self._handle, self.listen[0], self.listen[1], ssl=ssl_ctx,
                                                  limit=MAX_HEAD, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        self.reload_control(force=True)
        self._ready.set()
        while True:
            await asyncio.sleep(0.2)
            self.reload_control()

    def run(self):
        """Run in the current thread until interrupted (the CLI)."""
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.add_signal_handler(signal.SIGHUP, lambda: self.reload_control(force=True))
        except (NotImplementedError, RuntimeError, ValueError):
            pass
        self._main = self._loop.create_task(self._serve())
        try:
            self._loop.run_until_complete(self._main)
        except (asyncio.CancelledError, KeyboardInterrupt):
            pass
        finally:
            self._shutdown()

    def start(self, timeout=10):
        """Run on a daemon thread; returns the listening port."""
        def _target():
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            self._main = self._loop.create_task(self._serve())
            try:
                self._loop.run_until_complete(self._main)
            except (asyncio.CancelledError, Exception):  # pylint: disable=broad-except
                self._ready.set()
            finally:
                self._shutdown()
        self._thread = threading.Thread(target=_target, name="tcpproxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout) or self.port is None:
            raise RuntimeError("tcpproxy did not start listening on %s:%s" % self.listen)
        return self.port

    def _shutdown(self):
        """Cancel every connection task and close the loop (the thread then ends: nothing left running)."""
        pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    def drop_connections(self):
        """Reset every open connection now (e.g. to force clients onto new connections)."""
        def _do():
            for w in list(self._writers):
                _abort(w)
        if self._loop:
            self._loop.call_soon_threadsafe(_do)

    def _close(self):
        """On the loop's thread: stop listening, reset every connection, end the serving task."""
        if self._server:
            self._server.close()
        for w in list(self._writers):
            _abort(w)
        self._main.cancel()

    def stop(self):
        if not self._loop:
            return
        self._loop.call_soon_threadsafe(self._close)
        if self._thread:
            self._thread.join(10)

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls_dir else "tcp", self.port)


class ProxyGroup:
    """Many proxies on one event loop and one thread (a hundred proxies without a hundred threads): ``start()``
    listens on every proxy's port, ``stop()`` ends them all. Each proxy keeps its own settings and stats."""

    def __init__(self, proxies):
        self.proxies = list(proxies)
        self._loop = None
        self._thread = None

    def start(self, timeout=30):
        async def _all():
            await asyncio.gather(*(p._main for p in self.proxies))

        def _target():
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            for proxy in self.proxies:
                proxy._loop = self._loop
                proxy._main = self._loop.create_task(proxy._serve())
            try:
                self._loop.run_until_complete(_all())
            except (asyncio.CancelledError, Exception):  # pylint: disable=broad-except
                pass
            finally:
                self.proxies[0]._shutdown()  # one loop: closing it once ends every proxy's tasks
        self._thread = threading.Thread(target=_target, name="tcpproxy-group", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        for proxy in self.proxies:
            if not proxy._ready.wait(max(0.1, deadline - time.monotonic())) or proxy.port is None:
                raise RuntimeError("tcpproxy did not start listening on %s:%s" % proxy.listen)
        return [p.port for p in self.proxies]

    def stop(self):
        if not self._loop:
            return

        for proxy in self.proxies:
            self._loop.call_soon_threadsafe(proxy._close)
        self._thread.join(10)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--listen", default="127.0.0.1:0", help="[host:]port to listen on (default: a free port)")
    p.add_argument("--target", required=True, help="host:port of the API server")
    p.add_argument("--tls-dir", help="cluster directory of hack/clusters.py: terminate TLS, enable HTTP faults (429)")
    p.add_argument("--control", help="JSON control file, re-read when it changes")
    p.add_argument("--seed", type=int, help="random seed (reproducible resets/throttling)")
    for key, default in DEFAULTS.items():
        if isinstance(default, bool):
            p.add_argument("--" + key.replace("_", "-"), action="store_true")
        else:
            p.add_argument("--" + key.replace("_", "-"), type=type(default), default=default)
    args = p.parse_args(argv)
    host, _sep, port = args.listen.rpartition(":")
    thost, _sep, tport = args.target.rpartition(":")
    proxy = Proxy((thost or "127.0.0.1", int(tport)), listen_host=host or "127.0.0.1", listen_port=int(port),
                  tls_dir=args.tls_dir, control=args.control, seed=args.seed)
    proxy.set(**{k: getattr(args, k) for k in DEFAULTS})
    threading.Thread(target=lambda: (proxy._ready.wait(), print(
        "tcpproxy listening on 127.0.0.1:%d -> %s:%d" % (proxy.port, proxy.target[0], proxy.target[1]),
        flush=True)), daemon=True).start()
    try:
        proxy.run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
