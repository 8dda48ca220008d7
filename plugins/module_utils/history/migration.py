# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Records of the earlier format (Secrets, values included, inside the ConfigMap): their Secrets move to
companion Secrets (docs/history.md, Records of the earlier format). Every deploy runs this holding the lock."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.history import companion_format, naming
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ConflictError, HistoryError


class SecretsMigration:
    """Moves the Secrets of one history's earlier-format records and backups (a :class:`HistoryClient` and
    its :class:`Companions`)."""

    def __init__(self, client, companions):
        self.client = client
        self.companions = companions

    def pending(self, listed=None):
        """This key's records and backups written by the earlier format, read now (one LIST), or among
        ``listed`` ((records, backups) as HistoryClient.histories answered)."""
        records, backups = listed or self.client.histories(naming.HISTORY_RECORD, naming.HISTORY_BACKUP)
        return [cm for cm in records + backups if companion_format.needs_migration(cm)]

    def migrate(self, pending=None, skip=()):
        """Move the Secrets of this key's records and backups written by the earlier format (Secrets inside
        the ConfigMap) to companion Secrets; mark those without Secrets as checked. Call it holding the lock.
        ``pending``: as :meth:`pending` returned it under this lock (default: read now); ``skip``: names left
        alone (a record this deploy has just rewritten in the current format).

        Each ConfigMap is unpacked once: afterwards it carries the ``secrets`` field. Returns the names of the
        ConfigMaps whose Secrets were moved.
        """
        moved = []
        for cm in self.pending() if pending is None else pending:
            if cm["metadata"]["name"] not in skip and self._migrate_one(cm):
                moved.append(cm["metadata"]["name"])
        return moved

    def _migrate_one(self, cm):
        """True when Secrets of ``cm`` were moved; problems become notes (the next deploy tries again)."""
        name = cm["metadata"]["name"]
        subject = self.client.subject(name)
        action = "move the Secrets of %s out of the ConfigMap" % name
        try:
            new_cm, companion = companion_format.migrate(cm)
        except HistoryError as err:
            self.client.notes.append("left %s as it is: %s" % (subject, err))
            return False
        # The Secret first: if writing it fails, the ConfigMap still holds the values (nothing lost).
        self.companions.write_body(companion, action)
        try:
            self.client.put(new_cm, action)
        except ConflictError:
            self.client.notes.append("%s changed while its Secrets were moved; the next deploy moves them" % subject)
            return False
        if companion is None:
            return False
        self.client.notes.append("moved the Secret values of %s to %s (history format 2)"
                                 % (subject, self.client.subject(name, "Secret")))
        return True
