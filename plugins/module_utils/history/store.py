# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release history on the cluster (docs/requirements.md §8): the one entry to the history of a release key.

:class:`HistoryStore` composes the parts, each in its own file:

* :mod:`client` — the requests (ConfigMaps and Secrets of one namespace, 409 re-reads, uid deletes);
* :mod:`locator` — the locator: the release in service and the deploy lock;
* :mod:`records` — records and their companion Secrets (:mod:`companion`), promote;
* :mod:`retention` — cleanup beyond ``keep_releases``;
* :mod:`migration` — records of the earlier format (Secrets inside the ConfigMap);
* :mod:`rewrite` — the rewrite of stored apiVersions, with backups;
* :mod:`helm_migration` — deletion of Helm's release Secrets.

Names and labels come from :mod:`naming`, contents from :mod:`record_format`, :mod:`companion_format` and
:mod:`locator_format`. Every write that depends on what was read is a
PUT carrying the read ``resourceVersion``, so two deploys of the same release key can never both believe
they hold the lock or both move the pointer: the API server refuses the second write with 409 Conflict.
Only ConfigMaps of this store's release key are ever touched: records are listed by the key's labels *and*
must be named ``<locator>-...`` (the locator name ends with the hash of the full key).
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.history import naming
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.helm_migration import (
    HELM_RELEASE_TYPE, delete_helm_release_secrets)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.client import HistoryClient
from ansible_collections.manent.kubernetes.plugins.module_utils.history.companion import Companions
from ansible_collections.manent.kubernetes.plugins.module_utils.history.locator import Locator
from ansible_collections.manent.kubernetes.plugins.module_utils.history.locator_format import LOCK_TTL_SECONDS
from ansible_collections.manent.kubernetes.plugins.module_utils.history.migration import SecretsMigration
from ansible_collections.manent.kubernetes.plugins.module_utils.history.records import Records
from ansible_collections.manent.kubernetes.plugins.module_utils.history.retention import Retention
from ansible_collections.manent.kubernetes.plugins.module_utils.history.rewrite import (
    ACTION_ERROR, ACTION_REWRITTEN, ACTION_WOULD_REWRITE, ApiVersionRewrite)

__all__ = ["HistoryStore", "ACTION_ERROR", "ACTION_REWRITTEN", "ACTION_WOULD_REWRITE", "HELM_RELEASE_TYPE",
           "LOCK_TTL_SECONDS"]


class HistoryStore:
    """The history of one release key in one namespace of one cluster."""

    def __init__(self, kube, namespace, release_key, holder="", now=None):
        if not namespace:
            raise InputError("release history needs a namespace", subject="namespace",
                             hint="set the namespace deploy parameter")
        self._client = HistoryClient(kube, namespace, release_key, now)
        self._locator = Locator(self._client, holder)
        companions = Companions(self._client)
        self._records = Records(self._client, self._locator, companions)
        self._retention = Retention(self._client, self._locator, companions)
        self._migration = SecretsMigration(self._client, companions)
        self._rewrite = ApiVersionRewrite(self._client, self._migration)
        self.kube = kube
        self.namespace = namespace
        self.key = release_key
        self.holder = self._locator.holder
        self.locator_name = self._client.locator_name
        self.notes = self._client.notes  # what the user should know (the deploy's warnings), shared by the parts
        # (records, backups) as listed holding this holder's lock (migration_pending), for cleanup; None: list then
        self._listed = None

    # locator and lock
    def locator(self):
        """The locator fields plus name and resourceVersion; None when this release key was never deployed."""
        return self._locator.read()

    def in_service(self, locator=None):
        """version, deployment, slot and record of the release in service, or None when there is none; from
        ``locator`` (as :meth:`locator` returns it) when given, else read now."""
        return self._locator.in_service(locator)

    def acquire(self, ttl=LOCK_TTL_SECONDS, break_lock=False):
        """Take (or renew) the deploy lock of this release key; returns the locator (LockedError when held)."""
        self._listed = None
        return self._locator.acquire(ttl=ttl, break_lock=break_lock)

    def release_lock(self):
        """Clear the lock if this holder has it; True when cleared, False when it was not ours."""
        self._listed = None
        return self._locator.release()

    def unlock(self, dry_run=False):
        """Remove a lock left by a killed deploy; returns its holder ('' when the lock was free)."""
        return self._locator.unlock(dry_run=dry_run)

    def update_locator(self, action, **fields):
        """Set locator traffic ``fields`` (candidate, weight, retired, ...) under this holder's lock."""
        return self._locator.update(action, **fields)

    # records
    def know_namespace(self, namespace_obj):
        """The release Namespace as the deploy read it: whether this release key has anchors (history/anchor.py)."""
        self._client.namespace_object = namespace_obj

    def anchor_records(self, anchoring):
        """Whether the records this store writes are anchored (history/anchor.py; default True). A rollback to a
        record the anchor did not vouch for writes it again without anchoring it: that would vouch for it."""
        self._client.anchoring = anchoring

    def prepare_record(self, release, objects, meta=None):
        """The record ConfigMap of ``release`` (status pending); HistoryError when too large. Writes nothing."""
        return self._records.prepare(release, objects, meta)

    def save_record(self, release, objects, meta=None):
        """Write the record of ``release`` and its companion Secret; returns the record name."""
        return self._records.save(release, objects, meta)

    def note_strays(self, release, objects):
        """List in the record of the version in service (``release`` deployed again) those of ``objects`` it does
        not hold, before the redeploy writes them: prunable if it fails. True when the record was written."""
        return self._records.note_strays(release, objects)

    def mark(self, version, status, **fields):
        """Set the status (and record fields such as slot or replaced) of the record of ``version``."""
        return self._records.mark(version, status, **fields)

    def promote(self, release, replaced_version=None):
        """Put ``release`` in service after its rollout succeeded; returns the locator."""
        return self._records.promote(release, replaced_version)

    def set_candidate(self, release, slot):
        """Record ``release`` (applied to ``slot``, not in service) as the traffic candidate, weight 0."""
        return self._records.set_candidate(release, slot)

    def records(self):
        """Metadata of this release key's records, newest first (objects are not unpacked)."""
        return self._records.list()

    def load(self, version, secrets=True, strays=False):
        """(meta, objects) of the record of ``version`` (Secrets without values with ``secrets=False``; with
        ``strays``, what a failed redeploy of it may have left follows, for prune)."""
        return self._records.load(version, secrets=secrets, strays=strays)

    def previous_objects(self, secrets=False, strays=False):
        """The saved objects of the release in service ([] when none); Secrets without values unless ``secrets``;
        with ``strays``, what a failed redeploy of it may have left follows, for prune."""
        return self._records.previous_objects(secrets=secrets, strays=strays)

    # retention, earlier format, stored apiVersions, Helm
    def cleanup(self, keep):
        """Delete the records beyond the ``keep`` newest (and their backups); returns their names, oldest first.
        Holding the lock since :meth:`migration_pending`, from that listing (no second LIST), else listed now."""
        return self._retention.cleanup(keep, self._listed)

    def migration_pending(self):
        """The records and backups of the earlier format (Secrets inside the ConfigMap), read now (one LIST).
        Called holding the lock, the listing is kept for :meth:`cleanup`: under the lock only this holder writes
        this history, and the client remembers what it wrote since."""
        listed = self._client.histories(naming.HISTORY_RECORD, naming.HISTORY_BACKUP)
        if self._locator.held():
            self._listed = listed
        return self._migration.pending(listed)

    def migrate(self, pending=None, skip=()):
        """Move the Secrets of earlier-format records out of the ConfigMaps (holding the lock); returns names.
        ``pending``: as :meth:`migration_pending` returned it under the lock; ``skip``: names left alone."""
        return self._migration.migrate(pending, skip)

    def rewrite_api_versions(self, convert, dry_run=False):
        """Convert stored objects to served apiVersions (apiconvert.py), backing records up; returns the report."""
        return self._rewrite.run(convert, dry_run=dry_run)

    def delete_helm_release_secrets(self, release_name):
        """Delete Helm's release Secrets of ``release_name`` in this namespace; returns their names."""
        return delete_helm_release_secrets(self._client, release_name)
