# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The locator ConfigMap of a release key (docs/history.md, Locator; Lock): which release is in service, the
traffic candidate, and the deploy lock with its holder, since and expiry. Pure functions; every clock reading can be
injected. The requests are in locator.py."""

from __future__ import annotations

import datetime

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError, InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import (
    HISTORY_LOCATOR, cm_subject, history_labels, locator_name)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.packing import data_of
from ansible_collections.manent.kubernetes.plugins.module_utils.history.times import format_time, parse_time, utcnow

LOCK_FIELDS = ("lockHolder", "lockSince", "lockExpires")

# Traffic rollouts: the candidate (release applied to the other slot), its weight in percent, when the
# release in service was promoted, the replaced release once its slot was retired, and the traffic operation in
# progress (traffic/pending.py: written before its first write, cleared after its last).
TRAFFIC_FIELDS = ("candidate", "candidateDeployment", "candidateRecord", "candidateSlot", "weight", "promoted",
                  "retired", "inProgress")
# The release in service: version, deploy id, the sha256 of its artifact, its record, slot, the release it replaced.
LOCATOR_FIELDS = ("version", "deployment", "artifactSha256", "record", "slot", "replaced", "replacedRecord",
                  "updated") + TRAFFIC_FIELDS + LOCK_FIELDS

# Written only when set (a locator without them reads as before they existed).
OPTIONAL_FIELDS = ("artifactSha256", "inProgress")

LOCK_TTL_SECONDS = 900
LOCK_FREE = "free"
LOCK_HELD = "held"
LOCK_EXPIRED = "expired"


def encode_locator(release_key, namespace, current=None, now=None):
    """The locator ConfigMap of ``release_key`` with ``current`` (locator fields) as its data (the
    :data:`OPTIONAL_FIELDS` only when set).

    ``updated`` is ``now`` when given, else current["updated"], else the current time.
    """
    current = dict(current or {})
    unknown = sorted(set(current) - set(LOCATOR_FIELDS))
    if unknown:
        raise InputError("unknown locator field(s) %s" % ", ".join(unknown), subject=locator_name(release_key),
                         hint="locator fields are: %s" % ", ".join(LOCATOR_FIELDS))
    data = {}
    for field in LOCATOR_FIELDS:
        value = current.get(field)
        if isinstance(value, datetime.datetime):
            value = format_time(value)
        data[field] = "" if value is None else str(value)
        if field in OPTIONAL_FIELDS and not data[field]:
            del data[field]
    if now is not None:
        data["updated"] = format_time(now)
    elif not data["updated"]:
        data["updated"] = format_time(utcnow())
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": locator_name(release_key),
            "namespace": namespace,
            "labels": history_labels(release_key, HISTORY_LOCATOR),
        },
        "data": data,
    }


def decode_locator(cm):
    """The locator fields of ``cm`` (missing ones are '')."""
    data = data_of(cm, cm_subject(cm))
    return {field: str(data.get(field) or "") for field in LOCATOR_FIELDS}


def lock_state(locator_data, now):
    """('free'|'held'|'expired', holder, since) of the lock kept in the locator data at time ``now``."""
    holder = str(locator_data.get("lockHolder") or "")
    if not holder:
        return LOCK_FREE, "", ""
    since = str(locator_data.get("lockSince") or "")
    expires = parse_time(locator_data.get("lockExpires"))
    if expires is None:
        started = parse_time(since)
        if started is None:
            raise HistoryError("the lock held by %r has no readable lockSince/lockExpires" % holder,
                               subject="history lock",
                               hint="check that no deploy is running, then clear the lock fields of the locator")
        expires = started + datetime.timedelta(seconds=LOCK_TTL_SECONDS)
    if now.tzinfo is None:
        now = now.replace(tzinfo=datetime.timezone.utc)
    if now >= expires:
        return LOCK_EXPIRED, holder, since
    return LOCK_HELD, holder, since


def with_lock(data, holder, now, ttl=LOCK_TTL_SECONDS):
    """Copy of locator ``data`` locked by ``holder`` until now + ttl (a renewal by the holder keeps lockSince)."""
    if not holder:
        raise InputError("a lock needs a holder", subject="history lock")
    locked = dict(data)
    state, current, since = lock_state(data, now)
    if not (state == LOCK_HELD and current == holder and since):
        since = format_time(now)
    locked["lockHolder"] = str(holder)
    locked["lockSince"] = since
    locked["lockExpires"] = format_time(now + datetime.timedelta(seconds=ttl))
    return locked


def without_lock(data):
    """Copy of locator ``data`` with the lock fields emptied."""
    unlocked = dict(data)
    for field in LOCK_FIELDS:
        unlocked[field] = ""
    return unlocked
