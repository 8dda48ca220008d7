# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_render: renders in the controller's worker process with a local connection: no module
process to start, no module payload to build, no second import of the collection and its libraries
(plugin_utils/task_action.py, docs/performance.md)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import render_task
from ansible_collections.manent.kubernetes.plugins.plugin_utils.task_action import TaskAction


class ActionModule(TaskAction):
    NAME = "manent_render"
    TASK = render_task
