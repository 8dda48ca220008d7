"""Route objects and a stand-in route controller for integration tests (no data plane runs here)."""

from __future__ import annotations

import threading
import time

from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import TRACK_LABEL
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import routes

TESTERS = {"name": "x-canary", "value": "always"}
MERGE = "application/merge-patch+json"


def backends(service, weights, port=8080):
    return [{"name": "%s-%s" % (service, slot), "port": port, "weight": weight} for slot, weight in weights.items()]


def httproute(namespace, slots=("a", "b")):
    both = {slot: weight for slot, weight in (("a", 100), ("b", 0)) if slot in slots}
    return {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": "shop", "namespace": namespace},
        "spec": {
            "parentRefs": [{"name": "no-such-gateway"}],
            "rules": [
                {"name": "testers", "matches": [{"path": {"type": "PathPrefix", "value": "/"},
                                                 "headers": [{"name": "x-canary", "value": "always"}]}],
                 "backendRefs": backends("shop", both)},
                {"name": "static", "matches": [{"path": {"type": "PathPrefix", "value": "/static"}}],
                 "filters": [{"type": "RequestHeaderModifier",
                              "requestHeaderModifier": {"set": [{"name": "Cache-Control", "value": "max-age=60"}]}}],
                 "backendRefs": [{"name": "static-v1", "port": 80, "weight": 3},
                                 {"name": "static-v2", "port": 80, "weight": 1}]},
                {"name": "app", "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                 "backendRefs": backends("shop", both)},
            ],
        },
    }


def create(cluster, obj):
    ref = routes.RouteRef(obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
    collection = routes.path_of(ref).rsplit("/", 1)[0]
    return cluster.kube.request("POST", collection, body=obj, subject=str(ref)).data


def read(cluster, ref):
    return routes.read_route(cluster.kube, ref)


def rule(route, name):
    return next(item for item in route["spec"]["rules"] if item.get("name") == name)


def weights(rule, service="shop"):
    """{slot: weight} of a Gateway API rule's slot backends."""
    return {ref["name"][-1]: ref.get("weight") for ref in rule["backendRefs"]
            if ref["name"] in ("%s-a" % service, "%s-b" % service)}


def replicas(cluster, namespace, name):
    """spec.replicas of a live Deployment, None when it does not exist."""
    live = cluster.get("apps/v1", "Deployment", namespace, name)
    return None if live is None else live["spec"]["replicas"]


def set_status(cluster, ref, generation, accepted="True", resolved="True", reason="Accepted", message=""):
    """Act as the route controller: write status.parents for the Gateway the route names."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions = [
        {"type": "Accepted", "status": accepted, "reason": reason, "message": message,
         "observedGeneration": generation, "lastTransitionTime": stamp},
        {"type": "ResolvedRefs", "status": resolved, "reason": "ResolvedRefs", "message": "",
         "observedGeneration": generation, "lastTransitionTime": stamp}]
    status = {"parents": [{"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                         "name": "no-such-gateway"},
                           "controllerName": "manent.io/test-controller", "conditions": conditions}]}
    return cluster.kube.request("PATCH", routes.path_of(ref, "status"), body={"status": status},
                                content_type=MERGE).data


def controller(cluster, ref, steps):
    """A thread acting as the route controller: ``steps`` is a list of (delay, status keyword arguments)."""
    def run():
        for delay, kwargs in steps:
            time.sleep(delay)
            set_status(cluster, ref, **kwargs)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def destination(subset, weight):
    return {"destination": {"host": "shop", "subset": subset, "port": {"number": 8080}}, "weight": weight}


def virtualservice(namespace, testers_first=True):
    testers = {"name": "testers", "match": [{"headers": {"x-canary": {"exact": "always"}}}],
               "route": [destination("a", 100), destination("b", 0)]}
    app = {"name": "app", "retries": {"attempts": 3, "perTryTimeout": "2s"},
           "route": [destination("a", 100), destination("b", 0)]}
    static = {"name": "static", "match": [{"uri": {"prefix": "/static"}}],
              "route": [{"destination": {"host": "static", "port": {"number": 80}}}]}
    http = [testers, static, app] if testers_first else [static, app, testers]
    return {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
            "metadata": {"name": "shop", "namespace": namespace},
            "spec": {"hosts": ["shop.example.com"], "http": http}}


def destination_rule(namespace, subsets=("a", "b")):
    return {"apiVersion": "networking.istio.io/v1", "kind": "DestinationRule",
            "metadata": {"name": "shop", "namespace": namespace},
            "spec": {"host": "shop.%s.svc.cluster.local" % namespace,
                     "subsets": [{"name": slot, "labels": {TRACK_LABEL: slot}} for slot in subsets]}}


class AutoController:
    """Acts as the route controller for as long as it runs: every new generation of the route is reported
    Accepted and ResolvedRefs in status.parents (a context manager)."""

    def __init__(self, cluster, ref, interval=0.2):
        self.cluster, self.ref, self.interval = cluster, ref, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            route = read(self.cluster, self.ref)
            generation = route["metadata"]["generation"]
            parents = (route.get("status") or {}).get("parents") or []
            seen = [c.get("observedGeneration") for p in parents for c in p.get("conditions") or []]
            if not seen or min(seen) < generation:
                set_status(self.cluster, self.ref, generation)
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)
