# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slot weights of a route, computed without a request: Gateway API HTTPRoute/GRPCRoute and Istio
VirtualService.

The route belongs to the infrastructure: manent changes only the weights of the two slot backends and
leaves everything else as it found it.

Gateway API (HTTPRoute, GRPCRoute):

* a *weighted rule* is a rule of ``spec.rules`` whose backendRefs include both ``<service>-a`` and
  ``<service>-b`` (kind Service, core group, the Services' namespace: the release's, which a route of another
  namespace names in each backendRef). The candidate slot gets ``percent``,
  the stable slot ``100 - percent``; matches, filters, other backends and their weights, and every other
  rule stay untouched. A backendRef without a weight has weight 1.
* the *testers rule* is the rule with a header match on the testers' header (name case-insensitive,
  value when given, type Exact): it lists both slots and sends only to the candidate (100 and 0), so it
  is the same at every step of a rollout. It is not a weighted rule.
* a route without a weighted rule (or, with testers, without a testers rule) is refused.

Every rule that names a slot backend is read by :func:`shares` (the weighted rules, the testers', and any other
rule listing one slot): the guards that scale a slot down (retire, abort) and ``status`` read them all, never the
first weighted rule alone.

Istio (VirtualService): the same with the ``spec.http`` entries whose destinations are exactly the subsets
``a`` and ``b`` of the service's host (integer weights summing to 100). Istio takes the first matching
entry, so the testers entry (a ``headers: {<name>: {exact: <value>}}`` match) must come before the first
weighted one.

The matching of backends and what Istio requires are in gateway.py and istio.py; this file decides, for both.
"""

from __future__ import annotations

import copy
import json
from collections import namedtuple

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import name_of, namespace_of
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import SLOTS, other_slot
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import gateway, istio

GATEWAY_KINDS = ("HTTPRoute", "GRPCRoute")
ROUTE_KINDS = GATEWAY_KINDS + ("VirtualService",)
_TESTERS_WEIGHT = 100


class Target(namedtuple("Target", "kind service route_namespace namespace")):
    """What a route must send to: the slot Services (Istio: subsets) of ``service`` in ``namespace``, from a route
    of ``kind`` in ``route_namespace``."""

    __slots__ = ()

    @property
    def router(self):
        """gateway.py or istio.py: how this kind of route names its slot backends."""
        return gateway if self.kind in GATEWAY_KINDS else istio


Plan = namedtuple("Plan", "units weighted testing target")

# One rule (entry) of a route that names a slot backend: its index, its name in messages (with its matches), the
# share of each slot ({slot: weight}, 0 for a slot it does not list) and what manent does with it (WEIGHTED: the
# weights a step sets, TESTERS: the testers' rule, OTHER: a rule manent does not change).
Share = namedtuple("Share", "index name weights role")
WEIGHTED, TESTERS, OTHER = "weighted", "testers", "other"


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


def set_weights(route, kind, service, candidate, percent, testers=None, namespace=None):
    """A new ``spec``: ``candidate`` gets ``percent`` of the traffic, testers all of it; ``route`` is not changed.
    ``namespace``: the Services' (default the route's)."""
    subject = _subject(route, kind)
    _check_kind(kind, subject)
    if candidate not in SLOTS:
        raise InputError("the candidate slot must be 'a' or 'b', got %r" % (candidate,), subject=subject)
    check_percent(percent)
    spec = copy.deepcopy(route.get("spec") or {})
    plan = _plan(spec, _target(route, kind, service, namespace), _testers(testers), subject)
    for index in plan.weighted:
        _weigh(_slots(plan, index), candidate, percent)
        _check_sends_somewhere(plan, index, subject)
    for index in plan.testing:
        _weigh(_slots(plan, index), candidate, _TESTERS_WEIGHT)
    return spec


def current_weights(route, kind, service, testers=None, namespace=None):
    """{"a": weight, "b": weight} of the first weighted rule (entry); give ``testers`` to skip the testers rule.
    ``namespace``: the Services' (default the route's)."""
    subject = _subject(route, kind)
    _check_kind(kind, subject)
    plan = _plan(route.get("spec") or {}, _target(route, kind, service, namespace), _testers(testers), subject)
    found = _slots(plan, plan.weighted[0])
    return {slot: int(found[slot].get("weight", plan.target.router.DEFAULT_WEIGHT)) for slot in SLOTS}


def shares(route, kind, service, testers=None, namespace=None):
    """Every rule (entry) of ``route`` naming a slot backend, in order, as :class:`Share` (the route must have a
    weighted rule, as for :func:`current_weights`). A backendRef without a weight has weight 1; an Istio destination
    without one gets all the traffic of an entry with one destination, else none."""
    subject = _subject(route, kind)
    _check_kind(kind, subject)
    plan = _plan(route.get("spec") or {}, _target(route, kind, service, namespace), _testers(testers), subject)
    out = []
    for index, unit in enumerate(plan.units):
        found = _slots(plan, index)
        if not found:
            continue
        role = WEIGHTED if index in plan.weighted else TESTERS if index in plan.testing else OTHER
        targets = unit.get(plan.target.router.REFS) or []
        out.append(Share(index, describe_unit(plan, index),
                         {slot: _effective(found[slot], targets, plan) if slot in found else 0 for slot in SLOTS},
                         role))
    return out


def _effective(target, targets, plan):
    router = plan.target.router
    if "weight" in target:
        return int(target["weight"] or 0)
    return 100 if router is istio and len(targets) == 1 else router.DEFAULT_WEIGHT


def sending_to(found, slot):
    """The shares of ``found`` (:func:`shares`) that give ``slot`` traffic."""
    return [share for share in found if share.weights.get(slot)]


def describe_share(share):
    """``rule 2 (api) matching [...]: a 0, b 100``."""
    return "%s: %s" % (share.name, ", ".join("%s %s" % pair for pair in sorted(share.weights.items())))


def field_of(kind):
    """The atomic list manent rewrites: ``rules`` (Gateway API) or ``http`` (VirtualService)."""
    return gateway.FIELD if kind in GATEWAY_KINDS else istio.FIELD


def _target(route, kind, service, namespace):
    return Target(kind, service, namespace_of(route), namespace or namespace_of(route))


def _slots(plan, index):
    return plan.target.router.slots_of(plan.units[index], plan.target)


def _weigh(found, candidate, percent):
    found[candidate]["weight"] = percent
    found[other_slot(candidate)]["weight"] = 100 - percent


def _check_sends_somewhere(plan, index, subject):
    router = plan.target.router
    targets = plan.units[index].get(router.REFS) or []
    if not any(int(target.get("weight", router.DEFAULT_WEIGHT)) > 0 for target in targets):
        raise InputError("%s would send traffic nowhere: every backend has weight 0" % unit_name(plan, index),
                         subject=subject, hint="this is a bug in manent: report it with the route")


def _subject(route, kind):
    namespace, name = namespace_of(route), name_of(route)
    return "%s/%s/%s" % (kind, namespace, name) if namespace else "%s/%s" % (kind, name)


def _check_kind(kind, subject):
    if kind not in ROUTE_KINDS:
        raise InputError("unsupported route kind %r" % (kind,), subject=subject,
                         hint="use HTTPRoute, GRPCRoute (Gateway API) or VirtualService (Istio)")


def _testers(testers):
    """(lower-case header name, value or None), or None without testers."""
    if testers is None:
        return None
    if not isinstance(testers, dict) or not testers.get("name"):
        raise InputError("the testers' header needs a name, got %r" % (testers,), subject="testers",
                         hint='give e.g. {"name": "x-canary", "value": "always"}')
    value = testers.get("value")
    return str(testers["name"]).lower(), None if value in (None, "") else str(value)


def _plan(spec, target, testers, subject):
    """Which rules (entries) of ``spec`` are weighted and which are the testers'; InputError when unusable."""
    router = target.router
    plan = Plan(spec.get(router.FIELD) or [], [], [], target)
    for index, unit in enumerate(plan.units):
        if testers and router.is_testers(unit, testers):
            plan.testing.append(index)
        elif len(router.slots_of(unit, target)) == len(SLOTS):
            plan.weighted.append(index)
    _check_plan(plan, testers, subject)
    return plan


def _check_plan(plan, testers, subject):
    router = plan.target.router
    if not plan.weighted:
        raise _no_weighted(plan, subject)
    if testers and not plan.testing:
        raise router.no_testers(plan.units[plan.weighted[0]], unit_name(plan, plan.weighted[0]), plan.target,
                                testers, subject)
    names = router.names(plan.target)
    for index in plan.testing:
        found = _slots(plan, index)
        if len(found) != len(SLOTS):
            listed = " and ".join(name for slot, name in zip(SLOTS, names) if slot in found) or "neither"
            block = router.completed(plan.units[index], plan.target)
            raise InputError("the testers' %s must list both %s and %s, it lists %s" % (
                unit_name(plan, index), names[0], names[1], listed), subject=subject,
                hint="it sends testers only to the candidate, which is either slot: make its %s read %s (the slot "
                     "added with weight 0, so no traffic moves before a step)" % (router.REFS, json.dumps(block)))
    if router is istio:
        istio.check(plan, plan.target, subject, lambda index: unit_name(plan, index))


def unit_name(plan, index):
    """``rule 2 (app)``, ``http entry 0``: a rule (entry) of the plan as messages name it."""
    unit = plan.units[index]
    return "%s %d%s" % (plan.target.router.UNIT, index, " (%s)" % unit["name"] if unit.get("name") else "")


def describe_unit(plan, index):
    """``rule 2 (api) matching [{"path": ...}]``: :func:`unit_name` with the rule's matches, as refusals name it."""
    unit = plan.units[index]
    matches = unit.get("matches" if plan.target.router is gateway else "match")
    text = unit_name(plan, index)
    if matches:
        text += " matching %s" % json.dumps(matches, separators=(",", ":"), sort_keys=True)
    return text


def _no_weighted(plan, subject):
    target, router = plan.target, plan.target.router
    names = router.names(target)
    present = set()
    for unit in plan.units:
        present.update(router.slots_of(unit, target))
    missing = [name for slot, name in zip(SLOTS, names) if slot not in present]
    why = "%s missing" % " and ".join(missing) if missing else "they are in different %s" % router.FIELD
    others = router.elsewhere(plan.units, target)
    if others:
        why += "; it names %s instead" % " and ".join(others)
    hint = "the route must list both in the %s of the %s serving the application, e.g. with weights 100 and 0" % (
        router.TARGETS, router.UNIT)
    if target.namespace != target.route_namespace:
        hint += "; " + router.cross_namespace_hint(target)
    return InputError("no %s lists both %s and %s (%s)" % (router.UNIT, names[0], names[1], why), subject=subject,
                      hint=hint)
