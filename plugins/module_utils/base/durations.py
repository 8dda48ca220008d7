# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Durations as people write them in parameters: ``"2m"``, ``"90s"``, ``"1m30s"``, ``"500ms"`` or plain seconds.

:func:`parse_duration` reads every duration parameter of the modules, the role's filters and the helm timeout;
:func:`format_duration` writes seconds back in the same notation for messages.
"""

from __future__ import annotations

import math
import re

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text, name=None):
    """Seconds (float) of "2m", "90s", "1h", "1m30s", "500ms" or a plain number of seconds."""
    hint = 'use seconds or a duration such as "90s", "2m", "1m30s" or "1h"'
    if isinstance(text, bool) or text is None:
        raise InputError("invalid duration %r" % (text,), subject=name, hint=hint)
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        value = str(text).strip()
        seconds = _duration_seconds(value)
        if seconds is None:
            raise InputError("invalid duration %r" % (text,), subject=name, hint=hint)
    if math.isnan(seconds) or math.isinf(seconds) or seconds < 0:
        raise InputError("invalid duration %r: must be a finite, non-negative time" % (text,), subject=name,
                         hint=hint)
    return seconds


def _duration_seconds(value):
    if not value:
        return None
    if _PLAIN_NUMBER.fullmatch(value):
        return float(value)
    total, position = 0.0, 0
    while position < len(value):
        match = _DURATION_PART.match(value, position)
        if not match:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    return total


def format_duration(seconds):
    """120.0 -> '2m', 90 -> '1m30s', 1.5 -> '1.5s'."""
    if seconds != int(seconds) or seconds < 1:
        return "%gs" % seconds
    rest, text = int(seconds), ""
    for unit, size in (("h", 3600), ("m", 60)):
        if rest >= size:
            text += "%d%s" % (rest // size, unit)
            rest %= size
    if rest or not text:
        text += "%ds" % rest
    return text
