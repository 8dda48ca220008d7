# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ReferenceGrants: a Gateway API route may send to Services of another namespace only when a ReferenceGrant in
that namespace trusts routes of its kind from the route's namespace (``from``: group gateway.networking.k8s.io,
the route's kind and namespace; ``to``: group "" kind Service, every Service or the one named). Without it the
route's controller refuses the backend (ResolvedRefs=False, RefNotPermitted): manent checks it before it writes,
and names the grant to create."""

from __future__ import annotations

import json

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.pages import list_items
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import SLOTS, slot_name

GROUP = "gateway.networking.k8s.io"
KIND = "ReferenceGrant"
VERSIONS = ("v1", "v1beta1")  # the served one preferred first


def allows(grant, route, name):
    """Whether ``grant`` lets the route ``route`` (routes.py RouteRef) send to the Service ``name`` of the
    grant's namespace."""
    spec = grant.get("spec") or {}
    trusted = any(entry.get("group") == GROUP and entry.get("kind") == route.kind
                  and entry.get("namespace") == route.namespace for entry in spec.get("from") or ())
    return trusted and any(not entry.get("group") and entry.get("kind") == "Service"
                           and entry.get("name") in (None, "", name) for entry in spec.get("to") or ())


def check(kube, discovery, route, service, namespace):
    """InputError, before anything is written, unless ReferenceGrants of ``namespace`` let ``route`` (of another
    namespace) send to the slot Services of ``service``; ApiError saying so when this identity may not read
    them."""
    if route.namespace == namespace:
        return
    wanted = [slot_name(service, slot) for slot in SLOTS]
    grants = _read(kube, discovery, route, namespace, wanted)
    missing = [name for name in wanted if not any(allows(grant, route, name) for grant in grants)]
    if missing:
        raise InputError(
            "no ReferenceGrant of namespace %s lets %ss of namespace %s send to the Service%s %s: the route's "
            "controller refuses such backends (ResolvedRefs=False, RefNotPermitted)"
            % (namespace, route.kind, route.namespace, "s" if len(missing) > 1 else "", " and ".join(missing)),
            subject=str(route), hint="create it in %s (it belongs with the route, to the platform team), e.g. %s"
                                     % (namespace, json.dumps(example(route, namespace, missing))))


def example(route, namespace, names):
    """The ReferenceGrant that lets ``route`` send to the Services ``names`` of ``namespace``."""
    return {"apiVersion": "%s/v1beta1" % GROUP, "kind": KIND,
            "metadata": {"name": "%ss-from-%s" % (route.kind.lower(), route.namespace), "namespace": namespace},
            "spec": {"from": [{"group": GROUP, "kind": route.kind, "namespace": route.namespace}],
                     "to": [{"group": "", "kind": "Service", "name": name} for name in names]}}


def _read(kube, discovery, route, namespace, wanted):
    served = [version for version in VERSIONS if discovery.served("%s/%s" % (GROUP, version), KIND)]
    if not served:
        raise InputError("the cluster serves no ReferenceGrant (%s), which a route of namespace %s needs to send to "
                         "Services of namespace %s" % (GROUP, route.namespace, namespace), subject=str(route),
                         hint="install the Gateway API CRDs with ReferenceGrant, or keep the route in %s" % namespace)
    path = discovery.path("%s/%s" % (GROUP, served[0]), KIND, namespace)
    try:
        return list(list_items(kube, path, subject="%ss of %s" % (KIND, namespace)))
    except ApiError as err:
        if err.status != 403:
            raise
        raise ApiError("this identity may not list the ReferenceGrants of namespace %s (forbidden), so manent "
                       "cannot check that %s may send to %s" % (namespace, route, " and ".join(wanted)),
                       status=403, reason=err.reason, subject=str(route),
                       hint="grant it get and list on referencegrants.%s in %s (a Role), as the route's controller "
                            "has them" % (GROUP, namespace)) from err
