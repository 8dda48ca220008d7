# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A route on the cluster: where it lives (:class:`RouteRef`, :func:`path_of`), its read, and the write of its
slot weights.

``update_weights`` reads the route, computes the new ``rules`` (``http``) with weights.py and writes the whole
list (an atomic list) with a JSON merge patch carrying the resourceVersion read (cluster/writes.py): the server
answers 409 when another writer changed the route in between, and the weights are then computed again from a
fresh read (base/conflicts.py), so the other writer's change survives. Nothing is written when the weights are
already set.
"""

from __future__ import annotations

from collections import namedtuple

from ansible_collections.manent.kubernetes.plugins.module_utils.base.conflicts import (
    CONFLICT_RETRIES, retry_on_conflict)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ConflictError, InputError, NotFoundError)
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import writes
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.options import FIELD_MANAGER
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.weights import (
    current_weights, field_of, set_weights)

API_VERSIONS = {"HTTPRoute": "gateway.networking.k8s.io/v1", "GRPCRoute": "gateway.networking.k8s.io/v1",
                "VirtualService": "networking.istio.io/v1", "DestinationRule": "networking.istio.io/v1"}
PLURALS = {"HTTPRoute": "httproutes", "GRPCRoute": "grpcroutes", "VirtualService": "virtualservices",
           "DestinationRule": "destinationrules"}


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


def read_route(kube, ref):
    """The live route; NotFoundError naming it and saying what to check."""
    try:
        return kube.get_json(path_of(ref), subject=str(ref))
    except NotFoundError as err:
        raise NotFoundError("not found: %s" % err.message, status=404, reason=err.reason, subject=str(ref),
                            hint="the route belongs to the infrastructure: create it first, or check the route's "
                                 "name, namespace and kind (and that the cluster serves %s)" % ref.api_version) \
            from err


def update_weights(kube, ref, service, candidate, percent, testers=None, tries=CONFLICT_RETRIES, dry_run=False,
                   namespace=None):
    """Give ``candidate`` ``percent`` of the traffic (testers all of it) on the slot Services of ``service`` in
    ``namespace`` (default the route's); returns {changed, generation, before, after, resourceVersion,
    conflicts}. A 409 (the route changed since it was read) is decided again from a fresh read, ``tries`` times at
    most; with ``dry_run`` the server validates the patch (dryRun=All) and nothing changes."""

    def attempt(conflicts):
        route = read_route(kube, ref)
        return _write_weights(kube, ref, route, (service, namespace), candidate, percent, testers, dry_run,
                              conflicts)

    def exhausted(count, err):
        return ConflictError("another writer changed the route %d times while manent set the weights: %s"
                             % (count, err.message), status=409, reason=err.reason, subject=str(ref),
                             hint="the weights were not written: rerun the step when the route is no longer being "
                                  "changed")

    return retry_on_conflict(attempt, exhausted, tries=tries)


def _write_weights(kube, ref, route, services, candidate, percent, testers, dry_run, conflicts):
    field = field_of(ref.kind)
    service, namespace = services
    spec = set_weights(route, ref.kind, service, candidate, percent, testers, namespace=namespace)
    meta = route.get("metadata") or {}
    result = {"changed": False, "generation": meta.get("generation"), "resourceVersion": meta.get("resourceVersion"),
              "before": current_weights(route, ref.kind, service, testers, namespace=namespace),
              "after": current_weights(dict(route, spec=spec), ref.kind, service, testers, namespace=namespace),
              "conflicts": conflicts}
    if spec.get(field) == (route.get("spec") or {}).get(field):
        return result
    body = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "spec": {field: spec[field]}}
    written = writes.merge_patch(kube, path_of(ref), body, str(ref), FIELD_MANAGER, dry_run=dry_run).data
    result["changed"] = True
    result["generation"] = (written.get("metadata") or {}).get("generation")
    if not dry_run:
        result["resourceVersion"] = (written.get("metadata") or {}).get("resourceVersion")
    return result
