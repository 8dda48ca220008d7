# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a route's controller accepted a change: the route's ``status.parents`` read as the Gateway API
defines them, and :func:`wait_accepted`, which polls them until every parent accepted the new generation."""

from __future__ import annotations

import time

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import poll
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.routes import read_route

ACCEPTED, PENDING, REJECTED, NO_STATUS = "accepted", "pending", "rejected", "no-status"
_PARENT_CONDITIONS = ("Accepted", "ResolvedRefs")


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
