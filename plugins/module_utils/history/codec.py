# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release history codec (docs/requirements.md §8, §9): names, labels and contents of the history ConfigMaps.

Pure functions only: nothing here talks to a cluster, and every clock reading can be injected.

* The *locator* ``manent-<tenant>-<app>-<artifact>-<env>-<hash>`` says which release is in service
  and holds the deploy lock of its release key.
* One *record* per release, named ``<locator>-<version>``, holds the objects that release applied
  (gzip-compressed JSON in ``binaryData``) and its metadata (in ``data``).
* The values of a release's Secrets never go into a ConfigMap: the record keeps each Secret without
  ``data``/``stringData`` and the whole Secret objects go to a *companion* Secret of the same name (type
  ``manent.io/release-secrets.v1``). Records of releases without Secrets have no companion, so a token
  with ConfigMap rights alone can deploy them.

``<hash>`` is the first 8 hex digits of sha256 over ``tenant\\napplication\\nartifact\\nenvironment``;
it keeps names of different release keys apart even when the readable parts are sanitised or shortened.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import gzip
import json
import re
import struct
import zlib

from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import sha256_text
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError, InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import (
    ANNOTATION_VERSION, LABEL_APPLICATION, LABEL_ARTIFACT, LABEL_ENVIRONMENT, LABEL_TENANT, MANAGED_BY as LABEL_MANAGED_BY, is_label_value)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of, ref

HASH_LEN = 8
VERSION_HASH_LEN = 6
NAME_MAX = 253
VERSION_PART_MAX = 63
LABEL_VALUE_MAX = 63
PREFIX = "manent"
# Room left for the four readable key parts (and their separators) so that locator + "-" + version fits.
LOCATOR_MAX = NAME_MAX - 1 - VERSION_PART_MAX
_PARTS_BUDGET = LOCATOR_MAX - len(PREFIX) - 4 - 1 - HASH_LEN

LABEL_HISTORY = "manent.io/history"
LABEL_RELEASE_VERSION = "manent.io/release-version"
HISTORY_LOCATOR = "locator"
HISTORY_RECORD = "record"
# A copy of a record taken before its stored apiVersions were rewritten: ``<record>-bak``.
HISTORY_BACKUP = "record-backup"
BACKUP_SUFFIX = "-bak"
ANNOTATION_BACKUP_OF = "manent.io/backup-of"

RECORD_LIMIT = 900 * 1024
# Format 1: every object, Secrets included, in the ConfigMap. Format 2: Secrets in a companion Secret.
# Records without Secrets are written as format 1 (identical in both), so older manents still read them.
RECORD_FORMAT = "1"
RECORD_FORMAT_SECRETS = "2"
READABLE_FORMATS = (RECORD_FORMAT, RECORD_FORMAT_SECRETS)
OBJECTS_KEY = "objects.json.gz"
LEGACY_OBJECTS_KEY = "objects.json"
SECRETS_FIELD = "secrets"
SECRETS_KEY = "secrets.json.gz"
SECRETS_TYPE = "manent.io/release-secrets.v1"
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

LOCK_FIELDS = ("lockHolder", "lockSince", "lockExpires")
# Traffic rollouts: the candidate (release applied to the other slot), its weight in percent, when the
# release in service was promoted, and the replaced release once its slot was retired.
TRAFFIC_FIELDS = ("candidate", "candidateDeployment", "candidateRecord", "candidateSlot", "weight", "promoted",
                  "retired")
LOCATOR_FIELDS = ("version", "deployment", "record", "slot", "replaced", "replacedRecord", "updated") + \
    TRAFFIC_FIELDS + LOCK_FIELDS
LOCK_TTL_SECONDS = 900
LOCK_FREE = "free"
LOCK_HELD = "held"
LOCK_EXPIRED = "expired"
# Retention: history needs the release in service and the one before it.
MIN_KEEP_RELEASES = 2

RELEASE_KEY_LABELS = (LABEL_TENANT, LABEL_APPLICATION, LABEL_ARTIFACT, LABEL_ENVIRONMENT)
_TOO_LARGE_HINT = ("split the artifact into smaller artifacts, or take large ConfigMaps/Secrets out of the "
                   "manifests (e.g. create them separately); nothing was written")


# --------------------------------------------------------------------------- names


def _sha_hex(text, length):
    return sha256_text(text)[:length]


def key_hash(key, length=HASH_LEN):
    """First ``length`` (default 8) hex digits of sha256(tenant + '\\n' + application + '\\n' + artifact + '\\n' +
    environment)."""
    return _sha_hex("\n".join((key.tenant, key.application, key.artifact, key.environment)), length)


def sanitize(text):
    """DNS-1123 label characters: lowercase, each run outside [a-z0-9-] -> '-', no '-' at the ends; '' -> 'x'."""
    text = re.sub(r"[^a-z0-9-]+", "-", str(text).lower()).strip("-")
    return text or "x"


def _with_hash(body, original, limit):
    """``body-<6 hex of sha256(original)>``, the body cut so the whole fits in ``limit``."""
    suffix = _sha_hex(original, VERSION_HASH_LEN)
    body = body[:limit - len(suffix) - 1].rstrip("-_.")
    return "%s-%s" % (body, suffix) if body else suffix


def version_part(version):
    """The version as it appears in a record name (<= 63 chars).

    Unchanged when already a DNS-1123 label; otherwise sanitised and followed by ``-`` and 6 hex digits of
    sha256(version), so that e.g. ``1.4.0`` and ``1-4-0`` never share a name.
    """
    version = str(version)
    part = sanitize(version)
    if part == version and len(part) <= VERSION_PART_MAX:
        return part
    return _with_hash(part, version, VERSION_PART_MAX)


def _shorten_parts(parts, budget):
    """Cut each part in proportion to its length so that together they use at most ``budget`` chars."""
    lengths = [len(part) for part in parts]
    total = sum(lengths)
    if total <= budget:
        return list(parts)
    spare = budget - len(parts)  # every part keeps at least one character
    alloc = [1 + (length - 1) * spare // (total - len(parts)) for length in lengths]
    left = budget - sum(alloc)
    while left > 0:
        for index, length in enumerate(lengths):
            if left and alloc[index] < length:
                alloc[index] += 1
                left -= 1
    return [part[:size].rstrip("-") or "x" for part, size in zip(parts, alloc)]


def locator_name(key):
    """``manent-<tenant>-<app>-<artifact>-<env>-<hash>`` (<= 189 chars so a record name fits in 253)."""
    parts = [sanitize(part) for part in (key.tenant, key.application, key.artifact, key.environment)]
    parts = _shorten_parts(parts, _PARTS_BUDGET)
    return "-".join([PREFIX] + parts + [key_hash(key)])


def record_name(key, version):
    """``<locator>-<version part>`` (<= 253 chars)."""
    return "%s-%s" % (locator_name(key), version_part(version))


def backup_name(record):
    """``<record>-bak``; when that exceeds 253 characters the record name is cut and a 6-digit hash of it
    keeps backups of different records apart."""
    name = record + BACKUP_SUFFIX
    if len(name) <= NAME_MAX:
        return name
    digest = _sha_hex(record, VERSION_HASH_LEN)
    body = record[:NAME_MAX - len(BACKUP_SUFFIX) - len(digest) - 1].rstrip("-")
    return "%s-%s%s" % (body, digest, BACKUP_SUFFIX)


def label_value(text):
    """A valid label value: returned as is when valid; otherwise cleaned and given a 6-hex hash suffix."""
    text = "" if text is None else str(text)
    if is_label_value(text):
        return text
    cleaned = re.sub(r"[^-A-Za-z0-9_.]+", "-", text)
    cleaned = re.sub(r"^[^A-Za-z0-9]+", "", cleaned)
    return _with_hash(cleaned, text, LABEL_VALUE_MAX)


def history_labels(key, role, version=None):
    """Labels of a history ConfigMap: the release key labels plus ``manent.io/history`` (and the version)."""
    labels = {name: label_value(value) for name, value in key.labels().items()}
    labels[LABEL_HISTORY] = role
    if version is not None:
        labels[LABEL_RELEASE_VERSION] = label_value(version)
    return labels


def history_selector(key, role=None):
    """Label selector of the history of one release key (``role``: locator or record, None for both)."""
    labels = {name: label_value(value) for name, value in key.labels().items()}
    if role:
        labels[LABEL_HISTORY] = role
    selector = ",".join("%s=%s" % item for item in sorted(labels.items()))
    if not role:
        selector += ",%s" % LABEL_HISTORY
    return selector


def release_subject(release):
    key = release.key
    return "release %s/%s/%s/%s version %s" % (key.tenant, key.application, key.artifact, key.environment,
                                               release.version)


# --------------------------------------------------------------------------- time


def format_time(moment):
    """RFC 3339 UTC with seconds: 2024-05-01T12:00:00Z (naive datetimes are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text):
    """RFC 3339 text -> aware datetime, or None when empty or unreadable."""
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(str(text).strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc)


# --------------------------------------------------------------------------- records


def _gzip(raw):
    """gzip with a fixed header (mtime 0, OS 'unknown') so equal input always gives equal bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = compressor.compress(raw) + compressor.flush()
    header = b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + b"\x02\xff"
    trailer = struct.pack("<II", zlib.crc32(raw) & 0xFFFFFFFF, len(raw) & 0xFFFFFFFF)
    return header + body + trailer


def _check_status(status, subject):
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


def _pack(objects, subject, what="objects"):
    """Compressed canonical JSON of ``objects``; HistoryError above RECORD_LIMIT (nothing written yet)."""
    try:
        raw = json.dumps(objects, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as err:
        raise InputError("an object holds a value that cannot be saved as JSON: %s" % err, subject=subject,
                         hint="quote dates and other non-string scalars in the manifests") from err
    packed = _gzip(raw)
    if len(packed) > RECORD_LIMIT:
        raise HistoryError(
            "the %d %s take %d bytes compressed (%.0f KiB), above the history limit of %d bytes (%d KiB)"
            % (len(objects), what, len(packed), len(packed) / 1024.0, RECORD_LIMIT, RECORD_LIMIT // 1024),
            subject=subject, hint=_TOO_LARGE_HINT)
    return base64.b64encode(packed).decode("ascii")


def encode_objects(stored, subject):
    """``binaryData`` of a record holding ``stored`` (objects whose Secrets were already split off)."""
    return {OBJECTS_KEY: _pack(stored, subject)}


def with_objects(cm, stored, subject):
    """Copy of record ``cm`` holding ``stored`` (compressed, in ``binaryData``) instead of its objects."""
    out = copy.deepcopy(cm)
    data = dict(out.get("data") or {})
    data.pop(LEGACY_OBJECTS_KEY, None)
    out["data"] = data
    out["binaryData"] = dict(out.get("binaryData") or {}, **encode_objects(stored, subject))
    return out


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
    return _unpack(packed, _cm_subject(cm), "objects of a failed redeploy")


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
        binary[STRAYS_KEY] = _pack(strays, subject, "objects of a failed redeploy")
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


def encode_record(release, namespace, objects, meta=None):
    """The record ConfigMap of ``release``: its applied ``objects`` compressed, and its metadata.

    Secrets are kept without their values (see :func:`encode_companion`). ``meta`` may set artifactSha256,
    created (datetime or RFC 3339; default now), status (default pending), slot and replaced. Raises
    HistoryError, before anything is written, when the compressed objects exceed RECORD_LIMIT.
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
    created = meta.get("created") or _utcnow()
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


def encode_companion(cm, secrets):
    """The companion Secret of history ConfigMap ``cm`` holding the whole ``secrets``; None when there are none.

    Same name, namespace, labels and annotations as ``cm``; owned by it when ``cm`` has a uid (deleting the
    ConfigMap then lets the garbage collector delete the companion too).
    """
    if not secrets:
        return None
    metadata = cm.get("metadata") or {}
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": SECRETS_TYPE,
        "metadata": {
            "name": metadata.get("name"),
            "namespace": metadata.get("namespace"),
            "labels": dict(metadata.get("labels") or {}),
            "annotations": dict(metadata.get("annotations") or {}),
        },
        "data": {SECRETS_KEY: _pack(secrets, _cm_subject(cm), what="Secret objects")},
    }
    if metadata.get("uid"):
        body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                                "name": metadata.get("name"), "uid": metadata["uid"]}]
    return body


def companion_name(cm):
    """Name of the companion Secret that holds the Secrets of history ConfigMap ``cm`` ('' when none)."""
    return str(_data(cm, _cm_subject(cm)).get(SECRETS_FIELD) or "")


def needs_migration(cm):
    """True for a history ConfigMap written before Secrets were split off (it has no ``secrets`` field)."""
    return SECRETS_FIELD not in _data(cm, _cm_subject(cm))


def migrate(cm):
    """(ConfigMap without Secret values, companion Secret or None) for a ConfigMap of the earlier format.

    The objects, metadata and everything else stay as they were; a ConfigMap that holds no Secret only
    gets an empty ``secrets`` field, so that it is not unpacked again.
    """
    subject = _cm_subject(cm)
    _meta, objects = decode_record(cm)
    stored, secrets = split_secrets(objects)
    out = copy.deepcopy(cm)
    data = dict(_data(out, subject))
    data[SECRETS_FIELD] = out["metadata"]["name"] if secrets else ""
    if secrets:
        data.pop(LEGACY_OBJECTS_KEY, None)
        data["format"] = RECORD_FORMAT_SECRETS
        out["binaryData"] = dict(out.get("binaryData") or {}, **encode_objects(stored, subject))
    out["data"] = data
    return out, encode_companion(out, secrets)


def restore_secrets(objects, companion, cm):
    """``objects`` as stored in ``cm`` with each Secret replaced by the whole one from ``companion``."""
    subject = _cm_subject(cm)
    name = companion_name(cm)
    where = "Secret/%s/%s" % ((cm.get("metadata") or {}).get("namespace") or "", name)
    hint = "this release cannot be rolled back to; deploy a known good version instead"
    if not isinstance(companion, dict) or companion.get("type") != SECRETS_TYPE:
        raise HistoryError("the Secrets of this release are kept in %s, which is missing or not of type %s"
                           % (where, SECRETS_TYPE), subject=subject, hint=hint)
    packed = (companion.get("data") or {}).get(SECRETS_KEY)
    whole = {}
    for obj in _unpack(packed, where, "%s of %s" % (SECRETS_KEY, where)):
        if not is_secret(obj):
            raise HistoryError("%s holds an object that is not a Secret" % where, subject=subject, hint=hint)
        whole[key_of(obj)] = obj
    out = []
    for obj in objects:
        if is_secret(obj):
            if key_of(obj) not in whole:
                raise HistoryError("%s is not in %s" % (ref(obj), where), subject=subject, hint=hint)
            obj = whole[key_of(obj)]
        out.append(obj)
    return out


def _cm_subject(cm):
    if not isinstance(cm, dict):
        return "ConfigMap"
    return ref(dict(cm, kind=cm.get("kind") or "ConfigMap"))


def _data(cm, subject):
    if not isinstance(cm, dict):
        raise HistoryError("not a ConfigMap", subject=subject)
    data = cm.get("data") or {}
    if not isinstance(data, dict):
        raise HistoryError("'data' is not a mapping", subject=subject,
                           hint="delete this history ConfigMap or restore it from a backup")
    return data


def record_meta(cm):
    """Metadata of a record ConfigMap without unpacking its objects: the data fields plus name/namespace."""
    subject = _cm_subject(cm)
    data = _data(cm, subject)
    meta = {field: str(data.get(field) or "") for field in RECORD_FIELDS}
    metadata = cm.get("metadata") or {}
    if not meta["version"]:
        meta["version"] = str((metadata.get("annotations") or {}).get(ANNOTATION_VERSION) or "")
    meta["name"] = metadata.get("name") or ""
    meta["namespace"] = metadata.get("namespace") or ""
    return meta


def _unpack(packed, subject, what):
    """The list of objects in base64 (or raw bytes) gzip-compressed JSON ``packed``."""
    hint = "this release cannot be rolled back to; delete the record"
    try:
        if isinstance(packed, str):
            packed = base64.b64decode(packed, validate=True)
        return _object_list(gzip.decompress(packed).decode("utf-8"), subject, what)
    except (binascii.Error, OSError, EOFError, zlib.error, UnicodeDecodeError, TypeError) as err:
        raise HistoryError("the saved %s are corrupt: %s" % (what, err), subject=subject, hint=hint) from err


def _object_list(text, subject, what):
    hint = "this release cannot be rolled back to; delete the record"
    try:
        objects = json.loads(text)
    except (ValueError, TypeError) as err:
        raise HistoryError("the saved %s are corrupt: %s" % (what, err), subject=subject, hint=hint) from err
    if not isinstance(objects, list) or not all(isinstance(obj, dict) for obj in objects):
        raise HistoryError("the saved %s are not a list of objects" % what, subject=subject, hint=hint)
    return objects


def _unpack_objects(cm, data, subject):
    packed = (cm.get("binaryData") or {}).get(OBJECTS_KEY)
    if packed is not None:
        return _unpack(packed, subject, "objects")
    if data.get(LEGACY_OBJECTS_KEY) is not None:
        return _object_list(data[LEGACY_OBJECTS_KEY], subject, "objects")
    raise HistoryError("the record holds no objects (no binaryData %s nor data %s)"
                       % (OBJECTS_KEY, LEGACY_OBJECTS_KEY), subject=subject,
                       hint="this release cannot be rolled back to; delete the record")


def decode_record(cm):
    """(meta, objects as stored) of a record ConfigMap; also reads records with uncompressed
    ``data: objects.json``. When ``meta["secrets"]`` names a companion, its Secrets are stored without values:
    :func:`restore_secrets` puts them back."""
    subject = _cm_subject(cm)
    data = _data(cm, subject)
    meta = record_meta(cm)
    if meta["format"] and meta["format"] not in READABLE_FORMATS:
        raise HistoryError("record format %r is newer than this manent understands" % meta["format"],
                           subject=subject, hint="upgrade the manent.kubernetes collection")
    return meta, _unpack_objects(cm, data, subject)


def check_record(cm, key, objects, own_namespace=True):
    """Refuse a record ConfigMap that was tampered with (HistoryError naming the record and what is wrong):
    ``cm`` must be the record of release key ``key`` (its name, labels and version agree), its fields
    well-formed, and ``objects`` (as decoded) Kubernetes objects of this release. With ``own_namespace``
    (rollback, audit) every namespaced object must be in the record's namespace: history is writable by anyone
    who may edit ConfigMaps there, and must not become a way to write elsewhere with the deploy's rights."""
    subject = _cm_subject(cm)
    hint = "the record was changed outside manent; delete it (or restore it from a backup) and deploy again"
    meta = record_meta(cm)
    metadata = cm.get("metadata") or {}
    namespace = meta["namespace"]
    for field in RECORD_FIELDS:
        value = (cm.get("data") or {}).get(field)
        if value is not None and not isinstance(value, str):
            raise HistoryError("record field %s is not a string" % field, subject=subject, hint=hint)
    if meta["status"] and meta["status"] not in STATUSES:
        raise HistoryError("unknown release status %r" % meta["status"], subject=subject, hint=hint)
    if not meta["version"] or meta["name"] != record_name(key, meta["version"]):
        raise HistoryError("the record claims version %r, whose record name is %s, not %s"
                           % (meta["version"], record_name(key, meta["version"] or "?"), meta["name"]),
                           subject=subject, hint=hint)
    labels = metadata.get("labels") or {}
    expected = history_labels(key, HISTORY_RECORD, meta["version"])
    wrong = sorted(name for name, value in expected.items() if labels.get(name) != value)
    if wrong:
        raise HistoryError("the record's labels name another release (%s: %s instead of %s)"
                           % (wrong[0], labels.get(wrong[0]), expected[wrong[0]]), subject=subject, hint=hint)
    for index, obj in enumerate(objects):
        _check_stored_object(obj, index, key, namespace if own_namespace else "", subject, hint)


def _check_stored_object(obj, index, key, namespace, subject, hint):
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not all(isinstance(value, str) and value for value in
                                             (obj.get("apiVersion"), obj.get("kind"), meta.get("name"))):
        raise HistoryError("saved object #%d is not a Kubernetes object (apiVersion, kind and metadata.name)"
                           % index, subject=subject, hint=hint)
    where = meta.get("namespace")
    if where is not None and not isinstance(where, str):
        raise HistoryError("saved object %s has a namespace that is not a string" % ref(obj), subject=subject,
                           hint=hint)
    if namespace and where and where != namespace:
        # manent saves such objects itself (a chart may put a RoleBinding in kube-system): not a sign of tampering
        raise HistoryError("saved object %s is outside the release namespace %s: a rollback from the history kept "
                           "in %s restores only objects of %s (anyone who may edit ConfigMaps there could otherwise "
                           "write elsewhere with the rollback's rights); nothing was changed"
                           % (ref(obj), namespace, namespace, namespace), subject=subject,
                           hint="roll this release back by deploying the artifact of the version you want again "
                                "(manent_render and manent_apply, or the deploy playbook)")
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        raise HistoryError("saved object %s has labels that are not a mapping" % ref(obj), subject=subject, hint=hint)
    claimed = {name: labels.get(name) for name in key.labels()}
    if claimed.get(LABEL_MANAGED_BY) == key.labels()[LABEL_MANAGED_BY] and \
            any(value is not None and value != key.labels()[name] for name, value in claimed.items()):
        other = "/".join(str(claimed.get(name) or "") for name in RELEASE_KEY_LABELS)
        raise HistoryError("saved object %s belongs to another release (%s), not %s"
                           % (ref(obj), other, key.describe()), subject=subject, hint=hint)


def set_status(cm, status, **fields):
    """A copy of record ``cm`` with ``status`` and the given record fields (slot, replaced, ...) changed."""
    subject = _cm_subject(cm)
    _check_status(status, subject)
    unknown = sorted(set(fields) - (set(RECORD_FIELDS) - set(_FIXED_RECORD_FIELDS)))
    if unknown:
        raise InputError("field(s) %s cannot be changed on a record" % ", ".join(unknown), subject=subject)
    patched = copy.deepcopy(cm)
    data = dict(_data(patched, subject))
    data["status"] = status
    for field, value in fields.items():
        if isinstance(value, datetime.datetime):
            value = format_time(value)
        data[field] = "" if value is None else str(value)
    patched["data"] = data
    return patched


# --------------------------------------------------------------------------- locator


def encode_locator(release_key, namespace, current=None, now=None):
    """The locator ConfigMap of ``release_key`` with ``current`` (locator fields) as its data.

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
    if now is not None:
        data["updated"] = format_time(now)
    elif not data["updated"]:
        data["updated"] = format_time(_utcnow())
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
    data = _data(cm, _cm_subject(cm))
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
    unlocked = dict(data)
    for field in LOCK_FIELDS:
        unlocked[field] = ""
    return unlocked


# --------------------------------------------------------------------------- retention


_OLDEST = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)


def check_keep_releases(keep):
    """The one keep_releases rule: a whole number of at least 2; returns it, or raises InputError."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < MIN_KEEP_RELEASES:
        raise InputError("must be a whole number of at least %d, got %r" % (MIN_KEEP_RELEASES, keep),
                         subject="keep_releases",
                         hint="history needs the release in service and the one before it; set keep_releases to "
                              "%d or more" % MIN_KEEP_RELEASES)
    return keep


def created_order(record):
    """Sort key of record metadata: (created, name); records without a readable ``created`` are the oldest."""
    return parse_time(record.get("created")) or _OLDEST, record.get("name") or ""


def records_to_delete(records_meta, keep, protect=frozenset()):
    """Names of the records beyond the ``keep`` newest (by created, then name), oldest first.

    Names in ``protect`` (the release in service, the one being replaced) are never returned. Records with
    no readable ``created`` count as the oldest.
    """
    check_keep_releases(keep)
    records_meta = list(records_meta)
    for index, record in enumerate(records_meta):
        if not record.get("name"):
            raise InputError("history record #%d has no name" % index, subject="keep_releases")
    entries = sorted((created_order(record) for record in records_meta), reverse=True)
    protect = set(protect or ())
    doomed = [name for _created, name in entries[keep:] if name not in protect]
    return list(reversed(doomed))
