# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action plugin of a manent module: with a local connection (inventory hosts are API servers, the work
happens on the controller anyway) the module's entry point (a tasks/*_task.py) runs in the controller's worker
process, which prints progress lines while it works and stops cleanly (controller_task.py); with another
connection, async, or no kubernetes package in the controller's Python, the module runs as usual, async
included."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task


class TaskAction(ActionBase):
    """Subclasses name their module (``NAME``) and its entry point (``TASK``: argument_spec(), run(params,
    check_mode, diff, on_progress))."""

    NAME = ""
    TASK = None
    _supports_async = True  # async runs the module

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._VALID_ARGS = frozenset(cls.TASK.argument_spec())

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if not controller_task.in_process(self):
            result.update(controller_task.run_module(self, "manent.kubernetes." + self.NAME, task_vars))
            return result
        result.update(controller_task.run(self, task_vars, self.NAME, self.TASK.argument_spec(), self.TASK.run))
        return result
