# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Prometheus credentials are masked in every form a text can hold them (as given, JSON and Python escaped, HTML
escaped, percent-encoded, the base64 of user:password) and in every piece of 8 characters, before an error page is
cut or quoted; credentials too short to be masked are refused; only the secret headers are masked, the other
header values are shown."""

from __future__ import annotations

import base64
import json

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.masking import FRAGMENT, MASK, Mask, forms
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.prometheus import (
    SHOWN_BODY, PrometheusClient, QueryError)
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.provider import provider_from_params
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from tests.unit.analysis_fakes import START, FakePrometheus, answer

LONG_TOKEN = "".join("tok%04dX" % n for n in range(75))  # 600 characters, no piece repeated
HARD_PASSWORD = 'pa\\ss"wo rd<&>é+/'  # a backslash, a quote, a space, HTML and URL specials, non-ASCII


def pieces(secret):
    """Every piece of FRAGMENT characters of ``secret``."""
    return {secret[start:start + FRAGMENT] for start in range(len(secret) - FRAGMENT + 1)}


def leaked(text, *secrets):
    """The pieces of FRAGMENT characters of ``secrets`` (and of their forms) that ``text`` holds."""
    return sorted(piece for secret in secrets for form in forms(secret) for piece in pieces(form) if piece in text)


def client(script, **provider):
    settings = {"url": "https://prometheus.example:9090"}
    settings.update(provider)
    return PrometheusClient(provider_from_params(settings), transport=FakePrometheus(script))


def error_of(prom):
    with pytest.raises(QueryError) as err:
        prom.query('sum(rate(x{namespace="shop-prod"}[1m]))', START)
    return err.value


@pytest.mark.parametrize("written", [
    HARD_PASSWORD,
    json.dumps(HARD_PASSWORD)[1:-1],
    json.dumps(HARD_PASSWORD, ensure_ascii=False)[1:-1],
    repr(HARD_PASSWORD)[1:-1],
    "pa\\ss&quot;wo rd&lt;&amp;&gt;é+/",
    "pa%5Css%22wo%20rd%3C%26%3E%C3%A9%2B%2F",
    "pa%5Css%22wo+rd%3C%26%3E%C3%A9%2B%2F",
], ids=["given", "json", "json-utf8", "repr", "html", "url", "form"])
def test_every_form_of_a_value_is_masked(written):
    masked = Mask([HARD_PASSWORD])("before %s after" % written)
    assert masked == "before %s after" % MASK


def test_a_piece_of_a_secret_is_masked_and_the_rest_kept():
    mask = Mask([LONG_TOKEN])
    cut = LONG_TOKEN[37:37 + 116]
    assert mask("head %s tail" % cut) == "head %s tail" % MASK
    assert mask("x" + LONG_TOKEN[:FRAGMENT] + "y") == "x%sy" % MASK
    assert mask("plain text of the page") == "plain text of the page"
    assert mask(LONG_TOKEN[:FRAGMENT - 1]) == LONG_TOKEN[:FRAGMENT - 1]  # shorter pieces are not secrets


def test_a_proxy_page_echoing_a_long_token_shows_no_piece_of_it():
    page = ("<html><body><h1>502 Bad Gateway</h1><pre>POST /api/v1/query\nAuthorization: Bearer %s\n"
            "Host: prometheus</pre></body></html>" % LONG_TOKEN)
    error = error_of(client(lambda _q, _at: (502, page.encode()), bearer_token=LONG_TOKEN))
    assert error.kind == "http" and "502 Bad Gateway" in str(error) and MASK in str(error)
    assert not leaked(str(error), LONG_TOKEN) and not leaked(repr(error), LONG_TOKEN)


@pytest.mark.parametrize("shift", range(0, 12))
def test_a_cut_never_leaves_a_head_of_the_secret(shift):
    """The token starts where the 200-character cut falls, at every offset around it."""
    page = "x" * (SHOWN_BODY - 6 + shift) + " Bearer " + LONG_TOKEN + " end"
    error = error_of(client(lambda _q, _at: (502, page.encode()), bearer_token=LONG_TOKEN))
    assert not leaked(str(error), LONG_TOKEN)


def test_a_proxy_page_echoing_basic_auth_decoded_and_encoded():
    pair = "manent:%s" % HARD_PASSWORD
    encoded = base64.b64encode(pair.encode()).decode()
    page = "Bad Gateway\nAuthorization: Basic %s\nuser: %s\n" % (encoded, pair)
    json_page = json.dumps({"message": "upstream refused %s" % pair, "auth": "Basic %s" % encoded})
    for body in (page, json_page, "<p>%s</p>" % pair.replace("&", "&amp;").replace('"', "&quot;")):
        error = error_of(client(lambda _q, _at, body=body: (502, body.encode()), username="manent",
                                password=HARD_PASSWORD))
        assert not leaked(str(error), HARD_PASSWORD, encoded), body
        assert HARD_PASSWORD not in str(error) and "pa\\\\ss" not in str(error)


def test_a_prometheus_error_text_is_masked_before_it_is_quoted():
    body = json.dumps({"status": "error", "errorType": "bad_data", "error": "rejected token %s" % LONG_TOKEN})
    error = error_of(client(lambda _q, _at: (400, body.encode()), bearer_token=LONG_TOKEN))
    assert error.kind == "bad_data" and not leaked(str(error), LONG_TOKEN)


def test_a_secret_header_is_masked_and_a_tenant_header_is_shown():
    prom = client(lambda q, _at: (502, ("echo %s key=%s" % (q, "api-key-5e2f9a71")).encode()),
                  headers={"X-Scope-OrgID": "prod", "X-Api-Key": "api-key-5e2f9a71"}, secret_headers=["x-api-key"])
    error = error_of(prom)
    assert 'namespace=\\"shop-prod\\"' in str(error) or 'namespace="shop-prod"' in str(error)
    assert "api-key-5e2f9a71" not in str(error) and "key=%s" % MASK in str(error)
    assert "'prod'" not in repr(prom.provider) and "api-key-5e2f9a71" not in repr(prom.provider)
    assert prom.secrets >= {"api-key-5e2f9a71"} and "prod" not in prom.secrets


def test_authorization_given_as_a_header_is_always_secret():
    prom = client(lambda _q, _at: answer("1"), headers={"Authorization": "Bearer %s" % LONG_TOKEN})
    masked = prom.redact("got %s" % LONG_TOKEN[:40])
    assert masked.startswith("got") and masked.endswith(MASK) and not leaked(masked, LONG_TOKEN)


@pytest.mark.parametrize("provider, subject", [
    ({"bearer_token": "abc"}, "provider.bearer_token"),
    ({"username": "u", "password": "pw"}, "provider.password"),
    ({"headers": {"Authorization": "x"}}, "provider.headers.Authorization"),
    ({"headers": {"X-Api-Key": "k1"}, "secret_headers": ["X-Api-Key"]}, "provider.headers.X-Api-Key"),
])
def test_a_credential_too_short_to_mask_is_refused_naming_the_field(provider, subject):
    with pytest.raises(InputError, match="shorter than 4 characters") as err:
        provider_from_params(dict({"url": "https://p"}, **provider))
    assert err.value.subject == subject
    for value in ("abc", "pw", "k1"):
        assert "'%s'" % value not in str(err.value)


def test_a_short_tenant_header_is_no_credential():
    assert provider_from_params({"url": "https://p", "headers": {"X-Scope-OrgID": "eu"}}).headers == (
        ("X-Scope-OrgID", "eu"),)


def test_secret_headers_name_given_headers():
    with pytest.raises(InputError, match="X-Token") as err:
        provider_from_params({"url": "https://p", "headers": {"X-Api-Key": "k" * 10}, "secret_headers": ["X-Token"]})
    assert err.value.subject == "provider.secret_headers"
