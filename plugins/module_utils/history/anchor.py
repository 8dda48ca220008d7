# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Anchors: what lets a rollback trust the cluster-scoped objects of a history record (docs/history.md).

History lives in ConfigMaps of the release namespace, and whoever may edit ConfigMaps there can change what a
record holds. For objects of that namespace this gives nothing such a person could not write directly; for
cluster-scoped objects (a ClusterRoleBinding, a webhook configuration, a CRD) it would let them write cluster-wide
with the rights of whoever runs the rollback. So each record write also keeps the digest of the record's objects
that have no namespace in an annotation of the release Namespace, which is cluster-scoped: a namespace's tenants
cannot change it. The annotation (``history.manent.io/anchor-<hash of the release key>``) holds a JSON object
``{version: digest}`` of the newest :data:`KEEP` versions written; once a release key has anchors, its records
without cluster-scoped objects are anchored too (digest ""), so that a rollback to them knows they had none.

A rollback re-applies the cluster-scoped objects of a record as stored only when the digest of that record is
the one anchored for its version; otherwise only those whose live copy already holds them exactly (nothing to
write), and it stops before any write naming the others (rollback.py). Anchoring is best effort: a Namespace
the credentials may not patch leaves the record without an anchor (said in the deploy's warnings) and the
rollback on the safe side.
"""

from __future__ import annotations

import json

from ansible_collections.manent.kubernetes.plugins.module_utils.history import naming
from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import sha256_text
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import writes

ANNOTATION_PREFIX = "history.manent.io/anchor-"
KEEP = 20  # versions anchored per release key (records beyond keep_releases are deleted; 20 covers any sane one)
_HASH_LEN = 16


def annotation(key):
    """The Namespace annotation that holds the anchors of release key ``key``."""
    return ANNOTATION_PREFIX + naming.key_hash(key, _HASH_LEN)


def without_namespace(objects):
    """The objects of ``objects`` that name no namespace: the cluster-scoped ones, as a record stores them."""
    return [obj for obj in objects or [] if not (obj.get("metadata") or {}).get("namespace")]


def digest(objects):
    """sha256 of the objects of ``objects`` that name no namespace (canonical JSON, in key order); "" when none."""
    wide = sorted(without_namespace(objects), key=lambda obj: tuple(key_of(obj)))
    if not wide:
        return ""
    return sha256_text(json.dumps(wide, sort_keys=True, separators=(",", ":"), ensure_ascii=True))


def parse(namespace_obj, key):
    """``{version: digest}`` anchored for ``key`` on the Namespace object ``namespace_obj``; {} when none or
    unreadable (an annotation that is not such an object anchors nothing)."""
    annotations = ((namespace_obj or {}).get("metadata") or {}).get("annotations") or {}
    try:
        value = json.loads(annotations.get(annotation(key)) or "{}")
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def with_anchor(anchors, version, value, keep=KEEP):
    """``anchors`` with ``version`` anchored to ``value`` as the newest entry, at most ``keep`` entries."""
    out = {k: v for k, v in anchors.items() if k != str(version)}
    out[str(version)] = value
    names = list(out)
    return {k: out[k] for k in names[max(0, len(names) - keep):]}


def _namespace_path(namespace):
    return "/api/v1/namespaces/%s" % namespace


def read_namespace(kube, namespace):
    """The Namespace ``namespace`` as the API serves it, None when it cannot be read (absent, forbidden)."""
    try:
        return kube.get_json(_namespace_path(namespace), subject="Namespace/%s" % namespace)
    except ManentError:
        return None


def read(kube, namespace, key):
    """The anchors of ``key`` on Namespace ``namespace``; {} when it cannot be read (absent, forbidden)."""
    return parse(read_namespace(kube, namespace), key)


def write(kube, namespace, key, version, objects, namespace_obj=None):
    """Anchor the record of ``version`` (its stored ``objects``); a note for the deploy's warnings when the
    anchor could not be written, else None. A record without cluster-scoped objects is anchored (to "") only when
    the release key has anchors on ``namespace_obj`` (the Namespace as the deploy read it when planning): a
    rollback to it may then prune the cluster-scoped objects of a later release. Otherwise, and when the anchor
    is already there, nothing is sent."""
    value = digest(objects)
    if not value and not parse(namespace_obj, key):
        return None
    subject = "Namespace/%s" % namespace
    try:
        current = parse(kube.get_json(_namespace_path(namespace), subject=subject), key)
        if list(current)[-1:] == [str(version)] and current[str(version)] == value or not (value or current):
            return None
        body = {"metadata": {"annotations": {annotation(key): json.dumps(
            with_anchor(current, version, value), separators=(",", ":"))}}}
        # no field manager: the server names the writer after the client, as for every history write
        writes.merge_patch(kube, _namespace_path(namespace), body, subject, field_manager=None)
    except ManentError as exc:
        return ("the cluster-scoped objects of version %s could not be anchored on %s (%s): a rollback to it will "
                "restore them only where the cluster already holds them, unless told to trust the history"
                % (version, subject, exc.message))
    return None


def vouches(anchors, version, objects):
    """True when ``anchors`` (see :func:`read`) hold, for ``version``, the digest of ``objects``: the record's
    objects that name no namespace are those manent stored ("" for none). A version without an anchor is not
    vouched for, even when its record holds no cluster-scoped object: they may have been taken out."""
    return str(version) in anchors and anchors[str(version)] == digest(objects)
