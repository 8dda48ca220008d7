# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Istio DestinationRule of a traffic rollout: it must define the subsets ``a`` and ``b``, each selecting the
pods of its slot by the label ``manent.io/track``, before any weight moves.

Istio finds the DestinationRule of a host by its ``spec.host`` (a short host read in the rule's own namespace),
not by its name, along a lookup path: the client's namespace, the Service's, then the root namespace
(``istio-system`` unless the mesh configures another). manent looks where the rollout's clients are known: the
Services' namespace, the VirtualService's, then the root namespace; the first namespace holding a rule for the
host decides (several rules there are merged, as Istio merges them). The errors name the host and every
namespace searched."""

from __future__ import annotations

import json

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import name_of, namespace_of
from ansible_collections.manent.kubernetes.plugins.module_utils.base.pages import list_items
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import SLOTS, TRACK_LABEL
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.istio import fqdn, service_of

ROOT_NAMESPACE = "istio-system"
API_VERSION = "networking.istio.io/v1"


def lookup_path(target, root_namespace=ROOT_NAMESPACE):
    """The namespaces searched, in order (weights.py Target): the Services', the VirtualService's, the root."""
    out = []
    for namespace in (target.namespace, target.route_namespace, root_namespace):
        if namespace and namespace not in out:
            out.append(namespace)
    return out


def check(kube, target, route, root_namespace=ROOT_NAMESPACE):
    """InputError, before anything is written, unless the DestinationRule Istio would use for the Services' host
    (``target``, weights.py Target, of the VirtualService ``route``) defines the slot subsets; ApiError when a
    namespace searched before the one holding it may not be read."""
    searched, forbidden = [], []
    for namespace in lookup_path(target, root_namespace):
        try:
            rules = [rule for rule in _list(kube, namespace) if _for_host(rule, target)]
        except ApiError as err:
            if err.status != 403:
                raise
            forbidden.append(namespace)
            continue
        searched.append(namespace)
        if rules:
            if forbidden:
                raise _unreadable(target, route, forbidden, namespace)
            check_subsets(rules, target)
            return
    raise _not_found(target, route, searched, forbidden)


def _list(kube, namespace):
    path = "/apis/%s/namespaces/%s/destinationrules" % (API_VERSION, namespace)
    return list_items(kube, path, subject="DestinationRules of %s" % namespace)


def _for_host(rule, target):
    host = (rule.get("spec") or {}).get("host")
    return service_of(host, namespace_of(rule)) == (target.service, target.namespace)


def check_subsets(rules, target):
    """InputError unless ``rules`` (the DestinationRules of the host in one namespace, merged as Istio merges
    them: the first defining a subset name wins) have subsets a and b keyed on manent.io/track."""
    subsets = {}
    for rule in sorted(rules, key=lambda rule: (rule.get("metadata") or {}).get("creationTimestamp") or ""):
        for subset in (rule.get("spec") or {}).get("subsets") or ():
            subsets.setdefault(subset.get("name"), (rule, subset))
    problems = []
    for slot in SLOTS:
        if slot not in subsets:
            problems.append("subset %s is missing" % slot)
        elif (subsets[slot][1].get("labels") or {}).get(TRACK_LABEL) != slot:
            problems.append("subset %s of %s must select %s: %s, has labels %s" % (
                slot, _ref(subsets[slot][0]), TRACK_LABEL, slot, json.dumps(subsets[slot][1].get("labels") or {})))
    if problems:
        raise InputError("; ".join(problems), subject=", ".join(_ref(rule) for rule in rules),
                         hint="the DestinationRule of host %s must read %s" % (fqdn(target), _example_spec(target)))


def _ref(rule):
    return "DestinationRule/%s/%s" % (namespace_of(rule), name_of(rule))


def _example_spec(target):
    return ("spec: {host: %s, subsets: [{name: a, labels: {%s: a}}, {name: b, labels: {%s: b}}]}"
            % (fqdn(target), TRACK_LABEL, TRACK_LABEL))


def _either(names):
    return "%s or %s" % (", ".join(names[:-1]), names[-1]) if len(names) > 1 else "".join(names)


def _not_found(target, route, searched, forbidden):
    create = ("create it in %s with metadata: {name: %s, namespace: %s}, %s"
              % (target.namespace, target.service, target.namespace, _example_spec(target)))
    grant = "grant this identity get and list on destinationrules.networking.istio.io in %s" % _either(forbidden)
    if not searched:
        return InputError("cannot find the DestinationRule of host %s: this identity may not list DestinationRules "
                          "in %s, where Istio looks for one" % (fqdn(target), _either(forbidden)),
                          subject=str(route), hint="%s; Istio rollouts need one with the slot subsets" % grant)
    unread = "; this identity may not list them in %s, not searched" % _either(forbidden) if forbidden else ""
    return InputError("no DestinationRule for host %s in namespace %s (the Services', the VirtualService's and "
                      "Istio's root namespace, where Istio looks for one)%s"
                      % (fqdn(target), _either(searched), unread),
                      subject=str(route), hint="Istio rollouts need one with the slot subsets: %s%s"
                                               % (create, "; or %s" % grant if forbidden else ""))


def _unreadable(target, route, forbidden, namespace):
    return ApiError("this identity may not list the DestinationRules of namespace %s, which Istio searches for host "
                    "%s before %s, where manent found one" % (" and ".join(forbidden), fqdn(target), namespace),
                    status=403, reason="Forbidden", subject=str(route),
                    hint="grant it get and list on destinationrules.networking.istio.io in %s, so manent checks the "
                         "rule Istio uses" % " and ".join(forbidden))
