# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API server is verified as kubectl verifies it, on every Python (plugins/module_utils/base/tls.py).

Real TLS handshakes against a loopback HTTPS server, with certificates made here (hack/pki.py): a minimal
self-signed CA as EKS's and an RFC 5280-strict one are both accepted; another CA, an expired certificate, a name
the certificate does not hold and a common-name-only certificate are refused. The requests go through
``Kube.request``, the one HTTP path of the modules."""

from __future__ import annotations

import datetime
import http.server
import json
import os
import socket
import ssl
import sys
import threading

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base import tls
from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import ConnectionOptions, Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, InputError

from tests.helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "hack"))
import pki  # noqa: E402  pylint: disable=wrong-import-position,import-error

NOW = datetime.datetime.now(datetime.timezone.utc)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802  (http.server's name)
        body = json.dumps({"major": "1", "minor": "34", "path": self.path,
                           "client": bool(self.connection.getpeercert())}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def serve(tmp_path):
    """serve(cert, key, chain=(), client_ca=None) -> https://127.0.0.1:<port> of a server presenting them."""
    servers = []

    def start(cert, key, chain=(), client_ca=None):
        crt, kfile = tmp_path / ("srv%d.crt" % len(servers)), tmp_path / ("srv%d.key" % len(servers))
        crt.write_bytes(pki.cert_pem(cert) + b"".join(pki.cert_pem(c) for c in chain))
        kfile.write_bytes(pki.key_pem(key))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(crt), str(kfile))
        if client_ca is not None:
            ca = tmp_path / ("clientca%d.crt" % len(servers))
            ca.write_bytes(pki.cert_pem(client_ca.cert))
            context.load_verify_locations(str(ca))
            context.verify_mode = ssl.CERT_REQUIRED
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return "https://127.0.0.1:%d" % server.server_address[1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _ca_file(tmp_path, authority, name="ca.crt"):
    path = tmp_path / name
    path.write_bytes(pki.cert_pem(authority.cert))
    return str(path)


def _get(url, **options):
    with Kube(ConnectionOptions(server=url, retries=0, retry_time=0, timeout=5, **options)) as kube:
        return kube.request("GET", "/version").data


def test_the_context_keeps_what_kubectl_checks_and_drops_the_strict_structure_checks():
    context = tls.verifying_context()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is True
    assert context.hostname_checks_common_name is False
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
    assert not context.verify_flags & tls.VERIFY_X509_STRICT
    assert context.verify_flags & tls.VERIFY_X509_PARTIAL_CHAIN
    assert tls.verify_flags(tls.VERIFY_X509_STRICT | 0x8000) == 0x8000 | tls.VERIFY_X509_PARTIAL_CHAIN


@pytest.mark.parametrize("style", pki.STYLES)
def test_both_ca_styles_are_accepted(style, serve, tmp_path):
    ca = pki.Authority("test-%s" % style, style=style)
    url = serve(*ca.issue("kube-apiserver", server=True))
    assert pki.style_of(pki.cert_pem(ca.cert)) == style
    assert _get(url, ca_file=_ca_file(tmp_path, ca))["major"] == "1"
    assert _get(url, ca=pki.cert_pem(ca.cert).decode())["path"] == "/version"


def test_the_minimal_ca_is_what_strict_x509_checks_refuse(serve, tmp_path):
    """The case the context is for: the same server, refused by a context with VERIFY_X509_STRICT, which is
    Python's own default from 3.13 on."""
    ca = pki.Authority("eks-like", style="minimal")
    url = serve(*ca.issue("kube-apiserver", server=True))
    strict = ssl.create_default_context(cafile=_ca_file(tmp_path, ca))
    strict.verify_flags |= tls.VERIFY_X509_STRICT
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as sock:
        with pytest.raises(ssl.SSLCertVerificationError, match="Authority Key Identifier"):
            strict.wrap_socket(sock, server_hostname="127.0.0.1")
    assert _get(url, ca_file=_ca_file(tmp_path, ca, "again.crt"))["major"] == "1"
    if sys.version_info >= (3, 13):
        assert ssl.create_default_context().verify_flags & tls.VERIFY_X509_STRICT


def test_the_strict_ca_passes_strict_x509_checks(serve, tmp_path):
    """The strict style is what its name says: accepted by VERIFY_X509_STRICT too."""
    ca = pki.Authority("rfc", style="strict")
    url = serve(*ca.issue("kube-apiserver", server=True))
    strict = ssl.create_default_context(cafile=_ca_file(tmp_path, ca))
    strict.verify_flags |= tls.VERIFY_X509_STRICT
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as sock:
        with strict.wrap_socket(sock, server_hostname="127.0.0.1") as wrapped:
            assert wrapped.getpeercert()


def _refused(url, ca_file):
    with pytest.raises(ApiError) as caught:
        _get(url, ca_file=ca_file)
    message = str(caught.value)
    assert "TLS verification failed for %s with ca_file %s" % (url, ca_file) in message, message
    return message


@pytest.mark.parametrize("style", pki.STYLES)
def test_a_certificate_of_another_ca_is_refused(style, serve, tmp_path):
    url = serve(*pki.Authority("theirs", style=style).issue("kube-apiserver", server=True))
    _refused(url, _ca_file(tmp_path, pki.Authority("ours", style=style)))


@pytest.mark.parametrize("style", pki.STYLES)
def test_an_expired_certificate_is_refused(style, serve, tmp_path):
    ca = pki.Authority("expiry", style=style, not_before=NOW - datetime.timedelta(days=30))
    url = serve(*ca.issue("kube-apiserver", server=True, not_after=NOW - datetime.timedelta(days=1)))
    assert "expired" in _refused(url, _ca_file(tmp_path, ca))


@pytest.mark.parametrize("style", pki.STYLES)
def test_a_certificate_for_another_name_is_refused(style, serve, tmp_path):
    ca = pki.Authority("names", style=style)
    url = serve(*ca.issue("kube-apiserver", server=True, sans=("api.other.example", "10.1.2.3")))
    assert "127.0.0.1" in _refused(url, _ca_file(tmp_path, ca))


def test_the_common_name_is_never_taken_for_the_host(serve, tmp_path):
    """As Go since 1.15: a certificate without subjectAltName does not name 127.0.0.1 by its CN."""
    ca = pki.Authority("cn-only")
    url = serve(*ca.issue("127.0.0.1", server=True, sans=()))
    _refused(url, _ca_file(tmp_path, ca))


def test_a_client_certificate_is_presented(serve, tmp_path):
    ca = pki.Authority("mtls", style="strict")
    url = serve(*ca.issue("kube-apiserver", server=True), client_ca=ca)
    cert, key = ca.issue("manent-deployer")
    found = _get(url, ca_file=_ca_file(tmp_path, ca), client_cert=pki.cert_pem(cert).decode(),
                 client_key=pki.key_pem(key).decode())
    assert found["client"] is True


def test_an_intermediate_in_the_bundle_is_a_trust_anchor(serve, tmp_path):
    """kubectl trusts every certificate of its CA bundle, an intermediate as well as a root."""
    root = pki.Authority("root", style="strict")
    intermediate = root.issue("intermediate", ca=True)
    url = serve(*intermediate.issue("kube-apiserver", server=True))
    assert _get(url, ca_file=_ca_file(tmp_path, intermediate))["major"] == "1"


def test_a_ca_file_that_is_not_a_certificate_fails_before_any_request(tmp_path):
    bad = tmp_path / "ca.crt"
    bad.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    with pytest.raises(InputError) as caught:
        Kube(ConnectionOptions(server="https://127.0.0.1:1", ca_file=str(bad)))
    assert "the CA certificate (ca_file %s) for https://127.0.0.1:1 cannot be loaded" % bad in str(caught.value)


def test_a_key_that_does_not_match_fails_naming_the_client_certificate_and_not_the_key(tmp_path):
    ca = pki.Authority("keys")
    cert, _key = ca.issue("someone")
    _other, other_key = ca.issue("someone-else")
    key_text = pki.key_pem(other_key).decode()
    with pytest.raises(InputError) as caught:
        Kube(ConnectionOptions(server="https://127.0.0.1:1", ca=pki.cert_pem(ca.cert).decode(),
                               client_cert=pki.cert_pem(cert).decode(), client_key=key_text))
    message = str(caught.value)
    assert "the client certificate or its key for https://127.0.0.1:1 cannot be loaded" in message
    assert key_text.splitlines()[1] not in message
