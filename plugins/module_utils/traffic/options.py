# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a traffic operation is given (:class:`TrafficOptions`, mapped from the module's parameters in
tasks/traffic_task.py) and what it returns (:class:`TrafficResult`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import slots

FIELD_MANAGER = "manent-traffic"  # the field manager of every write of the traffic operations


@dataclass
class TrafficOptions:
    route: str = ""
    route_kind: str = "HTTPRoute"
    route_namespace: str = ""
    service: str = ""
    router: str = slots.ROUTER_GATEWAY
    istio_root_namespace: str = "istio-system"  # where Istio looks for a DestinationRule last
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
    """What an operation did. ``written`` lists every write in order (``<Kind/namespace/name>: <what>``, or
    ``history: <what>``), failed or not; ``changed`` derives from it (in check mode the writes are dry runs)."""

    operation: str
    dry_run: bool = False
    weights: dict = field(default_factory=dict)
    scaled: list = field(default_factory=list)
    deleted: list = field(default_factory=list)
    route: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    history: dict = field(default_factory=dict)
    written: list = field(default_factory=list)

    @property
    def changed(self):
        return bool(self.written) and not self.dry_run

    def wrote(self, subject, what):
        """Record one write the server accepted."""
        self.written.append("%s: %s" % (subject, what))

    def account(self):
        """What was changed, for the message of an operation that failed."""
        if not self.written:
            return "nothing was changed"
        if self.dry_run:
            return "check mode: nothing was stored"
        return "written before the failure: %s" % "; ".join(self.written)

    def to_dict(self):
        return {"operation": self.operation, "changed": self.changed, "weights": self.weights,
                "scaled": self.scaled, "deleted": self.deleted, "route": self.route, "warnings": self.warnings,
                "history": self.history, "written": self.written}
