# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Retention: after a successful deploy, delete the records beyond ``keep_releases`` (docs/history.md).

Which records go is decided by :func:`retention_rule.records_to_delete` (the keep_releases rule is
:func:`retention_rule.check_keep_releases`); this file deletes them with their companion Secrets and backups.
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.history import (
    companion_format, naming, record_format, retention_rule)


class Retention:
    """Cleanup of one history: a :class:`HistoryClient`, its :class:`Locator` and :class:`Companions`."""

    def __init__(self, client, locator, companions):
        self.client = client
        self.locator = locator
        self.companions = companions

    def cleanup(self, keep, listed=None):
        """Delete this key's records beyond the ``keep`` newest, never the one in service, the one it
        replaced nor the traffic candidate; returns the deleted record names, oldest first. Backups of deleted
        records go too. ``listed``: (records, backups) as listed while this holder kept the lock (no LIST now);
        the records the locator names, which this deploy wrote since, are taken as this client last wrote them."""
        data = self.locator.known() or {}  # as this deploy last wrote it, under its lock
        protect = {name for name in (data.get("record"), data.get("replacedRecord"), data.get("candidateRecord"))
                   if name}
        cms, backups = self._from_listing(listed, protect) if listed is not None else (None, None)
        if cms is None:
            cms = {cm["metadata"]["name"]: cm for cm in self.client.history()}
        doomed = retention_rule.records_to_delete([record_format.record_meta(cm) for cm in cms.values()], keep, protect)
        deleted = []
        for name in doomed:
            if self.client.delete(cms[name], "delete the old release record"):
                self.companions.delete(cms[name], "delete the Secrets of an old release record")
                deleted.append(name)
        if deleted:
            self._delete_backups(cms, deleted, backups)
        return deleted

    def _from_listing(self, listed, protect):
        """(records by name, backups) from ``listed`` plus the ``protect``ed records, each as this client last wrote
        or read it; (None, None) when the locator names a record this client never saw (then list again)."""
        records, backups = listed
        cms = {cm["metadata"]["name"]: self.client.remembered(cm["metadata"]["name"]) or cm for cm in records}
        for name in protect - set(cms):
            cms[name] = self.client.remembered(name)
        if any(cm is None for cm in cms.values()):
            return None, None
        return cms, backups

    def _delete_backups(self, cms, deleted, backups=None):
        """Delete the backups of the ``deleted`` records (``cms``: the records as read, by name; ``backups``: as
        listed under the lock, else listed now)."""
        for cm in self.client.history(naming.HISTORY_BACKUP) if backups is None else backups:
            original = (cm["metadata"].get("annotations") or {}).get(naming.ANNOTATION_BACKUP_OF)
            if original in deleted and self.client.delete(cm, "delete a record backup"):
                if companion_format.companion_name(cm) != companion_format.companion_name(cms[original]):
                    self.companions.delete(cm, "delete the Secrets of a record backup")
                self.client.notes.append("deleted %s, the backup of a deleted record"
                                         % self.client.subject(cm["metadata"]["name"]))
