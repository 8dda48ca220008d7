# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Times in history ConfigMaps: RFC 3339 UTC with seconds (``2024-05-01T12:00:00Z``), written and read back, and
the current time (every caller can inject its own clock instead)."""

from __future__ import annotations

import datetime


def format_time(moment):
    """RFC 3339 UTC with seconds: 2024-05-01T12:00:00Z (naive datetimes are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text):
    """RFC 3339 text -> aware datetime, or None when empty or unreadable."""
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(str(text).strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment


def utcnow():
    """The current time, aware, in UTC."""
    return datetime.datetime.now(datetime.timezone.utc)
