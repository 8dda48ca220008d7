# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Companion Secrets: the Secrets of a release, kept beside its history ConfigMap under the same name.

Their content comes from :mod:`companion_format`; a companion is read, written or deleted only for a ConfigMap
that names one, so histories of releases without Secrets need ConfigMap rights alone.
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.history import companion_format
from ansible_collections.manent.kubernetes.plugins.module_utils.base.conflicts import retry_on_conflict
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ConflictError, HistoryError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.client import WRITERS_HINT


class Companions:
    """Write, read and delete the companion Secrets of one history (a :class:`HistoryClient`)."""

    def __init__(self, client):
        self.client = client

    def write(self, cm, secrets, action):
        """Create or replace the companion Secret holding ``secrets`` of the written ConfigMap ``cm`` (owned by
        it); nothing when there are no Secrets."""
        self.write_body(companion_format.encode_companion(cm, secrets), action)

    def write_body(self, body, action):
        """Create or replace the companion Secret ``body`` (None: nothing to do)."""
        if body is None:
            return
        if self._create(body, action):
            return
        name = body["metadata"]["name"]

        def attempt(_number):  # a 409 (created or changed meanwhile) reads it again
            live = self.client.get(name, action, "secrets", "Secret")
            if live is None:
                self.client.create(body, action, "secrets", "Secret")
                return
            if live.get("type") != companion_format.SECRETS_TYPE:
                raise HistoryError("cannot %s: a Secret of this name exists and is not of type %s"
                                   % (action, companion_format.SECRETS_TYPE),
                                   subject=self.client.subject(name, "Secret"),
                                   hint="rename or delete that Secret; manent keeps release Secrets under this name")
            body["metadata"]["resourceVersion"] = live["metadata"].get("resourceVersion")
            self.client.put(body, action, "secrets", "Secret")

        retry_on_conflict(attempt, lambda _tries, _last: HistoryError(
            "cannot %s: the Secret kept changing under us" % action, subject=self.client.subject(name, "Secret"),
            hint=WRITERS_HINT))

    def _create(self, body, action):
        """True when created, False when a Secret of that name exists."""
        try:
            self.client.create(body, action, "secrets", "Secret")
            return True
        except ConflictError:
            return False

    def delete(self, cm, action):
        """Delete the companion Secret named by history ConfigMap ``cm``, if it names one."""
        name = companion_format.companion_name(cm)
        if not name:
            return False
        live = self.client.get(name, action, "secrets", "Secret")
        if live is None or live.get("type") != companion_format.SECRETS_TYPE:
            return False
        return self.client.delete(live, action, resource="secrets", kind="Secret")

    def restore(self, cm, objects, action):
        """``objects`` as stored in ``cm`` with the Secrets of its companion put back."""
        name = companion_format.companion_name(cm)
        if not name:
            return objects
        companion = self.client.get(name, action, "secrets", "Secret")
        return companion_format.restore_secrets(objects, companion, cm)
