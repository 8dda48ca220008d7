# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rewrite of stored apiVersions (like helm mapkubeapis, and beyond it): the objects kept in the records are
renamed or converted to the apiVersions the cluster serves, and kinds without replacement dropped on request
(:mod:`apiconvert`), keeping a backup of each changed record."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.history import anchor as history_anchor
from ansible_collections.manent.kubernetes.plugins.module_utils.history import companion_format, naming, record_format
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.apiconvert import DROP, converter_for
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ConflictError, HistoryError, InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref

ACTION_REWRITTEN = "rewritten"
ACTION_WOULD_REWRITE = "would-rewrite"
ACTION_ERROR = "error"
CHANGING_ACTIONS = (ACTION_REWRITTEN, ACTION_WOULD_REWRITE)


class ApiVersionRewrite:
    """The rewrite of one history (a :class:`HistoryClient`); ``migration`` (a :class:`SecretsMigration`)
    moves the Secrets of earlier-format records out first."""

    def __init__(self, client, migration):
        self.client = client
        self.migration = migration

    def run(self, cluster, dry_run=False):
        """Rename or convert stored objects to served apiVersions, dropping kinds without replacement on request.

        ``cluster`` is an :class:`apiconvert.Converter` (discovery, the user's mappings, drop_removed) or just
        ``served_fn(api_version, kind) -> bool``. Returns one entry per record that needs something:
        ``{record, version, action (rewritten|would-rewrite|error), changes, dropped, errors, backup}``.
        A record with any object that cannot be used is left unchanged. Before a record is
        changed its original content is copied to ``<record>-bak`` (kept if it already exists, so it holds
        the oldest original). A second run finds nothing to rewrite.
        """
        if not dry_run:
            self.migration.migrate()  # records of the earlier format: their Secrets leave the ConfigMap first
        report = []
        converter = converter_for(cluster)
        for cm in sorted(self.client.history(), key=lambda item: item["metadata"]["name"]):
            entry = self._rewrite_one(cm, converter, dry_run)
            if entry:
                report.append(entry)
        return report

    def _rewrite_one(self, cm, converter, dry_run):
        name = cm["metadata"]["name"]
        entry = {"record": name, "version": record_format.record_meta(cm)["version"], "action": ACTION_ERROR,
                 "changes": [], "dropped": [], "errors": [], "backup": ""}
        if not dry_run and companion_format.needs_migration(cm):
            entry["errors"].append("its Secrets could not be moved out of the ConfigMap (see the warnings)")
            return entry
        try:
            meta, objects = record_format.decode_record(cm)
        except HistoryError as err:
            entry["errors"].append(str(err))
            return entry
        mapped = _map_objects(objects, converter, entry)
        if entry["errors"]:
            return entry
        if not entry["changes"]:
            return None
        entry["backup"] = naming.backup_name(name)
        if dry_run:
            entry["action"] = ACTION_WOULD_REWRITE
            return entry
        subject = naming.release_subject(Release(self.client.key, meta["version"]))
        rewritten = record_format.with_objects(cm, mapped, subject)
        if entry["dropped"]:
            rewritten["data"]["objectCount"] = str(len(mapped))
        # A record whose cluster-scoped objects the anchor vouched for stays vouched for once rewritten, also when
        # the rewrite dropped all of them (anchored to "": the key has anchors, as the Namespace read here shows);
        # one it did not vouch for gets no anchor from the rewrite (a rollback then writes them only where they
        # are live).
        namespace_obj = None
        if history_anchor.digest(objects):
            namespace_obj = history_anchor.read_namespace(self.client.kube, self.client.namespace)
        anchored = namespace_obj is not None and history_anchor.vouches(
            history_anchor.parse(namespace_obj, self.client.key), meta["version"], objects)
        self._write(cm, rewritten)
        if anchored:
            note = history_anchor.write(self.client.kube, self.client.namespace, self.client.key, meta["version"],
                                        mapped, namespace_obj=namespace_obj)
            if note:
                self.client.notes.append(note)
        entry["action"] = ACTION_REWRITTEN
        return entry

    def _write(self, cm, rewritten):
        """Back ``cm`` up, then replace it with ``rewritten``."""
        self._write_backup(cm)
        try:
            self.client.put(rewritten, "rewrite the stored apiVersions")
        except ConflictError as err:
            raise HistoryError("cannot rewrite the stored apiVersions: the record changed while rewriting it",
                               subject=self.client.subject(cm["metadata"]["name"]),
                               hint="run the rewrite again") from err

    def _write_backup(self, cm):
        body = record_format.encode_backup(cm, self.client.key, self.client.namespace)
        try:
            self.client.create(body, "back up the release record")
        except ConflictError:
            self.client.notes.append("kept the existing backup %s of %s (it holds an earlier original)"
                                     % (self.client.subject(body["metadata"]["name"]), cm["metadata"]["name"]))


def _map_objects(objects, converter, entry):
    """``objects`` as ``converter`` makes them usable (dropped ones left out); each change, drop and error noted in
    ``entry``."""
    mapped = []
    for obj in objects:
        try:
            outcome = converter.convert(obj)
        except InputError as err:
            entry["errors"].append(str(err))
            mapped.append(obj)
            continue
        if outcome.note:
            entry["changes"].append(outcome.note)
        if outcome.action == DROP:
            entry["dropped"].append(ref(obj))
        else:
            mapped.append(outcome.obj)
    return mapped


def rewrite_locked(store, cluster, dry_run=False, break_lock=False):
    """The rewrite as ``manent_history`` runs it: holding the history lock of ``store`` (a HistoryStore), or
    without lock and without writing anything in check mode. ``cluster``: see :meth:`ApiVersionRewrite.run`.
    Returns ``(findings, changed)``."""
    if dry_run:
        findings = store.rewrite_api_versions(cluster, dry_run=True)
    else:
        store.acquire(break_lock=break_lock)
        try:
            findings = store.rewrite_api_versions(cluster)
        finally:
            store.release_lock()
    return findings, any(entry.get("action") in CHANGING_ACTIONS for entry in findings)
