# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slot destinations of an Istio VirtualService: which routes of an ``http`` entry go to the subsets ``a`` and
``b`` of the service's host, which entry is the testers', and what Istio requires of them (the entries manent
weighs route to those two subsets only; the testers' entry comes first, since Istio takes the first match)."""

from __future__ import annotations

import json
import re

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import SLOTS

# The list of the VirtualService manent rewrites, what one item of it is called in messages, the key of an item's
# destinations and what messages call them, the weight of a destination without one.
FIELD, UNIT, REFS, TARGETS, DEFAULT_WEIGHT = "http", "http entry", "route", "route destinations", 0


def is_service_host(host, service):
    """``service``, ``service.<ns>``, ``service.<ns>.svc`` or ``service.<ns>.svc.cluster.local``."""
    pattern = r"%s(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.svc(\.cluster\.local)?)?)?" % re.escape(service)
    return re.fullmatch(pattern, host or "") is not None


def slots_of(entry, target):
    """{slot: route destination} of the entry's routes to subsets ``a`` and ``b`` of the service (weights.py
    Target)."""
    found = {}
    for route in entry.get("route") or ():
        destination = route.get("destination") or {}
        subset = destination.get("subset")
        if subset in SLOTS and subset not in found and is_service_host(destination.get("host"), target.service):
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
    return tuple("subset %s of host %s" % (slot, target.service) for slot in SLOTS)


def elsewhere(_entries, _target):
    return []


def example_refs(target, port=None, weights=(100, 0)):
    """Route destinations to both subsets of the service's host."""
    del port
    return [{"destination": {"host": target.service, "subset": slot}, "weight": weight}
            for slot, weight in zip(SLOTS, weights)]


def no_testers(_first, weighted, target, testers, subject):
    """The refusal of a VirtualService without the testers' entry; ``weighted``: the first weighted entry's name."""
    header, value = testers
    example = {"match": [{"headers": {header: {"exact": value or "<value>"}}}],
               "route": [{"destination": {"host": target.service, "subset": slot}} for slot in SLOTS]}
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
