# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus client: the provider options and their refusals, the request (POST form with the pinned time,
credentials, extra headers), TLS settings, redirects, credential values kept out of messages and reprs; and the
standard library transport against a stub HTTP server on loopback for what only a socket shows: a body that is not
JSON, a server that never answers, a refused connection."""

from __future__ import annotations

import base64
import http.client
import http.server
import socket
import ssl
import threading
import urllib.error

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.prometheus import (
    PrometheusClient, QueryError, UrllibTransport)
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.provider import Provider, provider_from_params
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from tests.unit.analysis_fakes import PASSWORD, START, TOKEN, FakePrometheus, answer, fixture


def client(script=None, **provider):
    settings = {"url": "https://prometheus.example:9090"}
    settings.update(provider)
    prometheus = FakePrometheus(script or (lambda _q, _at: answer("1")))
    return PrometheusClient(provider_from_params(settings), transport=prometheus), prometheus


def test_the_request_is_a_form_post_with_the_pinned_time():
    prom, prometheus = client()
    prom.query('sum(rate(x{a="b"}[5m]))', START + 60.25)
    (request,) = prometheus.requests
    assert request["url"] == "https://prometheus.example:9090/api/v1/query"
    assert request["form"] == {"query": 'sum(rate(x{a="b"}[5m]))', "time": "1733306460.25"}
    assert request["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
    assert "Authorization" not in request["headers"] and request["timeout"] == 30.0


@pytest.mark.parametrize("url, endpoint", [
    ("https://prom.example", "https://prom.example/api/v1/query"),
    ("http://prom.example:9090/", "http://prom.example:9090/api/v1/query"),
    ("https://host/prometheus/", "https://host/prometheus/api/v1/query"),
    ("https://host/prometheus/api/v1/query", "https://host/prometheus/api/v1/query"),
])
def test_the_url_is_the_base_of_the_api(url, endpoint):
    assert provider_from_params({"url": url}).endpoint == endpoint


def test_bearer_token_basic_auth_and_headers():
    _prom, prometheus = client(bearer_token=TOKEN, headers={"X-Scope-OrgID": "tenant-1"})
    _prom.query("up", START)
    headers = prometheus.requests[0]["headers"]
    assert headers["Authorization"] == "Bearer " + TOKEN and headers["X-Scope-OrgID"] == "tenant-1"
    prom, prometheus = client(username="manent", password=PASSWORD)
    prom.query("up", START)
    expected = base64.b64encode(("manent:" + PASSWORD).encode()).decode()
    assert prometheus.requests[0]["headers"]["Authorization"] == "Basic " + expected


def test_credentials_from_a_file_and_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    assert provider_from_params({"url": "https://p", "bearer_token": "file:%s" % path}).bearer_token == TOKEN
    monkeypatch.setenv("PROM_PASSWORD", PASSWORD)
    provider = provider_from_params({"url": "https://p", "username": "u", "password": "env:PROM_PASSWORD"})
    assert provider.password == PASSWORD
    with pytest.raises(InputError, match="environment variable NOPE for the bearer token is not set") as err:
        provider_from_params({"url": "https://p", "bearer_token": "env:NOPE"})
    assert err.value.subject == "provider.bearer_token"


@pytest.mark.parametrize("settings, subject, text", [
    ({"url": "prometheus:9090"}, "provider.url", "is not an http:// or https:// URL"),
    ({"url": "ftp://prometheus"}, "provider.url", "is not an http:// or https:// URL"),
    ({"url": "https://admin:%s@prometheus" % PASSWORD}, "provider.url", "holds credentials"),
    ({"url": "https://prometheus/?token=x"}, "provider.url", "has a query string"),
    ({"url": "https://p", "bearer_token": TOKEN, "username": "u", "password": PASSWORD}, "provider",
     "bearer_token and username/password are both set"),
    ({"url": "https://p", "username": "u"}, "provider", "username and password go together"),
    ({"url": "https://p", "headers": {"Bad Name": "x"}}, "provider.headers", "header 'Bad Name'"),
    ({"url": "https://p", "headers": {"X-A": "a\r\nInjected: %s" % TOKEN}}, "provider.headers", "on one line"),
    ({"url": "https://p", "bearer_token": TOKEN, "headers": {"authorization": "Basic x"}}, "provider.headers",
     "Authorization and bearer_token"),
    ({"url": "https://p", "ca_file": "/nonexistent/ca.pem"}, "provider.ca_file", "is not a file"),
    ({"url": "https://p", "timeout": "0s"}, "provider.timeout", "must be longer than zero"),
    ({"url": "https://p", "timeout": "later"}, "provider.timeout", "invalid duration"),
])
def test_provider_refusals(settings, subject, text):
    with pytest.raises(InputError) as err:
        provider_from_params(settings)
    assert err.value.subject == subject and text in err.value.message
    assert TOKEN not in str(err.value) and PASSWORD not in str(err.value)


def test_an_unreadable_ca_file(tmp_path):
    path = tmp_path / "ca.pem"
    path.write_text("not a certificate")
    with pytest.raises(InputError, match="cannot load") as err:
        PrometheusClient(provider_from_params({"url": "https://p", "ca_file": str(path)}))
    assert err.value.subject == "provider.ca_file"


def test_tls_is_verified_unless_turned_off():
    verified = UrllibTransport(Provider("https://p"))
    assert verified.context.verify_mode == ssl.CERT_REQUIRED and verified.context.check_hostname
    insecure = UrllibTransport(Provider("https://p", insecure_skip_tls_verify=True))
    assert insecure.context.verify_mode == ssl.CERT_NONE and not insecure.context.check_hostname
    assert UrllibTransport(Provider("http://p")).context is None


def test_credentials_are_in_no_repr_and_no_message():
    prom, _prometheus = client(lambda _q, _at: (502, ("echo: Bearer %s" % TOKEN).encode()), bearer_token=TOKEN,
                               headers={"X-Scope-OrgID": "tenant-secret-1"})
    assert TOKEN not in repr(prom) and TOKEN not in repr(prom.provider)
    assert "tenant-secret-1" not in repr(prom.provider)
    with pytest.raises(QueryError) as err:
        prom.query("up", START)
    assert TOKEN not in str(err.value) and TOKEN not in repr(err.value)
    assert "echo: ********" in str(err.value)
    assert prom.redact("tenant-secret-1 and %s" % TOKEN) == "tenant-secret-1 and ********"  # not a secret header


def test_messages_name_the_prometheus():
    prom, _prometheus = client(lambda _q, _at: fixture("error_bad_data"))
    with pytest.raises(QueryError) as err:
        prom.query("sum by", START)
    assert str(err.value).startswith("Prometheus at https://prometheus.example:9090: refuses the query (400 bad_data)")
    assert err.value.kind == "bad_data" and err.value.status == 400 and err.value.permanent


class _Opener:
    def __init__(self, exc):
        self.exc = exc

    def open(self, _request, timeout):
        raise self.exc


def test_redirects_are_not_followed():
    headers = http.client.HTTPMessage()
    headers["Location"] = "https://sso.example/login"
    redirect = urllib.error.HTTPError("https://p/api/v1/query", 302, "Found", headers, None)
    prom = PrometheusClient(Provider("https://p", bearer_token=TOKEN),
                            transport=UrllibTransport(Provider("https://p"), opener=_Opener(redirect)))
    with pytest.raises(QueryError) as err:
        prom.query("up", START)
    assert err.value.kind == "redirect"
    assert "answered 302 Found, a redirect to https://sso.example/login; redirects are not followed" in str(err.value)


@pytest.mark.parametrize("exc, kind, text", [
    (urllib.error.URLError(ssl.SSLCertVerificationError(1, "certificate verify failed")), "tls", "TLS failed"),
    (urllib.error.URLError(socket.gaierror(-2, "Name or service not known")), "unreachable",
     "unreachable: Name or service not known"),
    (TimeoutError("timed out"), "client_timeout", "no answer within 30s (provider.timeout)"),
    (http.client.RemoteDisconnected("Remote end closed connection"), "unreachable", "unreachable"),
])
def test_connection_failures(exc, kind, text):
    transport = UrllibTransport(Provider("https://p"), opener=_Opener(exc))
    with pytest.raises(QueryError) as err:
        PrometheusClient(Provider("https://p"), transport=transport).query("up", START)
    assert err.value.kind == kind and text in str(err.value)


# -- the standard library transport on loopback --------------------------------------------------------------

class _Stub(http.server.BaseHTTPRequestHandler):
    release = threading.Event()
    behaviour = "malformed"

    def do_POST(self):  # noqa: N802  (http.server's name)
        if self.behaviour == "hang":
            self.release.wait(5)
            return
        body = b'{"status": "success", "data": {"resultType": "vector", "res'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@pytest.fixture
def stub():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    _Stub.release.set()
    server.shutdown()
    server.server_close()
    _Stub.release.clear()


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch):
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def real_client(url, timeout="2s"):
    return PrometheusClient(provider_from_params({"url": url, "timeout": timeout}))


def test_a_body_that_is_not_json(stub):
    _Stub.behaviour = "malformed"
    with pytest.raises(QueryError) as err:
        real_client(stub).query("up", START)
    assert err.value.kind == "malformed" and "with a body that is not a Prometheus answer" in str(err.value)


def test_a_server_that_never_answers(stub):
    _Stub.behaviour = "hang"
    with pytest.raises(QueryError) as err:
        real_client(stub, timeout="50ms").query("up", START)
    assert err.value.kind == "client_timeout"
    assert str(err.value).startswith("Prometheus at %s: no answer within 0.05s (provider.timeout)" % stub)


def test_a_refused_connection():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = "http://127.0.0.1:%d" % port
    with pytest.raises(QueryError) as err:
        real_client(url).query("up", START)
    assert err.value.kind == "unreachable" and "Connection refused" in str(err.value)
    assert str(err.value).startswith("Prometheus at %s: unreachable" % url)


def test_prometheus_2_53_infos_among_the_warnings_are_infos():
    """Before 2.54 Prometheus sends its info annotations in ``warnings`` (prometheus#14327); a real warning stays one."""
    prom, _prometheus = client(lambda _q, _at: fixture("infos_in_warnings_2_53"))
    got = prom.query("rate(nginx_ingress_controller_requests[1m])", START)
    assert got.warnings == () and len(got.infos) == 1
    assert got.infos[0].startswith("PromQL info: metric might not be a counter")
    mixed = answer("1", warnings=["PromQL warning: encountered a mix of histograms and floats", "PromQL info: x"])
    got = client(lambda _q, _at: mixed)[0].query("q", START)
    assert got.warnings == ("PromQL warning: encountered a mix of histograms and floats",)
    assert got.infos == ("PromQL info: x",)
