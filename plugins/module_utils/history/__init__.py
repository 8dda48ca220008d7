# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A release key's history in the cluster: ConfigMap names and encoding, the requests, the release in service
(locator) and the lock, one record per release and its Secrets, retention, rewrite and audit of stored releases,
anchors of cluster-scoped objects, and the migration from Helm's stored releases.

May import: base, cluster, rules."""
