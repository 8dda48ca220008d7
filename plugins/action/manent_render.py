# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_render: with a local connection (inventory hosts are API servers, the work happens on
the controller) it renders in the controller's worker process, as manent_apply's action plugin deploys: no module
process to start, no module payload to build, no second import of the collection and its libraries
(docs/performance.md). Otherwise (another connection, async, or no kubernetes package in the controller's Python)
it runs the module as usual. Same arguments, same result."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import render_task
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task

ARGUMENT_SPEC = render_task.argument_spec()


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if not controller_task.in_process(self):
            result.update(controller_task.run_module(self, "manent.kubernetes.manent_render", task_vars))
            return result
        result.update(controller_task.run(self, task_vars, "manent_render", ARGUMENT_SPEC, render_task.run))
        return result
