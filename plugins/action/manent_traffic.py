# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_traffic: with a local connection it runs the traffic operation in the controller
process and prints what the workloads it waits for (proportional replicas, promote) are waiting for and since
when, once per change, as manent_apply and manent_history do (plugin_utils/controller_task.py). Otherwise
(another connection, async, or no kubernetes package in the controller's Python) the module runs as usual."""

from __future__ import annotations

import dataclasses

from ansible.plugins.action import ActionBase

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common as mc
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.operations import Traffic
from ansible_collections.manent.kubernetes.plugins.modules.manent_traffic import TRAFFIC_SPEC, traffic_options
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task

ARGUMENT_SPEC = mc.argument_spec(mc.RELEASE_SPEC, TRAFFIC_SPEC)


def _traffic(params, check_mode, _diff, on_progress):
    if params["operation"] == "step" and params.get("percent") is None:
        raise InputError("operation is step but percent is missing", subject="percent")
    options = dataclasses.replace(traffic_options(params, check_mode), on_progress=on_progress)
    kube, discovery = mc.open_cluster(params)
    try:
        traffic = Traffic(kube, discovery, params["namespace"], mc.release_key(params), options)
        return traffic.run(params["operation"], params.get("percent")).to_dict()
    finally:
        kube.close()


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if not controller_task.in_process(self):
            result.update(controller_task.run_module(self, "manent.kubernetes.manent_traffic", task_vars))
            return result
        result.update(controller_task.run(self, task_vars, "manent_traffic", ARGUMENT_SPEC, _traffic))
        return result
