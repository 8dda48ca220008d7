# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The retry policy of client.py (docs/reliability.md, Retries): which requests may be repeated, which TLS
errors are a broken connection rather than a failed certificate check. The policy against real servers and
real faults is tested in tests/integration/test_faults.py."""

import socket
import ssl
import threading

import pytest
import urllib3

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import (
    _unsent, _verification_failure, error_from_status, retry_safe)

APPLY = "application/apply-patch+yaml"


@pytest.mark.parametrize("method,path,content_type,safe", [
    ("GET", "/api/v1/namespaces/a/configmaps", "application/json", True),
    ("PUT", "/api/v1/namespaces/a/configmaps/x", "application/json", True),
    ("DELETE", "/api/v1/namespaces/a/configmaps/x", "application/json", True),
    ("PATCH", "/api/v1/namespaces/a/configmaps/x", APPLY, True),
    ("PATCH", "/api/v1/namespaces/a/configmaps/x", "application/merge-patch+json", False),
    ("PATCH", "/api/v1/namespaces/a/configmaps/x", "application/json-patch+json", False),
    ("POST", "/api/v1/namespaces/a/configmaps", "application/json", False),
    ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json", True),
])
def test_only_repeatable_requests_are_retried_after_they_were_sent(method, path, content_type, safe):
    assert retry_safe(method, path, content_type) is safe


@pytest.mark.parametrize("status,transient", [(429, True), (500, True), (503, True), (504, True), (400, False),
                                              (401, False), (403, False), (404, False), (409, False), (422, False)])
def test_transient_statuses(status, transient):
    assert error_from_status(status, {"message": "m"}).transient is transient


@pytest.mark.parametrize("message", [
    "failed to create typed patch object (x): y",
    # the server's words for a Secret's data that is not base64 and a fractional number in an integer field
    "failed to convert new object (ns/b; /v1, Kind=Secret) to proper version: unable to convert unstructured object "
    "to /v1, Kind=Secret: error decoding from json: illegal base64 data at input byte 4",
    "failed to convert new object (ns/d; apps/v1, Kind=Deployment) to proper version: unable to convert unstructured "
    "object to apps/v1, Kind=Deployment: cannot convert float64 to int32"])
def test_a_500_that_is_the_requests_fault_is_permanent(message):
    assert not error_from_status(500, {"message": message}).transient


def test_tls_verification_failure_versus_a_broken_handshake():
    verify = urllib3.exceptions.SSLError(ssl.SSLCertVerificationError(1, "certificate verify failed"))
    eof = urllib3.exceptions.SSLError(ssl.SSLEOFError(8, "EOF occurred in violation of protocol (_ssl.c:2427)"))
    reset = urllib3.exceptions.SSLError(ConnectionResetError(104, "Connection reset by peer"))
    assert _verification_failure(verify) is True
    assert _verification_failure(eof) is False
    assert _verification_failure(reset) is False


def test_unsent_only_for_connection_establishment():
    assert _unsent(urllib3.exceptions.NewConnectionError(None, "refused"))
    assert not _unsent(urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")))


def _handshake_error(answer):
    """The ssl.SSLError a TLS handshake raises when the server answers with plain bytes: raised by OpenSSL, so
    its ``reason`` is a string (here WRONG_VERSION_NUMBER), unlike urllib3's errors whose reason is an error."""
    client, server = socket.socketpair()

    def serve():
        server.recv(4096)
        server.sendall(answer)

    thread = threading.Thread(target=serve)
    thread.start()
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        context.wrap_socket(client, server_hostname="cluster.example")
    except ssl.SSLError as exc:
        return exc
    finally:
        thread.join()
        client.close()
        server.close()
    raise AssertionError("the handshake succeeded against plain bytes")


def test_an_openssl_error_that_is_not_the_certificate_check_is_a_broken_connection():
    # Before, the walk followed ssl.SSLError.reason (a str) and failed on str.__cause__ (AttributeError), which
    # ansible-core reported as "'str' object has no attribute '__cause__'" instead of the cluster's error.
    exc = _handshake_error(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    assert isinstance(exc.reason, str)
    wrapped = urllib3.exceptions.MaxRetryError(None, "/api", urllib3.exceptions.SSLError(exc))
    assert _verification_failure(exc) is False
    assert _verification_failure(urllib3.exceptions.SSLError(exc)) is False
    assert _verification_failure(wrapped) is False
