# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slot weights of a route, computed without a request: Gateway API HTTPRoute/GRPCRoute and Istio
VirtualService.

The route belongs to the infrastructure: manent changes only the weights of the two slot backends and
leaves everything else as it found it.

Gateway API (HTTPRoute, GRPCRoute):

* a *weighted rule* is a rule of ``spec.rules`` whose backendRefs include both ``<service>-a`` and
  ``<service>-b`` (kind Service, core group, the route's namespace). The candidate slot gets ``percent``,
  the stable slot ``100 - percent``; matches, filters, other backends and their weights, and every other
  rule stay untouched. A backendRef without a weight has weight 1.
* the *testers rule* is the rule with a header match on the testers' header (name case-insensitive,
  value when given, type Exact): it lists both slots and sends only to the candidate (100 and 0), so it
  is the same at every step of a rollout. It is not a weighted rule.
* a route without a weighted rule (or, with testers, without a testers rule) is refused.

Istio (VirtualService): the same with the ``spec.http`` entries whose destinations are exactly the subsets
``a`` and ``b`` of the service's host (integer weights summing to 100). Istio takes the first matching
entry, so the testers entry (a ``headers: {<name>: {exact: <value>}}`` match) must come before the first
weighted one.
"""

from __future__ import annotations

import copy
import json
import re
from collections import namedtuple

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import name_of, namespace_of
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import SLOTS, other_slot, slot_name

GATEWAY_KINDS = ("HTTPRoute", "GRPCRoute")
ROUTE_KINDS = GATEWAY_KINDS + ("VirtualService",)
_TESTERS_WEIGHT = 100

Plan = namedtuple("Plan", "field units weighted testing slots_of default_weight")


def set_weights(route, kind, service, candidate, percent, testers=None):
    """A new ``spec``: ``candidate`` gets ``percent`` of the traffic, testers all of it; ``route`` is not changed."""
    subject = _subject(route, kind)
    _check_args(kind, candidate, percent, subject)
    spec = copy.deepcopy(route.get("spec") or {})
    plan = _plan(spec, kind, service, namespace_of(route), _testers(testers), subject)
    for index in plan.weighted:
        _weigh(plan.slots_of(plan.units[index]), candidate, percent)
        _check_sends_somewhere(plan, index, subject)
    for index in plan.testing:
        _weigh(plan.slots_of(plan.units[index]), candidate, _TESTERS_WEIGHT)
    return spec


def current_weights(route, kind, service, testers=None):
    """{"a": weight, "b": weight} of the first weighted rule (entry); give ``testers`` to skip the testers rule."""
    subject = _subject(route, kind)
    _check_kind(kind, subject)
    plan = _plan(route.get("spec") or {}, kind, service, namespace_of(route), _testers(testers), subject)
    found = plan.slots_of(plan.units[plan.weighted[0]])
    return {slot: int(found[slot].get("weight", plan.default_weight)) for slot in SLOTS}


def field_of(kind):
    """The atomic list manent rewrites: ``rules`` (Gateway API) or ``http`` (VirtualService)."""
    return "rules" if kind in GATEWAY_KINDS else "http"


def _weigh(found, candidate, percent):
    found[candidate]["weight"] = percent
    found[other_slot(candidate)]["weight"] = 100 - percent


def _check_sends_somewhere(plan, index, subject):
    unit = plan.units[index]
    targets = unit.get("backendRefs" if plan.field == "rules" else "route") or []
    if not any(int(target.get("weight", plan.default_weight)) > 0 for target in targets):
        raise InputError("%s would send traffic nowhere: every backend has weight 0" % _unit_name(plan, index),
                         subject=subject, hint="this is a bug in manent: report it with the route")


def _subject(route, kind):
    namespace, name = namespace_of(route), name_of(route)
    return "%s/%s/%s" % (kind, namespace, name) if namespace else "%s/%s" % (kind, name)


def _check_kind(kind, subject):
    if kind not in ROUTE_KINDS:
        raise InputError("unsupported route kind %r" % (kind,), subject=subject,
                         hint="use HTTPRoute, GRPCRoute (Gateway API) or VirtualService (Istio)")


def check_percent(percent):
    """``percent``, the candidate's share of the traffic: InputError unless a whole number from 0 to 100 (the one
    check of it, for the module, its action plugin and the engine)."""
    if percent is None:
        raise InputError("operation step needs the candidate's share of the traffic", subject="percent",
                         hint="give percent, a whole number from 0 to 100, e.g. 10")
    if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
        raise InputError("must be a whole number from 0 to 100, got %r" % (percent,), subject="percent",
                         hint="give the candidate's share of the traffic, e.g. 10")
    return percent


def _check_args(kind, candidate, percent, subject):
    _check_kind(kind, subject)
    if candidate not in SLOTS:
        raise InputError("the candidate slot must be 'a' or 'b', got %r" % (candidate,), subject=subject)
    check_percent(percent)


def _testers(testers):
    """(lower-case header name, value or None), or None without testers."""
    if testers is None:
        return None
    if not isinstance(testers, dict) or not testers.get("name"):
        raise InputError("the testers' header needs a name, got %r" % (testers,), subject="testers",
                         hint='give e.g. {"name": "x-canary", "value": "always"}')
    value = testers.get("value")
    return str(testers["name"]).lower(), None if value in (None, "") else str(value)


def _plan(spec, kind, service, namespace, testers, subject):
    """Which rules (entries) of ``spec`` are weighted and which are the testers'; InputError when unusable."""
    if kind in GATEWAY_KINDS:
        plan = Plan("rules", spec.get("rules") or [], [], [],
                    lambda unit: _backend_slots(unit, service, namespace), 1)
        is_testers = _gateway_testers
    else:
        plan = Plan("http", spec.get("http") or [], [], [], lambda unit: _destination_slots(unit, service), 0)
        is_testers = _istio_testers
    for index, unit in enumerate(plan.units):
        if testers and is_testers(unit, testers):
            plan.testing.append(index)
        elif len(plan.slots_of(unit)) == len(SLOTS):
            plan.weighted.append(index)
    _check_plan(plan, kind, service, testers, subject)
    return plan


def _check_plan(plan, kind, service, testers, subject):
    if not plan.weighted:
        raise _no_weighted(plan, kind, service, subject)
    if testers and not plan.testing:
        raise _no_testers(plan, kind, service, testers, subject)
    names = _slot_names(kind, service)
    for index in plan.testing:
        if len(plan.slots_of(plan.units[index])) != len(SLOTS):
            raise InputError("the testers' %s must list both %s and %s" % (_unit_name(plan, index), names[0], names[1]),
                             subject=subject, hint="it sends only to the candidate, which is either slot")
    if plan.field == "http":
        _check_istio(plan, service, subject)


def _slot_names(kind, service):
    if kind in GATEWAY_KINDS:
        return tuple(slot_name(service, slot) for slot in SLOTS)
    return tuple("subset %s of host %s" % (slot, service) for slot in SLOTS)


def _unit_name(plan, index):
    unit = plan.units[index]
    label = "rule" if plan.field == "rules" else "http entry"
    return "%s %d%s" % (label, index, " (%s)" % unit["name"] if unit.get("name") else "")


def _no_weighted(plan, kind, service, subject):
    names = _slot_names(kind, service)
    present = set()
    for unit in plan.units:
        present.update(plan.slots_of(unit))
    missing = [name for slot, name in zip(SLOTS, names) if slot not in present]
    why = "%s missing" % " and ".join(missing) if missing else "they are in different %s" % plan.field
    unit = "rule" if plan.field == "rules" else "http entry"
    return InputError("no %s lists both %s and %s (%s)" % (unit, names[0], names[1], why), subject=subject,
                      hint="the route must list both in the %s of the %s serving the application, e.g. with "
                           "weights 100 and 0" % (_targets_field(plan), unit))


def _targets_field(plan):
    return "backendRefs" if plan.field == "rules" else "route destinations"


def _no_testers(plan, kind, service, testers, subject):
    header, value = testers
    weighted = _unit_name(plan, plan.weighted[0])
    if plan.field == "http":
        example = {"match": [{"headers": {header: {"exact": value or "<value>"}}}],
                   "route": [{"destination": {"host": service, "subset": slot}} for slot in SLOTS]}
        return InputError("no http entry matches the testers' header %s" % header, subject=subject,
                          hint="add an entry before %s, e.g. %s" % (weighted, json.dumps(example)))
    names = _slot_names(kind, service)
    match = {"name": header, "value": value or "<value>"}
    first = plan.units[plan.weighted[0]]
    matches = [dict(m, headers=list(m.get("headers") or []) + [match]) for m in first.get("matches") or [{}]]
    example = {"matches": matches, "backendRefs": [{"name": name, "port": "<port>"} for name in names]}
    return InputError("no rule matches the testers' header %s" % header, subject=subject,
                      hint="add a rule listing both %s and %s whose matches repeat the %s matches of the weighted "
                           "%s plus the header match, e.g. %s: with the same %s, the match with more headers wins"
                           % (names[0], names[1], _match_word(kind), weighted, json.dumps(example), _match_word(kind)))


def _match_word(kind):
    return "method" if kind == "GRPCRoute" else "path"


# Gateway API -------------------------------------------------------------------------------------------

def _backend_slots(rule, service, namespace):
    """{slot: backendRef} of the rule's references to the Services ``<service>-a`` and ``<service>-b``."""
    found = {}
    for backend in rule.get("backendRefs") or ():
        for slot in SLOTS:
            if slot not in found and _is_service(backend, "%s-%s" % (service, slot), namespace):
                found[slot] = backend
    return found


def _is_service(backend, name, namespace):
    return (backend.get("name") == name and backend.get("kind", "Service") == "Service"
            and not backend.get("group") and backend.get("namespace") in (None, "", namespace))


def _gateway_testers(rule, testers):
    name, value = testers
    for match in rule.get("matches") or ():
        for header in match.get("headers") or ():
            if (str(header.get("name", "")).lower() == name and header.get("type", "Exact") == "Exact"
                    and (value is None or header.get("value") == value)):
                return True
    return False


# Istio -------------------------------------------------------------------------------------------------

def is_service_host(host, service):
    """``service``, ``service.<ns>``, ``service.<ns>.svc`` or ``service.<ns>.svc.cluster.local``."""
    pattern = r"%s(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.svc(\.cluster\.local)?)?)?" % re.escape(service)
    return re.fullmatch(pattern, host or "") is not None


def _destination_slots(entry, service):
    """{slot: route destination} of the entry's routes to subsets ``a`` and ``b`` of the service."""
    found = {}
    for target in entry.get("route") or ():
        destination = target.get("destination") or {}
        subset = destination.get("subset")
        if subset in SLOTS and subset not in found and is_service_host(destination.get("host"), service):
            found[subset] = target
    return found


def _istio_testers(entry, testers):
    name, value = testers
    for match in entry.get("match") or ():
        for header, condition in (match.get("headers") or {}).items():
            if (str(header).lower() == name and isinstance(condition, dict) and "exact" in condition
                    and (value is None or condition["exact"] == value)):
                return True
    return False


def _check_istio(plan, service, subject):
    for index in plan.weighted + plan.testing:
        entry = plan.units[index]
        if len(entry.get("route") or []) != len(SLOTS):
            others = [target.get("destination") for target in entry["route"] if target not in
                      plan.slots_of(entry).values()]
            raise InputError("%s routes to other destinations too: %s" % (_unit_name(plan, index),
                                                                          json.dumps(others)),
                             subject=subject, hint="manent manages only entries whose destinations are exactly the "
                                                   "subsets a and b of %s: move the others to their own entry"
                                                   % service)
    if plan.testing and min(plan.testing) > plan.weighted[0]:
        raise InputError("the testers' %s comes after the weighted %s"
                         % (_unit_name(plan, min(plan.testing)), _unit_name(plan, plan.weighted[0])),
                         subject=subject, hint="Istio uses the first matching entry, so testers would never reach "
                                               "theirs: move it before")

