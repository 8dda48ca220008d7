# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``retire`` operation: once ``scale_down_delay`` has passed since the promotion, and only while no rule of the
route sends it anything (every rule naming its backend read, not only the weighted ones), the replaced slot's
workloads go to zero (its HPAs and DaemonSets deleted)."""

from __future__ import annotations

import datetime

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.history import times
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import story


def retire(traffic, result, _percent=None):
    """Scale the replaced slot to zero (operations.py Traffic ``traffic``, TrafficResult ``result``); every check,
    the route's weights included, comes before the first write."""
    data = traffic.state.read()
    replaced, slot = data.get("replaced"), slots.other_slot(data["slot"]) if data.get("slot") else ""
    if not replaced or not slot or data.get("retired") == replaced:
        result.warnings.append("nothing to retire" if not replaced or not slot else
                               "version %s is already retired" % replaced)
        return
    if data.get("candidate"):
        raise InputError("slot %s holds the candidate %s, not a replaced release" % (slot, data["candidate"]),
                         subject=traffic.state.subject(), hint="promote or abort the candidate first")
    check_delay(data, traffic.options, traffic.state.subject())
    route = traffic.router.read()
    weights = traffic.router.weights(route)
    traffic.router.refuse_while_sent(slot, data["slot"], "retire", "retire", "promote", route)
    objects = traffic.state.slot_objects(replaced, slot)
    traffic.state.begin("retire", result, version=replaced, slot=slot, weights=weights,
                        replicas=traffic.scaler.targets(objects))
    traffic.scaler.to_zero(objects, result)
    result.weights = weights
    if not traffic.options.dry_run:
        traffic.state.store.update_locator("retire version %s" % replaced, retired=replaced)
        result.wrote("history", "%s retired" % replaced)
        story.retire(traffic, result, data, replaced, slot)


def check_delay(data, options, subject):
    """InputError until ``options.scale_down_delay`` has passed since the promotion recorded in ``data``."""
    promoted = times.parse_time(data.get("promoted"))
    now = (options.now or (lambda: datetime.datetime.now(datetime.timezone.utc)))()
    if promoted is None:
        return
    due = promoted + datetime.timedelta(seconds=options.scale_down_delay)
    if now < due:
        raise InputError("the replaced slot may be retired from %s (promoted %s, scale_down_delay %ds)"
                         % (times.format_time(due), data["promoted"], options.scale_down_delay),
                         subject=subject, hint="run retire again after that time")
