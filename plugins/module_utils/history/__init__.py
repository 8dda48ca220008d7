# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A release key's history in the cluster: ConfigMap names and encoding, the requests, the release in service
(locator) and the lock, one record per release and its Secrets, retention, rewrite and audit of stored releases,
anchors of cluster-scoped objects, and the migration from Helm's stored releases.

The encoding (pure functions, docs/history.md):

- naming.py            names, hashes and labels of the history ConfigMaps
- times.py             RFC 3339 times as history writes them
- packing.py           objects as compressed canonical JSON, the size limit
- record_format.py     the record of a release: fields, statuses, objects, strays, backups
- companion_format.py  the companion Secret that holds a release's Secrets; records of the earlier format
- record_check.py      the tamper check of a record as read back
- locator_format.py    the locator: the release in service, the traffic candidate, the lock
- retention_rule.py    ``keep_releases`` and which records go beyond it

The requests (each on client.py, which holds what the parts share): store.py composes locator.py (in service,
lock), records.py (one record per release), companion.py (its Secrets), retention.py, migration.py (the
earlier format), rewrite.py (stored apiVersions), helm_migration.py (Helm's release Secrets); audit.py reads,
anchor.py keeps the digest of a record's cluster-scoped objects on the release Namespace.

May import: base, cluster, rules."""
