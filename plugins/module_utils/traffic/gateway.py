# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The slot backends of a Gateway API route (HTTPRoute, GRPCRoute): which backendRefs of a rule are the Services
``<service>-a`` and ``<service>-b``, which rule is the testers', and the examples that refusals show.

A backendRef names a Service of the namespace it gives, or without one of the route's namespace. The Services
of a release live in the release namespace: a route in another namespace (a platform team's) names them with
``namespace: <release namespace>``, which a ReferenceGrant there must allow (grants.py)."""

from __future__ import annotations

import json

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import SLOTS, slot_name

# The list of the route manent rewrites, what one item of it is called in messages, the key of an item's backends
# and what messages call them, the weight of a backend without one.
FIELD, UNIT, REFS, TARGETS, DEFAULT_WEIGHT = "rules", "rule", "backendRefs", "backendRefs", 1


def backend_namespace(backend, route_namespace):
    """The namespace of the Service a backendRef names."""
    return backend.get("namespace") or route_namespace


def slots_of(rule, target):
    """{slot: backendRef} of the rule's references to the Services ``<service>-a`` and ``<service>-b`` of
    ``target.namespace`` (weights.py Target)."""
    found = {}
    for backend in rule.get("backendRefs") or ():
        for slot in SLOTS:
            if slot not in found and _is_service(backend, slot_name(target.service, slot), target):
                found[slot] = backend
    return found


def _is_service(backend, name, target):
    return (backend.get("name") == name and backend.get("kind", "Service") == "Service"
            and not backend.get("group") and backend_namespace(backend, target.route_namespace) == target.namespace)


def is_testers(rule, testers):
    """Whether ``rule`` matches the testers' header (lower-case name, value or None): type Exact."""
    name, value = testers
    for match in rule.get("matches") or ():
        for header in match.get("headers") or ():
            if (str(header.get("name", "")).lower() == name and header.get("type", "Exact") == "Exact"
                    and (value is None or header.get("value") == value)):
                return True
    return False


def names(target):
    """The two slot Services as messages name them (with their namespace when it is not the route's)."""
    prefix = "" if target.namespace == target.route_namespace else target.namespace + "/"
    return tuple(prefix + slot_name(target.service, slot) for slot in SLOTS)


def elsewhere(rules, target):
    """``namespace/name`` of the rules' backendRefs that name a slot Service of another namespace than the
    Services' (a route of another namespace naming them without ``namespace``)."""
    wanted = {slot_name(target.service, slot) for slot in SLOTS}
    found = {"%s/%s" % (backend_namespace(backend, target.route_namespace), backend["name"])
             for rule in rules for backend in rule.get("backendRefs") or () if backend.get("name") in wanted}
    return sorted(ref for ref in found if not ref.startswith(target.namespace + "/"))


def cross_namespace_hint(target):
    """What a route of another namespace than the Services must write."""
    return "a backendRef without a namespace names a Service of the route's namespace %s: write %s" % (
        target.route_namespace, json.dumps(example_refs(target)))


def example_refs(target, port="<port>", weights=(100, 0)):
    """backendRefs naming both slot Services, as a route of ``target`` must write them."""
    refs = []
    for slot, weight in zip(SLOTS, weights):
        ref = {"name": slot_name(target.service, slot)}
        if target.namespace != target.route_namespace:
            ref["namespace"] = target.namespace
        ref.update(port=port, weight=weight)
        refs.append(ref)
    return refs


def completed(rule, target):
    """``{"backendRefs": [...]}``: the rule's backendRefs with the missing slot Services added at weight 0, named as
    the slot backend it lists (port, namespace), so that adding them moves no traffic."""
    found = slots_of(rule, target)
    template = next(iter(found.values()), None) or example_refs(target)[0]
    refs = list(rule.get("backendRefs") or [])
    for slot in SLOTS:
        if slot not in found:
            ref = {key: value for key, value in template.items() if key != "weight"}
            ref.update(name=slot_name(target.service, slot), weight=0)
            refs.append(ref)
    return {"backendRefs": refs}


def no_testers(first, weighted, target, testers, subject):
    """The refusal of a route without the testers' rule: an example repeating the matches of ``first``, the
    weighted rule called ``weighted`` in messages."""
    header, value = testers
    both = names(target)
    word = "method" if target.kind == "GRPCRoute" else "path"
    match = {"name": header, "value": value or "<value>"}
    matches = [dict(m, headers=list(m.get("headers") or []) + [match]) for m in first.get("matches") or [{}]]
    refs = [{key: ref[key] for key in ref if key != "weight"} for ref in example_refs(target)]
    example = {"matches": matches, "backendRefs": refs}
    return InputError("no rule matches the testers' header %s" % header, subject=subject,
                      hint="add a rule listing both %s and %s whose matches repeat the %s matches of the weighted "
                           "%s plus the header match, e.g. %s: with the same %s, the match with more headers wins"
                           % (both[0], both[1], word, weighted, json.dumps(example), word))
