#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: manent_history
short_description: Read, roll back, audit and repair a release's history in one cluster
version_added: 0.1.0
description:
  - Release history lives in ConfigMaps in the release namespace (see the collection's C(docs/history.md)), a locator
    naming the release in service and one record per release holding its applied objects.
  - O(operation=list) returns the release in service (the locator) and the records, newest first.
  - O(operation=rollback) re-applies the stored objects of the previous release (or O(rollback_to)) without downloading
    the artifact or running helm, waits for the rollout and, with O(prune=true), deletes objects that only the
    failed release had. The rolled-back-to release becomes the one in service; the other stays in history, marked
    C(rolled-back). Stored objects whose apiVersion the cluster no longer serves are renamed or converted in memory
    as O(operation=rewrite) would do it (and said so in C(warnings)); when one cannot be, the rollback stops
    before any change.
  - O(operation=audit) checks every stored release's objects against the cluster's served and deprecated API versions.
  - O(operation=rewrite) rewrites the stored objects whose apiVersion the cluster no longer serves, in place,
    keeping a backup record; running it again changes nothing. Pure renames change the apiVersion; the kinds of
    Kubernetes' deprecated-API removal table whose schema changed are converted (Deployment, DaemonSet,
    ReplicaSet and StatefulSet get the selector the old version defaulted from the template labels, Ingress gets
    the v1 backend structure and C(pathType=ImplementationSpecific), HorizontalPodAutoscaler the v2 metric
    targets, and so on, see the collection's C(docs/history.md)); kinds without replacement (PodSecurityPolicy)
    are dropped only with O(drop_removed=true). A record holding an object that cannot be converted is left
    unchanged and reported.
  - O(api_mappings) adds or overrides pure renames (for CRDs and aggregated APIs, or to rename instead of convert)
    for rewrite, rollback and audit.
  - O(operation=unlock) removes a lock left by a killed deploy.
author:
  - manent developers (@manent-io)
extends_documentation_fragment:
  - manent.kubernetes.connection
  - manent.kubernetes.option_names
  - manent.kubernetes.release
attributes:
  check_mode:
    support: full
    description: Rollback is a server-side dry run; rewrite and unlock report what they would change.
  diff_mode:
    support: full
    description: Rollback returns per-object differences.
options:
  operation:
    description: What to do.
    type: str
    choices: [list, rollback, audit, rewrite, unlock]
    default: list
  namespace:
    description: Namespace holding the history.
    type: str
    default: default
  rollback_to:
    description: Version to roll back to. Default the release replaced by the one in service.
    type: str
  prune:
    description: With O(operation=rollback), delete objects created only by the release rolled back from.
    type: bool
    default: false
  wait:
    description: With O(operation=rollback), wait for the rollout.
    type: bool
    default: true
  wait_timeout:
    description: Deadline of the rollout wait.
    type: str
    default: 5m
  keep_releases:
    description: Releases kept in history after a rollback (minimum 2).
    type: int
    default: 5
  break_lock:
    description: With O(operation=rollback) or O(operation=rewrite), take the history lock even if another deploy
      holds it.
    type: bool
    default: false
  api_mappings:
    description:
      - Path of a YAML mapping file of pure renames (stored apiVersion, optionally per kind, to a served apiVersion)
        that add to or override the built-in table, used by O(operation=rewrite), O(operation=rollback) and
        O(operation=audit). Format in the collection's C(docs/history.md) ("The mapping file").
      - The file is read where the module runs, before anything is changed; an invalid file changes nothing.
    type: path
  drop_removed:
    description:
      - With O(operation=rewrite) or O(operation=rollback), drop stored objects of kinds that have no replacement
        (PodSecurityPolicy) from the release instead of stopping; the rewrite lists them in C(findings[].dropped),
        the rollback in C(warnings).
    type: bool
    default: false
  restore_cluster_scoped:
    description:
      - With O(operation=rollback), write the stored cluster-scoped objects of the release rolled back to even when
        the history cannot vouch for them.
      - By default a rollback creates or changes a cluster-scoped object (a ClusterRole, a webhook configuration, a
        CRD) only when the record's anchor, a digest that each deploy keeps in an annotation of the release
        Namespace, matches the stored objects. Without that anchor (a record edited since manent wrote it, written
        before anchors existed, or credentials that may not patch the Namespace) the rollback stops before any
        change naming those objects, unless their live copies already hold them; nor does it prune cluster-scoped
        objects then (it lists those it left in C(warnings)). History lives in ConfigMaps of the namespace, so
        whoever may edit ConfigMaps there could otherwise write or delete cluster-wide with the rollback's rights.
      - Set it only when everyone who may edit ConfigMaps in O(namespace) may also change those objects; otherwise
        deploy the artifact of the version wanted again.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Show the release in service and the history of shop in prod
  manent.kubernetes.manent_history:
    api_server: "{{ manent_api_server }}"
    token: "{{ manent_token }}"
    application: shop
    environment: prod
    namespace: shop-prod
  register: history

- name: Roll back to the previous release, pruning what only the failed one created
  manent.kubernetes.manent_history:
    api_server: "{{ manent_api_server }}"
    token: "{{ manent_token }}"
    application: shop
    environment: prod
    namespace: shop-prod
    operation: rollback
    prune: true

- name: Map stored releases to the API versions the cluster serves (before a cluster upgrade)
  manent.kubernetes.manent_history:
    api_server: "{{ manent_api_server }}"
    token: "{{ manent_token }}"
    application: shop
    environment: prod
    namespace: shop-prod
    operation: rewrite

- name: Convert stored releases, dropping PodSecurityPolicies and renaming a CRD version the cluster dropped
  manent.kubernetes.manent_history:
    api_server: "{{ manent_api_server }}"
    token: "{{ manent_token }}"
    application: shop
    environment: prod
    namespace: shop-prod
    operation: rewrite
    drop_removed: true
    api_mappings: files/api-mappings.yml
"""

RETURN = r"""
in_service:
  description: The release in service (version, deployment, artifact (its sha256), slot, record), or null.
  returned: always
  type: dict
records:
  description:
    - The release records, newest first (name, version, status, created, deployment, format, and C(secrets), the
      companion Secret holding the release's Secrets, empty when it has none).
  returned: always
  type: list
  elements: dict
status:
  description: With O(operation=rollback), C(rolled-back), C(checked) or C(failed).
  returned: when operation is rollback
  type: str
details:
  description: With O(operation=rollback), the same details as M(manent.kubernetes.manent_apply).
  returned: when operation is rollback
  type: dict
changes:
  description: With O(operation=rollback), per-object actions.
  returned: when operation is rollback
  type: list
  elements: dict
findings:
  description:
    - With O(operation=audit), one entry per stored object whose apiVersion is removed or deprecated on this cluster
      (record, version, object, level, message, replacement, rename), and C(rewrite), what the rewrite and the
      rollback do with it on this cluster (C(keep), C(rename), C(convert), C(drop) or C(refused)), explained in
      C(rewrite_detail).
    - With O(operation=rewrite), one entry per record that needed a change (record, version, action C(rewritten),
      C(would-rewrite) in check mode, or C(error) when an object cannot be converted; changes, one note per renamed,
      converted or dropped object; dropped, the objects dropped; errors; backup, the backup record).
  returned: when operation is audit or rewrite
  type: list
  elements: dict
unlocked:
  description: With O(operation=unlock), the deploy id whose lock was removed (would be, in check mode).
  returned: when operation is unlock and the history was locked
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import history_task
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.common import run_task


def main():
    run_task(AnsibleModule(argument_spec=history_task.argument_spec(), supports_check_mode=True), history_task)


if __name__ == "__main__":
    main()
