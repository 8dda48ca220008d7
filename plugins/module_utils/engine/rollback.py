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

History is writable by whoever may edit ConfigMaps in the release namespace, so a rollback writes cluster-scoped
objects as stored only when the record's anchor vouches for them (history/anchor.py); otherwise only those the
cluster already holds exactly, and it stops before any change naming the others (unless told to trust the
history: ``restore_cluster_scoped``). Objects in other namespaces are refused when the record is read
(history/record_check.py).
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import apiconvert, lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.history import anchor as history_anchor
from ansible_collections.manent.kubernetes.plugins.module_utils.render.bundle import Bundle
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError, InputError, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of, namespace_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.unchanged import holds
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.prune import unfinished_release


def rollback_bundle(key, namespace, version, meta, objects):
    """The Bundle that re-deploys release ``version`` of ``key`` from its history record (``meta`` and its
    stored ``objects``, mapped to served apiVersions)."""
    return Bundle(release=Release(key, version=version, deployment=meta.get("deployment", "")),
                  namespace=namespace, objects=objects, sources=[],
                  artifact={"sha256": meta.get("artifactSha256", "")})


def rollback(deployer, namespace, key, to_version=None, converter=None, restore_cluster_scoped=False):
    """Roll release ``key`` in ``namespace`` back with ``deployer`` (a deploy.Deployer); its DeployResult.
    ``converter`` (apiconvert.Converter: the user's API mappings, drop_removed) defaults to discovery alone.
    ``restore_cluster_scoped``: write the record's cluster-scoped objects as stored even when no anchor vouches
    for them (:func:`check_cluster_scoped`)."""
    context = deployer.context
    store = context.store(namespace, key)
    current = _in_service(store, namespace)
    target, rolled_back = _target(store, current, to_version, namespace)
    meta, objects = store.load(target)
    mapped, notes = map_for_cluster(objects, converter or context.discovery.served)  # before any change
    failed_objects = store.load(rolled_back, secrets=False, strays=True)[1] if rolled_back else []
    kept, vouched = [], True
    if not restore_cluster_scoped:
        failed_objects, kept, vouched = check_cluster_scoped(context, namespace, key, target, objects, mapped,
                                                             failed_objects)
    result = deployer.deploy(rollback_bundle(key, namespace, target, meta, mapped), phase=lifecycle.ROLLBACK,
                             previous_objects=failed_objects, replaced=meta.get("replaced", ""), anchor=vouched)
    result.previous = rolled_back or current["version"]
    result.warnings.extend(notes)
    if not context.dry_run and rolled_back:
        store.mark(rolled_back, "rolled-back")
    if kept and context.options.prune:
        _leave_for_next_deploy(store, context.dry_run, result, kept, namespace, key, target, meta)
    return result


def _leave_for_next_deploy(store, dry_run, result, kept, namespace, key, target, meta):
    """Say which cluster-scoped objects the rollback did not prune (check_cluster_scoped) and list them in the
    restored record (as a failed redeploy lists its additions: Records.note_strays), so that the next deploy,
    whose artifact decides, prunes those it no longer has."""
    names = ", ".join(ref(obj) for obj in kept)
    why = ("not pruned, cluster-scoped: %s (the history in %s cannot vouch for the record of version %s, so a "
           "rollback does not take its word that they are gone from it)" % (names, namespace, target))
    if dry_run:
        result.warnings.append(why)
        return
    try:
        store.note_strays(Release(key, version=target, deployment=meta.get("deployment", "")), kept)
        result.warnings.append(why + "; listed in that record, the next deploy prunes those its artifact does not "
                                     "have")
    except ManentError as exc:
        result.warnings.append(why + "; they could not be listed in that record for the next deploy's prune (%s): "
                                     "delete them by hand if they are no longer wanted" % exc)


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


def check_cluster_scoped(context, namespace, key, version, stored, objects, previous):
    """What history cannot be trusted with in the rollback to ``version``: cluster-scoped objects, unless the
    record's anchor vouches for it (history/anchor.py). ``objects`` are the record's ``stored`` objects made
    usable on the cluster, ``previous`` those the rollback may prune.

    Raises HistoryError, before any change, when the rollback would create or change a cluster-scoped object
    that the anchor does not vouch for and whose live copy does not already hold it exactly (unchanged.holds:
    nothing to write). Returns (``previous`` without the cluster-scoped objects a rollback of a record not vouched
    for must not prune, those left out, whether the anchor vouched for the record): whoever took an object out of
    the record must not get it deleted, and the rollback must not anchor a record nothing vouched for.
    Cluster-scoped objects the record gives a namespace are never covered by the anchor; kinds the cluster does
    not serve count as cluster-scoped when they name no namespace."""
    discovery = context.discovery
    wide = [obj for obj in objects if lifecycle.applies_in(obj, lifecycle.ROLLBACK) and _cluster_scoped(discovery, obj)]
    keep = {key_of(obj) for obj in objects}
    gone = [obj for obj in previous if key_of(obj) not in keep and lifecycle.prunable(obj)[0] and
            _cluster_scoped(discovery, obj)]
    if not wide and not gone:
        return previous, [], False  # not read: nothing cluster-scoped to write or prune
    vouched = history_anchor.vouches(history_anchor.read(context.kube, namespace, key), version, stored)
    if vouched:
        wide, gone = [obj for obj in wide if namespace_of(obj)], []
    served = [obj for obj in wide if discovery.served(obj.get("apiVersion"), obj.get("kind"))]
    live = context.reader.read_many(served) if served else {}
    differ = [obj for obj in wide if not holds(obj, live.get(key_of(obj)) or {})]
    if differ:
        names = ", ".join(ref(obj) for obj in differ[:5]) + (", ..." if len(differ) > 5 else "")
        raise HistoryError(
            "the rollback to version %s would create or change %d cluster-scoped object(s) that the history in %s "
            "cannot vouch for: %s (the record is not the one manent wrote for that version, or it was written "
            "before manent anchored records, or its anchor could not be written); anyone who may edit ConfigMaps "
            "in %s could otherwise write cluster-wide with the rollback's rights; nothing was changed"
            % (version, len(differ), namespace, names, namespace),
            subject="ConfigMap/%s/%s" % (namespace, record_name(key, version)),
            hint="roll back by deploying the artifact of version %s again; or, when only people trusted with these "
                 "objects may edit ConfigMaps in %s, set restore_cluster_scoped: true (the role's "
                 "deploy_rollback_restore_cluster_scoped)" % (version, namespace))
    left = {key_of(obj) for obj in gone}
    return [obj for obj in previous if key_of(obj) not in left], gone, vouched


def _cluster_scoped(discovery, obj):
    resource = discovery.find(obj.get("apiVersion"), obj.get("kind"))
    if resource is None:
        return not namespace_of(obj)
    return not resource.namespaced
