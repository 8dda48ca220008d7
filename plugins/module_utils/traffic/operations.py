# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Traffic (percentage) rollouts of one release key in one cluster: step, promote, abort, retire, status.

A release deployed with the traffic strategy goes to the slot that is not in service and is recorded as
the *candidate* (history locator fields ``candidate*``); these operations then move traffic by changing
only the weights of the route (:mod:`routes`) and scale the slots' workloads (:mod:`slots`):

* ``step(percent)``: proportional replicas grow first, then the route gives the candidate ``percent``;
  replicas shrink only after traffic has moved and the settle delay has passed.
* ``promote``: the candidate at full size and Ready, then 100 %, then the history pointer moves (the
  replaced release is recorded for rollback and retirement).
* ``abort``: the stable slot Ready at full size, then all traffic (testers too) back to it, the settle
  delay, then the candidate's workloads scaled to zero (its HPAs deleted, so they cannot scale it up).
* ``retire``: after ``scale_down_delay`` from the promotion, and only while the route sends nothing to it,
  the replaced slot's workloads are scaled to zero and its HPAs deleted.
* ``rollback``: before the replaced slot is retired, it is brought back to full size, gets all traffic and
  goes back into service (the release rolled back from is marked ``rolled-back`` and can be retired).

Every operation holds the release lock, checks the route before changing anything, and is idempotent:
rerun after a failure at any point, it finishes the work. In check mode nothing is written: the route
patch is sent with dryRun=All and the result says what would change.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.history import codec
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import routes
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.delete import DeleteOptions, Deleter
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, NotFoundError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, owner_of
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import LiveReader
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import group_of, namespace_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.status import compute
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import pods_of, wait_for

SCALABLE = {("apps", "Deployment"), ("apps", "StatefulSet")}
DAEMONSET = ("apps", "DaemonSet")
HPA = ("autoscaling", "HorizontalPodAutoscaler")
OPERATIONS = ("status", "step", "promote", "abort", "retire", "rollback")


@dataclass
class TrafficOptions:
    route: str = ""
    route_kind: str = "HTTPRoute"
    route_namespace: str = ""
    service: str = ""
    router: str = slots.ROUTER_GATEWAY
    testers: dict = None
    proportional: bool = False
    accept_timeout: float = 60.0
    require_route_status: bool = False
    settle_delay: float = 5.0
    scale_down_delay: float = 600.0
    wait_timeout: float = 300.0
    dry_run: bool = False
    holder: str = ""
    break_lock: bool = False
    sleep: object = time.sleep
    now: object = None
    on_progress: object = None  # wait.wait_for's progress callback (the action plugin prints it)


@dataclass
class TrafficResult:
    operation: str
    changed: bool = False
    weights: dict = field(default_factory=dict)
    scaled: list = field(default_factory=list)
    deleted: list = field(default_factory=list)
    route: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    history: dict = field(default_factory=dict)

    def to_dict(self):
        return {"operation": self.operation, "changed": self.changed, "weights": self.weights,
                "scaled": self.scaled, "deleted": self.deleted, "route": self.route, "warnings": self.warnings,
                "history": self.history}


def _key(obj):
    return (group_of(obj), obj.get("kind") or "")


class Traffic:
    """The traffic operations of one release key in ``namespace`` of one cluster."""

    def __init__(self, kube, discovery, namespace, key, options=None):
        self.kube = kube
        self.discovery = discovery
        self.namespace = namespace
        self.options = options or TrafficOptions()
        if not self.options.route or not self.options.service:
            raise InputError("traffic operations need the route and the service", subject="traffic_route",
                             hint="set traffic_route and traffic_service (and traffic_route_kind for GRPCRoute)")
        kind = self.options.route_kind if self.options.router == slots.ROUTER_GATEWAY else "VirtualService"
        self.route = routes.RouteRef(kind, self.options.route_namespace or namespace, self.options.route)
        self.reader = LiveReader(kube, discovery)
        self.deleter = Deleter(kube, discovery, self.reader, DeleteOptions(dry_run=self.options.dry_run))
        self.store = HistoryStore(kube, namespace, key, holder=self.options.holder or "manent-traffic",
                                  now=self.options.now)
        self._left_alone = set()  # refs of slot objects whose live copy is not this release's (_ours)

    # ------------------------------------------------------------------ state

    def _state(self):
        """The locator with the release in service and the candidate (InputError when nothing is in service
        and there is no candidate)."""
        data = self.store.locator()
        if not data or not (data.get("version") or data.get("candidate")):
            raise InputError("no release of this key in namespace %s" % self.namespace, subject=self._subject(),
                             hint="deploy a release with the traffic strategy first")
        return data

    def _subject(self):
        return "traffic of %s in %s" % (self.store.locator_name, self.namespace)

    def _candidate(self, data):
        if not data.get("candidate"):
            raise InputError("there is no candidate release to move traffic to", subject=self._subject(),
                             hint="deploy a new version with the traffic strategy; it becomes the candidate")
        return data["candidate"], data["candidateSlot"]

    def _slot_objects(self, version, slot):
        """The stored objects of ``version`` that belong to ``slot`` (values of Secrets are not needed)."""
        objects = self.store.load(version, secrets=False)[1]
        return [obj for obj in objects if slots.slot_of(obj) == slot and slots.is_slot_kind(obj)]

    # ------------------------------------------------------------------ cluster

    def _get(self, obj):
        return self.reader.get(obj)

    def _ours(self, obj, live, result):
        """True when ``live`` (the live copy of ``obj``, a slot object read from history) carries the labels of this
        release key: history is kept in ConfigMaps that whoever may edit them in the namespace can change, and
        must not become a way to scale or delete other objects. A warning says which object was left alone."""
        if live is None:
            return False
        if owner_of(live) == self.store.key:
            return True
        self._left_alone.add(ref(obj))
        result.warnings.append("%s left alone: the live object does not carry the labels of %s (history lists it "
                               "as a slot object)" % (ref(obj), self.store.key.describe()))
        return False

    def _scale(self, obj, replicas, result):
        """Set spec.replicas of the live workload; False when it already has them (or does not exist, or is not
        this release's)."""
        live = self._get(obj)
        if not self._ours(obj, live, result) or (live.get("spec") or {}).get("replicas") == replicas:
            return False
        result.scaled.append({"object": ref(obj), "from": (live.get("spec") or {}).get("replicas"),
                              "to": replicas})
        query = {"fieldManager": routes.FIELD_MANAGER}
        if self.options.dry_run:
            query["dryRun"] = "All"
        self.kube.request("PATCH", self.reader.path(obj), query=query, body={"spec": {"replicas": replicas}},
                          content_type="application/merge-patch+json", subject=ref(obj))
        result.changed = result.changed or not self.options.dry_run
        return True

    def _delete(self, obj, result):
        if not self._ours(obj, self._get(obj), result):
            return
        if self.deleter.delete(obj, wait=False):
            result.deleted.append(ref(obj))
            result.changed = result.changed or not self.options.dry_run

    def _wait_ready(self, workloads):
        """Wait until every workload is Current at its size (nothing to wait for in check mode)."""
        if self.options.dry_run or not workloads:
            return []
        return wait_for(workloads, self._get, list_pods=lambda obj: pods_of(self.kube, obj),
                        timeout=self.options.wait_timeout, on_progress=self.options.on_progress, watch=self.reader)

    def _resize(self, objects, percent, result, grow):
        """Proportional replicas for ``percent``: only growing (``grow``) or only shrinking."""
        targets = slots.hpa_targets(objects)
        changed = []
        for obj in objects:
            if _key(obj) not in SCALABLE or (namespace_of(obj), obj["kind"], obj["metadata"]["name"]) in targets:
                continue
            wanted = slots.replicas_for(slots.manifest_replicas(obj), percent)
            live = self._get(obj)
            current = ((live or {}).get("spec") or {}).get("replicas")
            if live is None or current == wanted or (grow and current > wanted) or (not grow and current < wanted):
                continue
            if self._scale(obj, wanted, result):
                changed.append(obj)
        return changed

    def _full_size(self, objects, result):
        """Scale the slot's workloads (not HPA-managed) to their manifest replicas and wait until Ready."""
        targets = slots.hpa_targets(objects)
        for obj in objects:
            if _key(obj) in SCALABLE and (namespace_of(obj), obj["kind"], obj["metadata"]["name"]) not in targets:
                self._scale(obj, slots.manifest_replicas(obj), result)
        self._wait_ready([obj for obj in objects if (_key(obj) in SCALABLE or _key(obj) == DAEMONSET) and
                          ref(obj) not in self._left_alone])

    def _to_zero(self, objects, result):
        """Scale the slot's workloads to zero: HPAs deleted first (they would scale them up), DaemonSets
        deleted (they cannot be scaled)."""
        for obj in objects:
            if _key(obj) == HPA:
                self._delete(obj, result)
        for obj in objects:
            if _key(obj) in SCALABLE:
                self._scale(obj, 0, result)
            elif _key(obj) == DAEMONSET:
                self._delete(obj, result)

    # ------------------------------------------------------------------ route

    def _set_route(self, slot, percent, result):
        """Give ``slot`` ``percent`` of the traffic (testers to ``slot``) and wait until the route is accepted."""
        if self.options.router == slots.ROUTER_ISTIO:
            routes.check_destination_rule(self._destination_rule(), self.options.service)
        out = routes.update_weights(self.kube, self.route, self.options.service, slot, percent,
                                    testers=self.options.testers, dry_run=self.options.dry_run)
        result.weights = dict(out["after"])
        result.route = {"kind": self.route.kind, "namespace": self.route.namespace, "name": self.route.name,
                        "generation": out.get("generation"), "accepted": ""}
        if out["changed"] and not self.options.dry_run:
            result.changed = True
        if self.options.dry_run or self.options.router == slots.ROUTER_ISTIO:
            result.route["accepted"] = "not checked"
            return out
        result.route["accepted"] = routes.wait_accepted(
            self.kube, self.route, out["generation"], self.options.accept_timeout,
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
            path = "/api/v1/namespaces/%s/services/%s" % (self.route.namespace, name)
            try:
                self.kube.get_json(path)
            except NotFoundError:
                return ("BackendNotFound",)
        return ()

    def _destination_rule(self):
        path = "/apis/networking.istio.io/v1/namespaces/%s/destinationrules/%s" % (self.route.namespace,
                                                                                   self.options.service)
        try:
            subject = "DestinationRule/%s/%s" % (self.route.namespace, self.options.service)
            return self.kube.get_json(path, subject=subject)
        except NotFoundError:
            return None

    def _settle(self):
        if not self.options.dry_run and self.options.settle_delay > 0:
            self.options.sleep(self.options.settle_delay)

    def _weights(self):
        route = self.kube.get_json(routes.path_of(self.route), subject=str(self.route))
        return routes.current_weights(route, self.route.kind, self.options.service, testers=self.options.testers)

    # ------------------------------------------------------------------ operations

    def run(self, operation, percent=None):
        if operation not in OPERATIONS:
            raise InputError("unknown traffic operation %r" % (operation,), subject="operation",
                             hint="use one of: %s" % ", ".join(OPERATIONS))
        if operation == "status":
            return self.status()
        result = TrafficResult(operation=operation)
        locked = False
        try:
            if not self.options.dry_run:
                self.store.acquire(break_lock=self.options.break_lock)
                locked = True
            getattr(self, "_" + operation)(result, percent) if operation == "step" else \
                getattr(self, "_" + operation)(result)
        finally:
            if locked:
                self.store.release_lock()
            result.warnings.extend(self.store.notes)
        result.history = self._history_view(self.store.locator() or {})
        return result

    def _step(self, result, percent):
        if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
            raise InputError("must be a whole number from 0 to 100, got %r" % (percent,), subject="percent",
                             hint="give the candidate's share of the traffic, e.g. 10")
        data = self._state()
        version, slot = self._candidate(data)
        objects = self._slot_objects(version, slot)
        if self.options.proportional:
            self._wait_ready(self._resize(objects, percent, result, grow=True))
        self._set_route(slot, percent, result)
        if not self.options.dry_run:
            self.store.update_locator("set the candidate's weight", weight=percent)
        if self.options.proportional and self._resize(objects, percent, TrafficResult("probe"), grow=False):
            self._settle()
            self._resize(objects, percent, result, grow=False)

    def _promote(self, result):
        data = self._state()
        version, slot = self._candidate(data)
        self._full_size(self._slot_objects(version, slot), result)
        self._set_route(slot, 100, result)
        if self.options.dry_run:
            return
        release = Release(self.store.key, version, data.get("candidateDeployment") or "")
        self.store.promote(release, data.get("version") or None)
        result.changed = True

    def _abort(self, result):
        data = self._state()
        if not data.get("candidate"):
            result.weights = self._weights() if data.get("slot") else {}
            result.warnings.append("there is no candidate: nothing to abort")
            return
        version, slot = data["candidate"], data["candidateSlot"]
        stable = data.get("slot")
        if not stable:
            raise InputError("no slot is in service to move the traffic back to", subject=self._subject(),
                             hint="the candidate is the first traffic release; deploy again or promote it")
        self._full_size(self._slot_objects(data["version"], stable), result)
        self._set_route(stable, 100, result)
        self._settle()
        self._to_zero(self._slot_objects(version, slot), result)
        if self.options.dry_run:
            return
        self.store.mark(version, codec.STATUS_ABORTED)
        self.store.update_locator("abort the candidate %s" % version, candidate="", candidateDeployment="",
                                  candidateRecord="", candidateSlot="", weight="")
        result.changed = True

    def _rollback(self, result):
        """Put the replaced release (its slot not yet retired) back in service: full size and Ready, all
        traffic to it, then the history pointer; the release rolled back from stays in its slot until retired."""
        data = self._state()
        replaced, current = data.get("replaced"), data.get("version")
        if data.get("candidate"):
            raise InputError("candidate %s is in slot %s" % (data["candidate"], data["candidateSlot"]),
                             subject=self._subject(), hint="abort it first: abort is the rollback of a candidate")
        if not replaced or not data.get("slot"):
            raise InputError("version %s replaced nothing in a traffic slot: nothing to roll back to" % current,
                             subject=self._subject(), hint="deploy a known good version with the traffic strategy")
        if data.get("retired") == replaced:
            raise InputError("version %s was retired (its slot is scaled to zero)" % replaced,
                             subject=self._subject(),
                             hint="deploy it again with the traffic strategy, then step and promote it")
        slot = slots.other_slot(data["slot"])
        meta = self.store.load(replaced, secrets=False)[0]
        self._full_size(self._slot_objects(replaced, slot), result)
        self._set_route(slot, 100, result)
        if self.options.dry_run:
            return
        self.store.promote(Release(self.store.key, replaced, meta.get("deployment") or ""), current)
        self.store.mark(current, codec.STATUS_ROLLED_BACK)
        result.changed = True

    def _retire(self, result):
        data = self._state()
        replaced, slot = data.get("replaced"), slots.other_slot(data["slot"]) if data.get("slot") else ""
        if not replaced or not slot or data.get("retired") == replaced:
            result.warnings.append("nothing to retire" if not replaced or not slot else
                                   "version %s is already retired" % replaced)
            return
        if data.get("candidate"):
            raise InputError("slot %s holds the candidate %s, not a replaced release" % (slot, data["candidate"]),
                             subject=self._subject(), hint="promote or abort the candidate first")
        self._check_delay(data)
        weights = self._weights()
        if weights.get(slot):
            raise InputError("the route still sends %s%% of the traffic to slot %s" % (weights[slot], slot),
                             subject=str(self.route), hint="promote again to move all traffic to slot %s"
                             % data["slot"])
        self._to_zero(self._slot_objects(replaced, slot), result)
        result.weights = weights
        if not self.options.dry_run:
            self.store.update_locator("retire version %s" % replaced, retired=replaced)
            result.changed = True

    def _check_delay(self, data):
        promoted = codec.parse_time(data.get("promoted"))
        now = (self.options.now or (lambda: datetime.datetime.now(datetime.timezone.utc)))()
        if promoted is None:
            return
        due = promoted + datetime.timedelta(seconds=self.options.scale_down_delay)
        if now < due:
            raise InputError("the replaced slot may be retired from %s (promoted %s, scale_down_delay %ds)"
                             % (codec.format_time(due), data["promoted"], self.options.scale_down_delay),
                             subject=self._subject(), hint="run retire again after that time")

    # ------------------------------------------------------------------ status

    def status(self):
        data = self._state()
        result = TrafficResult(operation="status", weights=self._weights())
        result.route = {"kind": self.route.kind, "namespace": self.route.namespace, "name": self.route.name}
        result.history = self._history_view(data)
        result.history["slots"] = {}
        for version, slot in ((data.get("version"), data.get("slot")),
                              (data.get("candidate"), data.get("candidateSlot"))):
            if version and slot:
                result.history["slots"][slot] = self._slot_status(version, slot, result.weights.get(slot, 0))
        return result

    def _slot_status(self, version, slot, weight):
        workloads = [obj for obj in self._slot_objects(version, slot)
                     if _key(obj) in SCALABLE or _key(obj) == DAEMONSET]
        states = {}
        for obj in workloads:
            live = self._get(obj)
            states[ref(obj)] = {"status": compute(live).status,
                                "replicas": ((live or {}).get("spec") or {}).get("replicas")}
        ready = bool(states) and all(state["status"] == "Current" for state in states.values())
        return {"version": version, "weight": weight, "ready": ready, "workloads": states}

    @staticmethod
    def _history_view(data):
        return {"in_service": {"version": data.get("version", ""), "slot": data.get("slot", "")},
                "candidate": {"version": data.get("candidate", ""), "slot": data.get("candidateSlot", ""),
                              "weight": data.get("weight", "")},
                "replaced": data.get("replaced", ""), "retired": data.get("retired", ""),
                "promoted": data.get("promoted", "")}
