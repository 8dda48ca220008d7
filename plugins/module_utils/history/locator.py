# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The locator ConfigMap of a release key: which release is in service, and the deploy lock.

A deploy takes the lock by writing its id into the locator, conditioned on the read ``resourceVersion``, so
of two deploys racing for it exactly one wins (docs/history.md, Lock). Every later change of the locator is
made under this holder's lock (:meth:`Locator.change`).
"""

from __future__ import annotations

import copy

from ansible_collections.manent.kubernetes.plugins.module_utils.history import locator_format, naming
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ConflictError, HistoryError, InputError, LockedError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.conflicts import retry_on_conflict
from ansible_collections.manent.kubernetes.plugins.module_utils.history.client import WRITERS_HINT

_CLEAR_LOCK = ("clear the lock fields of the locator (see docs/history.md, Lock) or deploy with "
               "break_lock: true, only if you are sure no other deploy of this release is running")
_OTHER_PROCESS = "another process manages this history; stop it and deploy again"


class _Stale(Exception):
    """A write from a remembered version was refused (409 or 404): read the object again."""


class Locator:
    """The locator of one history (a :class:`HistoryClient`), locked by ``holder`` (the deploy id)."""

    def __init__(self, client, holder=""):
        self.client = client
        self.holder = str(holder or "")

    @property
    def subject(self):
        return self.client.subject(self.client.locator_name)

    def _decoded(self, cm):
        data = locator_format.decode_locator(cm)
        data["name"] = cm["metadata"]["name"]
        data["resourceVersion"] = cm["metadata"].get("resourceVersion") or ""
        return data

    def read(self):
        """The locator fields plus name and resourceVersion; None when this release key was never deployed."""
        cm = self.client.get(self.client.locator_name)
        return None if cm is None else self._decoded(cm)

    def known(self):
        """:meth:`read`, from the version of the locator this deploy last read or wrote when there is one."""
        cm = self.client.known(self.client.locator_name)
        return None if cm is None else self._decoded(cm)

    def held(self):
        """True when the locator as this client last read or wrote it (no request) names this holder's lock."""
        cm = self.client.remembered(self.client.locator_name)
        return bool(self.holder and cm is not None
                    and locator_format.decode_locator(cm).get("lockHolder") == self.holder)

    def in_service(self, data=None):
        """version, deployment, artifact (its sha256; "" when put in service by a collection that did not record
        it), slot and record of the release in service, or None when there is none; from locator ``data`` (as
        :meth:`read` returns it) when given, else read now."""
        data = self.read() if data is None else data
        if not data or not data["version"]:
            return None
        record = data["record"] or naming.record_name(self.client.key, data["version"])
        return {"version": data["version"], "deployment": data["deployment"], "artifact": data["artifactSha256"],
                "slot": data["slot"], "record": record}

    def _with_data(self, cm, data):
        """Copy of ``cm`` with locator ``data`` and the history labels (everything else as read)."""
        out = copy.deepcopy(cm)
        merged = dict(out.get("data") or {})
        merged.update(locator_format.encode_locator(self.client.key, self.client.namespace, data,
                                                    now=self.client.now())["data"])
        for field in locator_format.OPTIONAL_FIELDS:
            if not data.get(field):
                merged.pop(field, None)
        out["data"] = merged
        labels = dict(out["metadata"].get("labels") or {})
        labels.update(naming.history_labels(self.client.key, naming.HISTORY_LOCATOR))
        out["metadata"]["labels"] = labels
        return out

    # ------------------------------------------------------------------ changes under the lock

    def change(self, action, edit, missing_hint=None):
        """Change the locator fields with ``edit(data)`` (in place; False: nothing to do) under this holder's
        lock; LockedError when another deploy has taken it. Returns the written (or unchanged) ConfigMap."""
        def apply(cm):
            data = locator_format.decode_locator(cm)
            self.check(data, action)
            if edit(data) is False:
                return None
            return self._with_data(cm, data)

        return self.client.update(self.client.locator_name, apply, action, missing_hint=missing_hint)

    def update(self, action, **fields):
        """Set locator ``fields`` (traffic state: candidate, weight, retired, ...) under this holder's lock."""
        unknown = sorted(set(fields) - set(locator_format.TRAFFIC_FIELDS))
        if unknown:
            raise InputError("locator field(s) %s are not traffic fields" % ", ".join(unknown), subject=self.subject)
        wanted = {name: "" if value is None else str(value) for name, value in fields.items()}

        def edit(data):
            if all(data[name] == value for name, value in wanted.items()):
                return False
            data.update(wanted)
            return True

        self.change(action, edit, missing_hint="nothing of this release key was deployed to this namespace")
        return self.read()

    # ------------------------------------------------------------------ lock

    def check(self, data, action):
        """LockedError when another deploy has taken the lock (our own, expired or not, is fine)."""
        holder = data.get("lockHolder") or ""
        if holder and holder != self.holder:
            raise self._locked_error(holder, data.get("lockSince"), data.get("lockExpires"), action)

    def _locked_error(self, holder, since, expires, action="deploy"):
        until = (" until %s" % expires) if expires else ""
        return LockedError(
            "cannot %s: deploy %r holds the release lock since %s%s" % (action, holder, since or "?", until),
            subject=self.subject,
            hint="wait for that deploy to finish (the lock expires by itself%s); if you are sure it is no longer "
                 "running, deploy again with break_lock: true" % until)

    def _lock_data(self, cm, ttl, break_lock, raced):
        """(locator data locked by this holder, note on a take-over or None); LockedError when held."""
        data = locator_format.decode_locator(cm)
        now = self.client.now()
        try:
            state, holder, since = locator_format.lock_state(data, now)
        except HistoryError:
            if not break_lock or raced:
                raise HistoryError("the lock held by %r has no readable lockSince/lockExpires" % data["lockHolder"],
                                   subject=self.subject, hint=_CLEAR_LOCK) from None
            state, holder, since = locator_format.LOCK_HELD, "", data["lockSince"]  # taken over below, even if ours
        if state == locator_format.LOCK_FREE:
            return locator_format.with_lock(locator_format.without_lock(data), self.holder, now, ttl), None
        if holder == self.holder:
            return locator_format.with_lock(data, self.holder, now, ttl), None
        holder = holder or data["lockHolder"]
        if state == locator_format.LOCK_HELD and (raced or not break_lock):
            raise self._locked_error(holder, since, data["lockExpires"])
        if state == locator_format.LOCK_HELD:
            note = "broke the release lock held by deploy %r since %s (break_lock: true)" % (holder, since)
        else:
            note = ("took over the expired release lock of deploy %r (held since %s, expired %s)"
                    % (holder, since, data["lockExpires"] or "?"))
        locked = locator_format.with_lock(locator_format.without_lock(data), self.holder, now, ttl)
        return locked, note + " on " + self.subject

    def acquire(self, ttl=locator_format.LOCK_TTL_SECONDS, break_lock=False):
        """Take (or renew) the deploy lock of this release key; returns the locator as :meth:`read`.

        Creates the locator, already locked, when the key was never deployed. Of two deploys racing for
        the lock exactly one wins: the other gets LockedError.
        """
        if not self.holder:
            raise InputError("the deploy lock needs a holder (the deploy id)", subject=self.subject)
        action = "lock the release history"
        remembered = self.client.remembered(self.client.locator_name)
        if remembered is not None:
            try:
                return self._put_lock(remembered, ttl, break_lock, action)
            except (_Stale, LockedError, HistoryError):
                pass  # nothing is decided on a remembered version: read it now
        # a locator this deploy read absent (a first deploy) is created locked without reading it again: creating
        # is atomic, and a 409 (another deploy created it since) is handled as a race
        return self._acquire(ttl, break_lock, action, read=not self.client.seen_absent(self.client.locator_name))

    def _put_lock(self, cm, ttl, break_lock, action):
        """One attempt from the remembered locator ``cm``; _Stale when the server refused it (409, 404)."""
        data, note = self._lock_data(cm, ttl, break_lock, raced=False)
        try:
            written = self.client.put(self._with_data(cm, data), action, passthrough=(ConflictError, NotFoundError))
        except (ConflictError, NotFoundError):
            raise _Stale() from None
        if note:
            self.client.notes.append(note)
        return self._decoded(written)

    def _acquire(self, ttl, break_lock, action, read=True):
        """``read``: read the locator first (False: this deploy read it absent, so it is created at once)."""
        raced = False
        cm = self.client.get(self.client.locator_name, action) if read else None
        if cm is None:
            created = self._create_locked(ttl, action)
            if created is not None:
                return self._decoded(created)
            raced = True  # created at the same moment by another deploy: lock it the usual way
            cm = self._reread(action, "the locator was created and deleted again meanwhile")
        current = [cm]

        def attempt(number):
            # After a 409 the lock of any other holder is final, even with break_lock: it was just written.
            data, note = self._lock_data(current[0], ttl, break_lock, raced=raced or number > 0)
            try:
                written = self.client.put(self._with_data(current[0], data), action)
            except ConflictError:
                current[0] = self._reread(action, "the locator was deleted while locking it")
                raise
            if note:
                self.client.notes.append(note)
            return self._decoded(written)

        return retry_on_conflict(attempt, lambda tries, _last: HistoryError(
            "cannot %s: the locator kept changing (%d conflicting writes)" % (action, tries), subject=self.subject,
            hint=WRITERS_HINT))

    def _create_locked(self, ttl, action):
        """The locator created already locked by this holder; None when another deploy created it first."""
        now = self.client.now()
        body = locator_format.encode_locator(self.client.key, self.client.namespace,
                                             locator_format.with_lock({}, self.holder, now, ttl), now=now)
        try:
            return self.client.create(body, action)
        except ConflictError:
            return None

    def _reread(self, action, gone):
        cm = self.client.get(self.client.locator_name, action)
        if cm is None:
            raise HistoryError("cannot %s: %s" % (action, gone), subject=self.subject, hint=_OTHER_PROCESS)
        return cm

    def release(self):
        """Clear the lock if this holder has it; True when cleared, False when it was not ours."""
        released = []

        def unlock(cm):
            data = locator_format.decode_locator(cm)
            released.clear()
            if not self.holder or data["lockHolder"] != self.holder:
                return None
            released.append(True)
            return self._with_data(cm, locator_format.without_lock(data))

        self.client.update(self.client.locator_name, unlock, "unlock the release history", missing_ok=True)
        return bool(released)

    def unlock(self, dry_run=False):
        """Remove the lock of whichever deploy holds it (one that was killed); returns that deploy's id, or ''
        when the lock is free. With ``dry_run`` nothing is written."""
        data = self.read()
        holder = (data or {}).get("lockHolder") or ""
        if holder and not dry_run:
            self.acquire(break_lock=True)
            self.release()
        return holder
