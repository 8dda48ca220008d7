# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Certificates of the local clusters and of the TLS tests, in two styles real clusters have.

- ``minimal``: the CA carries Basic Constraints and Key Usage only, and issued certificates have no Authority or
  Subject Key Identifier. Amazon EKS's cluster CA (and older GKE ones) look like this; RFC 5280 allows it, Go and
  kubectl accept it, Python 3.13's default ``VERIFY_X509_STRICT`` does not.
- ``strict``: everything RFC 5280 asks of a CA and its certificates (Subject Key Identifier on the CA, Authority
  and Subject Key Identifiers and Key Usage on issued certificates), which ``VERIFY_X509_STRICT`` accepts.

Also :func:`client_context`, the SSLContext hack/ scripts and tests use to reach an API server: the collection's
own (plugins/module_utils/base/tls.py), so they verify exactly as the modules do, on every Python.
"""

import datetime
import importlib.util
import ipaddress
import os

STYLES = ("minimal", "strict")
HERE = os.path.dirname(os.path.abspath(__file__))
SERVER_SANS = ("localhost", "kubernetes", "kubernetes.default.svc", "127.0.0.1", "10.96.0.1")


def _crypto():
    from cryptography import x509  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives import hashes, serialization  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives.asymmetric import ec  # pylint: disable=import-outside-toplevel
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # pylint: disable=import-outside-toplevel
    return x509, hashes, serialization, ec, ExtendedKeyUsageOID, NameOID


def _key_usage(x509, **on):
    fields = ("digital_signature", "content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
              "key_cert_sign", "crl_sign", "encipher_only", "decipher_only")
    return x509.KeyUsage(**{f: bool(on.get(f)) for f in fields})


class Authority:
    """A self-signed CA of one style that issues server and client certificates (EC P-256, SHA-256)."""

    def __init__(self, name, style="minimal", not_before=None, days=365):
        if style not in STYLES:
            raise ValueError("unknown PKI style %r (one of %s)" % (style, ", ".join(STYLES)))
        x509, hashes, _ser, ec, _eku, NameOID = _crypto()
        self.style = style
        self.not_before = not_before or datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
        self.not_after = self.not_before + datetime.timedelta(days=days)
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        builder = (x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
                   .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(self.not_before).not_valid_after(self.not_after)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .add_extension(_key_usage(x509, digital_signature=True, key_cert_sign=True, crl_sign=True),
                                  critical=True))
        if style == "strict":
            builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()),
                                            critical=False)
        self.cert = builder.sign(self.key, hashes.SHA256())

    def issue(self, cn, orgs=(), server=False, sans=SERVER_SANS, not_before=None, not_after=None, ca=False):
        """A certificate (and its key) for ``cn``: a TLS server's with ``sans`` as subjectAltName, else a client's
        (``orgs`` as its groups); ``ca=True`` makes an intermediate CA (an :class:`Authority` signed by this one)."""
        x509, hashes, _ser, ec, EKU, NameOID = _crypto()
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)] +
                            [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs])
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(self.name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(not_before or self.not_before).not_valid_after(not_after or self.not_after)
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            builder = builder.add_extension(
                _key_usage(x509, digital_signature=True, key_cert_sign=True, crl_sign=True), critical=True)
        else:
            builder = builder.add_extension(
                x509.ExtendedKeyUsage([EKU.SERVER_AUTH if server else EKU.CLIENT_AUTH]), critical=False)
        if server and sans:
            builder = builder.add_extension(x509.SubjectAlternativeName([_san(x509, s) for s in sans]),
                                            critical=False)
        if self.style == "strict":
            builder = (builder
                       .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                                      critical=False)
                       .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
            if not ca:
                builder = builder.add_extension(_key_usage(x509, digital_signature=True), critical=True)
        cert = builder.sign(self.key, hashes.SHA256())
        if not ca:
            return cert, key
        sub = Authority.__new__(Authority)
        sub.style, sub.key, sub.cert, sub.name = self.style, key, cert, subject
        sub.not_before, sub.not_after = cert.not_valid_before_utc, cert.not_valid_after_utc
        return sub


def _san(x509, value):
    try:
        return x509.IPAddress(ipaddress.ip_address(value))
    except ValueError:
        return x509.DNSName(value)


def cert_pem(cert):
    _x509, _h, serialization, _ec, _eku, _n = _crypto()
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key):
    _x509, _h, serialization, _ec, _eku, _n = _crypto()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def style_of(ca_pem):
    """``strict`` when a CA certificate (PEM bytes) carries a Subject Key Identifier, else ``minimal``."""
    x509 = _crypto()[0]
    cert = x509.load_pem_x509_certificate(ca_pem)
    try:
        cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    except x509.ExtensionNotFound:
        return "minimal"
    return "strict"


def _tls_module():
    path = os.path.join(os.path.dirname(HERE), "plugins", "module_utils", "base", "tls.py")
    spec = importlib.util.spec_from_file_location("manent_tls", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_TLS = []


def client_context(ca_file):
    """An SSLContext that verifies a server against ``ca_file`` as the collection's modules do."""
    if not _TLS:
        _TLS.append(_tls_module())
    return _TLS[0].verifying_context(ca_file)
