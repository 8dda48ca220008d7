# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_history: with a local connection every operation runs in the controller's worker
process (no module process to start: the role's checkpoint reads the release in service this way, see
docs/performance.md); operation=rollback prints, every 10 seconds of the rollout, which workloads are still
rolling out, as manent_apply does (plugin_utils/controller_task.py). Another connection, async, or no kubernetes
package in the controller's Python: the module runs as usual."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import history_task
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(history_task.argument_spec())

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if not controller_task.in_process(self):
            result.update(controller_task.run_module(self, "manent.kubernetes.manent_history", task_vars))
            return result
        result.update(controller_task.run(self, task_vars, "manent_history", history_task.argument_spec(),
                                          history_task.run))
        return result
