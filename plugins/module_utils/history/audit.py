# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Audit of stored history: every stored release's objects against the cluster's served and deprecated API
versions (the table in :mod:`apiversions`), and what the rewrite and the rollback would do with each
(:mod:`apiconvert`). Reads only; Secrets are not needed (their values are not read)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import apiconvert, apiversions
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref

REWRITE_REFUSED = "refused"


def audit(store, discovery, cluster_version, converter=None):
    """One finding per stored object of ``store`` (a HistoryStore) whose apiVersion is removed, deprecated or not
    served on the cluster of ``discovery`` at ``cluster_version`` ((major, minor)): record, version, object, level,
    message, replacement, rename, and ``rewrite``: what the rewrite (and the rollback) do with it on this cluster,
    ``keep`` (still served), ``rename``, ``convert``, ``drop`` or ``refused``, explained in ``rewrite_detail``.
    ``converter`` (an :class:`apiconvert.Converter`) brings the user's mappings and drop_removed."""
    converter = converter or apiconvert.Converter(discovery.served)
    findings = []
    for rec in store.records():
        _meta, objects = store.load(rec["version"], secrets=False)
        for obj in objects:
            finding = _finding(obj, discovery, cluster_version, converter)
            if finding is not None:
                finding.update(record=rec["name"], version=rec["version"], object=ref(obj))
                findings.append(finding)
    return findings


def _finding(obj, discovery, cluster_version, converter):
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    served = discovery.served(api_version, kind)
    found = apiversions.check(api_version, kind, cluster_version, served)
    if found is None and served:
        return None
    try:
        outcome = converter.convert(obj)
        rewrite, detail = outcome.action, outcome.note or ""
    except InputError as err:
        rewrite, detail = REWRITE_REFUSED, str(err)
    if found is not None:
        return {"level": found.level, "message": found.message, "replacement": found.replacement,
                "rename": found.rename, "rewrite": rewrite, "rewrite_detail": detail}
    mapping = converter.mapping(api_version, kind)
    return {"level": apiversions.LEVEL_ERROR,
            "message": "%s %s is not served by this cluster%s" % (
                api_version, kind, "; the mapping %s renames it to %s" % (mapping.origin, mapping.target)
                if mapping else " and manent knows no replacement for it"),
            "replacement": mapping.target if mapping else None, "rename": bool(mapping),
            "rewrite": rewrite, "rewrite_detail": detail}
