# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one retry on write conflicts: a write conditioned on what was read (a resourceVersion, a create of a name)
that the server refuses with 409 is decided again from a fresh read, a bounded number of times."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ConflictError

CONFLICT_RETRIES = 5  # attempts of one conditioned write before giving up


def retry_on_conflict(attempt, exhausted, tries=CONFLICT_RETRIES, refused=(ConflictError,)):
    """``attempt(number)`` (0, 1, ...) until it returns: it reads, decides and writes once, and raises one of
    ``refused`` when the server refused the write. After ``tries`` refusals, raises ``exhausted(tries, last
    error)``, which says who else writes and what to do."""
    last = None
    for number in range(tries):
        try:
            return attempt(number)
        except refused as err:
            last = err
    raise exhausted(tries, last)
