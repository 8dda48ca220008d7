# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Traffic rollouts between slots a and b: the operations step, promote, abort, retire, rollback and status of one
release key, and the route weights they move (Gateway API, Istio). Slot naming lives in rules/slots.py, since
rendering and the engine read it too.

- operations.py    the operations by name (one table) and their run: the lock, the context they share
- moves.py         step, promote, abort, rollback; retire.py retire; status.py status
- state.py         the traffic state of a release key, read from history: in service, candidate, slot objects, the
                   lock; and the record of the operation in progress (pending.py: its format and what status says)
- scaler.py        the slot scaler: proportional replicas, full size, zero (HPAs and DaemonSets deleted)
- router.py        the route of one release: its weights, a slot's share set and accepted
- routes.py        a route on the cluster: where it is, its read, the conditioned write of its weights
- weights.py       pure functions: a route's slot weights computed (those manent sets, and every rule's share), and
                   the refusals of routes manent cannot use;
                   gateway.py and istio.py: how each kind of route names the slot backends, and its own rules
- grants.py        the ReferenceGrants a Gateway API route needs to send to the Services of another namespace
- destinations.py  the Istio DestinationRule of the Services' host, found along Istio's lookup path, and its subsets
- acceptance.py    whether the route's controller accepted a change (status.parents), and the wait for it
- options.py       TrafficOptions and TrafficResult
- story.py         the Event each operation records when it completed (cluster/events.py)

The module's entry point (argument spec, parameters mapped to TrafficOptions, the result) is tasks/traffic_task.py.
May import: base, cluster, rules, history, engine."""
