# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Masking credentials in texts that may quote them (the Prometheus analysis' messages, Kubernetes Events' notes): a
:class:`Mask` of the credential values.

A credential can reach a text in another form than the one given: an error page of a proxy echoes the request's
``Authorization`` header (the base64 of ``user:password`` for basic auth), a JSON or Python quoting escapes ``\\``
and ``"``, an HTML page writes ``&quot;``, a URL percent-encodes. The mask knows each of these :func:`forms` and
replaces every one of them, longest first; then every run of text that holds a piece of FRAGMENT characters of one
of them (a secret the echo itself cut) is masked too. Texts are masked whole, before any cut or quoting, so that a
cut never leaves the head or tail of a secret.

Credentials shorter than MIN_LENGTH are refused at input (analysis/provider.py): a value of two characters cannot be masked
without masking most words."""

from __future__ import annotations

import html
import json
import urllib.parse

MASK = "********"
MIN_LENGTH = 4
FRAGMENT = 8


def forms(value):
    """The ways ``value`` can be written in a text: as given, escaped for JSON (both ways of writing non-ASCII),
    Python and HTML, and percent-encoded (as a path and as a form value)."""
    if not value:
        return set()
    out = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], repr(value)[1:-1],
           html.escape(value), html.escape(value, quote=False), urllib.parse.quote(value, safe=""),
           urllib.parse.quote(value), urllib.parse.quote_plus(value)}
    return {form for form in out if form}


class Mask:
    """``mask(text)``: ``text`` with every form of every value masked, and every piece of FRAGMENT characters or
    more of one of them. ``values``: the credential values (empty ones are ignored)."""

    def __init__(self, values):
        self.forms = tuple(sorted({form for value in values if value for form in forms(str(value))},
                                  key=lambda form: (-len(form), form)))
        self._pieces = frozenset(form[start:start + FRAGMENT] for form in self.forms if len(form) >= FRAGMENT
                                 for start in range(len(form) - FRAGMENT + 1))

    def __bool__(self):
        return bool(self.forms)

    def __call__(self, text):
        for form in self.forms:
            text = text.replace(form, MASK)
        return self._mask_pieces(text) if self._pieces else text

    def _mask_pieces(self, text):
        hidden = [False] * len(text)
        found = False
        for start in range(len(text) - FRAGMENT + 1):
            if text[start:start + FRAGMENT] in self._pieces:
                hidden[start:start + FRAGMENT] = [True] * FRAGMENT
                found = True
        if not found:
            return text
        out, start = [], 0
        while start < len(text):
            end = start
            while end < len(text) and hidden[end] == hidden[start]:
                end += 1
            out.append(MASK if hidden[start] else text[start:end])
            start = end
        return "".join(out)
