# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slot scaler: the replicas of a slot's workloads, apart from the route. Proportional growth and shrinking
with a step, full size before a slot takes all traffic, and zero when a slot leaves service (its HPAs deleted
first, since they would scale it up again, and its DaemonSets deleted, since they cannot be scaled).

It acts only on the slot objects a history record lists whose live copy carries the release's labels: history is
kept in ConfigMaps that whoever may edit them in the namespace can change, and must not become a way to scale or
delete other objects. Each object left alone gets a warning."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import owner_of
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import group_of, namespace_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import writes
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import pods_of, wait_for
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.options import FIELD_MANAGER

SCALABLE = {("apps", "Deployment"), ("apps", "StatefulSet")}
DAEMONSET = ("apps", "DaemonSet")
HPA = ("autoscaling", "HorizontalPodAutoscaler")


def kind_key(obj):
    """(group, kind) of ``obj``."""
    return (group_of(obj), obj.get("kind") or "")


def is_workload(obj):
    return kind_key(obj) in SCALABLE or kind_key(obj) == DAEMONSET


def _hpa_managed(obj, targets):
    return (namespace_of(obj), obj["kind"], obj["metadata"]["name"]) in targets


class SlotScaler:
    """Scales the slot workloads of release ``key`` (``reader``: cluster/live.py LiveReader, ``deleter``:
    engine/delete.py Deleter) with TrafficOptions ``options``."""

    def __init__(self, kube, reader, deleter, key, options):
        self.kube = kube
        self.reader = reader
        self.deleter = deleter
        self.key = key
        self.options = options
        self.left_alone = set()  # refs of slot objects whose live copy is not this release's

    def get(self, obj):
        return self.reader.get(obj)

    def ours(self, obj, live, result):
        """True when ``live`` (the live copy of ``obj``) carries the labels of this release key; else a warning
        (once per object) says which object was left alone."""
        if live is None:
            return False
        if owner_of(live) == self.key:
            return True
        if ref(obj) not in self.left_alone:
            self.left_alone.add(ref(obj))
            result.warnings.append("%s left alone: the live object does not carry the labels of %s (history lists "
                                   "it as a slot object)" % (ref(obj), self.key.describe()))
        return False

    def scale(self, obj, replicas, result):
        """Set spec.replicas of the live workload; False when it already has them (or does not exist, or is not
        this release's). Recorded in ``result`` once the server accepted it."""
        live = self.get(obj)
        if not self.ours(obj, live, result) or (live.get("spec") or {}).get("replicas") == replicas:
            return False
        before = (live.get("spec") or {}).get("replicas")
        writes.merge_patch(self.kube, self.reader.path(obj), {"spec": {"replicas": replicas}}, ref(obj),
                           FIELD_MANAGER, dry_run=self.options.dry_run)
        result.scaled.append({"object": ref(obj), "from": before, "to": replicas})
        result.wrote(ref(obj), "replicas %s -> %s" % (before, replicas))
        return True

    def delete(self, obj, result):
        if not self.ours(obj, self.get(obj), result):
            return
        if self.deleter.delete(obj, wait=False):
            result.deleted.append(ref(obj))
            result.wrote(ref(obj), "deleted")

    def wait_ready(self, workloads):
        """Wait until every workload is Current at its size (nothing to wait for in check mode)."""
        if self.options.dry_run or not workloads:
            return []
        return wait_for(workloads, self.get, list_pods=lambda obj: pods_of(self.kube, obj),
                        timeout=self.options.wait_timeout, on_progress=self.options.on_progress, watch=self.reader)

    def proportional(self, objects, percent, grow):
        """The workloads of ``objects`` whose replicas proportional to ``percent`` are more (``grow``) or fewer
        than their live ones, with those replicas: [(object, replicas)]. Reads only."""
        targets = slots.hpa_targets(objects)
        out = []
        for obj in objects:
            if kind_key(obj) not in SCALABLE or _hpa_managed(obj, targets):
                continue
            wanted = slots.replicas_for(slots.manifest_replicas(obj), percent)
            live = self.get(obj)
            current = ((live or {}).get("spec") or {}).get("replicas")
            if live is None or current == wanted or (grow and current > wanted) or (not grow and current < wanted):
                continue
            out.append((obj, wanted))
        return out

    @staticmethod
    def targets(objects, percent=None):
        """{ref: replicas} an operation aims at for the slot's Deployments and StatefulSets: proportional to
        ``percent`` (100: full size; HPA-managed ones are left out), or zero for all of them without ``percent``."""
        if percent is None:
            return {ref(obj): 0 for obj in objects if kind_key(obj) in SCALABLE}
        hpa = slots.hpa_targets(objects)
        return {ref(obj): slots.replicas_for(slots.manifest_replicas(obj), percent) for obj in objects
                if kind_key(obj) in SCALABLE and not _hpa_managed(obj, hpa)}

    def resize(self, objects, percent, result, grow):
        """Proportional replicas for ``percent``: only growing (``grow``) or only shrinking; the workloads
        resized."""
        return [obj for obj, wanted in self.proportional(objects, percent, grow) if self.scale(obj, wanted, result)]

    def full_size(self, objects, result):
        """Scale the slot's workloads (not HPA-managed) to their manifest replicas and wait until Ready."""
        targets = slots.hpa_targets(objects)
        for obj in objects:
            if kind_key(obj) in SCALABLE and not _hpa_managed(obj, targets):
                self.scale(obj, slots.manifest_replicas(obj), result)
        self.wait_ready([obj for obj in objects if is_workload(obj) and ref(obj) not in self.left_alone])

    def to_zero(self, objects, result):
        """Scale the slot's workloads to zero: HPAs deleted first (they would scale them up), DaemonSets
        deleted (they cannot be scaled)."""
        for obj in objects:
            if kind_key(obj) == HPA:
                self.delete(obj, result)
        for obj in objects:
            if kind_key(obj) in SCALABLE:
                self.scale(obj, 0, result)
            elif kind_key(obj) == DAEMONSET:
                self.delete(obj, result)
