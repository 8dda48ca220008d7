# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Istio DestinationRule of a traffic rollout: it must define the subsets ``a`` and ``b``, each selecting
the pods of its slot by the label ``manent.io/track``, before any weight moves."""

from __future__ import annotations

import json

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import name_of, namespace_of
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import SLOTS, TRACK_LABEL
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.istio import is_service_host


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
