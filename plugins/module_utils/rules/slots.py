# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The a/b slots of traffic (percentage) rollouts (docs/requirements.md §9): which objects belong to a slot and how a
rendered release is turned into the release of one slot.

Two versions run side by side, one in slot ``a`` and one in slot ``b``; the candidate goes to the slot
not in service (``a`` when nothing is). :func:`apply_slot` transforms the rendered objects:

- *Slot kinds* are apps Deployment, StatefulSet, DaemonSet, core Service, autoscaling
  HorizontalPodAutoscaler and policy PodDisruptionBudget, whatever their version. Every other kind
  (ConfigMap, Secret, ServiceAccount, Ingress, routes, Jobs, ...) is *shared* by both slots and is
  returned unchanged.
- With ``rename`` a slot object's name gets the suffix ``-<slot>`` (shop -> shop-b), always: a name
  that already ends with ``-b`` becomes ``...-b-b``, nothing is guessed. Without ``rename`` (a chart
  that names its objects per slot) no name changes.
- Each slot object gets the label ``manent.io/track: <slot>``; workloads also in
  ``spec.selector.matchLabels`` and their pod template, PDBs in ``spec.selector.matchLabels`` (maps are
  created when missing), Services in ``spec.selector`` when they have one. A track label of the other
  slot in any of these places is an error: the object was probably rendered for the other slot.
- With the ``istio`` router, Services are shared: one Service serves both slots, and a
  DestinationRule tells the slots apart by the pods' track label. They keep name, labels and selector.
- References follow renames within the list: a StatefulSet's ``serviceName`` and an HPA's
  ``scaleTargetRef`` (kind and name), when they name a renamed object of the same namespace.
- ``proportional``: a Deployment or StatefulSet that no HPA of the list scales starts at 1 replica;
  its manifest replicas are kept in the annotation ``manent.io/replicas`` and each traffic step grows
  it to :func:`replicas_for`.
- After the suffix, a Service name must fit in 63 characters (a DNS-1035 label), other names in 253.

Inputs are never changed: the result is a new list, in the same order, of deep copies.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import (
    annotations, group_of, labels, name_of, namespace_of, ref)

SLOTS = ("a", "b")
TRACK_LABEL = "manent.io/track"
REPLICAS_ANNOTATION = "manent.io/replicas"
ROUTER_GATEWAY = "gateway-api"
ROUTER_ISTIO = "istio"
ROUTERS = (ROUTER_GATEWAY, ROUTER_ISTIO)

SERVICE_NAME_LIMIT = 63
NAME_LIMIT = 253

_METADATA = ("metadata", "labels")
_WORKLOAD = (_METADATA, ("spec", "selector", "matchLabels"), ("spec", "template", "metadata", "labels"))
_SERVICE = ("", "Service")
_HPA = ("autoscaling", "HorizontalPodAutoscaler")

# (group, kind) of every slot kind -> where its track label goes.
_TRACK_PATHS = {
    ("apps", "Deployment"): _WORKLOAD,
    ("apps", "StatefulSet"): _WORKLOAD,
    ("apps", "DaemonSet"): _WORKLOAD,
    _SERVICE: (_METADATA, ("spec", "selector")),
    _HPA: (_METADATA,),
    ("policy", "PodDisruptionBudget"): (_METADATA, ("spec", "selector", "matchLabels")),
}
_PROPORTIONAL_KINDS = (("apps", "Deployment"), ("apps", "StatefulSet"))


def _check_slot(slot):
    if slot not in SLOTS:
        raise InputError("unknown slot %r" % (slot,), hint="a slot is one of: %s" % ", ".join(SLOTS))
    return slot


def other_slot(slot):
    """The slot that is not ``slot``."""
    return SLOTS[1 - SLOTS.index(_check_slot(slot))]


def refuse_replacing_a_live_candidate(locator, version):
    """InputError when the traffic candidate of ``locator`` (a history locator's fields) is another version than
    ``version`` and receives traffic (the weight its last step set): ``version`` would take that share
    unchecked in its slot. Deploying over a candidate at weight 0 (or none) is allowed: it replaces it."""
    locator = locator or {}
    waiting, weight = locator.get("candidate") or "", str(locator.get("weight") or "0")
    if waiting and waiting != str(version) and weight != "0":
        raise InputError("candidate %s in slot %s receives %s %% of the traffic: version %s would take that share "
                         "unchecked" % (waiting, locator.get("candidateSlot", ""), weight, version),
                         subject="version %s" % version,
                         hint="abort the candidate first (manent_traffic operation=abort: all traffic back to the "
                              "release in service), or step it to 0, then deploy %s; nothing was written" % version)


def candidate_slot(in_service_slot):
    """The slot a new release goes to: ``a`` when nothing is in service ("" or None), else the other slot."""
    return SLOTS[0] if not in_service_slot else other_slot(in_service_slot)


def slot_name(name, slot):
    """``name-slot``."""
    return "%s-%s" % (name, _check_slot(slot))


def _kind_key(obj):
    return group_of(obj), obj.get("kind") or ""


def is_slot_kind(obj):
    """True for the kinds that belong to one slot (any version); every other kind is shared."""
    return _kind_key(obj) in _TRACK_PATHS


def slot_of(obj):
    """The value of obj's track label, "" when it has none."""
    return str(labels(obj).get(TRACK_LABEL) or "")


def slot_objects(objects, slot):
    """The objects whose track label is ``slot``."""
    _check_slot(slot)
    return [obj for obj in objects if slot_of(obj) == slot]


def hpa_targets(objects):
    """{(namespace, kind, name)} of the objects scaled by the HorizontalPodAutoscalers of ``objects``."""
    targets = set()
    for obj in objects:
        if _kind_key(obj) == _HPA:
            target = (obj.get("spec") or {}).get("scaleTargetRef") or {}
            targets.add((namespace_of(obj), target.get("kind") or "", target.get("name") or ""))
    return targets


def manifest_replicas(obj):
    """The replicas the manifest asks for: annotation manent.io/replicas, else spec.replicas, else 1."""
    value = annotations(obj).get(REPLICAS_ANNOTATION)
    field = "annotation " + REPLICAS_ANNOTATION
    if value is None:
        value, field = (obj.get("spec") or {}).get("replicas"), "spec.replicas"
    if value is None:
        return 1
    try:
        replicas = int(str(value).strip()) if not isinstance(value, (bool, float)) else None
    except ValueError:
        replicas = None
    if replicas is None or replicas < 0:
        raise InputError("%s is %r, not a number of replicas" % (field, value), subject=ref(obj),
                         hint="use a whole number, 0 or more")
    return replicas


def replicas_for(manifest_replicas, percent):
    """ceil(manifest_replicas x percent / 100), at least 1 and at most manifest_replicas (so 0 stays 0)."""
    if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 <= percent <= 100:
        raise InputError("traffic percent %r is not between 0 and 100" % (percent,))
    if isinstance(manifest_replicas, bool) or not isinstance(manifest_replicas, int) or manifest_replicas < 0:
        raise InputError("manifest replicas %r is not a whole number, 0 or more" % (manifest_replicas,))
    wanted = math.ceil(Fraction(manifest_replicas) * Fraction(str(percent)) / 100)
    return min(max(wanted, 1), manifest_replicas)


def _in_slot(obj, router):
    """True when obj belongs to one slot: a slot kind, except Services behind Istio (shared)."""
    return is_slot_kind(obj) and not (router == ROUTER_ISTIO and _kind_key(obj) == _SERVICE)


def _mapping_at(obj, path):
    """The map at ``path`` inside obj, created when missing."""
    node = obj
    for depth, key in enumerate(path):
        if node.get(key) is None:
            node[key] = {}
        if not isinstance(node[key], dict):
            raise InputError("%s is not a map" % ".".join(path[:depth + 1]), subject=ref(obj))
        node = node[key]
    return node


def _stamp(obj, slot):
    """Put the track label in every place of obj's kind (a Service's selector only when it has one)."""
    for path in _TRACK_PATHS[_kind_key(obj)]:
        if path == ("spec", "selector") and not (obj.get("spec") or {}).get("selector"):
            continue
        mapping = _mapping_at(obj, path)
        found = mapping.get(TRACK_LABEL)
        if found is not None and str(found) != slot:
            message = "%s has %s: %s, but is deployed to slot %s" % (".".join(path), TRACK_LABEL, found, slot)
            raise InputError(message, subject=ref(obj),
                             hint="it was probably rendered for the other slot: render it for slot %s, or "
                                  "leave the track label to manent" % slot)
        mapping[TRACK_LABEL] = slot


def _rename(obj, slot):
    """Suffix obj's name with ``-slot``; returns the new name."""
    name = slot_name(name_of(obj), slot)
    limit = SERVICE_NAME_LIMIT if _kind_key(obj) == _SERVICE else NAME_LIMIT
    if len(name) > limit:
        raise InputError("with the slot suffix, name %s of slot %s is %d characters, more than the limit of %d"
                         % (name, slot, len(name), limit), subject=ref(obj),
                         hint="shorten the name to at most %d characters" % (limit - len(slot) - 1))
    _mapping_at(obj, ("metadata",))["name"] = name
    return name


def _follow_renames(obj, renamed):
    """Point a StatefulSet's serviceName and an HPA's scaleTargetRef at the renamed objects."""
    spec = obj.get("spec") or {}
    namespace = namespace_of(obj)
    if _kind_key(obj) == ("apps", "StatefulSet") and spec.get("serviceName"):
        spec["serviceName"] = renamed.get((namespace, "Service", spec["serviceName"]), spec["serviceName"])
    target = spec.get("scaleTargetRef") if _kind_key(obj) == _HPA else None
    if isinstance(target, dict) and target.get("name"):
        target["name"] = renamed.get((namespace, target.get("kind") or "", target["name"]), target["name"])


def _start_small(obj):
    """Keep the manifest replicas in the annotation and start at one replica (none when it asks for none)."""
    replicas = manifest_replicas(obj)
    _mapping_at(obj, ("metadata", "annotations"))[REPLICAS_ANNOTATION] = str(replicas)
    _mapping_at(obj, ("spec",))["replicas"] = min(1, replicas)


def apply_slot(objects, slot, rename=True, router=ROUTER_GATEWAY, proportional=False):
    """The release of ``slot``: a new list of deep copies of ``objects``, same order, transformed as the
    module docstring says. Raises InputError for an unknown slot or router, a name too long for the suffix
    and an object carrying the other slot's track label."""
    _check_slot(slot)
    if router not in ROUTERS:
        raise InputError("unknown traffic router %r" % (router,), hint="use one of: %s" % ", ".join(ROUTERS))
    result = [copy.deepcopy(obj) for obj in objects]
    slotted = [obj for obj in result if _in_slot(obj, router)]
    renamed = {}
    for obj in slotted:
        _stamp(obj, slot)
        if rename:
            old = (namespace_of(obj), obj.get("kind"), name_of(obj))
            renamed[old] = _rename(obj, slot)
    for obj in slotted:
        _follow_renames(obj, renamed)
    if proportional:
        scaled = hpa_targets(result)
        for obj in slotted:
            if _kind_key(obj) in _PROPORTIONAL_KINDS and \
                    (namespace_of(obj), obj.get("kind"), name_of(obj)) not in scaled:
                _start_small(obj)
    return result


def prunable_by(objects, slot):
    """The objects of earlier releases that a deploy into ``slot`` may prune: those of ``slot`` and the
    shared ones; never the other slot's, nor the slot kinds of an un-slotted release (its workloads serve
    until the route moves, see Migration in docs/traffic.md)."""
    return [obj for obj in objects if slot_of(obj) == slot or (not slot_of(obj) and not is_slot_kind(obj))]


def choose_slot(locator, migrate=False, version="", deployment_in=None):
    """The slot a traffic release goes to: the one not in service (``a`` when nothing is in service).

    A release in service that is not slotted (deployed with the rolling strategy) is only replaced by a
    first traffic release when ``migrate`` is set: its un-suffixed objects keep serving until the route moves.
    A rerun of the release in service (``version``, and ``deployment_in(slot)``, its deploy id when rendered for
    ``slot``, equal to the locator's) stays in its own slot: the deploy then changes nothing. Another ``version``
    does not replace a candidate that receives traffic (refuse_replacing_a_live_candidate; engine/plan.py checks
    it again under the lock).
    """
    locator = locator or {}
    in_service = locator.get("slot") or ""
    if in_service and version and locator.get("version") == version and deployment_in is not None and \
            deployment_in(in_service) == locator.get("deployment"):
        return in_service
    if locator.get("version") and not locator.get("slot") and not migrate:
        raise InputError("version %s of this release is in service without a traffic slot" % locator["version"],
                         subject="strategy",
                         hint="to move it to traffic rollouts set traffic_migrate: true (deploy_traffic_migrate); "
                              "the first traffic release goes to slot a beside the un-suffixed objects, the "
                              "route must list <service>-a and <service>-b, and the un-suffixed objects are "
                              "removed by hand after promote (see docs/traffic.md, Migration)")
    if version:
        refuse_replacing_a_live_candidate(locator, version)
    return candidate_slot(locator.get("slot") or "")
