# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The companion Secret of a history ConfigMap (docs/history.md, Secrets): same name, namespace, labels and
annotations, type ``manent.io/release-secrets.v1``, owned by the ConfigMap, holding the release's whole Secrets
(:mod:`packing`). Also the move of the Secrets of an earlier-format record (values inside the ConfigMap) out to
one. Pure functions; the requests are in companion.py."""

from __future__ import annotations

import copy

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import cm_subject
from ansible_collections.manent.kubernetes.plugins.module_utils.history.packing import data_of, pack, unpack
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    LEGACY_OBJECTS_KEY, RECORD_FORMAT_SECRETS, SECRETS_FIELD, decode_record, encode_objects, is_secret, split_secrets)

SECRETS_KEY = "secrets.json.gz"
SECRETS_TYPE = "manent.io/release-secrets.v1"


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
        "data": {SECRETS_KEY: pack(secrets, cm_subject(cm), what="Secret objects")},
    }
    if metadata.get("uid"):
        body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                                "name": metadata.get("name"), "uid": metadata["uid"]}]
    return body


def companion_name(cm):
    """Name of the companion Secret that holds the Secrets of history ConfigMap ``cm`` ('' when none)."""
    return str(data_of(cm, cm_subject(cm)).get(SECRETS_FIELD) or "")


def restore_secrets(objects, companion, cm):
    """``objects`` as stored in ``cm`` with each Secret replaced by the whole one from ``companion``."""
    subject = cm_subject(cm)
    name = companion_name(cm)
    where = "Secret/%s/%s" % ((cm.get("metadata") or {}).get("namespace") or "", name)
    hint = "this release cannot be rolled back to; deploy a known good version instead"
    if not isinstance(companion, dict) or companion.get("type") != SECRETS_TYPE:
        raise HistoryError("the Secrets of this release are kept in %s, which is missing or not of type %s"
                           % (where, SECRETS_TYPE), subject=subject, hint=hint)
    packed = (companion.get("data") or {}).get(SECRETS_KEY)
    whole = {}
    for obj in unpack(packed, where, "%s of %s" % (SECRETS_KEY, where)):
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


def needs_migration(cm):
    """True for a history ConfigMap written before Secrets were split off (it has no ``secrets`` field)."""
    return SECRETS_FIELD not in data_of(cm, cm_subject(cm))


def migrate(cm):
    """(ConfigMap without Secret values, companion Secret or None) for a ConfigMap of the earlier format.

    The objects, metadata and everything else stay as they were; a ConfigMap that holds no Secret only
    gets an empty ``secrets`` field, so that it is not unpacked again.
    """
    subject = cm_subject(cm)
    _meta, objects = decode_record(cm)
    stored, secrets = split_secrets(objects)
    out = copy.deepcopy(cm)
    data = dict(data_of(out, subject))
    data[SECRETS_FIELD] = out["metadata"]["name"] if secrets else ""
    if secrets:
        data.pop(LEGACY_OBJECTS_KEY, None)
        data["format"] = RECORD_FORMAT_SECRETS
        out["binaryData"] = dict(out.get("binaryData") or {}, **encode_objects(stored, subject))
    out["data"] = data
    return out, encode_companion(out, secrets)
