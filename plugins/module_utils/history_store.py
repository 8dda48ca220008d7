# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release history on the cluster (SPEC §8): the locator, its deploy lock and the record ConfigMaps.

Names, labels and contents come from :mod:`history_codec`; this file only reads and writes them.
Every write that depends on what was read is a PUT carrying the read ``resourceVersion``, so two
deploys of the same release key can never both believe they hold the lock or both move the pointer:
the API server refuses the second write with 409 Conflict.

Only ConfigMaps of this store's release key are ever touched: records are listed by the key's labels
*and* must be named ``<locator>-...`` (the locator name ends with the hash of the full key).

The Secrets of a release are kept in a companion Secret of the record's name (see history_codec); the
store reads, writes and deletes a companion only for records that name one, so histories of releases
without Secrets need ConfigMap rights alone. Records of the earlier format (Secrets inside the ConfigMap)
are still read, and :meth:`HistoryStore.migrate` (run under the lock by every deploy) moves their
Secrets out.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import re

from ansible_collections.manent.kubernetes.plugins.module_utils import history_codec as codec
from ansible_collections.manent.kubernetes.plugins.module_utils.apiversions import map_for_cluster
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import (
    ApiError, ConflictError, HistoryError, InputError, LockedError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.module_utils.identity import Release

LOCK_TTL_SECONDS = codec.LOCK_TTL_SECONDS
HISTORY_BACKUP = "record-backup"
BACKUP_SUFFIX = "-bak"
ANNOTATION_BACKUP_OF = "manent.io/backup-of"
HELM_RELEASE_TYPE = "helm.sh/release.v1"
CONFLICT_RETRIES = 5

ACTION_REWRITTEN = "rewritten"
ACTION_WOULD_REWRITE = "would-rewrite"
ACTION_ERROR = "error"

_CLEAR_LOCK = ("clear the lock fields of the locator (see docs/history.md, Lock) or deploy with "
               "break_lock: true, only if you are sure no other deploy of this release is running")


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


def backup_name(record):
    """``<record>-bak``; when that exceeds 253 characters the record name is cut and a 6-digit hash of it
    keeps backups of different records apart."""
    name = record + BACKUP_SUFFIX
    if len(name) <= codec.NAME_MAX:
        return name
    digest = hashlib.sha256(record.encode("utf-8")).hexdigest()[:codec.VERSION_HASH_LEN]
    body = record[:codec.NAME_MAX - len(BACKUP_SUFFIX) - len(digest) - 1].rstrip("-")
    return "%s-%s%s" % (body, digest, BACKUP_SUFFIX)


def _newest_first(meta):
    return (codec.parse_time(meta.get("created")) or datetime.datetime.min.replace(tzinfo=datetime.timezone.utc),
            meta.get("name") or "")


class HistoryStore:
    """The history of one release key in one namespace of one cluster."""

    def __init__(self, kube, namespace, release_key, holder="", now=None):
        if not namespace:
            raise InputError("release history needs a namespace", subject="namespace",
                             hint="set the namespace deploy parameter")
        self.kube = kube
        self.namespace = namespace
        self.key = release_key
        self.holder = str(holder or "")
        self._now = now or _utcnow
        self.notes = []
        self.locator_name = codec.locator_name(release_key)

    # ------------------------------------------------------------------ HTTP

    def _path(self, name=None, resource="configmaps"):
        path = "/api/v1/namespaces/%s/%s" % (self.namespace, resource)
        return path + "/" + name if name else path

    def _subject(self, name, kind="ConfigMap"):
        return "%s/%s/%s" % (kind, self.namespace, name)

    def _call(self, method, path, subject, action, passthrough=(), **kw):
        """One request; API errors other than ``passthrough`` become HistoryError keeping the server's text."""
        try:
            return self.kube.request(method, path, subject=subject, **kw).data
        except passthrough:
            raise
        except ApiError as err:
            if err.status == 403:
                hint = ("the deploy credentials need get, list, create, update, patch and delete on configmaps "
                        "(and on secrets for releases that contain Secrets, and to remove Helm releases) in "
                        "namespace %s: grant them in a Role bound to this user" % self.namespace)
            elif err.status == 404:
                hint = "check that namespace %s exists" % self.namespace
            elif err.transient:
                hint = "the API server did not answer in time or is overloaded; run the deploy again"
            else:
                hint = err.hint or "check the object named here, then run the deploy again"
            raise HistoryError("cannot %s: %s" % (action, err.message), subject=subject, hint=hint) from err

    def _get(self, name, action="read the release history", resource="configmaps", kind="ConfigMap"):
        """The ConfigMap (or Secret), or None when it does not exist."""
        try:
            return self._call("GET", self._path(name, resource), self._subject(name, kind), action,
                              passthrough=(NotFoundError,))
        except NotFoundError:
            return None

    def _put(self, cm, action):
        name = cm["metadata"]["name"]
        return self._call("PUT", self._path(name), self._subject(name), action, passthrough=(ConflictError,),
                          body=cm)

    # ------------------------------------------------------------------ companion Secrets

    def _write_companion(self, cm, secrets, action):
        """Create or replace the companion Secret holding ``secrets`` of the written ConfigMap ``cm`` (owned by
        it); nothing when there are no Secrets."""
        self._write_companion_body(codec.encode_companion(cm, secrets), action)

    def _write_companion_body(self, body, action):
        if body is None:
            return
        name = body["metadata"]["name"]
        subject = self._subject(name, "Secret")
        try:
            self._call("POST", self._path(resource="secrets"), subject, action, passthrough=(ConflictError,),
                       body=body)
            return
        except ConflictError:
            pass
        for _attempt in range(CONFLICT_RETRIES):
            live = self._get(name, action, "secrets", "Secret")
            if live is None:
                try:
                    self._call("POST", self._path(resource="secrets"), subject, action,
                               passthrough=(ConflictError,), body=body)
                    return
                except ConflictError:
                    continue
            if live.get("type") != codec.SECRETS_TYPE:
                raise HistoryError("cannot %s: a Secret of this name exists and is not of type %s"
                                   % (action, codec.SECRETS_TYPE), subject=subject,
                                   hint="rename or delete that Secret; manent keeps release Secrets under this name")
            body["metadata"]["resourceVersion"] = live["metadata"].get("resourceVersion")
            try:
                self._call("PUT", self._path(name, "secrets"), subject, action, passthrough=(ConflictError,),
                           body=body)
                return
            except ConflictError:
                continue
        raise HistoryError("cannot %s: the Secret kept changing under us" % action, subject=subject,
                           hint="another process is writing this release history; stop it and deploy again")

    def _delete_companion(self, cm, action):
        """Delete the companion Secret named by history ConfigMap ``cm``, if it names one."""
        name = codec.companion_name(cm)
        if not name:
            return False
        live = self._get(name, action, "secrets", "Secret")
        if live is None or live.get("type") != codec.SECRETS_TYPE:
            return False
        return self._delete(live, action, resource="secrets", kind="Secret")

    def _with_secrets(self, cm, objects, action):
        """``objects`` as stored in ``cm`` with the Secrets of its companion put back."""
        name = codec.companion_name(cm)
        if not name:
            return objects
        companion = self._get(name, action, "secrets", "Secret")
        return codec.restore_secrets(objects, companion, cm)

    def _update(self, name, change, action, missing_hint=None, missing_ok=False):
        """Read ``name``, PUT ``change(cm)`` (None: nothing to do) with its resourceVersion; re-read on 409.

        Returns the written (or unchanged) ConfigMap; None when it does not exist and ``missing_ok``.
        """
        for _attempt in range(CONFLICT_RETRIES):
            cm = self._get(name, action)
            if cm is None:
                if missing_ok:
                    return None
                raise HistoryError("cannot %s: the ConfigMap does not exist" % action, subject=self._subject(name),
                                   hint=missing_hint or "it was deleted while the deploy ran; check who else "
                                   "manages this history")
            changed = change(cm)
            if changed is None:
                return cm
            try:
                return self._put(changed, action)
            except ConflictError:
                continue
        raise HistoryError("cannot %s: the ConfigMap kept changing under us (%d conflicting writes)"
                           % (action, CONFLICT_RETRIES), subject=self._subject(name),
                           hint="another process is writing this release history; stop it and deploy again")

    # ------------------------------------------------------------------ locator

    def _decoded(self, cm):
        data = codec.decode_locator(cm)
        data["name"] = cm["metadata"]["name"]
        data["resourceVersion"] = cm["metadata"].get("resourceVersion") or ""
        return data

    def locator(self):
        """The locator fields plus name and resourceVersion; None when this release key was never deployed."""
        cm = self._get(self.locator_name)
        return None if cm is None else self._decoded(cm)

    def in_service(self):
        """version, deployment, slot and record of the release in service, or None when there is none."""
        data = self.locator()
        if not data or not data["version"]:
            return None
        record = data["record"] or codec.record_name(self.key, data["version"])
        return {"version": data["version"], "deployment": data["deployment"], "slot": data["slot"],
                "record": record}

    def _with_data(self, cm, data):
        """Copy of ``cm`` with locator ``data`` and the history labels (everything else as read)."""
        out = copy.deepcopy(cm)
        merged = dict(out.get("data") or {})
        merged.update(codec.encode_locator(self.key, self.namespace, data, now=self._now())["data"])
        out["data"] = merged
        labels = dict(out["metadata"].get("labels") or {})
        labels.update(codec.history_labels(self.key, codec.HISTORY_LOCATOR))
        out["metadata"]["labels"] = labels
        return out

    # ------------------------------------------------------------------ lock

    def _locked_error(self, holder, since, expires, action="deploy"):
        until = (" until %s" % expires) if expires else ""
        return LockedError(
            "cannot %s: deploy %r holds the release lock since %s%s" % (action, holder, since or "?", until),
            subject=self._subject(self.locator_name),
            hint="wait for that deploy to finish (the lock expires by itself%s); if you are sure it is no longer "
                 "running, deploy again with break_lock: true" % until)

    def _lock_data(self, cm, ttl, break_lock, raced):
        """(locator data locked by this holder, note on a take-over or None); LockedError when held."""
        data = codec.decode_locator(cm)
        now = self._now()
        try:
            state, holder, since = codec.lock_state(data, now)
        except HistoryError:
            if not break_lock or raced:
                raise HistoryError("the lock held by %r has no readable lockSince/lockExpires" % data["lockHolder"],
                                   subject=self._subject(self.locator_name), hint=_CLEAR_LOCK) from None
            state, holder, since = codec.LOCK_HELD, "", data["lockSince"]  # taken over below, even if ours
        if state == codec.LOCK_FREE:
            return codec.with_lock(codec.without_lock(data), self.holder, now, ttl), None
        if holder == self.holder:
            return codec.with_lock(data, self.holder, now, ttl), None
        holder = holder or data["lockHolder"]
        if state == codec.LOCK_HELD and (raced or not break_lock):
            raise self._locked_error(holder, since, data["lockExpires"])
        if state == codec.LOCK_HELD:
            note = "broke the release lock held by deploy %r since %s (break_lock: true)" % (holder, since)
        else:
            note = ("took over the expired release lock of deploy %r (held since %s, expired %s)"
                    % (holder, since, data["lockExpires"] or "?"))
        note += " on " + self._subject(self.locator_name)
        return codec.with_lock(codec.without_lock(data), self.holder, now, ttl), note

    def acquire(self, ttl=LOCK_TTL_SECONDS, break_lock=False):
        """Take (or renew) the deploy lock of this release key; returns the locator as :meth:`locator`.

        Creates the locator, already locked, when the key was never deployed. Of two deploys racing for
        the lock exactly one wins: the other gets LockedError.
        """
        if not self.holder:
            raise InputError("the deploy lock needs a holder (the deploy id)", subject=self._subject(self.locator_name))
        action = "lock the release history"
        cm = self._get(self.locator_name, action)
        raced = False
        if cm is None:
            now = self._now()
            body = codec.encode_locator(self.key, self.namespace, codec.with_lock({}, self.holder, now, ttl), now=now)
            try:
                return self._decoded(self._call("POST", self._path(), self._subject(self.locator_name), action,
                                                passthrough=(ConflictError,), body=body))
            except ConflictError:
                raced = True  # created at the same moment by another deploy: lock it the usual way
            cm = self._get(self.locator_name, action)
            if cm is None:
                raise HistoryError("cannot %s: the locator was created and deleted again meanwhile" % action,
                                   subject=self._subject(self.locator_name),
                                   hint="another process manages this history; stop it and deploy again")
        for attempt in range(CONFLICT_RETRIES):
            # After a 409 the lock of any other holder is final, even with break_lock: it was just written.
            data, note = self._lock_data(cm, ttl, break_lock, raced=raced or attempt > 0)
            try:
                written = self._put(self._with_data(cm, data), action)
            except ConflictError:
                written = None
            if written is not None:
                if note:
                    self.notes.append(note)
                return self._decoded(written)
            cm = self._get(self.locator_name, action)
            if cm is None:
                raise HistoryError("cannot %s: the locator was deleted while locking it" % action,
                                   subject=self._subject(self.locator_name),
                                   hint="another process manages this history; stop it and deploy again")
        raise HistoryError("cannot %s: the locator kept changing (%d conflicting writes)" % (action, CONFLICT_RETRIES),
                           subject=self._subject(self.locator_name),
                           hint="another process is writing this release history; stop it and deploy again")

    def release_lock(self):
        """Clear the lock if this holder has it; True when cleared, False when it was not ours."""
        released = []

        def unlock(cm):
            data = codec.decode_locator(cm)
            if not self.holder or data["lockHolder"] != self.holder:
                return None
            released.append(True)
            return self._with_data(cm, codec.without_lock(data))

        self._update(self.locator_name, unlock, "unlock the release history", missing_ok=True)
        return bool(released)

    def _check_lock(self, data, action):
        """LockedError when another deploy has taken the lock (our own, expired or not, is fine)."""
        holder = data.get("lockHolder") or ""
        if holder and holder != self.holder:
            raise self._locked_error(holder, data.get("lockSince"), data.get("lockExpires"), action)

    # ------------------------------------------------------------------ records

    def _check_release(self, release):
        if release.key != self.key:
            raise InputError("release key %r does not belong to this history (%r)" % (release.key, self.key),
                             subject=self._subject(self.locator_name))

    def prepare_record(self, release, objects, meta=None):
        """The record ConfigMap of ``release`` (status pending); HistoryError when it or its companion Secret
        is too large. Writes nothing."""
        self._check_release(release)
        meta = dict(meta or {})
        meta.setdefault("created", self._now())
        body = codec.encode_record(release, self.namespace, objects, meta)
        codec.encode_companion(body, codec.split_secrets(objects)[1])  # size check of the Secrets
        return body

    def save_record(self, release, objects, meta=None):
        """Write the record of ``release`` (replacing the record of the same version), then its companion
        Secret when the release has Secrets; returns the record name."""
        body = self.prepare_record(release, objects, meta)
        name = body["metadata"]["name"]
        action = "save the release record of version %s" % release.version
        secrets = codec.split_secrets(objects)[1]
        try:
            written = self._call("POST", self._path(), self._subject(name), action, passthrough=(ConflictError,),
                                 body=body)
            self._write_companion(written, secrets, action)
            return name
        except ConflictError:
            pass
        current = self.in_service()
        if current and current["record"] == name:
            self.notes.append("version %s is redeployed: its record %s, the one in service, now holds the objects "
                              "of deploy %s" % (release.version, self._subject(name), release.deployment))
        replaced = []

        def replace(cm):
            replaced[:] = [cm]
            out = copy.deepcopy(body)
            out["metadata"]["resourceVersion"] = cm["metadata"].get("resourceVersion")
            return out

        written = self._update(name, replace, action)
        if secrets:
            self._write_companion(written, secrets, action)
        elif replaced:
            self._delete_companion(replaced[0], action)
        return name

    def mark(self, version, status, **fields):
        """Set the status (and record fields such as slot or replaced) of the record of ``version``."""
        name = codec.record_name(self.key, version)
        updated = self._update(name, lambda cm: codec.set_status(cm, status, **fields),
                               "set the status of version %s to %s" % (version, status),
                               missing_hint="no record of version %s: save it before marking it" % version)
        return codec.record_meta(updated)

    def promote(self, release, replaced_version=None):
        """Put ``release`` in service after its rollout succeeded.

        Moves the locator pointer first (it is what rollback and the checkpoint read), then marks the new
        record deployed and the replaced one superseded.
        """
        self._check_release(release)
        name = codec.record_name(self.key, release.version)
        record = self._get(name, "promote version %s" % release.version)
        if record is None:
            raise HistoryError("cannot promote version %s: its record does not exist" % release.version,
                               subject=self._subject(name), hint="save the record before applying the release")
        slot = codec.record_meta(record)["slot"]
        replaced = "" if replaced_version is None else str(replaced_version)
        replaced_record = codec.record_name(self.key, replaced) if replaced else ""

        def point(cm):
            data = codec.decode_locator(cm)
            self._check_lock(data, "promote version %s" % release.version)
            data.update(version=str(release.version), deployment=str(release.deployment or ""), record=name,
                        slot=slot, replaced=replaced, replacedRecord=replaced_record, retired="",
                        promoted=codec.format_time(self._now()) if slot else "")
            if data["candidate"] == str(release.version) or not slot:
                data.update({field: "" for field in codec.TRAFFIC_FIELDS if field not in ("promoted", "retired")})
            return self._with_data(cm, data)

        self._update(self.locator_name, point, "promote version %s" % release.version)
        self.mark(release.version, codec.STATUS_DEPLOYED, replaced=replaced)
        if replaced and replaced_record != name:
            if self._get(replaced_record) is None:
                self.notes.append("the record of the replaced version %s (%s) does not exist; nothing to mark "
                                  "superseded" % (replaced, self._subject(replaced_record)))
            else:
                self.mark(replaced, codec.STATUS_SUPERSEDED)
        return self.locator()

    def update_locator(self, action, **fields):
        """Set locator ``fields`` (traffic state: candidate, weight, retired, ...) under this holder's lock."""
        unknown = sorted(set(fields) - set(codec.TRAFFIC_FIELDS))
        if unknown:
            raise InputError("locator field(s) %s are not traffic fields" % ", ".join(unknown),
                             subject=self._subject(self.locator_name))

        def change(cm):
            data = codec.decode_locator(cm)
            self._check_lock(data, action)
            wanted = {name: "" if value is None else str(value) for name, value in fields.items()}
            if all(data[name] == value for name, value in wanted.items()):
                return None
            data.update(wanted)
            return self._with_data(cm, data)

        self._update(self.locator_name, change, action,
                     missing_hint="nothing of this release key was deployed to this namespace")
        return self.locator()

    def set_candidate(self, release, slot):
        """Record ``release`` (applied to ``slot``, not in service) as the traffic candidate, weight 0."""
        self._check_release(release)
        name = codec.record_name(self.key, release.version)
        self.mark(release.version, codec.STATUS_CANDIDATE, slot=slot)
        current = self.locator() or {}
        weight = current.get("weight") if current.get("candidate") == str(release.version) else "0"
        return self.update_locator("record the candidate %s" % release.version, candidate=release.version,
                                   candidateDeployment=release.deployment or "", candidateRecord=name,
                                   candidateSlot=slot, weight=weight or "0")

    def _raw_records(self, role=codec.HISTORY_RECORD):
        selector = codec.history_selector(self.key, role)
        items = self._call("GET", self._path(), self._subject(self.locator_name + "-*"),
                           "list the release history", query={"labelSelector": selector}).get("items") or []
        prefix = self.locator_name + "-"
        return [cm for cm in items if (cm.get("metadata") or {}).get("name", "").startswith(prefix)]

    def records(self):
        """Metadata of this release key's records, newest first (objects are not unpacked)."""
        return sorted((codec.record_meta(cm) for cm in self._raw_records()), key=_newest_first, reverse=True)

    def load(self, version, secrets=True):
        """(meta, objects) of the record of ``version``; with ``secrets=False`` the Secrets come without their
        values and the companion Secret is not read (enough for kinds, names, labels and annotations)."""
        name = codec.record_name(self.key, version)
        cm = self._get(name, "read the record of version %s" % version)
        if cm is None:
            raise HistoryError("no record of version %s in the release history" % version, subject=self._subject(name),
                               hint="list the records with: kubectl -n %s get configmap -l %s"
                               % (self.namespace, codec.history_selector(self.key, codec.HISTORY_RECORD)))
        meta, objects = codec.decode_record(cm)
        if meta["version"] and meta["version"] != str(version):
            raise HistoryError("the record holds version %s, not %s" % (meta["version"], version),
                               subject=self._subject(name), hint="the record was edited by hand; delete it")
        if secrets:
            objects = self._with_secrets(cm, objects, "read the Secrets of version %s" % version)
        return meta, objects

    def previous_objects(self, secrets=False):
        """The saved objects of the release in service ([] when nothing is in service); Secrets without their
        values unless ``secrets``."""
        current = self.in_service()
        if current is None:
            return []
        cm = self._get(current["record"], "read the release in service")
        if cm is None:
            raise HistoryError("the release in service (version %s) has no record" % current["version"],
                               subject=self._subject(current["record"]),
                               hint="it cannot be rolled back to; deploy a known good version instead")
        objects = codec.decode_record(cm)[1]
        return self._with_secrets(cm, objects, "read the Secrets of the release in service") if secrets else objects

    def cleanup(self, keep):
        """Delete this key's records beyond the ``keep`` newest, never the one in service, the one it
        replaced nor the traffic candidate; returns the deleted record names, oldest first. Backups of deleted records go too."""
        cms = {cm["metadata"]["name"]: cm for cm in self._raw_records()}
        data = self.locator() or {}
        protect = {name for name in (data.get("record"), data.get("replacedRecord"), data.get("candidateRecord"))
                   if name}
        doomed = codec.records_to_delete([codec.record_meta(cm) for cm in cms.values()], keep, protect)
        deleted = []
        for name in doomed:
            if self._delete(cms[name], "delete the old release record"):
                self._delete_companion(cms[name], "delete the Secrets of an old release record")
                deleted.append(name)
        if deleted:
            for cm in self._raw_records(HISTORY_BACKUP):
                annotations = cm["metadata"].get("annotations") or {}
                if annotations.get(ANNOTATION_BACKUP_OF) in deleted and self._delete(cm, "delete a record backup"):
                    if codec.companion_name(cm) != codec.companion_name(cms[annotations[ANNOTATION_BACKUP_OF]]):
                        self._delete_companion(cm, "delete the Secrets of a record backup")
                    self.notes.append("deleted %s, the backup of a deleted record"
                                      % self._subject(cm["metadata"]["name"]))
        return deleted

    # ------------------------------------------------------------------ earlier format

    def migrate(self):
        """Move the Secrets of this key's records and backups written by the earlier format (Secrets inside
        the ConfigMap) to companion Secrets; mark those without Secrets as checked. Call it holding the lock.

        Each ConfigMap is unpacked once: afterwards it carries the ``secrets`` field. Returns the names of the
        ConfigMaps whose Secrets were moved.
        """
        moved = []
        for cm in self._raw_records() + self._raw_records(HISTORY_BACKUP):
            if not codec.needs_migration(cm):
                continue
            name = cm["metadata"]["name"]
            action = "move the Secrets of %s out of the ConfigMap" % name
            try:
                new_cm, companion = codec.migrate(cm)
            except HistoryError as err:
                self.notes.append("left %s as it is: %s" % (self._subject(name), err))
                continue
            # The Secret first: if writing it fails, the ConfigMap still holds the values (nothing lost).
            self._write_companion_body(companion, action)
            try:
                self._put(new_cm, action)
            except ConflictError:
                self.notes.append("%s changed while its Secrets were moved; the next deploy moves them"
                                  % self._subject(name))
                continue
            if companion is not None:
                moved.append(name)
                self.notes.append("moved the Secret values of %s to %s (history format 2)"
                                  % (self._subject(name), self._subject(name, "Secret")))
        return moved

    def _delete(self, obj, action, resource="configmaps", kind="ConfigMap"):
        """Delete exactly the object that was read (uid precondition); False when already gone."""
        name = obj["metadata"]["name"]
        body = {"apiVersion": "v1", "kind": "DeleteOptions",
                "preconditions": {"uid": obj["metadata"].get("uid")}}
        try:
            self._call("DELETE", self._path(name, resource), self._subject(name, kind), action,
                       passthrough=(NotFoundError, ConflictError), body=body)
        except NotFoundError:
            return False
        except ConflictError:
            return False  # replaced by a new object of the same name: not the one we meant to delete
        return True

    # ------------------------------------------------------------------ stored API versions

    def rewrite_api_versions(self, served_fn, dry_run=False):
        """Map stored objects to served apiVersions where the move is a pure rename (like helm mapkubeapis).

        ``served_fn(api_version, kind) -> bool`` answers from discovery. Returns one entry per record that
        needs something: ``{record, version, action (rewritten|would-rewrite|error), changes, errors,
        backup}``. A record with any object that cannot be mapped is left unchanged. Before a record is
        changed its original content is copied to ``<record>-bak`` (kept if it already exists, so it holds
        the oldest original). A second run finds nothing to rewrite.
        """
        if not dry_run:
            self.migrate()  # records of the earlier format: their Secrets leave the ConfigMap before rewriting
        report = []
        for cm in sorted(self._raw_records(), key=lambda item: item["metadata"]["name"]):
            entry = self._rewrite_one(cm, served_fn, dry_run)
            if entry:
                report.append(entry)
        return report

    def _rewrite_one(self, cm, served_fn, dry_run):
        name = cm["metadata"]["name"]
        entry = {"record": name, "version": codec.record_meta(cm)["version"], "action": ACTION_ERROR,
                 "changes": [], "errors": [], "backup": ""}
        if not dry_run and codec.needs_migration(cm):
            entry["errors"].append("its Secrets could not be moved out of the ConfigMap (see the warnings)")
            return entry
        try:
            meta, objects = codec.decode_record(cm)
        except HistoryError as err:
            entry["errors"].append(str(err))
            return entry
        mapped = []
        for obj in objects:
            try:
                new_obj, note = map_for_cluster(obj, served_fn)
            except InputError as err:
                entry["errors"].append(str(err))
                new_obj, note = obj, None
            if note:
                entry["changes"].append(note)
            mapped.append(new_obj)
        if entry["errors"]:
            return entry
        if not entry["changes"]:
            return None
        entry["backup"] = backup_name(name)
        if dry_run:
            entry["action"] = ACTION_WOULD_REWRITE
            return entry
        packed = codec.encode_objects(mapped, codec.release_subject(Release(self.key, meta["version"])))
        self._write_backup(cm, entry["backup"])
        rewritten = copy.deepcopy(cm)
        data = dict(rewritten.get("data") or {})
        data.pop(codec.LEGACY_OBJECTS_KEY, None)
        rewritten["data"] = data
        rewritten["binaryData"] = dict(rewritten.get("binaryData") or {}, **packed)
        try:
            self._put(rewritten, "rewrite the stored apiVersions")
        except ConflictError as err:
            raise HistoryError("cannot rewrite the stored apiVersions: the record changed while rewriting it",
                               subject=self._subject(name), hint="run the rewrite again") from err
        entry["action"] = ACTION_REWRITTEN
        return entry

    def _write_backup(self, cm, name):
        meta = codec.record_meta(cm)
        annotations = dict(cm["metadata"].get("annotations") or {})
        annotations[ANNOTATION_BACKUP_OF] = cm["metadata"]["name"]
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": self.namespace,
                             "labels": codec.history_labels(self.key, HISTORY_BACKUP, meta["version"] or None),
                             "annotations": annotations},
                "data": dict(cm.get("data") or {}), "binaryData": dict(cm.get("binaryData") or {})}
        try:
            self._call("POST", self._path(), self._subject(name), "back up the release record",
                       passthrough=(ConflictError,), body=body)
        except ConflictError:
            self.notes.append("kept the existing backup %s of %s (it holds an earlier original)"
                              % (self._subject(name), cm["metadata"]["name"]))

    # ------------------------------------------------------------------ helm

    def delete_helm_release_secrets(self, release_name):
        """Delete the Helm 3 release Secrets ``sh.helm.release.v1.<release>.v<N>`` (type helm.sh/release.v1)
        of this namespace, and nothing else; returns their names by revision."""
        if not release_name:
            raise InputError("no Helm release name given", subject="helm release")
        pattern = re.compile(r"^sh\.helm\.release\.v1\.%s\.v(\d+)$" % re.escape(str(release_name)))
        items = self._call("GET", self._path(resource="secrets"), self._subject("sh.helm.release.v1.%s.*"
                                                                                % release_name, "Secret"),
                           "list the Helm release secrets",
                           query={"fieldSelector": "type=%s" % HELM_RELEASE_TYPE}).get("items") or []
        found = []
        for secret in items:
            match = pattern.match((secret.get("metadata") or {}).get("name") or "")
            if match and secret.get("type") == HELM_RELEASE_TYPE:
                found.append((int(match.group(1)), secret))
        deleted = []
        for _revision, secret in sorted(found, key=lambda item: item[0]):
            if self._delete(secret, "delete the Helm release secret", resource="secrets", kind="Secret"):
                deleted.append(secret["metadata"]["name"])
        return deleted
