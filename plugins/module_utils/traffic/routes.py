# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Route weights of traffic (percentage) rollouts: Gateway API HTTPRoute/GRPCRoute and Istio VirtualService.

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
* a route without a weighted rule (or, with testers, without a testers rule) is refused: nothing changes.

Istio (VirtualService): the same with the ``spec.http`` entries whose destinations are exactly the subsets
``a`` and ``b`` of the service's host (integer weights summing to 100). Istio takes the first matching
entry, so the testers entry (a ``headers: {<name>: {exact: <value>}}`` match) must come before the first
weighted one. The DestinationRule must define subsets ``a`` and ``b`` selecting ``manent.io/track``.

On the cluster, ``update_weights`` reads the route, computes the new ``rules`` (``http``) and writes the
whole list (an atomic list) with a JSON merge patch carrying the resourceVersion read: the server answers
409 when another writer changed the route in between, and the weights are then computed again from a
fresh read, so the other writer's change survives. Nothing is written when the weights are already set.
``wait_accepted`` polls the route's ``status.parents`` until every parent accepted the new generation.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections import namedtuple

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ApiError, ConflictError, InputError, NotFoundError, WaitError)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import name_of, namespace_of
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import SLOTS, TRACK_LABEL, other_slot, slot_name
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import poll

FIELD_MANAGER = "manent-traffic"
GATEWAY_KINDS = ("HTTPRoute", "GRPCRoute")
ROUTE_KINDS = GATEWAY_KINDS + ("VirtualService",)
API_VERSIONS = {"HTTPRoute": "gateway.networking.k8s.io/v1", "GRPCRoute": "gateway.networking.k8s.io/v1",
                "VirtualService": "networking.istio.io/v1", "DestinationRule": "networking.istio.io/v1"}
PLURALS = {"HTTPRoute": "httproutes", "GRPCRoute": "grpcroutes", "VirtualService": "virtualservices",
           "DestinationRule": "destinationrules"}
ACCEPTED, PENDING, REJECTED, NO_STATUS = "accepted", "pending", "rejected", "no-status"
_TESTERS_WEIGHT = 100
_PARENT_CONDITIONS = ("Accepted", "ResolvedRefs")


class RouteRef(namedtuple("RouteRef", "kind namespace name")):
    """One route (or DestinationRule): ``str(ref)`` is ``Kind/namespace/name``."""

    __slots__ = ()

    @property
    def api_version(self):
        return API_VERSIONS[self.kind]

    def __str__(self):
        return "%s/%s/%s" % (self.kind, self.namespace, self.name)


def path_of(ref, subresource=None):
    """API path of the route (``subresource="status"`` for its status)."""
    if ref.kind not in API_VERSIONS:
        raise InputError("unsupported route kind %r" % (ref.kind,), subject=str(ref),
                         hint="use HTTPRoute, GRPCRoute or VirtualService")
    path = "/apis/%s/namespaces/%s/%s/%s" % (API_VERSIONS[ref.kind], ref.namespace, PLURALS[ref.kind], ref.name)
    return path + "/" + subresource if subresource else path


# ---------------------------------------------------------------------------------------------- weights

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
                         subject=subject, hint="this is a bug in manent: nothing was changed; report it with the route")


def _subject(route, kind):
    namespace, name = namespace_of(route), name_of(route)
    return "%s/%s/%s" % (kind, namespace, name) if namespace else "%s/%s" % (kind, name)


def _check_kind(kind, subject):
    if kind not in ROUTE_KINDS:
        raise InputError("unsupported route kind %r" % (kind,), subject=subject,
                         hint="use HTTPRoute, GRPCRoute (Gateway API) or VirtualService (Istio)")


def _check_args(kind, candidate, percent, subject):
    _check_kind(kind, subject)
    if candidate not in SLOTS:
        raise InputError("the candidate slot must be 'a' or 'b', got %r" % (candidate,), subject=subject)
    if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
        raise InputError("percent must be a whole number from 0 to 100, got %r" % (percent,), subject=subject,
                         hint="give the candidate's share of the traffic, e.g. 10")


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
                             subject=subject, hint="it sends only to the candidate, which is either slot; nothing "
                                                   "was changed")
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
                           "weights 100 and 0; nothing was changed" % (_targets_field(plan), unit))


def _targets_field(plan):
    return "backendRefs" if plan.field == "rules" else "route destinations"


def _no_testers(plan, kind, service, testers, subject):
    header, value = testers
    weighted = _unit_name(plan, plan.weighted[0])
    if plan.field == "http":
        example = {"match": [{"headers": {header: {"exact": value or "<value>"}}}],
                   "route": [{"destination": {"host": service, "subset": slot}} for slot in SLOTS]}
        return InputError("no http entry matches the testers' header %s" % header, subject=subject,
                          hint="add an entry before %s, e.g. %s; nothing was changed" % (weighted, json.dumps(example)))
    names = _slot_names(kind, service)
    match = {"name": header, "value": value or "<value>"}
    first = plan.units[plan.weighted[0]]
    matches = [dict(m, headers=list(m.get("headers") or []) + [match]) for m in first.get("matches") or [{}]]
    example = {"matches": matches, "backendRefs": [{"name": name, "port": "<port>"} for name in names]}
    return InputError("no rule matches the testers' header %s" % header, subject=subject,
                      hint="add a rule listing both %s and %s whose matches repeat the %s matches of the weighted "
                           "%s plus the header match, e.g. %s: with the same %s, the match with more headers wins; "
                           "nothing was changed" % (names[0], names[1], _match_word(kind), weighted,
                                                    json.dumps(example), _match_word(kind)))


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
                                                   "subsets a and b of %s: move the others to their own entry; "
                                                   "nothing was changed" % service)
    if plan.testing and min(plan.testing) > plan.weighted[0]:
        raise InputError("the testers' %s comes after the weighted %s"
                         % (_unit_name(plan, min(plan.testing)), _unit_name(plan, plan.weighted[0])),
                         subject=subject, hint="Istio uses the first matching entry, so testers would never reach "
                                               "theirs: move it before; nothing was changed")


def check_destination_rule(dr, service, namespace=None):
    """InputError unless the DestinationRule (None: not found) has subsets a and b keyed on manent.io/track."""
    subject = "DestinationRule/%s/%s" % (namespace or namespace_of(dr or {}), name_of(dr or {}) or service)
    example = ("spec: {host: %s, subsets: [{name: a, labels: {%s: a}}, {name: b, labels: {%s: b}}]}"
               % (service, TRACK_LABEL, TRACK_LABEL))
    if not dr:
        raise InputError("not found: Istio rollouts need a DestinationRule for host %s" % service, subject=subject,
                         hint="create it with %s" % example)
    spec = dr.get("spec") or {}
    problems = []
    if not is_service_host(spec.get("host"), service):
        problems.append("its host %r is not the service %s" % (spec.get("host"), service))
    subsets = {subset.get("name"): subset for subset in spec.get("subsets") or ()}
    for slot in SLOTS:
        if slot not in subsets:
            problems.append("subset %s is missing" % slot)
        elif (subsets[slot].get("labels") or {}).get(TRACK_LABEL) != slot:
            problems.append("subset %s must select %s: %s, has labels %s"
                            % (slot, TRACK_LABEL, slot, json.dumps(subsets[slot].get("labels") or {})))
    if problems:
        raise InputError("; ".join(problems), subject=subject, hint="it must read %s" % example)


# ---------------------------------------------------------------------------------------------- status

def acceptance(route, generation, tolerate_reasons=()):
    """(state, reasons): ``accepted`` when every parent accepted ``generation`` (Accepted and ResolvedRefs True,
    no PartiallyInvalid), ``rejected`` when one refused it, ``pending`` until then, ``no-status`` without parents.

    ``tolerate_reasons``: ResolvedRefs=False reasons that count as resolved (e.g. ``BackendNotFound`` while a
    slot's Service does not exist yet).
    """
    parents = (route.get("status") or {}).get("parents") or []
    if not parents:
        return NO_STATUS, []
    states = [_parent_state(parent, generation, tolerate_reasons) for parent in parents]
    for wanted in (REJECTED, PENDING):
        reasons = [reason for state, reason in states if state == wanted]
        if reasons:
            return wanted, reasons
    return ACCEPTED, []


def _parent_state(parent, generation, tolerate_reasons):
    conditions = {c.get("type"): c for c in parent.get("conditions") or () if isinstance(c, dict)}
    who = parent_name(parent)

    def current(condition):
        return int(condition.get("observedGeneration") or 0) >= generation

    for kind in _PARENT_CONDITIONS:
        condition = conditions.get(kind)
        if (condition and condition.get("status") == "False" and current(condition)
                and not _tolerated(kind, condition, tolerate_reasons)):
            return REJECTED, "%s: %s" % (who, describe_condition(condition))
    invalid = conditions.get("PartiallyInvalid")
    if invalid and invalid.get("status") == "True" and current(invalid):
        return REJECTED, "%s: %s" % (who, describe_condition(invalid))
    for kind in _PARENT_CONDITIONS:
        condition = conditions.get(kind)
        if condition is None:
            return PENDING, "%s: no %s condition yet" % (who, kind)
        if not current(condition):
            return PENDING, "%s: %s is for generation %s, not %s yet" % (
                who, kind, condition.get("observedGeneration"), generation)
        if condition.get("status") != "True" and not _tolerated(kind, condition, tolerate_reasons):
            return PENDING, "%s: %s" % (who, describe_condition(condition))
    return ACCEPTED, ""


def _tolerated(kind, condition, tolerate_reasons):
    return kind == "ResolvedRefs" and condition.get("status") == "False" and condition.get("reason") in tolerate_reasons


def parent_name(parent):
    """``Gateway/ns/name[/section]`` of a status.parents entry, with its controller."""
    ref = parent.get("parentRef") or {}
    text = "parent %s/%s%s" % (ref.get("kind") or "Gateway",
                               ref["namespace"] + "/" if ref.get("namespace") else "", ref.get("name", "?"))
    if ref.get("sectionName"):
        text += "/" + ref["sectionName"]
    if parent.get("controllerName"):
        text += " (controller %s)" % parent["controllerName"]
    return text


def describe_condition(condition):
    text = "%s=%s" % (condition.get("type"), condition.get("status"))
    if condition.get("reason"):
        text += " %s" % condition["reason"]
    if condition.get("message"):
        text += ": %s" % condition["message"]
    return "%s (generation %s)" % (text, condition.get("observedGeneration"))


def describe_parents(route):
    """Every parent with its last conditions, for messages."""
    parents = (route.get("status") or {}).get("parents") or []
    if not parents:
        return "no controller reported a status (status.parents is empty)"
    return "; ".join("%s: %s" % (parent_name(parent), ", ".join(
        describe_condition(c) for c in parent.get("conditions") or ()) or "no conditions") for parent in parents)


# ---------------------------------------------------------------------------------------------- cluster

def read_route(kube, ref):
    """The live route; NotFoundError naming it and saying what to check."""
    try:
        return kube.get_json(path_of(ref), subject=str(ref))
    except NotFoundError as err:
        raise NotFoundError("not found: %s" % err.message, status=404, reason=err.reason, subject=str(ref),
                            hint="the route belongs to the infrastructure: create it first, or check the route's "
                                 "name, namespace and kind (and that the cluster serves %s)" % ref.api_version) \
            from err


def update_weights(kube, ref, service, candidate, percent, testers=None, retries=5, dry_run=False):
    """Give ``candidate`` ``percent`` of the traffic (testers all of it); returns {changed, generation, before,
    after, resourceVersion, conflicts}. A 409 (the route changed since it was read) is retried up to ``retries``
    times from a fresh read; with ``dry_run`` the server validates the patch (dryRun=All) and nothing changes.
    """
    conflicts = 0
    while True:
        route = read_route(kube, ref)
        try:
            return _write_weights(kube, ref, route, service, candidate, percent, testers, dry_run, conflicts)
        except ConflictError as err:
            conflicts += 1
            if conflicts > retries:
                raise ConflictError("another writer changed the route %d times while manent set the weights: %s"
                                    % (conflicts, err.message), status=409, reason=err.reason, subject=str(ref),
                                    hint="nothing was written: rerun the step when the route is no longer being "
                                         "changed") from err


def _write_weights(kube, ref, route, service, candidate, percent, testers, dry_run, conflicts):
    field = field_of(ref.kind)
    spec = set_weights(route, ref.kind, service, candidate, percent, testers)
    meta = route.get("metadata") or {}
    result = {"changed": False, "generation": meta.get("generation"), "resourceVersion": meta.get("resourceVersion"),
              "before": current_weights(route, ref.kind, service, testers),
              "after": current_weights(dict(route, spec=spec), ref.kind, service, testers), "conflicts": conflicts}
    if spec.get(field) == (route.get("spec") or {}).get(field):
        return result
    body = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {field: spec[field]}}
    query = {"fieldManager": FIELD_MANAGER}
    if dry_run:
        query["dryRun"] = "All"
    written = kube.request("PATCH", path_of(ref), query=query, body=body, subject=str(ref),
                           content_type="application/merge-patch+json").data
    result["changed"] = True
    result["generation"] = (written.get("metadata") or {}).get("generation")
    if not dry_run:
        result["resourceVersion"] = (written.get("metadata") or {}).get("resourceVersion")
    return result


def wait_accepted(kube, ref, generation, timeout, interval=1.0, clock=time.monotonic, sleep=time.sleep,
                  require_status=False, tolerate_reasons=()):
    """Poll until every parent accepted ``generation``: returns "accepted", or "no-status" at the deadline when
    no controller reports a status (WaitError with ``require_status``). WaitError(permanent=True) at once when a
    parent rejects the route, WaitError(permanent=False) at the deadline while it is still pending."""
    seen = {"route": None, "state": None, "reasons": []}

    def accepted():
        seen["route"] = _poll(kube, ref, seen["route"])
        seen["state"], seen["reasons"] = acceptance(seen["route"], generation, tolerate_reasons)
        if seen["state"] == REJECTED:
            raise WaitError("generation %s was rejected: %s" % (generation, "; ".join(seen["reasons"])),
                            subject=str(ref), permanent=True, statuses=seen["reasons"],
                            hint="the weights are already written: fix the route or its Gateway and rerun the "
                                 "step, or abort to send all traffic back to the stable slot")
        return seen["state"] == ACCEPTED

    if poll(accepted, timeout, interval=interval, clock=clock, sleep=sleep):
        return ACCEPTED
    if seen["state"] == NO_STATUS and not require_status:
        return NO_STATUS
    raise _not_accepted(ref, generation, timeout, seen["route"], seen["reasons"])


def _poll(kube, ref, last):
    """The live route; a transient API error keeps the last one read (if any) for this round."""
    try:
        return read_route(kube, ref)
    except ApiError as err:
        if not err.transient or last is None:
            raise
        return last


def _not_accepted(ref, generation, timeout, route, reasons):
    return WaitError("generation %s not accepted after %gs: %s" % (generation, timeout, describe_parents(route)),
                     subject=str(ref), permanent=False, statuses=reasons,
                     hint="the weights are already written (generation %s): check the route's controller "
                          "(kubectl describe %s -n %s %s), then rerun the step, or abort to send all traffic back "
                          "to the stable slot" % (generation, ref.kind.lower(), ref.namespace, ref.name))
