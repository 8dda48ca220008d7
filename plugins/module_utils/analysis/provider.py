# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where Prometheus is and how to talk to it: the module's ``provider`` option as a :class:`Provider`, checked before
any query (a URL with credentials in it, two ways of authenticating, a header that would split the request, a CA
file that is not there, a credential too short to be masked). Secrets given as ``file:``/``env:`` are resolved here
(credentials.py); messages name the field, never a secret value, and the dataclass' repr leaves the secrets and the
header values out.

The secret headers are ``Authorization`` and ``Proxy-Authorization`` and those ``secret_headers`` names; the values
of the others (a tenant header) are plain values, shown where they appear."""

from __future__ import annotations

import dataclasses
import os
import urllib.parse

from ansible_collections.manent.kubernetes.plugins.module_utils.base.credentials import resolve_secret
from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.base.masking import MIN_LENGTH
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

QUERY_PATH = "/api/v1/query"
CREDENTIAL_HEADERS = ("authorization", "proxy-authorization")


@dataclasses.dataclass(frozen=True)
class Provider:
    """Where Prometheus is and how to talk to it. Secrets are resolved (``file:``/``env:``) and not in the repr."""

    url: str
    bearer_token: str = dataclasses.field(default="", repr=False)
    username: str = ""
    password: str = dataclasses.field(default="", repr=False)
    headers: tuple = dataclasses.field(default=(), repr=False)  # ((name, value), ...)
    secret_headers: tuple = ()  # lower-case names of the headers whose values are credentials
    ca_file: str = ""
    insecure_skip_tls_verify: bool = False
    timeout: float = 30.0

    @property
    def endpoint(self):
        return self.url.rstrip("/") + QUERY_PATH

    @property
    def secret_header_values(self):
        """The values of the secret headers (Authorization, Proxy-Authorization and ``secret_headers``)."""
        return tuple(value for name, value in self.headers if name.lower() in self.secret_headers)


def provider_from_params(params):
    """The Provider of the module's ``provider`` option; InputError (naming the field, never a secret value)."""
    params = params or {}
    url = _check_url(params.get("url"))
    token = resolve_secret(params.get("bearer_token"), "the bearer token", subject="provider.bearer_token")
    username = params.get("username") or ""
    password = resolve_secret(params.get("password"), "the password", subject="provider.password")
    if token and (username or password):
        raise InputError("bearer_token and username/password are both set", subject="provider",
                         hint="give one way of authenticating")
    if bool(username) != bool(password):
        raise InputError("username and password go together", subject="provider",
                         hint="give both for basic auth, or neither")
    _check_length(token, "provider.bearer_token")
    _check_length(password, "provider.password")
    headers = _check_headers(params.get("headers"), authenticated=bool(token or username))
    secret_headers = _check_secret_headers(params.get("secret_headers"), headers)
    ca_file = os.path.expanduser(params.get("ca_file") or "")
    if ca_file and not os.path.isfile(ca_file):
        raise InputError("%s is not a file" % ca_file, subject="provider.ca_file",
                         hint="give the path of the PEM bundle of the CA that signed Prometheus' certificate")
    timeout = parse_duration(params.get("timeout") or "30s", name="provider.timeout")
    if timeout <= 0:
        raise InputError("must be longer than zero", subject="provider.timeout", hint='write e.g. "30s"')
    return Provider(url=url, bearer_token=token, username=username, password=password, headers=headers,
                    secret_headers=secret_headers, ca_file=ca_file,
                    insecure_skip_tls_verify=bool(params.get("insecure_skip_tls_verify")), timeout=timeout)


def _check_url(url):
    parts = urllib.parse.urlsplit(str(url or "").strip())
    hint = "write the base URL of Prometheus, e.g. https://prometheus.example:9090 or https://host/prometheus"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError("is not an http:// or https:// URL", subject="provider.url", hint=hint)
    if parts.username is not None or parts.password is not None:
        # the URL is not repeated: it holds credentials
        raise InputError("holds credentials (user:password@)", subject="provider.url",
                         hint="give them as provider.username and provider.password (never logged)")
    if parts.query or parts.fragment:
        raise InputError("has a query string or fragment", subject="provider.url", hint=hint)
    path = parts.path.rstrip("/")
    if path.endswith(QUERY_PATH):
        path = path[:-len(QUERY_PATH)]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _check_headers(headers, authenticated):
    out = []
    for name, value in sorted((headers or {}).items()):
        name, value = str(name), "" if value is None else str(value)
        if not name or any(ch in name for ch in ":\r\n ") or any(ch in value for ch in "\r\n"):
            raise InputError("header %r: a name without ':' or spaces and a value on one line are needed" % name,
                             subject="provider.headers", hint="write e.g. X-Scope-OrgID: tenant-1")
        if name.lower() == "authorization" and authenticated:
            raise InputError("header Authorization and bearer_token or username/password are both set",
                             subject="provider.headers", hint="give one way of authenticating")
        out.append((name, value))
    return tuple(out)


def _check_length(value, subject):
    if value and len(value) < MIN_LENGTH:
        raise InputError("is shorter than %d characters, too short to be masked in the output" % MIN_LENGTH,
                         subject=subject, hint="give the real credential (a value this short is not one)")


def _check_secret_headers(names, headers):
    """The lower-case names of the secret headers; each of ``names`` must name one of ``headers``."""
    given = {name.lower() for name, _value in headers}
    out = set(CREDENTIAL_HEADERS)
    for name in names or []:
        name = str(name)
        if name.lower() not in given:
            raise InputError("names %r, which is not one of provider.headers" % name, subject="provider.secret_headers",
                             hint="list the names of provider.headers whose values are credentials")
        out.add(name.lower())
    for name, value in headers:
        if name.lower() in out:
            _check_length(value, "provider.headers.%s" % name)
    return tuple(sorted(out))
