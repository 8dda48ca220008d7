# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record of a release (docs/history.md, Record): one ConfigMap named ``<locator>-<version part>`` holding the
objects the release applied (:mod:`packing`, in ``binaryData``) and its metadata and status (in ``data``).

The values of a release's Secrets never go into a ConfigMap: the record keeps each Secret without
``data``/``stringData``, and the whole Secrets go to a companion Secret (:mod:`companion_format`). Records of
releases without Secrets are written as format 1, so older manents still read them. Also here: the objects a
failed redeploy may leave (``strays``), and the backup of a record taken before a rewrite. Pure functions.
"""

from __future__ import annotations

import copy
import datetime

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError, InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ANNOTATION_VERSION
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import (
    ANNOTATION_BACKUP_OF, HISTORY_BACKUP, HISTORY_RECORD, backup_name, cm_subject, history_labels, record_name,
    release_subject)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.packing import (
    data_of, object_list, pack, unpack)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.times import format_time, parse_time, utcnow

# Format 1: every object, Secrets included, in the ConfigMap. Format 2: Secrets in a companion Secret.
# Records without Secrets are written as format 1 (identical in both), so older manents still read them.
RECORD_FORMAT = "1"
RECORD_FORMAT_SECRETS = "2"
READABLE_FORMATS = (RECORD_FORMAT, RECORD_FORMAT_SECRETS)
OBJECTS_KEY = "objects.json.gz"
LEGACY_OBJECTS_KEY = "objects.json"
SECRETS_FIELD = "secrets"
SECRET_VALUE_FIELDS = ("data", "stringData")

# The record of the release in service, deployed again (other parameters or a changed rendering): before the first
# object is written, the objects that the new deploy has and the record has not are listed there (identity, labels
# and annotations only), so that a redeploy that fails leaves them prunable while the record keeps what is in service.
STRAYS_KEY = "strays.json.gz"

STATUS_PENDING = "pending"
STATUS_DEPLOYED = "deployed"
STATUS_FAILED = "failed"
STATUS_SUPERSEDED = "superseded"
STATUS_ROLLED_BACK = "rolled-back"
# Traffic rollouts: applied to the slot not in service, waiting for steps and promote; or given up by abort.
STATUS_CANDIDATE = "candidate"
STATUS_ABORTED = "aborted"
STATUSES = (STATUS_PENDING, STATUS_DEPLOYED, STATUS_FAILED, STATUS_SUPERSEDED, STATUS_ROLLED_BACK,
            STATUS_CANDIDATE, STATUS_ABORTED)

RECORD_FIELDS = ("version", "deployment", "artifactSha256", "created", "status", "slot", "replaced",
                 "objectCount", "format", SECRETS_FIELD)
# Record fields the caller may set; the others follow from the release and its objects.
RECORD_META_FIELDS = ("artifactSha256", "created", "status", "slot", "replaced")
_FIXED_RECORD_FIELDS = ("version", "objectCount", "format", SECRETS_FIELD)


def _check_status(status, subject):
    """InputError when ``status`` is not a release status."""
    if status not in STATUSES:
        raise InputError("unknown release status %r" % (status,), subject=subject,
                         hint="use one of: %s" % ", ".join(STATUSES))


def is_secret(obj):
    """True for a core v1 Secret (the one kind whose values never go into a ConfigMap)."""
    return isinstance(obj, dict) and obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def split_secrets(objects):
    """(``objects`` with each Secret's ``data``/``stringData`` removed, the Secret objects whole)."""
    stored, secrets = [], []
    for obj in objects:
        if is_secret(obj):
            secrets.append(obj)
            obj = {name: value for name, value in obj.items() if name not in SECRET_VALUE_FIELDS}
        stored.append(obj)
    return stored, secrets


def encode_record(release, namespace, objects, meta=None):
    """The record ConfigMap of ``release``: its applied ``objects`` compressed, and its metadata.

    Secrets are kept without their values (see :func:`companion_format.encode_companion`). ``meta`` may set
    artifactSha256, created (datetime or RFC 3339; default now), status (default pending), slot and replaced.
    Raises HistoryError, before anything is written, when the compressed objects exceed packing.RECORD_LIMIT.
    """
    meta = dict(meta or {})
    subject = release_subject(release)
    for field, value in (("version", release.version), ("deployment", release.deployment or "")):
        if field in meta and str(meta.pop(field) or "") != str(value):
            raise InputError("record field %s differs from the release (%r)" % (field, value), subject=subject,
                             hint="the version and deployment id come from the release; leave them out of meta")
    unknown = sorted(set(meta) - set(RECORD_META_FIELDS))
    if unknown:
        raise InputError("unknown record field(s) %s" % ", ".join(unknown), subject=subject,
                         hint="record fields are: %s" % ", ".join(RECORD_META_FIELDS))
    if not isinstance(objects, list) or not all(isinstance(obj, dict) for obj in objects):
        raise InputError("the objects to save must be a list of mappings", subject=subject)
    status = meta.get("status") or STATUS_PENDING
    _check_status(status, subject)
    created = meta.get("created") or utcnow()
    if isinstance(created, datetime.datetime):
        created = format_time(created)
    elif parse_time(created) is None:
        raise InputError("created %r is not an RFC 3339 time" % (created,), subject=subject,
                         hint="pass a datetime or text like 2024-05-01T12:00:00Z")
    stored, secrets = split_secrets(objects)
    name = record_name(release.key, release.version)
    data = {
        "version": str(release.version),
        "deployment": str(release.deployment or ""),
        "artifactSha256": str(meta.get("artifactSha256") or ""),
        "created": str(created),
        "status": status,
        "slot": str(meta.get("slot") or ""),
        "replaced": str(meta.get("replaced") or ""),
        "objectCount": str(len(objects)),
        "format": RECORD_FORMAT_SECRETS if secrets else RECORD_FORMAT,
        SECRETS_FIELD: name if secrets else "",
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": history_labels(release.key, HISTORY_RECORD, release.version),
            "annotations": release.annotations(),
        },
        "data": data,
        "binaryData": encode_objects(stored, subject),
    }


def encode_objects(stored, subject):
    """``binaryData`` of a record holding ``stored`` (objects whose Secrets were already split off)."""
    return {OBJECTS_KEY: pack(stored, subject)}


def with_objects(cm, stored, subject):
    """Copy of record ``cm`` holding ``stored`` (compressed, in ``binaryData``) instead of its objects."""
    out = copy.deepcopy(cm)
    data = dict(out.get("data") or {})
    data.pop(LEGACY_OBJECTS_KEY, None)
    out["data"] = data
    out["binaryData"] = dict(out.get("binaryData") or {}, **encode_objects(stored, subject))
    return out


def record_meta(cm):
    """Metadata of a record ConfigMap without unpacking its objects: the data fields plus name/namespace."""
    subject = cm_subject(cm)
    data = data_of(cm, subject)
    meta = {field: str(data.get(field) or "") for field in RECORD_FIELDS}
    metadata = cm.get("metadata") or {}
    if not meta["version"]:
        meta["version"] = str((metadata.get("annotations") or {}).get(ANNOTATION_VERSION) or "")
    meta["name"] = metadata.get("name") or ""
    meta["namespace"] = metadata.get("namespace") or ""
    return meta


def _unpack_objects(cm, data, subject):
    """The objects of record ``cm`` (``data``: its data), compressed or in the uncompressed form."""
    packed = (cm.get("binaryData") or {}).get(OBJECTS_KEY)
    if packed is not None:
        return unpack(packed, subject, "objects")
    if data.get(LEGACY_OBJECTS_KEY) is not None:
        return object_list(data[LEGACY_OBJECTS_KEY], subject, "objects")
    raise HistoryError("the record holds no objects (no binaryData %s nor data %s)"
                       % (OBJECTS_KEY, LEGACY_OBJECTS_KEY), subject=subject,
                       hint="this release cannot be rolled back to; delete the record")


def decode_record(cm):
    """(meta, objects as stored) of a record ConfigMap; also reads records with uncompressed
    ``data: objects.json``. When ``meta["secrets"]`` names a companion, its Secrets are stored without values:
    :func:`companion_format.restore_secrets` puts them back."""
    subject = cm_subject(cm)
    data = data_of(cm, subject)
    meta = record_meta(cm)
    if meta["format"] and meta["format"] not in READABLE_FORMATS:
        raise HistoryError("record format %r is newer than this manent understands" % meta["format"],
                           subject=subject, hint="upgrade the manent.kubernetes collection")
    return meta, _unpack_objects(cm, data, subject)


def set_status(cm, status, **fields):
    """A copy of record ``cm`` with ``status`` and the given record fields (slot, replaced, ...) changed."""
    subject = cm_subject(cm)
    _check_status(status, subject)
    unknown = sorted(set(fields) - (set(RECORD_FIELDS) - set(_FIXED_RECORD_FIELDS)))
    if unknown:
        raise InputError("field(s) %s cannot be changed on a record" % ", ".join(unknown), subject=subject)
    patched = copy.deepcopy(cm)
    data = dict(data_of(patched, subject))
    data["status"] = status
    for field, value in fields.items():
        if isinstance(value, datetime.datetime):
            value = format_time(value)
        data[field] = "" if value is None else str(value)
    patched["data"] = data
    return patched


def stray_of(obj):
    """What history keeps of an object that a redeploy of the release in service may leave (:data:`STRAYS_KEY`):
    enough to find and prune it (apiVersion, kind, name, namespace, labels, annotations), no spec or values."""
    meta = obj.get("metadata") or {}
    kept = {name: meta[name] for name in ("name", "namespace", "labels", "annotations") if meta.get(name)}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept}


def decode_strays(cm):
    """The objects listed in record ``cm`` under :data:`STRAYS_KEY` ([] when none)."""
    packed = (cm.get("binaryData") or {}).get(STRAYS_KEY)
    if packed is None:
        return []
    return unpack(packed, cm_subject(cm), "objects of a failed redeploy")


def with_strays(cm, objects, subject):
    """Copy of record ``cm`` whose :data:`STRAYS_KEY` lists, besides those it listed, the ``objects`` that are
    not among its own objects (``objects``: as :func:`stray_of` keeps them); the key is left out when none."""
    own = {key_of(obj) for obj in decode_record(cm)[1]}
    strays, seen = [], set()
    for obj in decode_strays(cm) + list(objects):
        key = key_of(obj)
        if key not in own and key not in seen:
            seen.add(key)
            strays.append(obj)
    out = copy.deepcopy(cm)
    binary = dict(out.get("binaryData") or {})
    binary.pop(STRAYS_KEY, None)
    if strays:
        binary[STRAYS_KEY] = pack(strays, subject, "objects of a failed redeploy")
    out["binaryData"] = binary
    return out


def encode_backup(cm, key, namespace):
    """The backup ConfigMap of record ``cm`` (named :func:`backup_name`): its data as is, annotated with the
    record's name."""
    annotations = dict((cm.get("metadata") or {}).get("annotations") or {})
    annotations[ANNOTATION_BACKUP_OF] = cm["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": backup_name(cm["metadata"]["name"]), "namespace": namespace,
                         "labels": history_labels(key, HISTORY_BACKUP, record_meta(cm)["version"] or None),
                         "annotations": annotations},
            "data": dict(cm.get("data") or {}), "binaryData": dict(cm.get("binaryData") or {})}
