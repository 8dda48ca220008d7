# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_apply: with a local connection (inventory hosts are API servers, the work happens
on the controller) it runs the deploy in the controller process and prints, every 10 seconds of a rollout,
which workloads are still rolling out (plugin_utils/controller_task.py). Otherwise (another connection, async,
or no kubernetes package in the controller's Python) it runs the module as usual."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import apply_task
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task


def _deploy(params, check_mode, diff, on_progress):
    return apply_task.result_dict(apply_task.run(params, check_mode, diff, on_progress=on_progress), diff)


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(apply_task.argument_spec())

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if not controller_task.in_process(self):
            result.update(controller_task.run_module(self, "manent.kubernetes.manent_apply", task_vars))
            return result
        result.update(controller_task.run(self, task_vars, "manent_apply", apply_task.argument_spec(), _deploy))
        return result
