# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How numbers, label sets and times are written in reasons and reports: Prometheus' own spelling (``NaN``,
``+Inf``, ``{code="500", slot="b"}``) and UTC ISO 8601 times."""

from __future__ import annotations

import datetime
import math


def number(value):
    """0.0625 -> '0.0625', inf -> '+Inf', nan -> 'NaN', None -> 'none'; six significant digits."""
    if value is None:
        return "none"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return "%.6g" % value


def labels(series_labels):
    """{'__name__': 'up', 'job': 'x'} -> 'up{job="x"}'; {} -> '{}'."""
    series_labels = dict(series_labels or {})
    name = series_labels.pop("__name__", "")
    inner = ", ".join('%s="%s"' % (key, series_labels[key]) for key in sorted(series_labels))
    return "%s{%s}" % (name, inner)


def timestamp(epoch):
    """Seconds since the epoch -> '2026-12-04T10:01:00.123Z' (milliseconds, UTC)."""
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (moment.microsecond // 1000)


def epoch_text(epoch):
    """Seconds since the epoch as Prometheus reads them: 1733306460.5 -> '1733306460.5', whole seconds without
    a fraction."""
    text = "%.3f" % epoch
    return text.rstrip("0").rstrip(".")
