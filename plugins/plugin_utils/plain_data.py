# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Templated values as Python's own types, for the controller-side plugins that validate them (the action plugins'
arguments, the deploy role's argument check)."""

from __future__ import annotations

from collections.abc import Mapping


def plain(value, refuse=None, key=None):
    """``value`` as Python's own types: a mapping as a dict (its keys converted too, not renamed), a list or tuple as a
    list, a string or number as str, int or float; anything else (a date read by YAML, for instance) as it is.
    ansible-core 2.19 and later hand templated values over as subclasses of these that carry tags (where a value came
    from, whether it may be templated). ``refuse``, when given, is called with every value first and may raise; ``key``,
    when given, converts the keys of mappings instead (``str``: every key as text)."""
    if refuse is not None:
        refuse(value)
    if isinstance(value, Mapping):
        return {(key or plain)(name): plain(item, refuse, key) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item, refuse, key) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (str, int, float):
        if isinstance(value, kind):
            return value if type(value) is kind else kind(value)  # pylint: disable=unidiomatic-typecheck
    return value
