#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: manent_traffic
short_description: Move traffic between the a/b slots of a release in one cluster (percentage rollouts)
version_added: 0.1.0
description:
  - A release deployed with the traffic strategy
    (M(manent.kubernetes.manent_render) with O(manent.kubernetes.manent_render#module:strategy=traffic)) runs in the
    slot that is not in service and is the I(candidate). This module moves traffic to it by changing only the weights
    of the route's backends C(<traffic_service>-a) and C(<traffic_service>-b) (Gateway API HTTPRoute or GRPCRoute), or
    of the subsets C(a) and C(b) (Istio VirtualService). Every other rule, match, filter and backend is left as it is.
  - O(operation=step) gives the candidate O(percent) of the traffic; with O(traffic_replicas=proportional) its
    workloads first grow to ceil(replicas x percent / 100) and become Ready.
  - O(operation=promote) brings the candidate to full size, gives it all traffic and makes it the release in service;
    the replaced release is recorded.
  - O(operation=abort) brings the stable slot to full size and Ready, moves all traffic (testers too) back to it,
    waits O(settle_delay), then scales the candidate to zero (its HPAs deleted); not while a rule of the route that
    manent does not weigh (one listing only the candidate's backend) still sends to it, which the error names.
  - O(operation=retire) scales the replaced slot to zero and deletes its HPAs, once O(scale_down_delay) has passed
    since the promotion and no rule of the route sends it anything (every rule naming its backend is read, not only
    the weighted ones); otherwise it is refused naming each such rule, with nothing written.
  - O(operation=rollback), after a promotion and before O(operation=retire), brings the replaced slot back to full
    size, gives it all traffic and puts its release back in service; the release rolled back from is marked
    C(rolled-back) and its slot can then be retired.
  - O(operation=status) reports the slots, versions, weights and readiness, every rule of the route that sends to a
    slot, an operation that did not finish and the release lock with its holder.
  - Every change to a Gateway API route is a patch of the whole C(spec.rules) conditioned on the resourceVersion
    read (re-read and retried on a conflict), then verified; each parent in C(status.parents) must report
    C(Accepted) and C(ResolvedRefs) for the new generation within O(accept_timeout).
  - Each operation holds the release's history lock (its holder C(user@host:pid)), checks everything it needs (the
    release, the route, the DestinationRule) before its first write, and is safe to run again after a failure at
    any point. A failure after a write lists in C(written) what was written; a refusal changes nothing.
  - Right before its first write an operation records itself in the release's locator (C(inProgress), with the
    operation, its target weights and replicas, who and when) and clears that record after its last write, so that a run killed
    in between (an AWX cancel) leaves O(operation=status) and the next run what they need; the same step again
    finishes an interrupted step, abort undoes it.
author:
  - manent developers (@manent-io)
extends_documentation_fragment:
  - manent.kubernetes.connection
  - manent.kubernetes.option_names
  - manent.kubernetes.release
attributes:
  check_mode:
    support: full
    description: The route patch is sent as a server-side dry run; nothing is scaled and history is not written.
  diff_mode:
    support: none
    description: Results list the weights and resized workloads instead of differences.
options:
  operation:
    description: What to do.
    type: str
    choices: [status, step, promote, abort, retire, rollback]
    default: status
  percent:
    description: With O(operation=step), the candidate's share of the traffic, 0 to 100.
    type: int
  namespace:
    description: Namespace of the release and its history.
    type: str
    default: default
  traffic_route:
    description: Name of the HTTPRoute, GRPCRoute or (Istio) VirtualService.
    type: str
    required: true
  traffic_route_kind:
    description: Kind of the Gateway API route.
    type: str
    choices: [HTTPRoute, GRPCRoute]
    default: HTTPRoute
  traffic_route_namespace:
    description:
      - Namespace of the route. Default O(namespace).
      - "The slot Services are those of O(namespace). A Gateway API route in another namespace names them in its
        backendRefs with their namespace, for example C({name: shop-a, namespace: shop-prod, port: 8080}) (a
        backendRef without one names a Service of the route's namespace), and a ReferenceGrant in O(namespace)
        must let routes of its kind from the route's namespace reference Services there.
        Both are checked before anything is written; reading the grants needs C(get) and C(list) on
        C(referencegrants.gateway.networking.k8s.io) in O(namespace)."
    type: str
  traffic_service:
    description: Base name of the Service; the route's backends are C(<traffic_service>-a) and C(<traffic_service>-b)
      (Istio; the Service whose host the VirtualService destinations name, with subsets C(a) and C(b) of its
      DestinationRule, see O(istio_root_namespace)).
    type: str
    required: true
  traffic_router:
    description: C(gateway-api) or C(istio).
    type: str
    choices: [gateway-api, istio]
    default: gateway-api
  istio_root_namespace:
    description:
      - With O(traffic_router=istio), Istio's root namespace (C(meshConfig.rootNamespace)), the last place where
        Istio looks for the DestinationRule of a host.
      - The DestinationRule is found as Istio finds it, by its C(spec.host) (a short host read in the rule's
        namespace), in O(namespace), then the VirtualService's namespace, then this one; the first namespace holding
        one decides, and it must define the subsets C(a) and C(b) selecting C(manent.io/track).
    type: str
    default: istio-system
  testers_header:
    description:
      - The header (C(name) and optional C(value)) of the route rule that sends testers only to the candidate.
      - The rule must exist and list both slot backends; it is set once per rollout and never changed by steps.
    type: dict
    suboptions:
      name:
        description: Header name.
        type: str
        required: true
      value:
        description: Header value (exact match).
        type: str
  traffic_replicas:
    description: C(proportional) resizes the candidate's Deployments and StatefulSets (not HPA-managed) with each step.
    type: str
    choices: [manifest, proportional]
    default: manifest
  accept_timeout:
    description: How long to wait for the route's controller to accept a change, for example C(1m).
    type: str
    default: 1m
  require_route_status:
    description: Fail when the route's controller reports no status at all (by default such routes are not verified).
    type: bool
    default: false
  settle_delay:
    description: Time given to connections to drain after traffic moved away from workloads, before they are scaled
      down.
    type: str
    default: 5s
  scale_down_delay:
    description: With O(operation=retire), the least time between the promotion and the retirement of the replaced
      slot.
    type: str
    default: 10m
  wait_timeout:
    description: How long workloads may take to become Ready after a resize.
    type: str
    default: 5m
  break_lock:
    description: Take the release lock even if another deploy holds it (only when it is known to be dead).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Send 10 % of the traffic to the candidate
  manent.kubernetes.manent_traffic:
    api_server: "{{ manent_api_server }}"
    token: "{{ manent_token }}"
    application: shop
    environment: prod
    namespace: shop-prod
    traffic_route: shop
    traffic_service: shop
    operation: step
    percent: 10

- name: Promote the candidate
  manent.kubernetes.manent_traffic:
    api_server: "{{ manent_api_server }}"
    token: "{{ manent_token }}"
    application: shop
    environment: prod
    namespace: shop-prod
    traffic_route: shop
    traffic_service: shop
    operation: promote
"""

RETURN = r"""
operation:
  description: The operation run.
  returned: always
  type: str
weights:
  description: The weights of the slots after the operation.
  sample: {"a": 90, "b": 10}
  returned: always
  type: dict
scaled:
  description: Workloads resized, each C(object), C(from) and C(to) replicas.
  returned: always
  type: list
  elements: dict
deleted:
  description: HPAs and DaemonSets deleted (abort and retire), as C(Kind/namespace/name).
  returned: always
  type: list
  elements: str
route:
  description: The route changed (C(kind), C(namespace), C(name), C(generation)) and C(accepted) (C(accepted),
    C(no-status) or C(not checked)); with O(operation=status) C(rules), each rule (entry) naming a slot backend
    with its C(weights) and C(role) (C(weighted), C(testers), or C(other), a rule manent does not change).
  returned: always
  type: dict
history:
  description: The release in service (version, slot, record), the candidate (version, slot, weight, record), the
    replaced and retired versions, when the release in service was promoted; with O(operation=status) also
    C(slots), per slot its version, weight, readiness and workloads, C(lock) (C(holder), C(since), C(expires),
    C(state) C(free), C(held) or C(expired)) and C(in_progress), the operation that did not finish (its record, with
    C(summary), what it wanted against what the cluster holds now; empty when none). C(record) is the name of the
    version's history record ConfigMap, the object its Kubernetes Events are about.
  returned: always
  type: dict
written:
  description:
    - "Every write of the operation in order, as C(<Kind/namespace/name>: <what>) (C(replicas 1 -> 2),
      C(weights a 90, b 10), C(deleted)) or C(history: <what>); C(changed) is true when it is not empty."
    - Also on failure, so a failed operation says what it changed before the error (the message says it too, or
      that nothing was changed). In check mode, the writes the API server accepted as dry runs; nothing is stored.
  sample: ["Deployment/shop-prod/shop-b: replicas 1 -> 2", "HTTPRoute/shop-prod/shop: weights a 90, b 10"]
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import traffic_task
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.common import run_task


def main():
    run_task(AnsibleModule(argument_spec=traffic_task.argument_spec(), supports_check_mode=True), traffic_task)


if __name__ == "__main__":
    main()
