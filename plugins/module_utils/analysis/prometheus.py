# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus HTTP API client of the analysis: one instant query (``POST /api/v1/query`` with ``query`` and a
pinned ``time``) per call, on the standard library's urllib (proxies from the environment, as urllib reads them).
Where Prometheus is and the credentials are a provider.Provider.

- TLS is verified (system CAs, or ``ca_file``); ``insecure_skip_tls_verify`` turns it off (the module warns).
- Credentials: a bearer token, or basic auth, and extra headers (a tenant header). The credential values (token,
  password, the Authorization header, the secret headers' values: provider.py) are kept out of reprs and messages in
  every form they can take (masking.py): an answer's text is masked whole before it is cut or quoted, and every
  message this module builds is passed through :meth:`PrometheusClient.redact`.
- Redirects are not followed (credentials go to the configured address only): a 3xx is an error naming the target.
- Every failure is a :class:`QueryError` with a ``kind``: Prometheus' own ``errorType`` (``bad_data``,
  ``execution``, ``timeout``, ``canceled``, ``internal``, ``unavailable``, ``not_found``) or the client's
  (``unreachable``, ``tls``, ``client_timeout``, ``auth``, ``redirect``, ``http``, ``malformed``).
- A success's ``warnings`` (partial data) and ``infos`` (annotations) are returned with its ``data``. Prometheus
  before 2.54 sends its info annotations among the warnings; those (``PromQL info: ...``) are read as infos.
"""

from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import text
from ansible_collections.manent.kubernetes.plugins.module_utils.base.masking import Mask
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.provider import QUERY_PATH
from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import format_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, ManentError

MAX_BODY = 64 * 1024 * 1024
SHOWN_BODY = 200
MASKED_BODY = 64 * 1024  # how much of a body that is not Prometheus' is read (and masked) to show SHOWN_BODY of it
INFO_PREFIX = "PromQL info:"  # an info annotation (prometheus/util/annotations), in warnings before Prometheus 2.54
# kinds Prometheus reports about a query it received: the server is reachable and understood the request
SERVER_KINDS = ("execution", "timeout", "canceled", "internal", "unavailable")
_HINTS = {
    "bad_data": "fix the PromQL (try it in Prometheus' UI); it will not be accepted at a later interval either",
    "execution": "the query is valid but failed on this data (e.g. many-to-many matching): make its matching explicit",
    "timeout": "make the query cheaper (a shorter range, fewer series) or raise Prometheus' -query.timeout",
    "unreachable": "check provider.url and that Prometheus runs and is reachable from the controller",
    "client_timeout": "Prometheus did not answer within provider.timeout: check it is healthy, or raise the timeout",
    "tls": "give the CA that signed Prometheus' certificate as provider.ca_file",
    "canceled": "Prometheus canceled the query (it may be shutting down): it is measured again at the next interval",
    "internal": "Prometheus failed internally: check its logs",
    "unavailable": "Prometheus is not ready to answer queries yet (starting, or overloaded)",
    "not_found": "check provider.url: the query API is at <url>%s" % QUERY_PATH,
    "auth": "check provider.bearer_token, or provider.username and provider.password",
    "forbidden": "check provider.bearer_token, or provider.username and provider.password, and their rights",
    "redirect": "give the address Prometheus answers on as provider.url",
    "http": "check provider.url: the query API is at <url>%s" % QUERY_PATH,
    "malformed": "provider.url must point at Prometheus (or an API compatible with it)",
}


class QueryError(ManentError):
    """A query that did not give a result. ``kind``: see the module docstring; ``status``: the HTTP status."""

    def __init__(self, message, kind, status=None, hint=None):
        self.kind = kind
        self.status = status
        super().__init__(message, hint=hint if hint is not None else _HINTS.get(kind))

    @property
    def permanent(self):
        """Whether the same query can never succeed: Prometheus refuses it (bad_data)."""
        return self.kind == "bad_data"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are answered as errors (HTTPError with the 3xx status)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class UrllibTransport:
    """``transport(url, body, headers, timeout) -> (status, reason, payload bytes)``; connection failures raise
    QueryError. Unit tests give PrometheusClient a function of the same shape instead."""

    def __init__(self, provider, opener=None):
        self.context = None
        handlers = [_NoRedirect()]
        if provider.url.startswith("https://"):
            try:
                self.context = ssl.create_default_context(cafile=provider.ca_file or None)
            except (ssl.SSLError, OSError) as exc:
                raise InputError("cannot load %s: %s" % (provider.ca_file, exc), subject="provider.ca_file",
                                 hint="give a PEM bundle of CA certificates") from None
            if provider.insecure_skip_tls_verify:
                self.context.check_hostname = False
                self.context.verify_mode = ssl.CERT_NONE
            handlers.append(urllib.request.HTTPSHandler(context=self.context))
        self._opener = opener or urllib.request.build_opener(*handlers)

    def __call__(self, url, body, headers, timeout):
        request = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
        try:
            with self._opener.open(request, timeout=timeout) as response:
                return response.status, response.reason, _read(response)
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                raise QueryError("answered %d %s, a redirect to %s; redirects are not followed" %
                                 (exc.code, exc.reason, exc.headers.get("Location", "?")), "redirect",
                                 status=exc.code) from None
            return exc.code, exc.reason, _read(exc)
        except urllib.error.URLError as exc:
            raise _connection_error(exc.reason, timeout) from None
        except (OSError, http.client.HTTPException) as exc:
            raise _connection_error(exc, timeout) from None


def _read(response):
    payload = response.read(MAX_BODY + 1)
    if len(payload) > MAX_BODY:
        raise QueryError("the answer is larger than %d MiB" % (MAX_BODY // 1024 // 1024), "malformed",
                         hint="make the query return fewer series (aggregate with sum by (...))")
    return payload


def _connection_error(reason, timeout):
    if isinstance(reason, TimeoutError):
        return QueryError("no answer within %s (provider.timeout)" % format_duration(timeout), "client_timeout")
    if isinstance(reason, ssl.SSLError):
        why = getattr(reason, "verify_message", None) or getattr(reason, "reason", None) or reason
        return QueryError("TLS failed: %s" % why, "tls")
    return QueryError("unreachable: %s" % (getattr(reason, "strerror", None) or reason), "unreachable")


@dataclasses.dataclass(frozen=True)
class Answer:
    """A successful answer: ``data`` (``resultType`` and ``result``), and the ``warnings`` (partial data) and
    ``infos`` (annotations) Prometheus sent with it."""

    data: dict
    warnings: tuple = ()
    infos: tuple = ()


def decode(status, reason, payload, mask=None):
    """The Answer of an HTTP answer (``status``, ``reason``, body bytes); QueryError for Prometheus' error answers
    (``status: error`` with ``errorType``) and for anything that is not a Prometheus answer. ``mask`` (a
    masking.Mask) masks the answer's text before any of it is cut or quoted into a message."""
    mask = mask or Mask(())
    try:
        body = json.loads(payload.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        body = None
    if not isinstance(body, dict) or body.get("status") not in ("success", "error"):
        raise _not_prometheus(status, reason, payload, mask)
    if body["status"] == "error" or not 200 <= status < 300:
        raise _api_error(status, reason, body, mask)
    data = body.get("data")
    if not isinstance(data, dict) or "resultType" not in data or "result" not in data:
        keys = sorted(str(key) for key in data)[:10] if isinstance(data, dict) else []
        got = "data with %s" % ", ".join(keys) if keys else "no data"
        raise QueryError(mask("answered success without data.resultType and data.result (%s): not a Prometheus "
                              "query answer" % got), "malformed", status=status)
    warnings = _strings(body.get("warnings"))
    infos = tuple(warning for warning in warnings if warning.startswith(INFO_PREFIX))
    warnings = tuple(warning for warning in warnings if not warning.startswith(INFO_PREFIX))
    return Answer(data, warnings, infos + _strings(body.get("infos")))


def _strings(items):
    return tuple(str(item) for item in items) if isinstance(items, list) else ()


def _not_prometheus(status, reason, payload, mask):
    snippet = " ".join(mask(payload[:MASKED_BODY].decode("utf-8", "replace")).split())
    if len(snippet) > SHOWN_BODY:
        snippet = snippet[:SHOWN_BODY] + "..."
    what = "HTTP %d %s" % (status, reason or "")
    if status in (401, 403):
        return QueryError("refused the credentials: %s" % what.strip(), "auth", status=status)
    if 200 <= status < 300:
        return QueryError("answered %s with a body that is not a Prometheus answer: %r" % (what.strip(), snippet),
                          "malformed", status=status)
    return QueryError("answered %s: %r" % (what.strip(), snippet), "http", status=status)


_API_MESSAGES = {
    "bad_data": "refuses the query (%d bad_data): %s",
    "execution": "the query failed (%d execution): %s",
    "timeout": "the query timed out in Prometheus (%d timeout): %s",
    "canceled": "the query was canceled (%d canceled): %s",
}


def _api_error(status, reason, body, mask):
    error = " ".join(mask(str(body.get("error") or reason or "no error text")).split())
    kind = str(body.get("errorType") or "")
    if not kind:
        kind = "auth" if status in (401, 403) else "http"
    if body.get("status") == "success":  # an error status with a success body
        error = "HTTP %d %s" % (status, reason or "")
    if kind in _API_MESSAGES:
        message = _API_MESSAGES[kind] % (status, error)
    else:
        message = "answered %d %s: %s" % (status, kind, error)
    return QueryError(message, kind, status=status)


class PrometheusClient:
    """Sends instant queries to one Prometheus. ``transport`` defaults to :class:`UrllibTransport`."""

    def __init__(self, provider, transport=None):
        self.provider = provider
        self._transport = transport or UrllibTransport(provider)
        self._headers = self._request_headers()
        self._mask = Mask(self._secret_values())

    def __repr__(self):
        return "PrometheusClient(%r)" % self.provider.url

    def _request_headers(self):
        headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded",
                   "User-Agent": "manent-analysis"}
        headers.update(self.provider.headers)
        if self.provider.bearer_token:
            headers["Authorization"] = "Bearer %s" % self.provider.bearer_token
        elif self.provider.username:
            pair = ("%s:%s" % (self.provider.username, self.provider.password)).encode("utf-8")
            headers["Authorization"] = "Basic %s" % base64.b64encode(pair).decode("ascii")
        return headers

    def _secret_values(self):
        values = [self.provider.bearer_token, self.provider.password]
        values.extend(self.provider.secret_header_values)
        authorization = self._headers.get("Authorization", "")
        if authorization:
            values.append(authorization)
            values.append(authorization.partition(" ")[2])  # the token, or the base64 of user:password
        return values

    @property
    def secrets(self):
        """Every form of the credential values this client sends (token, password, the Authorization header and
        the secret headers' values): masking.forms of each."""
        return set(self._mask.forms)

    def redact(self, message):
        """``message`` with every form of every credential value masked, and any piece of one (masking.Mask)."""
        return self._mask(message)

    def query(self, promql, at):
        """The decoded answer of ``promql`` evaluated at ``at`` (seconds since the epoch): an Answer; QueryError
        otherwise, its message prefixed with the Prometheus address."""
        body = urllib.parse.urlencode({"query": promql, "time": text.epoch_text(at)}).encode("utf-8")
        try:
            status, reason, payload = self._transport(self.provider.endpoint, body, self._headers,
                                                      self.provider.timeout)
            return decode(status, reason, payload, self._mask)
        except QueryError as exc:
            message = self.redact("Prometheus at %s: %s" % (self.provider.url, exc.message))
            raise QueryError(message, exc.kind, status=exc.status, hint=exc.hint) from None
