# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_traffic: with a local connection it runs the traffic operation in the controller
process and prints what the workloads it waits for (proportional replicas, promote) are waiting for and since
when, once per change, as manent_apply and manent_history do (plugin_utils/controller_task.py). Otherwise
(another connection, async, or no kubernetes package in the controller's Python) the module runs as usual."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import traffic_task
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(traffic_task.argument_spec())

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if not controller_task.in_process(self):
            result.update(controller_task.run_module(self, "manent.kubernetes.manent_traffic", task_vars))
            return result
        result.update(controller_task.run(self, task_vars, "manent_traffic", traffic_task.argument_spec(),
                                          traffic_task.run))
        return result
