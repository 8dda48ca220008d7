# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection to one cluster's API server: credentials, TLS, one HTTP path for every call.

Built on the official ``kubernetes`` client's REST layer (its configured urllib3 pool: TLS
verification, client certificates, connection reuse across threads). Every call goes through
``Kube.request``, which

- sends JSON bodies and parses JSON answers,
- collects the API server's ``Warning`` headers (deprecated APIs, unknown fields),
- retries transient failures (429 with Retry-After, 500/502/503/504, connection resets,
  timeouts) with bounded exponential backoff under one policy (:func:`retry_safe`, ``retry_time``),
  and never retries permanent ones (400, 401, 403, 404, 409, 422, ...),
- turns error statuses into typed errors whose message is the server's own (which names the
  verb, resource, namespace and user for 403s) plus the field paths of 422 causes.

Credentials are never put in messages or results. Values may be given inline, as ``file:/path``
or ``env:NAME`` references (e.g. the in-cluster service-account token
``file:/var/run/secrets/kubernetes.io/serviceaccount/token``), or come from a kubeconfig context (kubeconfig.py)
whose credential may change during the run: a ``tokenFile`` read again, an ``exec`` plugin run again before its
credential expires (exec_credentials.py). Every request then sends the current credential, and a 401 renews it
once and repeats the request (the request was refused before it was handled: repeating it is safe for any verb).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import socket
import ssl
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace

from ansible_collections.manent.kubernetes.plugins.module_utils.base.credentials import resolve_secret
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ApiError, ConflictError, InputError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import CONCURRENCY
from ansible_collections.manent.kubernetes.plugins.module_utils.base.tls import CertificateFileError, verifying_context


def _defer_package_init(name):
    """Registers package ``name`` without running its ``__init__`` until something reads an attribute it does
    not have yet (PEP 562 ``__getattr__``): its submodules import as usual. The ``kubernetes`` package's
    ``__init__`` imports every part of the client (kubeconfig loader with pydantic and requests-oauthlib,
    watch, stream, dynamic, leader election...): 0.25-0.3 s per process, of which manent uses only the REST
    layer. Code that later reads ``kubernetes.config`` or ``kubernetes.__version__`` gets the whole package,
    initialized then, as a plain import would have given it. Nothing is done when the package is already
    imported or is not an ordinary package on disk."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    package = importlib.util.module_from_spec(spec)
    lock = threading.RLock()
    pending = [True]

    def complete(attribute):
        with lock:
            if pending:
                pending.pop()
                del package.__dict__["__getattr__"]
                spec.loader.exec_module(package)
        try:
            return package.__dict__[attribute]
        except KeyError:
            raise AttributeError("module %r has no attribute %r" % (name, attribute)) from None

    package.__getattr__ = complete
    sys.modules[name] = package


try:
    _defer_package_init("kubernetes")
    from kubernetes.client import Configuration
    from kubernetes.client.rest import RESTClientObject
    import urllib3
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - reported by the modules
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = exc

TRANSIENT_STATUSES = (429, 500, 502, 503, 504)
# Retry policy (docs/reliability.md): first quick retries, then, once this server has answered at least once in
# the run (it went away mid-run: restart, etcd outage), keep retrying with backoff up to retry_time seconds.
BACKOFF_FIRST = 0.2
BACKOFF_MAX = 5.0
RETRY_AFTER_MAX = 30.0
# POSTs that read rather than create (reviews): as safe to repeat as a GET.
_REVIEW_SUFFIX = "reviews"
# 500s that are the request's fault, not the server's (server-side apply's type conversion of the object): the
# same request fails the same way, retrying cannot help.
PERMANENT_500_MESSAGES = ("failed to create typed patch object", "field not declared in schema",
                          "unable to convert unstructured object")
USER_AGENT = "manent.kubernetes/1.0"


@dataclass
class ConnectionOptions:
    """How to reach and authenticate to one API server (docs/requirements.md §5)."""

    server: str
    port: int = 6443
    token: str = ""
    client_cert: str = ""
    client_key: str = ""
    ca: str = ""
    ca_file: str = ""
    insecure_skip_tls_verify: bool = False
    timeout: float = 30.0
    retries: int = 5
    pool_size: int = CONCURRENCY  # a connection for each request a deploy sends at once
    retry_time: float = 60.0
    # A kubeconfig (path, env:NAME, YAML text or mapping) and its context: server, CA and credentials come from it
    # (kubeconfig.py); tls_server_name and proxy_url are set from it.
    kubeconfig: object = ""
    context: str = ""
    tls_server_name: str = ""
    proxy_url: str = ""
    cache_dir: str = ""  # where the workers of a run share exec credentials, encrypted (exec_credentials.py)

    @property
    def url(self):
        server = (self.server or "").strip().rstrip("/")
        if not server:
            raise InputError("no API server given", subject="connection", hint="set the target's host or https:// URL")
        if server.startswith("http://"):
            raise InputError("plain http is not supported: %s" % server, subject="connection",
                             hint="use an https:// URL")
        if server.startswith("https://"):
            rest = server[len("https://"):]
            if ":" in rest.split("/", 1)[0] or rest.startswith("["):
                return server
            host, _sep, path = rest.partition("/")
            return "https://%s:%d%s" % (host, self.port, "/" + path if path else "")
        return "https://%s:%d" % (server, self.port)


class Response:
    __slots__ = ("status", "data", "headers", "warnings")

    def __init__(self, status, data, headers, warnings):
        self.status = status
        self.data = data
        self.headers = headers
        self.warnings = warnings


class Stream:
    """The body of a streaming answer (a WATCH), read as it arrives: :meth:`events` yields each line parsed as
    JSON until the server ends the answer; a connection that breaks or stays silent past the read timeout raises a
    transient ApiError. :meth:`close` may be called from another thread: the reader then stops without an error.
    A stream read to its end gives its connection back to the pool; one cut short closes it."""

    def __init__(self, response, subject, url):
        self._response = response
        self._subject = subject
        self._url = url
        self._lock = threading.Lock()
        self._closed = self._reading = self._released = False

    def events(self):
        with self._lock:
            if self._closed:
                return
            self._reading = True
        buffer, finished = b"", False
        try:
            for chunk in self._response.stream(amt=None, decode_content=True):
                buffer += chunk
                while b"\n" in buffer and not self._closed:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
            finished = True
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            if not self._closed:
                raise ApiError("the stream from %s broke: %s" % (self._url, _short(exc)), subject=self._subject,
                               transient=True) from None
        finally:
            self._release(keep=finished and not self._closed)

    def close(self):
        """End the stream now; a thread waiting in :meth:`events` for the next bytes returns."""
        with self._lock:
            self._closed = True
            reading = self._reading
        if not reading:
            self._release(keep=False)
            return
        try:  # unblocks the reading thread; it releases the connection
            self._response.shutdown()
            return
        except (AttributeError, ValueError, RuntimeError, OSError):
            pass
        sock = getattr(getattr(self._response, "_connection", None), "sock", None)  # urllib3 before 2.3
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _release(self, keep):
        with self._lock:
            if self._released:
                return
            self._released = True
        try:
            if not keep:
                self._response.close()
            self._response.release_conn()
        except (AttributeError, OSError):
            pass


def parse_warnings(values):
    """RFC 7234 Warning header values ('299 - "text"') -> list of texts."""
    out = []
    for value in values or ():
        for part in _split_warning_header(value):
            part = part.strip()
            if part.startswith("299"):
                text = part[3:].strip()
                if text.startswith("-"):
                    text = text[1:].strip()
                if len(text) >= 2 and text[0] == '"':
                    end = text.rfind('"')
                    text = text[1:end] if end > 0 else text[1:]
                text = text.replace('\\"', '"')
                if text:
                    out.append(text)
    return out


def _split_warning_header(value):
    parts, buf, quoted, escaped = [], [], False, False
    for ch in value:
        if escaped:
            buf.append(ch)
            escaped = False
        elif ch == "\\":
            buf.append(ch)
            escaped = True
        elif ch == '"':
            buf.append(ch)
            quoted = not quoted
        elif ch == "," and not quoted:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
    parts.append("".join(buf))
    return parts


def error_from_status(status, body, subject=None, retry_after=None):
    """Typed error from an HTTP status and a (parsed) Status body."""
    message = ""
    reason = ""
    if isinstance(body, dict):
        message = body.get("message") or ""
        reason = body.get("reason") or ""
        causes = (body.get("details") or {}).get("causes") or []
        fields = ["%s: %s" % (c.get("field"), c.get("message")) for c in causes if c.get("field")]
        if fields and status == 422:
            message = "%s [fields: %s]" % (message, "; ".join(fields))
    elif body:
        message = str(body)[:500]
    if not message:
        message = "HTTP %s" % status
    transient = status in TRANSIENT_STATUSES and not any(text in message for text in PERMANENT_500_MESSAGES)
    hint = None
    if status == 401:
        hint = "the credentials were not accepted: check the token or client certificate of this target"
    elif status == 403:
        hint = "the credentials lack RBAC rights for this: grant them in a Role/ClusterRole bound to this user"
    cls = ApiError
    if status == 404:
        cls = NotFoundError
    elif status == 409:
        cls = ConflictError
    return cls(message, status=status, reason=reason, subject=subject, hint=hint, transient=transient,
               body=body if isinstance(body, dict) else {}, retry_after=retry_after)


class Kube:
    """One API server. Thread-safe: the pool is shared by concurrent appliers."""

    def __init__(self, options: ConnectionOptions):
        if not HAS_KUBERNETES:
            raise InputError("the Python package 'kubernetes' is required: %s" % KUBERNETES_IMPORT_ERROR,
                             hint="pip install -r requirements.txt on the controller / execution environment")
        self._tmp = None  # created only when inline PEM data must be written to files
        self.ca_source = "the system CAs (no ca or ca_file given)"  # named when TLS verification fails
        self._source = None  # a credential that may change during the run (kubeconfig tokenFile or exec)
        self.target = None  # the kubeconfig context (kubeconfig.Target)
        if options.kubeconfig:
            options = self._from_kubeconfig(options)
        self.options = options
        self.url = options.url
        cfg = Configuration()
        cfg.host = self.url
        cfg.verify_ssl = not options.insecure_skip_tls_verify
        cfg.connection_pool_maxsize = options.pool_size
        if options.proxy_url:
            cfg.proxy = options.proxy_url
        ca = resolve_secret(options.ca, "the CA certificate")
        if ca:
            cfg.ssl_ca_cert = self._pem_file("ca.crt", ca, "the CA certificate")
            if self.target is None:
                self.ca_source = "the CA given in ca"
        elif options.ca_file:
            if not os.path.exists(os.path.expanduser(options.ca_file)):
                raise InputError("CA file %s does not exist" % options.ca_file, subject="connection",
                                 hint="set ca_file to a PEM bundle, or leave it empty to use the system CAs")
            cfg.ssl_ca_cert = os.path.expanduser(options.ca_file)
            if self.target is None:
                self.ca_source = "ca_file %s" % options.ca_file
        cert = resolve_secret(options.client_cert, "the client certificate")
        key = resolve_secret(options.client_key, "the client key")
        if bool(cert) != bool(key):
            raise InputError("a client certificate needs both the certificate and the key", subject="connection",
                             hint="set both client_cert and client_key")
        if cert:
            cfg.cert_file = self._pem_file("client.crt", cert, "the client certificate")
            cfg.key_file = self._pem_file("client.key", key, "the client key")
        self._token = resolve_secret(options.token, "the bearer token")
        self._cfg = cfg
        self._ca_path = cfg.ssl_ca_cert
        self._pool = self._make_pool(cfg)
        self._cert = ""  # the client certificate of the exec credential the pool presents
        self._old_pools = []  # pools replaced by one presenting a new certificate: cleared at close
        self._cert_lock = threading.Lock()
        self._version = None
        self._reached = False  # the server answered once: a later outage is waited for (retry_time)
        self.deadline = None  # time.monotonic() value no retry may sleep past (the caller's own timeout)

    def _make_pool(self, cfg):
        if self.options.insecure_skip_tls_verify:
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            pool = RESTClientObject(cfg).pool_manager
        else:
            pool = self._verifying_pool(cfg)
        if self.options.tls_server_name:  # the name sent (SNI) and verified instead of the address dialled
            pool.connection_pool_kw["server_hostname"] = self.options.tls_server_name
        return pool

    def _from_kubeconfig(self, options):
        """The options of the kubeconfig's context, and its changing credential (tokenFile, exec) in _source."""
        from ansible_collections.manent.kubernetes.plugins.module_utils.base import kubeconfig
        target = kubeconfig.load(options.kubeconfig, options.context)
        self.target = target
        where = "cluster %r of %s" % (target.cluster_name, target.where())
        if target.ca_data or target.ca_file:
            self.ca_source = "the certificate-authority of %s" % where
        else:
            self.ca_source = "the system CAs (no certificate-authority in %s)" % where
        if target.exec is not None:
            from ansible_collections.manent.kubernetes.plugins.module_utils.base.exec_credentials import ExecAuth
            self._source = ExecAuth(target, cache_dir=options.cache_dir)
        elif target.token_file:
            self._source = TokenFile(target.token_file)
        return replace(options, server=target.server, port=443, token=target.token if target.exec is None else "",
                       client_cert=target.client_cert, client_key=target.client_key, ca=target.ca_data,
                       ca_file=target.ca_file,
                       insecure_skip_tls_verify=options.insecure_skip_tls_verify or target.insecure_skip_tls_verify,
                       tls_server_name=target.tls_server_name, proxy_url=target.proxy_url, kubeconfig="")

    def _credential(self):
        """The changing credential to send now (None: the static one), with the pool presenting its certificate."""
        if self._source is None:
            return None
        cred = self._source.current()
        if cred.client_cert and cred.client_cert != self._cert:
            self._present(cred)
        return cred

    def _present(self, cred):
        """Swap in a pool whose connections present the exec credential's client certificate."""
        with self._cert_lock:
            if cred.client_cert == self._cert:
                return
            cfg = Configuration()
            for name in ("host", "verify_ssl", "connection_pool_maxsize", "proxy"):
                setattr(cfg, name, getattr(self._cfg, name))
            cfg.ssl_ca_cert = self._ca_path
            cfg.cert_file = self._pem_file("exec-client.crt", cred.client_cert, "the exec plugin's client certificate")
            cfg.key_file = self._pem_file("exec-client.key", cred.client_key, "the exec plugin's client key")
            old, self._pool = self._pool, self._make_pool(cfg)
            self._cert = cred.client_cert
            self._old_pools.append(old)  # requests in flight finish on it

    def _renew(self, refused, policy, err):
        """After a 401: whether a new credential was obtained for another attempt (once per request)."""
        if self._source is None:
            return False
        if policy.renewed:
            err.hint = "a newly obtained credential was refused too: check what the %s grants" % (
                "exec plugin" if self.target.exec is not None else "tokenFile")
            return False
        policy.renewed = True
        return self._source.refresh(refused) is not None

    def _verifying_pool(self, cfg):
        """The REST layer's connection pool with manent's TLS context (tls.py): the kubernetes client's
        RESTClientObject takes no SSLContext, and the one urllib3 builds itself adds Python 3.13's strict X.509
        checks. The CA and client certificate are loaded into the context once, not at each connection."""
        try:
            context = verifying_context(cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file)
        except CertificateFileError as exc:
            source = " (%s)" % self.ca_source if exc.what == "the CA certificate" else ""
            raise InputError("%s%s for %s cannot be loaded: %s" % (exc.what, source, self.url, exc.reason),
                             subject="connection", hint="give PEM data: ca / ca_file a CA bundle, client_cert and "
                                                        "client_key a certificate and its private key") from None
        cfg.ssl_ca_cert = cfg.cert_file = cfg.key_file = None
        pool = RESTClientObject(cfg).pool_manager
        pool.connection_pool_kw["ssl_context"] = context
        return pool

    def _pem_file(self, name, content, what):
        if content.startswith("/") and os.path.exists(content):
            return content
        if "-----BEGIN" not in content:
            raise InputError("%s is not PEM data" % what, subject="connection",
                             hint="give the PEM text, or a file: reference to a PEM file")
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="manent-conn-")
            os.chmod(self._tmp, 0o700)
        path = os.path.join(self._tmp, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(content if content.endswith("\n") else content + "\n")
        return path

    def close(self):
        try:
            for pool in getattr(self, "_old_pools", ()):
                pool.clear()
            self._pool.clear()
        finally:
            if self._tmp:
                shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ HTTP

    def request(self, method, path, query=None, body=None, content_type="application/json",
                accept="application/json", subject=None, timeout=None, retry=True, repeatable=None):
        """Send one request; returns a Response or raises a typed ApiError.

        ``repeatable`` overrides :func:`retry_safe` for callers that make a repeat harmless themselves (a
        create whose 409 they read as "exists already")."""
        payload = None
        if body is not None:
            payload = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        policy = _Retries(self, method, path, content_type, retry, repeatable)
        r = None
        while r is None:
            cred = self._credential()
            headers = self._headers(accept, cred)
            if payload is not None:
                headers["Content-Type"] = content_type
            try:
                r = self._attempt(method, self._url(path, query), payload, headers, policy, subject,
                                  timeout or self.options.timeout, preload=True)
            except ApiError as err:
                if err.status != 401 or not self._renew(cred, policy, err):
                    raise
        warnings = parse_warnings(r.headers.getlist("Warning") if hasattr(r.headers, "getlist") else
                                  [r.headers.get("Warning")] if r.headers.get("Warning") else [])
        return Response(r.status, _decode(r.data), r.headers, warnings)

    def stream(self, path, query=None, subject=None, timeout=None):
        """Open a streaming GET (a WATCH: ``watch=1`` in ``query``) and return its :class:`Stream` once the server
        answered 2xx. Until then the retry policy of :meth:`request` applies (an API server that restarts is waited
        for up to ``retry_time``); error statuses raise typed errors. ``timeout``: seconds a read may wait for the
        next bytes before the stream counts as broken."""
        policy = _Retries(self, "GET", path, None, True)
        r = None
        while r is None:
            cred = self._credential()
            try:
                r = self._attempt("GET", self._url(path, query), None, self._headers("application/json", cred), policy,
                                  subject, timeout or self.options.timeout, preload=False)
            except ApiError as err:
                if err.status != 401 or not self._renew(cred, policy, err):
                    raise
        return Stream(r, subject, self.url)

    def _url(self, path, query):
        url = self.url + path
        if query:
            url += "?" + "&".join("%s=%s" % (k, _quote(v)) for k, v in query.items() if v is not None)
        return url

    def _headers(self, accept, cred=None):
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        token = cred.token if cred is not None else self._token
        if token:
            headers["Authorization"] = "Bearer " + token
        return headers

    def _attempt(self, method, url, payload, headers, policy, subject, read_timeout, preload):
        """One attempt of a request: the 2xx answer, or None when the retry policy slept and wants another attempt;
        a typed ApiError otherwise. With ``preload`` False the answer's body is left to read as a stream."""
        try:
            r = self._pool.request(method, url, body=payload, headers=headers, retries=False,
                                   timeout=urllib3.Timeout(connect=10.0, read=read_timeout), preload_content=preload)
        except (urllib3.exceptions.SSLError,) as exc:
            if not _verification_failure(exc):  # reset or EOF in the handshake: the connection broke
                if policy.again():
                    return None
                raise ApiError("cannot reach %s%s: %s" % (self.url, policy.tried(), _short(exc)), subject=subject,
                               transient=True, hint="check the address and that the API server is up, then run "
                                                    "again (the run is safe to repeat)")
            raise ApiError("TLS verification failed for %s with %s: %s" % (self.url, self.ca_source, _short(exc)),
                           subject=subject,
                           hint="give the cluster CA (ca / ca_file); insecure_skip_tls_verify is for development "
                                "only")
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if policy.again(unsent=_unsent(exc)):
                return None
            raise ApiError("cannot reach %s%s: %s" % (self.url, policy.tried(), _short(exc)), subject=subject,
                           transient=True, hint="check the address and that the API server is up, then run "
                                                "again (the run is safe to repeat)")
        self._reached = True
        if 200 <= r.status < 300:
            return r
        retry_after = _retry_after(r.headers.get("Retry-After"))
        err = error_from_status(r.status, _decode(r.data), subject=subject, retry_after=retry_after)
        if not preload:
            r.release_conn()
        # 429 is refused before the request is handled: repeating it is safe for every verb.
        if err.transient and policy.again(unsent=r.status == 429, retry_after=retry_after):
            return None
        if err.transient and policy.attempt > 1:
            err.message = "%s%s" % (err.message, policy.tried())
        raise err

    def get_json(self, path, **kw):
        return self.request("GET", path, **kw).data

    def version(self):
        """(major, minor, gitVersion) of the server; also checks the credentials reach it."""
        if self._version is None:
            v = self.get_json("/version", subject="cluster version")
            minor = "".join(ch for ch in str(v.get("minor", "0")) if ch.isdigit()) or "0"
            major = "".join(ch for ch in str(v.get("major", "1")) if ch.isdigit()) or "1"
            self._version = (int(major), int(minor), v.get("gitVersion", ""))
        return self._version


class TokenFile:
    """A kubeconfig user's ``tokenFile``: read again after a minute and after a 401 (a projected token rotates)."""

    REREAD = 60.0

    def __init__(self, path, clock=time.monotonic):
        self.path = path
        self.clock = clock
        self._cred = None
        self._read_at = 0.0

    def _read(self):
        from ansible_collections.manent.kubernetes.plugins.module_utils.base.exec_credentials import Credential
        self._cred = Credential(token=resolve_secret("file:" + self.path, "the tokenFile", subject="kubeconfig"))
        self._read_at = self.clock()
        return self._cred

    def current(self):
        if self._cred is None or self.clock() - self._read_at > self.REREAD:
            return self._read()
        return self._cred

    def refresh(self, refused):
        cred = self._read()
        return None if refused is not None and cred.token == refused.token else cred


def retry_safe(method, path, content_type):
    """Whether repeating a request that may already have been handled is harmless: reads, PUT (conditioned on
    resourceVersion), DELETE, server-side apply PATCH (declarative) and review POSTs. A plain POST or a
    merge/JSON PATCH is repeated only when it was certainly not handled (not sent, or refused with 429)."""
    method = method.upper()
    if method in ("GET", "HEAD", "OPTIONS", "PUT", "DELETE"):
        return True
    if method == "PATCH":
        return content_type == "application/apply-patch+yaml"
    return method == "POST" and path.rstrip("/").endswith(_REVIEW_SUFFIX)


class _Retries:
    """The retry policy of one request (docs/reliability.md, Retries)."""

    def __init__(self, kube, method, path, content_type, enabled, repeatable=None):
        self.kube = kube
        self.enabled = enabled
        self.safe = retry_safe(method, path, content_type) if repeatable is None else bool(repeatable)
        self.quick = max(1, kube.options.retries)
        self.started = time.monotonic()
        self.attempt = 1
        self.delay = BACKOFF_FIRST
        self.renewed = False  # the credential was renewed after a 401 (once per request)

    def _limit(self):
        limit = self.started + max(0.0, float(self.kube.options.retry_time or 0))
        if self.kube.deadline is not None:
            limit = min(limit, self.kube.deadline)
        return limit

    def again(self, unsent=False, retry_after=None):
        """Sleep before the next attempt and return True, or return False: give up now."""
        if not self.enabled or not (self.safe or unsent):
            return False
        if self.attempt >= self.quick and not self.kube._reached:  # pylint: disable=protected-access
            return False  # never answered: a wrong address or a server that is down fails fast
        pause = _jitter(self.delay)
        if retry_after is not None:
            pause = min(max(retry_after, 0.0), RETRY_AFTER_MAX)
        if time.monotonic() + pause > self._limit():
            # Beyond retry_time or the caller's deadline: report now rather than overrun. The server is then
            # treated as never reached: the next requests (marking the release failed, releasing the lock)
            # get the quick attempts only, not a whole budget each.
            self.kube._reached = False  # pylint: disable=protected-access
            return False
        time.sleep(pause)
        self.attempt += 1
        self.delay = min(self.delay * 2, BACKOFF_MAX)
        return True

    def tried(self):
        if self.attempt <= 1:
            return ""
        return " (%d attempts over %.0fs)" % (self.attempt, time.monotonic() - self.started)


def _verification_failure(exc):
    """True when a TLS error is the certificate check failing (wrong CA, wrong name), not a broken connection
    (reset or EOF during the handshake, which is retried like any connection error)."""
    seen, err = set(), exc
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, ssl.SSLCertVerificationError):
            return True
        if isinstance(err, (ssl.SSLError, ConnectionError)):
            # any other OpenSSL error (EOF, a record-layer or protocol failure in the handshake) or a reset
            return False
        # urllib3's reason is the underlying error, but ssl.SSLError's reason is a string (its OpenSSL code)
        reason = getattr(err, "reason", None)
        err = (reason if isinstance(reason, BaseException) else None) or err.__cause__ or err.__context__ or \
            next((a for a in getattr(err, "args", ()) if isinstance(a, BaseException)), None)
    text = str(exc)
    return not ("EOF occurred" in text or "reset by peer" in text or "UNEXPECTED_EOF" in text)


def _unsent(exc):
    """True when the request certainly never reached the server (the connection was not established)."""
    reason = getattr(exc, "reason", None)
    for err in (exc, reason):
        if isinstance(err, (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError,
                            ConnectionRefusedError)):
            return True
    return False


def _quote(value):
    from urllib.parse import quote
    if isinstance(value, bool):
        value = "true" if value else "false"
    return quote(str(value), safe="")


def _decode(raw):
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")


def _retry_after(value):
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _jitter(delay):
    return delay * (0.5 + random.random())  # nosec - not cryptographic


def _short(exc):
    text = str(exc)
    return text if len(text) < 300 else text[:300] + "..."
