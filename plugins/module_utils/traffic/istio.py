# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slot destinations of an Istio VirtualService: which routes of an ``http`` entry go to the subsets ``a`` and
``b`` of the service's host, which entry is the testers', and what Istio requires of them (the entries manent
weighs route to those two subsets only; the testers' entry comes first, since Istio takes the first match).

A host names the Kubernetes Service ``<name>.<namespace>.svc.cluster.local``; Istio reads a short host
(``shop``) in the namespace of the object that writes it (the VirtualService, the DestinationRule), not the
Service's, so a VirtualService in another namespace than the release names the Service's namespace in its
hosts (``shop.shop-prod.svc.cluster.local``)."""

from __future__ import annotations

import json

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import SLOTS

# The list of the VirtualService manent rewrites, what one item of it is called in messages, the key of an item's
# destinations and what messages call them, the weight of a destination without one.
FIELD, UNIT, REFS, TARGETS, DEFAULT_WEIGHT = "http", "http entry", "route", "route destinations", 0


def service_of(host, namespace):
    """(name, namespace) of the Service a host names, read in ``namespace`` (the writing object's) when short;
    None when it names no Service of the cluster."""
    parts = (host or "").split(".")
    if len(parts) == 1 and parts[0]:
        return parts[0], namespace
    if 2 <= len(parts) <= 5 and parts[2:] in ([], ["svc"], ["svc", "cluster", "local"]) and all(parts[:2]):
        return parts[0], parts[1]
    return None


def fqdn(target):
    """The host of the slot Services of ``target`` (weights.py Target)."""
    return "%s.%s.svc.cluster.local" % (target.service, target.namespace)


def host_of(target):
    """The host a VirtualService of ``target`` writes: the short name in the Services' own namespace."""
    return target.service if target.namespace == target.route_namespace else fqdn(target)


def slots_of(entry, target):
    """{slot: route destination} of the entry's routes to subsets ``a`` and ``b`` of the service (weights.py
    Target), its host read in the VirtualService's namespace."""
    found = {}
    for route in entry.get("route") or ():
        destination = route.get("destination") or {}
        subset = destination.get("subset")
        named = service_of(destination.get("host"), target.route_namespace)
        if subset in SLOTS and subset not in found and named == (target.service, target.namespace):
            found[subset] = route
    return found


def is_testers(entry, testers):
    """Whether ``entry`` matches the testers' header (lower-case name, value or None) with ``exact``."""
    name, value = testers
    for match in entry.get("match") or ():
        for header, condition in (match.get("headers") or {}).items():
            if (str(header).lower() == name and isinstance(condition, dict) and "exact" in condition
                    and (value is None or condition["exact"] == value)):
                return True
    return False


def names(target):
    return tuple("subset %s of host %s" % (slot, host_of(target)) for slot in SLOTS)


def elsewhere(entries, target):
    """The hosts of the entries' routes to subsets ``a`` and ``b`` that name the service in another namespace."""
    found = set()
    for entry in entries:
        for route in entry.get("route") or ():
            destination = route.get("destination") or {}
            named = service_of(destination.get("host"), target.route_namespace)
            if destination.get("subset") in SLOTS and named and named[0] == target.service \
                    and named[1] != target.namespace:
                found.add(destination["host"])
    return sorted(found)


def cross_namespace_hint(target):
    """What a VirtualService of another namespace than the Services must write."""
    return "a short host names a Service of the VirtualService's namespace %s: write %s" % (
        target.route_namespace, json.dumps(example_refs(target)))


def example_refs(target, port=None, weights=(100, 0)):
    """Route destinations to both subsets of the service's host."""
    del port
    return [{"destination": {"host": host_of(target), "subset": slot}, "weight": weight}
            for slot, weight in zip(SLOTS, weights)]


def completed(entry, target):
    """``{"route": [...]}``: the entry's destinations with the missing slot subsets added at weight 0 and the listed
    one at its weight (100 when it has none: Istio wants weights summing to 100), so that no traffic moves."""
    found = slots_of(entry, target)
    template = next(iter(found.values()), {}).get("destination") or {"host": host_of(target)}
    routes = [dict(route, weight=route.get("weight", 100)) if route in found.values() else route
              for route in entry.get("route") or []]
    for slot in SLOTS:
        if slot not in found:
            routes.append({"destination": dict(template, subset=slot), "weight": 0})
    return {"route": routes}


def no_testers(_first, weighted, target, testers, subject):
    """The refusal of a VirtualService without the testers' entry; ``weighted``: the first weighted entry's name."""
    header, value = testers
    example = {"match": [{"headers": {header: {"exact": value or "<value>"}}}],
               "route": [{"destination": {"host": host_of(target), "subset": slot}} for slot in SLOTS]}
    return InputError("no http entry matches the testers' header %s" % header, subject=subject,
                      hint="add an entry before %s, e.g. %s" % (weighted, json.dumps(example)))


def check(plan, target, subject, unit_name):
    """The entries manent weighs route to the two subsets only, and the testers' entry comes first
    (``unit_name(index)``: an entry's name in messages)."""
    for index in plan.weighted + plan.testing:
        entry = plan.units[index]
        if len(entry.get("route") or []) != len(SLOTS):
            others = [route.get("destination") for route in entry["route"] if route not in
                      slots_of(entry, target).values()]
            raise InputError("%s routes to other destinations too: %s" % (unit_name(index), json.dumps(others)),
                             subject=subject, hint="manent manages only entries whose destinations are exactly the "
                                                   "subsets a and b of %s: move the others to their own entry"
                                                   % target.service)
    if plan.testing and min(plan.testing) > plan.weighted[0]:
        raise InputError("the testers' %s comes after the weighted %s"
                         % (unit_name(min(plan.testing)), unit_name(plan.weighted[0])),
                         subject=subject, hint="Istio uses the first matching entry, so testers would never reach "
                                               "theirs: move it before")
