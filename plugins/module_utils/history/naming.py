# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Names, hashes and labels of the history ConfigMaps of a release key (docs/history.md, The two kinds of
ConfigMap; Labels).

* The *locator* is ``manent-<tenant>-<app>-<artifact>-<env>-<hash>`` (at most 189 characters); the *record* of a
  release is ``<locator>-<version part>`` (at most 253); the backup of a record is ``<record>-bak``.
* ``<hash>`` is the first 8 hex digits of sha256 over ``tenant\\napplication\\nartifact\\nenvironment``: it keeps
  names of different release keys apart even when the readable parts are sanitised or shortened.
* Every history ConfigMap carries the release key's labels and its role (``manent.io/history``); label values that
  are not valid get a hash suffix. Pure functions.
"""

from __future__ import annotations

import re

from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import sha256_text
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import is_label_value
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref

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
    """How messages name ``release``: ``release <tenant>/<app>/<artifact>/<env> version <version>``."""
    key = release.key
    return "release %s/%s/%s/%s version %s" % (key.tenant, key.application, key.artifact, key.environment,
                                               release.version)


def cm_subject(cm):
    """How messages name history ConfigMap ``cm``: ``ConfigMap/<namespace>/<name>``."""
    if not isinstance(cm, dict):
        return "ConfigMap"
    return ref(dict(cm, kind=cm.get("kind") or "ConfigMap"))
