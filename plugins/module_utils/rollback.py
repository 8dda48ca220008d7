# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rollback (docs/requirements.md §8): re-apply the stored objects of the previous release (or a named version).

After a failed deploy (the newest record failed; the release in service is untouched) the previous
release is the one in service: it is re-applied and what only the failed release created is pruned.
Otherwise the previous release is the one the release in service replaced, and the release in
service is the one rolled back. The failed or rolled-back release stays in history, marked.
Stored objects whose apiVersion the cluster no longer serves are renamed or converted in memory as the
history rewrite would (apiconvert.py, and said so); one that cannot be converted stops the rollback before any
change. Releases of traffic slots are not rolled back this way (manent_traffic does).
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils import apiconvert, lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.bundle import Bundle
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import InputError, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.identity import Release
from ansible_collections.manent.kubernetes.plugins.module_utils.prune import unfinished_release


def rollback_bundle(key, namespace, version, meta, objects):
    """The Bundle that re-deploys release ``version`` of ``key`` from its history record (``meta`` and its
    stored ``objects``, mapped to served apiVersions)."""
    return Bundle(release=Release(key, version=version, deployment=meta.get("deployment", "")),
                  namespace=namespace, objects=objects, sources=[],
                  artifact={"sha256": meta.get("artifactSha256", "")})


def rollback(deployer, namespace, key, to_version=None, converter=None):
    """Roll release ``key`` in ``namespace`` back with ``deployer`` (a deploy.Deployer); its DeployResult.
    ``converter`` (apiconvert.Converter: the user's API mappings, drop_removed) defaults to discovery alone."""
    store = deployer.store(namespace, key)
    current = _in_service(store, namespace)
    target, rolled_back = _target(store, current, to_version, namespace)
    meta, objects = store.load(target)
    mapped, notes = map_for_cluster(objects, converter or deployer.discovery.served)  # before any change
    failed_objects = store.load(rolled_back, secrets=False, strays=True)[1] if rolled_back else []
    result = deployer.deploy(rollback_bundle(key, namespace, target, meta, mapped), phase=lifecycle.ROLLBACK,
                             previous_objects=failed_objects, replaced=meta.get("replaced", ""))
    result.previous = rolled_back or current["version"]
    result.warnings.extend(notes)
    if not deployer.dry_run and rolled_back:
        store.mark(rolled_back, "rolled-back")
    return result


def _in_service(store, namespace):
    current = store.in_service()
    if current is None:
        raise ManentError("no release in service to roll back to", subject="history in %s" % namespace,
                          hint="deploy first; rollback needs a successful release in history")
    if current.get("slot"):
        raise InputError("version %s is in service in traffic slot %s: traffic releases are not rolled back by "
                         "re-applying stored objects" % (current["version"], current["slot"]),
                         subject="history in %s" % namespace,
                         hint="use manent_traffic: operation=abort before promote, operation=rollback after it "
                              "(until the replaced slot is retired); see docs/traffic.md")
    return current


def _target(store, current, to_version, namespace):
    """(version to re-apply, version rolled back from or "")."""
    unfinished = unfinished_release(store, current)
    if unfinished:
        default_target, rolled_back = current["version"], unfinished
    else:
        default_target, rolled_back = (store.locator() or {}).get("replaced"), current["version"]
    target = to_version or default_target
    if not target:
        raise ManentError("release %s replaced nothing: there is no previous release" % current["version"],
                          subject="history in %s" % namespace, hint="name a version with rollback_to")
    if target == rolled_back:
        rolled_back = current["version"] if target != current["version"] else ""
    return target, rolled_back


def map_for_cluster(objects, cluster):
    """``objects`` made usable on the cluster (``cluster``: an apiconvert.Converter or ``served(api_version,
    kind)``), and a note per renamed, converted or dropped object; InputError for those that cannot be."""
    mapped, notes, _dropped = apiconvert.converter_for(cluster).convert_all(objects)
    return mapped, notes
