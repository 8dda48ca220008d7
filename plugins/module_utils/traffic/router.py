# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The route of one release's traffic operations: its current weights, the checks of everything the route
needs before a write (its rules, a ReferenceGrant when it is in another namespace than the Services, the Istio
DestinationRule), and giving a slot a share of the traffic (the write in routes.py, then the wait until the
route's controller accepted it, acceptance.py)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, NotFoundError
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import (
    acceptance, destinations, grants, routes)
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import weights as slot_weights
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.weights import (
    Target, current_weights, set_weights)


class Router:
    """The route of TrafficOptions ``options`` to the slot Services of ``namespace``, the release's (the route's
    namespace defaults to it)."""

    def __init__(self, kube, discovery, namespace, options):
        self.kube = kube
        self.discovery = discovery
        self.namespace = namespace
        self.options = options
        kind = options.route_kind if options.router == slots.ROUTER_GATEWAY else "VirtualService"
        self.ref = routes.RouteRef(kind, options.route_namespace or namespace, options.route)
        self._checked = None  # (slot, percent) of the last check

    def describe(self, **fields):
        """The result's ``route``: kind, namespace and name, plus ``fields``."""
        return dict({"kind": self.ref.kind, "namespace": self.ref.namespace, "name": self.ref.name}, **fields)

    def read(self):
        """The live route."""
        return routes.read_route(self.kube, self.ref)

    def weights(self, route=None):
        """{"a": weight, "b": weight} of the weighted rules of the live route (or of ``route``, as read); InputError
        when it does not list both slots."""
        route = self.read() if route is None else route
        return current_weights(route, self.ref.kind, self.options.service, testers=self.options.testers,
                               namespace=self.namespace)

    def shares(self, route=None):
        """Every rule of the live route (or of ``route``) that names a slot backend, with each slot's weight
        (weights.py Share): the weighted rules, the testers' and the rules manent does not change."""
        route = self.read() if route is None else route
        return slot_weights.shares(route, self.ref.kind, self.options.service, testers=self.options.testers,
                                   namespace=self.namespace)

    def sending_to(self, slot, route=None):
        """The rules (weights.py Share) of the live route (or ``route``) that still give ``slot`` traffic."""
        return slot_weights.sending_to(self.shares(route), slot)

    def refuse_while_sent(self, slot, other, action, rerun, redo, route=None):
        """InputError naming every rule of the live route (or ``route``) that still gives ``slot`` traffic: nothing
        of ``slot`` may be scaled down while one does (``action``: what is refused, ``rerun``: the operation to run
        again after the fix; ``other``: the slot that should have it all; ``redo``: the operation that moves the
        weighted rules' traffic there)."""
        sending = self.sending_to(slot, route)
        if not sending:
            return
        target = Target(self.ref.kind, self.options.service, self.ref.namespace, self.namespace)
        names = dict(zip(slots.SLOTS, target.router.names(target)))
        managed = [share for share in sending if share.role != slot_weights.OTHER]
        hints = []
        if managed:
            hints.append("%s again to move the traffic of the weighted rules to slot %s" % (redo, other))
        if len(managed) < len(sending):
            hints.append("manent weighs only the %ss that list both %s and %s: send the others to %s (or list both "
                         "in them) yourself" % (target.router.UNIT, names["a"], names["b"], names[other]))
        raise InputError("cannot %s slot %s: the route still sends it traffic in %s" % (
            action, slot, "; ".join(slot_weights.describe_share(share) for share in sending)),
            subject=str(self.ref), hint="; ".join(hints) + "; then %s again" % rerun)

    def check(self, slot, percent):
        """Refuse (InputError), before anything is written, a route that cannot give ``slot`` ``percent`` of the
        traffic: its rules, the testers' rule, the ReferenceGrant of a route in another namespace, and with Istio
        the DestinationRule. Reads only."""
        route = routes.read_route(self.kube, self.ref)
        set_weights(route, self.ref.kind, self.options.service, slot, percent, testers=self.options.testers,
                    namespace=self.namespace)
        if self.options.router == slots.ROUTER_ISTIO:
            target = Target(self.ref.kind, self.options.service, self.ref.namespace, self.namespace)
            destinations.check(self.kube, target, self.ref, self.options.istio_root_namespace)
        else:
            grants.check(self.kube, self.discovery, self.ref, self.options.service, self.namespace)
        self._checked = (slot, percent)

    def set(self, slot, percent, result):
        """Give ``slot`` ``percent`` of the traffic (testers to ``slot``) and wait until the route is accepted;
        the write is recorded in ``result`` before the wait."""
        if self._checked != (slot, percent):
            self.check(slot, percent)
        out = routes.update_weights(self.kube, self.ref, self.options.service, slot, percent,
                                    testers=self.options.testers, dry_run=self.options.dry_run,
                                    namespace=self.namespace)
        result.weights = dict(out["after"])
        result.route = self.describe(generation=out.get("generation"), accepted="")
        if out["changed"]:
            after = ", ".join("%s %s" % pair for pair in sorted(out["after"].items()))
            result.wrote(str(self.ref), "weights %s" % after)
        if self.options.dry_run or self.options.router == slots.ROUTER_ISTIO:
            result.route["accepted"] = "not checked"
            return out
        result.route["accepted"] = acceptance.wait_accepted(
            self.kube, self.ref, out["generation"], self.options.accept_timeout,
            sleep=self.options.sleep, require_status=self.options.require_route_status,
            tolerate_reasons=self._tolerated(out["after"]))
        return out

    def _tolerated(self, weights):
        """A backend that gets no traffic and whose Service does not exist (the other slot before its first
        release) makes controllers report ResolvedRefs=False/BackendNotFound: not a reason to fail."""
        for slot, weight in weights.items():
            if weight:
                continue
            name = slots.slot_name(self.options.service, slot)
            path = "/api/v1/namespaces/%s/services/%s" % (self.namespace, name)
            try:
                self.kube.get_json(path)
            except NotFoundError:
                return ("BackendNotFound",)
        return ()
