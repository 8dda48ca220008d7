# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manent_traffic task: its argument spec, its parameters mapped to TrafficOptions in one place, and the run of
one traffic operation on one cluster.

Used by the module (``plugins/modules/manent_traffic.py``) and by its action plugin, which runs the operation in
the controller process when the connection is local, so that it can print what the workloads it waits for are
waiting for.
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.operations import OPERATIONS, Traffic
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.options import TrafficOptions

TRAFFIC_SPEC = {
    "operation": {"type": "str", "choices": list(OPERATIONS), "default": "status"},
    "percent": {"type": "int"},
    "traffic_route": {"type": "str", "required": True},
    "traffic_route_kind": {"type": "str", "choices": ["HTTPRoute", "GRPCRoute"], "default": "HTTPRoute"},
    "traffic_route_namespace": {"type": "str"},
    "traffic_service": {"type": "str", "required": True},
    "traffic_router": {"type": "str", "choices": ["gateway-api", "istio"], "default": "gateway-api"},
    "istio_root_namespace": {"type": "str", "default": "istio-system"},
    "testers_header": {"type": "dict", "options": {"name": {"type": "str", "required": True},
                                                   "value": {"type": "str"}}},
    "traffic_replicas": {"type": "str", "choices": ["manifest", "proportional"], "default": "manifest"},
    "accept_timeout": {"type": "str", "default": "1m"},
    "require_route_status": {"type": "bool", "default": False},
    "settle_delay": {"type": "str", "default": "5s"},
    "scale_down_delay": {"type": "str", "default": "10m"},
    "wait_timeout": {"type": "str", "default": "5m"},
    "break_lock": {"type": "bool", "default": False},
}


def argument_spec():
    return common.argument_spec(common.RELEASE_SPEC, TRAFFIC_SPEC)


def traffic_options(params, check_mode, on_progress=None):
    """The module's parameters as TrafficOptions (one place)."""
    testers = {k: v for k, v in (params.get("testers_header") or {}).items() if v is not None} or None
    return TrafficOptions(
        route=params["traffic_route"], route_kind=params["traffic_route_kind"],
        route_namespace=params.get("traffic_route_namespace") or "", service=params["traffic_service"],
        router=params["traffic_router"], istio_root_namespace=params["istio_root_namespace"], testers=testers,
        proportional=params["traffic_replicas"] == "proportional",
        accept_timeout=parse_duration(params["accept_timeout"], name="accept_timeout"),
        require_route_status=params["require_route_status"],
        settle_delay=parse_duration(params["settle_delay"], name="settle_delay"),
        scale_down_delay=parse_duration(params["scale_down_delay"], name="scale_down_delay"),
        wait_timeout=parse_duration(params["wait_timeout"], name="wait_timeout"),
        dry_run=check_mode, break_lock=params["break_lock"], on_progress=on_progress)


def with_records(out, key):
    """``out`` with the name of the history record of the release in service and of the candidate (``record`` next
    to their ``version``): what the role's analysis names as the object its Event is about (docs/events.md)."""
    for side in ("in_service", "candidate"):
        part = (out.get("history") or {}).get(side)
        if isinstance(part, dict):
            part["record"] = record_name(key, part["version"]) if part.get("version") else ""
    return out


def run(params, check_mode=False, diff=False, on_progress=None):  # pylint: disable=unused-argument
    """Run the operation of ``params`` on its cluster; the result dict (``warnings``: the operation's warnings).
    Raises ManentError. Diff mode shows nothing more: the result lists the weights and resized workloads."""
    options = traffic_options(params, check_mode, on_progress)
    kube, discovery = common.open_cluster(params)
    try:
        key = common.release_key(params)
        traffic = Traffic(kube, discovery, params["namespace"], key, options)
        return with_records(traffic.run(params["operation"], params.get("percent")).to_dict(), key)
    finally:
        kube.close()
