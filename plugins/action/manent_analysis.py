# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_analysis: with a local connection the analysis runs in the controller process
(plugin_utils/controller_task.py: argument validation, the result of a failed verdict kept) and prints a line per
measurement while it waits (``manent_analysis [host]: error-ratio #2 (2/5 decided): Successful: ...``). With
another connection or async the module runs as usual. Credential values are masked in lines and result."""

from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import analysis_task
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task

display = Display()


def task_for(host):
    """The controller_task task of one host: progress lines name the module and the host."""

    def run(params, check_mode, _diff, _on_progress):
        def on_measurement(line):
            display.display("manent_analysis [%s]: %s" % (host, line))
        return analysis_task.run(params, check_mode=check_mode, on_measurement=on_measurement)
    return run


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(analysis_task.argument_spec())
    _supports_async = True  # async runs the module (below)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if self._connection.transport != "local" or self._task.async_val:
            result.update(controller_task.run_module(self, "manent.kubernetes.manent_analysis", task_vars))
            return result
        host = task_vars.get("inventory_hostname", "") if task_vars else ""
        out = controller_task.run(self, task_vars, "manent_analysis", analysis_task.argument_spec(), task_for(host))
        result.update(analysis_task.mask(out, analysis_task.given_secrets(self._task.args)))
        return result
