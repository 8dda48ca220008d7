# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Audit of stored history: every stored release's objects against the cluster's served and deprecated API
versions (the table in :mod:`apiversions`). Reads only; Secrets are not needed (their values are not read)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils import apiversions
from ansible_collections.manent.kubernetes.plugins.module_utils.objects import ref


def audit(store, discovery, cluster_version):
    """One finding per stored object of ``store`` (a HistoryStore) whose apiVersion is removed or deprecated on
    the cluster of ``discovery`` at ``cluster_version`` ((major, minor)): record, version, object, level,
    message, replacement, rename."""
    findings = []
    for rec in store.records():
        _meta, objects = store.load(rec["version"], secrets=False)
        for obj in objects:
            served = discovery.served(obj.get("apiVersion", ""), obj.get("kind", ""))
            finding = apiversions.check(obj.get("apiVersion", ""), obj.get("kind", ""), cluster_version, served)
            if finding is not None:
                findings.append({"record": rec["name"], "version": rec["version"], "object": ref(obj),
                                 "level": finding.level, "message": finding.message,
                                 "replacement": finding.replacement, "rename": finding.rename})
    return findings
