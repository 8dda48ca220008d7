# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prune (docs/requirements.md §7 step 5): delete the objects of the previous release that the new one no longer has.

What may be pruned comes from history (:func:`candidates`): the objects of the release in service (with those a
failed redeploy of it may have left), of a newer release that failed, and of a traffic candidate. An object is
pruned only when its lifecycle annotations allow it (never Namespaces, ``keep`` or ownership ``anyone``
objects), it still exists and its live copy carries the labels of the release pruning (not another release's,
not another tool's); each one is deleted through delete.py (in reverse apply order) and recorded in the change
set.
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import DELETED, SKIPPED, Change
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.diff import diff_entry
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import owner_of
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import together
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.ordering import sort_for_delete

UNFINISHED = ("failed", "pending", "aborted")


def prune(deleter, old_objects, new_objects, key, changes=None, diff=False, salt=""):
    """Delete the objects of ``old_objects`` that ``new_objects`` no longer has; their refs, in delete order.

    Only live objects that carry the labels of release ``key`` (the one pruning) are deleted: ``old_objects``
    come from history, which whoever may edit ConfigMaps in the release namespace can change, and must not
    become a way to delete other objects (of another tool, in another namespace, cluster-scoped) with the
    deploy's rights. ``changes`` (a change set list) gets a Change per deleted object (with its diff when
    ``diff``) and per object not pruned, with the reason."""
    keep = {key_of(o) for o in new_objects}
    pruned = []
    for obj in sort_for_delete([o for o in old_objects or [] if key_of(o) not in keep]):
        ok, why = lifecycle.prunable(obj)
        if not ok:
            _note(changes, Change(ref(obj), SKIPPED, reason="not pruned: %s" % why))
            continue
        target = deleter.served(obj)
        live = deleter.reader.get(target)
        if live is None:
            continue  # already gone: not an error, nothing to report
        owner = owner_of(live)
        if owner != key:
            why = ("now belongs to %s" % owner.describe()) if owner is not None else \
                "it does not carry the labels of %s on the cluster (not manent's, or they were removed)" % \
                key.describe()
            _note(changes, Change(ref(obj), SKIPPED, reason="not pruned: %s" % why))
            continue
        if deleter.delete(target, wait=False):
            pruned.append(ref(obj))
            change = Change(ref(obj), DELETED, reason="pruned")
            if diff:
                change.diff = diff_entry(live, None, ref(obj), salt)
            _note(changes, change)
    return pruned


def _note(changes, change):
    if changes is not None:
        changes.append(change)


def candidates(store, current, secrets=False, candidate=""):
    """Objects the new release may prune: those of the release in service, plus those of a newer
    release that failed (its objects may be on the cluster although it never went into service) and of the
    traffic ``candidate``. Secrets come with their values only when ``secrets`` (the new release has Secrets,
    whose unchanged ones keep their release annotations): pruning needs names, labels and annotations alone."""
    objects, unfinished = [], ""
    if current:  # two independent reads (the record in service, the list of records), sent together
        objects, unfinished = together(lambda: list(store.previous_objects(secrets=secrets, strays=True)),
                                       lambda: unfinished_release(store, current))
    for other in (unfinished, candidate):
        if other and other != (current or {}).get("version"):
            seen = {key_of(o) for o in objects}
            objects.extend(o for o in store.load(other, secrets=secrets, strays=True)[1] if key_of(o) not in seen)
    return objects


def unfinished_release(store, current):
    """The version of the newest record when it failed (or never finished) after the release in service,
    else "": its objects may be on the cluster although it never went into service."""
    newest = next(iter(store.records()), None)
    if newest and newest.get("status") in UNFINISHED and newest.get("version") != current["version"]:
        return newest["version"]
    return ""
