# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How an API server's certificate is verified: the rules kubectl (Go's crypto/x509) applies, on every Python.

A server certificate is accepted when it chains to the given CA (or the system CAs when none is given), names the
host or IP address that was dialled in its subjectAltName, is within its validity period and is fit for serving
TLS (extended key usage). Nothing else is demanded of it.

Python 3.13 turned on OpenSSL's ``VERIFY_X509_STRICT`` in ``ssl.create_default_context()``, and urllib3 2 does
the same in the context it builds. That flag adds RFC 5280 structure checks Go does not make, among them an
Authority Key Identifier on every issued certificate: the minimal self-signed cluster CAs of Amazon EKS (and
older GKE clusters) fail it, so every request to such a cluster failed on Python 3.13 while kubectl worked.
The context built here leaves that flag off on every Python and sets ``VERIFY_X509_PARTIAL_CHAIN``, which makes a
certificate of the CA bundle a trust anchor even when it is an intermediate, as Go treats every certificate of
its root pool. Hostname checks never fall back to the subject's common name (Go stopped doing so in 1.15).
"""

from __future__ import annotations

import ssl

# Not defined by every ssl module (the values are OpenSSL's X509_V_FLAG_* constants).
VERIFY_X509_STRICT = getattr(ssl, "VERIFY_X509_STRICT", 0x20)
VERIFY_X509_PARTIAL_CHAIN = getattr(ssl, "VERIFY_X509_PARTIAL_CHAIN", 0x80000)


class CertificateFileError(Exception):
    """A CA bundle, client certificate or key that OpenSSL cannot load; ``what`` names which one."""

    def __init__(self, what, reason):
        super().__init__("%s cannot be loaded: %s" % (what, reason))
        self.what = what
        self.reason = reason


def verify_flags(flags):
    """The certificate verification flags manent uses, from a context's defaults."""
    return (int(flags) & ~VERIFY_X509_STRICT) | VERIFY_X509_PARTIAL_CHAIN


def verifying_context(ca_file=None, cert_file=None, key_file=None):
    """A client SSLContext that verifies the server as kubectl does: the CA bundle ``ca_file`` (else the system
    CAs) as trust anchors, hostname or IP address from subjectAltName, validity; TLS 1.2 or newer. A client
    certificate and key (PEM files) are presented when given. Raises :class:`CertificateFileError` when a file
    cannot be loaded."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verify_mode CERT_REQUIRED, check_hostname True
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_COMPRESSION
    context.verify_flags = verify_flags(context.verify_flags)
    context.hostname_checks_common_name = False
    try:
        if ca_file:
            context.load_verify_locations(cafile=ca_file)
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    except (ssl.SSLError, OSError) as exc:
        raise CertificateFileError("the CA certificate", _reason(exc)) from None
    if cert_file:
        try:
            context.load_cert_chain(cert_file, key_file)
        except (ssl.SSLError, OSError) as exc:
            raise CertificateFileError("the client certificate or its key", _reason(exc)) from None
    if getattr(context, "post_handshake_auth", None) is not None:
        context.post_handshake_auth = True
    return context


def _reason(exc):
    """OpenSSL's reason (``NO_CERTIFICATE_OR_CRL_FOUND``, ``KEY_VALUES_MISMATCH``...) or the OS error, never the
    file's content."""
    return getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc.__class__.__name__
