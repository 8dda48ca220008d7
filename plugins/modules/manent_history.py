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
    C(rolled-back). Stored objects whose apiVersion the cluster no longer serves are mapped when the change is a
    pure rename; otherwise the rollback stops before any change.
  - O(operation=audit) checks every stored release's objects against the cluster's served and deprecated API versions.
  - O(operation=rewrite) maps stored objects to served apiVersions in place (pure renames only), keeping a backup
    record; running it again changes nothing.
  - O(operation=unlock) removes a lock left by a killed deploy.
author:
  - manent developers (@manent-io)
extends_documentation_fragment:
  - manent.kubernetes.connection
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
  application:
    description: Application of the release key.
    type: str
    required: true
  artifact_name:
    description: Artifact of the release key. Default O(application).
    type: str
  environment:
    description: Environment of the release key.
    type: str
    required: true
  tenant:
    description: Tenant of the release key.
    type: str
    default: untenanted
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
    description: Releases kept in history after a rollback.
    type: int
    default: 5
  break_lock:
    description: With O(operation=rollback) or O(operation=rewrite), take the history lock even if another deploy
      holds it.
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
"""

RETURN = r"""
in_service:
  description: The release in service (version, deployment, slot, record), or null.
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
      (record, version, object, level, message, replacement, rename).
    - With O(operation=rewrite), one entry per record that needed a change (record, version, action C(rewritten),
      C(would-rewrite) in check mode, or C(error) for a change that is not a pure rename, changes, errors, backup).
  returned: when operation is audit or rewrite
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.manent.kubernetes.plugins.module_utils import apiversions
from ansible_collections.manent.kubernetes.plugins.module_utils import module_common as mc
from ansible_collections.manent.kubernetes.plugins.module_utils.apply import ApplyOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.bundle import Bundle
from ansible_collections.manent.kubernetes.plugins.module_utils.deploy import Deployer, DeployOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import InputError, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.helm import parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.identity import Release
from ansible_collections.manent.kubernetes.plugins.module_utils.objects import ref

HISTORY_SPEC = {
    "operation": {"type": "str", "choices": ["list", "rollback", "audit", "rewrite", "unlock"], "default": "list"},
    "rollback_to": {"type": "str"},
    "prune": {"type": "bool", "default": False},
    "wait": {"type": "bool", "default": True},
    "wait_timeout": {"type": "str", "default": "5m"},
    "keep_releases": {"type": "int", "default": 5},
    "break_lock": {"type": "bool", "default": False},
}


def audit(store, discovery, cluster_version):
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


def run(module):
    p = module.params
    key = mc.release_key(p)
    if p["keep_releases"] < 2:
        raise InputError("must be at least 2", subject="keep_releases")
    kube, discovery = mc.open_cluster(p)
    try:
        deployer = Deployer(kube, discovery, DeployOptions(
            apply=ApplyOptions(dry_run=module.check_mode, diff=module._diff), wait=p["wait"],
            wait_timeout=parse_duration(p["wait_timeout"], name="wait_timeout"), prune=p["prune"],
            keep_releases=p["keep_releases"], break_lock=p["break_lock"]))
        store = deployer.store(p["namespace"], key)
        out = {"changed": False}
        state = p["operation"]
        if state == "rollback":
            def bundle_factory(version, meta, objects):
                return Bundle(release=Release(key, version=version, deployment=meta.get("deployment", "")),
                              namespace=p["namespace"], objects=objects, sources=[],
                              artifact={"sha256": meta.get("artifactSha256", "")})
            result = deployer.rollback(p["namespace"], key, to_version=p.get("rollback_to"),
                                       bundle_factory=bundle_factory)
            out.update(result.to_dict())
            if module._diff:
                out["diff"] = [c.diff for c in result.changes if c.diff]
        elif state == "audit":
            out["findings"] = audit(store, discovery, kube.version()[:2])
        elif state == "rewrite":
            if not module.check_mode:
                store.acquire(break_lock=p["break_lock"])
            try:
                out["findings"] = store.rewrite_api_versions(discovery.served, dry_run=module.check_mode)
            finally:
                if not module.check_mode:
                    store.release_lock()
            out["changed"] = any(f.get("action") in ("rewritten", "would-rewrite") for f in out["findings"])
        elif state == "unlock":
            loc = store.locator()
            if loc and loc.get("lockHolder"):
                if not module.check_mode:
                    store.acquire(break_lock=True)
                    store.release_lock()
                out["changed"] = True
                out["unlocked"] = loc.get("lockHolder")
        out["in_service"] = store.in_service()
        out["records"] = store.records()
        return out
    finally:
        kube.close()


def main():
    module = AnsibleModule(argument_spec=mc.argument_spec(mc.RELEASE_SPEC, HISTORY_SPEC), supports_check_mode=True)
    mc.require_kubernetes(module)
    try:
        mc.exit_result(module, run(module))
    except ManentError as exc:
        mc.fail(module, exc)


if __name__ == "__main__":
    main()
