# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_apply: in the controller's worker process with a local connection, printing every 10
seconds of a rollout which workloads are still rolling out (plugin_utils/task_action.py)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import apply_task
from ansible_collections.manent.kubernetes.plugins.plugin_utils.task_action import TaskAction


class ActionModule(TaskAction):
    NAME = "manent_apply"
    TASK = apply_task
