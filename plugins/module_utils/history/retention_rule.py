# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The retention rule (docs/history.md, Retention): ``keep_releases`` is a whole number of at least 2, and which
records go beyond it, oldest first, never a protected one. The deletes are in retention.py."""

from __future__ import annotations

import datetime

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.times import parse_time

# History needs the release in service and the one before it.
MIN_KEEP_RELEASES = 2
_OLDEST = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)


def check_keep_releases(keep):
    """The one keep_releases rule: a whole number of at least 2; returns it, or raises InputError."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < MIN_KEEP_RELEASES:
        raise InputError("must be a whole number of at least %d, got %r" % (MIN_KEEP_RELEASES, keep),
                         subject="keep_releases",
                         hint="history needs the release in service and the one before it; set keep_releases to "
                              "%d or more" % MIN_KEEP_RELEASES)
    return keep


def created_order(record):
    """Sort key of record metadata: (created, name); records without a readable ``created`` are the oldest."""
    return parse_time(record.get("created")) or _OLDEST, record.get("name") or ""


def records_to_delete(records_meta, keep, protect=frozenset()):
    """Names of the records beyond the ``keep`` newest (by created, then name), oldest first.

    Names in ``protect`` (the release in service, the one being replaced) are never returned. Records with
    no readable ``created`` count as the oldest.
    """
    check_keep_releases(keep)
    records_meta = list(records_meta)
    for index, record in enumerate(records_meta):
        if not record.get("name"):
            raise InputError("history record #%d has no name" % index, subject="keep_releases")
    entries = sorted((created_order(record) for record in records_meta), reverse=True)
    protect = set(protect or ())
    doomed = [name for _created, name in entries[keep:] if name not in protect]
    return list(reversed(doomed))
