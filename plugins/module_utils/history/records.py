# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release records: one ConfigMap per release (and its companion Secret when the release has Secrets).

Saving, reading (each record checked against tampering: :func:`record_check.check_record`), marking their
status, and putting a release in service (promote) or next to it as the
traffic candidate, which also moves the locator's pointer (under the lock, see :mod:`locator`). Their content
comes from :mod:`record_format`.
"""

from __future__ import annotations

import copy

from ansible_collections.manent.kubernetes.plugins.module_utils.history import anchor as history_anchor
from ansible_collections.manent.kubernetes.plugins.module_utils.history import (
    companion_format, locator_format, naming, record_check, record_format, retention_rule, times)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ConflictError, HistoryError, InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import together


class Records:
    """The records of one history: a :class:`HistoryClient`, its :class:`Locator` and :class:`Companions`."""

    def __init__(self, client, locator, companions):
        self.client = client
        self.locator = locator
        self.companions = companions

    def _check_release(self, release):
        if release.key != self.client.key:
            raise InputError("release key %r does not belong to this history (%r)" % (release.key, self.client.key),
                             subject=self.locator.subject)

    # ------------------------------------------------------------------ write

    def prepare(self, release, objects, meta=None):
        """The record ConfigMap of ``release`` (status pending); HistoryError when it or its companion Secret
        is too large. Writes nothing."""
        self._check_release(release)
        meta = dict(meta or {})
        meta.setdefault("created", self.client.now())
        body = record_format.encode_record(release, self.client.namespace, objects, meta)
        companion_format.encode_companion(body, record_format.split_secrets(objects)[1])  # size check of the Secrets
        return body

    def save(self, release, objects, meta=None):
        """Write the record of ``release`` (replacing the record of the same version), then its companion
        Secret when the release has Secrets; returns the record name."""
        body = self.prepare(release, objects, meta)
        name = body["metadata"]["name"]
        action = "save the release record of version %s" % release.version
        secrets = record_format.split_secrets(objects)[1]
        try:
            written = self.client.create(body, action)
            self.companions.write(written, secrets, action)
            self._anchor(release, objects)
            return name
        except ConflictError:
            pass
        current = self.locator.in_service()
        if current and current["record"] == name:
            self.client.notes.append("version %s is redeployed: its record %s, the one in service, now holds the "
                                     "objects of deploy %s" % (release.version, self.client.subject(name),
                                                               release.deployment))
        replaced = []

        def replace(cm):
            replaced[:] = [cm]
            out = copy.deepcopy(body)
            out["metadata"]["resourceVersion"] = cm["metadata"].get("resourceVersion")
            return out

        written = self.client.update(name, replace, action)
        if secrets:
            self.companions.write(written, secrets, action)
        elif replaced:
            self.companions.delete(replaced[0], action)
        self._anchor(release, objects)
        return name

    def _anchor(self, release, objects):
        """Anchor the cluster-scoped objects of the record just written on the release Namespace (history/anchor.py:
        what lets a rollback restore them as stored); a note when it could not."""
        if not self.client.anchoring:
            return
        note = history_anchor.write(self.client.kube, self.client.namespace, self.client.key, release.version,
                                    objects, namespace_obj=self.client.namespace_object)
        if note:
            self.client.notes.append(note)

    def note_strays(self, release, objects):
        """Before a redeploy of the version in service (``release``: same version, other deploy id or rendering)
        writes its first object: list in the record in service those of ``objects`` that it does not hold
        (record_format.with_strays), so that they stay prunable if the redeploy fails, while the record keeps the
        objects, deploy id and status of what is in service. Nothing is written when there is nothing new to list."""
        self._check_release(release)
        name = naming.record_name(self.client.key, release.version)
        strays = [record_format.stray_of(obj) for obj in objects]
        written = [False]  # what the last decision was (a conflict decides again on a fresh read)

        def listed(cm):  # None when the record lists them already: nothing to write
            out = record_format.with_strays(cm, strays, self.client.subject(name))
            written[0] = out.get("binaryData") != cm.get("binaryData")
            return out if written[0] else None

        # from the record as the deploy read it to plan (no second read), read again only on a conflict
        self.client.update(name, listed, "list in the record of version %s the objects its redeploy adds"
                           % release.version, missing_hint="the release in service has no record: deploy a known "
                                                           "good version instead (a new version number)")
        return written[0]

    def mark(self, version, status, missing_ok=False, of_deployment=None, **fields):
        """Set the status (and record fields such as slot or replaced) of the record of ``version``; its
        metadata, or None when it does not exist and ``missing_ok``. With ``of_deployment``, only a record that
        deploy wrote is changed (another deploy's record of the version is left as it is)."""
        name = naming.record_name(self.client.key, version)

        def change(cm):
            if of_deployment is not None and record_format.record_meta(cm)["deployment"] != str(of_deployment):
                return None
            return record_format.set_status(cm, status, **fields)

        updated = self.client.update(name, change,
                                     "set the status of version %s to %s" % (version, status),
                                     missing_hint="no record of version %s: save it before marking it" % version,
                                     missing_ok=missing_ok)
        return None if updated is None else record_format.record_meta(updated)

    def promote(self, release, replaced_version=None):
        """Put ``release`` in service after its rollout succeeded.

        Moves the locator pointer first (it is what rollback and the checkpoint read), then marks the new
        record deployed and the replaced one superseded.
        """
        self._check_release(release)
        name = naming.record_name(self.client.key, release.version)
        record = self.client.known(name, "promote version %s" % release.version)
        if record is None:
            raise HistoryError("cannot promote version %s: its record does not exist" % release.version,
                               subject=self.client.subject(name), hint="save the record before applying the release")
        meta = record_format.record_meta(record)
        slot = meta["slot"]
        replaced = "" if replaced_version is None else str(replaced_version)
        replaced_record = naming.record_name(self.client.key, replaced) if replaced else ""

        def point(data):
            data.update(version=str(release.version), deployment=str(release.deployment or ""), record=name,
                        artifactSha256=meta["artifactSha256"], slot=slot, replaced=replaced, replacedRecord=replaced_record, retired="",
                        promoted=times.format_time(self.client.now()) if slot else "")
            if data["candidate"] == str(release.version) or not slot:
                data.update({field: "" for field in locator_format.TRAFFIC_FIELDS
                             if field not in ("promoted", "retired")})

        self.locator.change("promote version %s" % release.version, point)
        # then the new record and the replaced one, two ConfigMaps, written at once (errors: the new record's first)
        marks = [lambda: self.mark(release.version, record_format.STATUS_DEPLOYED, replaced=replaced)]
        if replaced and replaced_record != name:
            marks.append(lambda: self.mark(replaced, record_format.STATUS_SUPERSEDED, missing_ok=True))
        if together(*marks)[1:] == [None]:
            self.client.notes.append("the record of the replaced version %s (%s) does not exist; nothing to "
                                     "mark superseded" % (replaced, self.client.subject(replaced_record)))
        return self.locator.known()  # as just written

    def set_candidate(self, release, slot):
        """Record ``release`` (applied to ``slot``, not in service) as the traffic candidate, weight 0. A candidate
        it replaces (another version, never promoted) is marked superseded: its slot's objects are now this one's."""
        self._check_release(release)
        name = naming.record_name(self.client.key, release.version)
        self.mark(release.version, record_format.STATUS_CANDIDATE, slot=slot)
        current = self.locator.read() or {}
        weight = current.get("weight") if current.get("candidate") == str(release.version) else "0"
        fields = {} if current.get("candidate") == str(release.version) else {"inProgress": ""}  # not about it
        located = self.locator.update("record the candidate %s" % release.version, candidate=release.version,
                                      candidateDeployment=release.deployment or "", candidateRecord=name,
                                      candidateSlot=slot, weight=weight or "0", **fields)
        replaced = current.get("candidate") or ""
        if replaced and replaced != str(release.version):
            self.mark(replaced, record_format.STATUS_SUPERSEDED, missing_ok=True)
        return located

    # ------------------------------------------------------------------ read

    def list(self):
        """Metadata of this release key's records, newest first (objects are not unpacked)."""
        return sorted((record_format.record_meta(cm) for cm in self.client.history()),
                      key=retention_rule.created_order, reverse=True)

    def load(self, version, secrets=True, strays=False):
        """(meta, objects) of the record of ``version``; with ``secrets=False`` the Secrets come without their
        values and the companion Secret is not read (enough for kinds, names, labels and annotations). With
        ``strays`` (what may be pruned, never what is applied), the objects a failed redeploy of that version
        may have left follow its own (note_strays)."""
        name = naming.record_name(self.client.key, version)
        cm = self.client.get(name, "read the record of version %s" % version)
        if cm is None:
            raise HistoryError("no record of version %s in the release history" % version,
                               subject=self.client.subject(name),
                               hint="list the records with: kubectl -n %s get configmap -l %s"
                               % (self.client.namespace, naming.history_selector(self.client.key,
                                                                                 naming.HISTORY_RECORD)))
        meta, objects = record_format.decode_record(cm)
        record_check.check_record(cm, self.client.key, objects)  # tampered records stop rollback and audit here
        if meta["version"] and meta["version"] != str(version):
            raise HistoryError("the record holds version %s, not %s" % (meta["version"], version),
                               subject=self.client.subject(name), hint="the record was edited by hand; delete it")
        if secrets:
            objects = self.companions.restore(cm, objects, "read the Secrets of version %s" % version)
        return meta, objects + (self._strays(cm) if strays else [])

    def previous_objects(self, secrets=False, strays=False):
        """The saved objects of the release in service ([] when nothing is in service); Secrets without their
        values unless ``secrets``; with ``strays``, followed by the objects a failed redeploy of it may have
        left (note_strays)."""
        current = self.locator.in_service(self.locator.known() or {})
        if current is None:
            return []
        cm = self.client.get(current["record"], "read the release in service")
        if cm is None:
            raise HistoryError("the release in service (version %s) has no record" % current["version"],
                               subject=self.client.subject(current["record"]),
                               hint="it cannot be rolled back to; deploy a known good version instead")
        objects = record_format.decode_record(cm)[1]
        # What the next deploy may prune or carry over: the same checks, but a release may span namespaces.
        record_check.check_record(cm, self.client.key, objects, own_namespace=False)
        if secrets:
            objects = self.companions.restore(cm, objects, "read the Secrets of the release in service")
        return objects + (self._strays(cm, own_namespace=False) if strays else [])

    def _strays(self, cm, own_namespace=True):
        """The objects record ``cm`` lists for a failed redeploy, checked as its own objects are."""
        strays = record_format.decode_strays(cm)
        record_check.check_record(cm, self.client.key, strays, own_namespace=own_namespace)
        return strays
