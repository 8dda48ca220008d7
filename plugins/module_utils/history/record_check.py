# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tamper check of a record as read back (docs/hostile-input.md): it must be the record of its release key,
well-formed, and hold only Kubernetes objects of that release; for rollback and audit, only objects of the record's
own namespace. History is writable by anyone who may edit ConfigMaps in the namespace."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import (
    LABEL_APPLICATION, LABEL_ARTIFACT, LABEL_ENVIRONMENT, LABEL_TENANT, MANAGED_BY as LABEL_MANAGED_BY)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import (
    HISTORY_RECORD, cm_subject, history_labels, record_name)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    RECORD_FIELDS, STATUSES, record_meta)

RELEASE_KEY_LABELS = (LABEL_TENANT, LABEL_APPLICATION, LABEL_ARTIFACT, LABEL_ENVIRONMENT)


def check_record(cm, key, objects, own_namespace=True):
    """Refuse a record ConfigMap that was tampered with (HistoryError naming the record and what is wrong):
    ``cm`` must be the record of release key ``key`` (its name, labels and version agree), its fields
    well-formed, and ``objects`` (as decoded) Kubernetes objects of this release. With ``own_namespace``
    (rollback, audit) every namespaced object must be in the record's namespace: history is writable by anyone
    who may edit ConfigMaps there, and must not become a way to write elsewhere with the deploy's rights."""
    subject = cm_subject(cm)
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
    """HistoryError when saved object #``index`` is not a Kubernetes object of release key ``key`` (or, with
    ``namespace``, lies outside it)."""
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
