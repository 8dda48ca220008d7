# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operations that move traffic between the slots of a release key: ``step``, ``promote``, ``abort`` and
``rollback``. Each takes the operation's context ``traffic`` (operations.py Traffic: state, scaler, router,
options), the TrafficResult it fills and the step's percent."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release
from ansible_collections.manent.kubernetes.plugins.module_utils.history import record_format
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import story
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.weights import check_percent, describe_share


def settle(options):
    """The settle delay: connections drain from workloads the traffic left before they are scaled down."""
    if not options.dry_run and options.settle_delay > 0:
        options.sleep(options.settle_delay)


def target_weights(slot, percent):
    """{slot: percent, other slot: 100 - percent}."""
    return {slot: percent, slots.other_slot(slot): 100 - percent}


def step(traffic, result, percent):
    """Give the candidate ``percent`` of the traffic; with proportional replicas it grows first and shrinks only
    after the traffic moved and the settle delay passed. Everything is checked before the first write."""
    check_percent(percent)
    data = traffic.state.read()
    version, slot = traffic.state.candidate(data)
    objects = traffic.state.slot_objects(version, slot)
    traffic.router.check(slot, percent)
    proportional = traffic.options.proportional
    traffic.state.begin("step", result, version=version, slot=slot, percent=percent,
                        weights=target_weights(slot, percent),
                        replicas=traffic.scaler.targets(objects, percent) if proportional else {})
    if proportional:
        traffic.scaler.wait_ready(traffic.scaler.resize(objects, percent, result, grow=True))
    traffic.router.set(slot, percent, result)
    if not traffic.options.dry_run and data.get("weight") != str(percent):
        traffic.state.store.update_locator("set the candidate's weight", weight=percent)
        result.wrote("history", "candidate %s weight %d" % (version, percent))
    if proportional and traffic.scaler.proportional(objects, percent, grow=False):
        settle(traffic.options)
        traffic.scaler.resize(objects, percent, result, grow=False)
    story.step(traffic, result, data, version, slot, percent)


def promote(traffic, result, _percent=None):
    """The candidate at full size and Ready, then all traffic, then the history pointer moves."""
    data = traffic.state.read()
    version, slot = traffic.state.candidate(data)
    objects = traffic.state.slot_objects(version, slot)
    traffic.router.check(slot, 100)
    traffic.state.begin("promote", result, version=version, slot=slot, weights=target_weights(slot, 100),
                        replicas=traffic.scaler.targets(objects, 100))
    traffic.scaler.full_size(objects, result)
    traffic.router.set(slot, 100, result)
    left = [] if traffic.options.dry_run else traffic.router.sending_to(slots.other_slot(slot))
    if left:
        result.warnings.append("the route still sends traffic to slot %s in %s: manent weighs only the rules that "
                               "list both slots; retire refuses until no rule sends it anything" % (
                                   slots.other_slot(slot), "; ".join(describe_share(share) for share in left)))
    if traffic.options.dry_run:
        return
    store = traffic.state.store
    store.promote(Release(store.key, version, data.get("candidateDeployment") or ""), data.get("version") or None)
    result.wrote("history", "%s in service" % version)
    story.promote(traffic, result, data, version, slot)


def abort(traffic, result, _percent=None):
    """The stable slot at full size and Ready, all traffic (testers too) back to it, the settle delay, then the
    candidate scaled to zero and its record marked aborted."""
    data = traffic.state.read()
    if not data.get("candidate"):
        result.weights = traffic.router.weights() if data.get("slot") else {}
        result.warnings.append("there is no candidate: nothing to abort")
        return
    version, slot = data["candidate"], data["candidateSlot"]
    stable = data.get("slot")
    if not stable:
        raise InputError("no slot is in service to move the traffic back to", subject=traffic.state.subject(),
                         hint="the candidate is the first traffic release; deploy again or promote it")
    stable_objects = traffic.state.slot_objects(data["version"], stable)
    candidate_objects = traffic.state.slot_objects(version, slot)
    traffic.router.check(stable, 100)
    replicas = traffic.scaler.targets(stable_objects, 100)
    replicas.update(traffic.scaler.targets(candidate_objects))
    traffic.state.begin("abort", result, version=version, slot=slot, weights=target_weights(stable, 100),
                        replicas=replicas)
    traffic.scaler.full_size(stable_objects, result)
    traffic.router.set(stable, 100, result)
    if not traffic.options.dry_run:
        traffic.router.refuse_while_sent(slot, stable, "scale down", "abort", "abort")
    settle(traffic.options)
    traffic.scaler.to_zero(candidate_objects, result)
    if traffic.options.dry_run:
        return
    traffic.state.store.mark(version, record_format.STATUS_ABORTED)
    traffic.state.store.update_locator("abort the candidate %s" % version, candidate="", candidateDeployment="",
                                       candidateRecord="", candidateSlot="", weight="")
    result.wrote("history", "candidate %s aborted" % version)
    story.abort(traffic, result, data, version, slot)


def rollback(traffic, result, _percent=None):
    """Put the replaced release (its slot not yet retired) back in service: full size and Ready, all traffic to
    it, then the history pointer; the release rolled back from stays in its slot until retired."""
    data = traffic.state.read()
    replaced, current = data.get("replaced"), data.get("version")
    subject = traffic.state.subject()
    if data.get("candidate"):
        raise InputError("candidate %s is in slot %s" % (data["candidate"], data["candidateSlot"]),
                         subject=subject, hint="abort it first: abort is the rollback of a candidate")
    if not replaced or not data.get("slot"):
        raise InputError("version %s replaced nothing in a traffic slot: nothing to roll back to" % current,
                         subject=subject, hint="deploy a known good version with the traffic strategy")
    if data.get("retired") == replaced:
        raise InputError("version %s was retired (its slot is scaled to zero)" % replaced, subject=subject,
                         hint="deploy it again with the traffic strategy, then step and promote it")
    slot = slots.other_slot(data["slot"])
    store = traffic.state.store
    meta = store.load(replaced, secrets=False)[0]
    objects = traffic.state.slot_objects(replaced, slot)
    traffic.router.check(slot, 100)
    traffic.state.begin("rollback", result, version=replaced, slot=slot, weights=target_weights(slot, 100),
                        replicas=traffic.scaler.targets(objects, 100))
    traffic.scaler.full_size(objects, result)
    traffic.router.set(slot, 100, result)
    if traffic.options.dry_run:
        return
    store.promote(Release(store.key, replaced, meta.get("deployment") or ""), current)
    store.mark(current, record_format.STATUS_ROLLED_BACK)
    result.wrote("history", "%s in service again, %s rolled back" % (replaced, current))
    story.rollback(traffic, result, data, replaced, slot)
