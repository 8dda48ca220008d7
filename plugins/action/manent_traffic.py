# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_traffic: the operation runs in the controller's worker process with a local connection
and prints what the workloads it waits for (proportional replicas, promote) are waiting for and since when, once
per change, as manent_apply and manent_history do (plugin_utils/task_action.py)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import traffic_task
from ansible_collections.manent.kubernetes.plugins.plugin_utils.task_action import TaskAction


class ActionModule(TaskAction):
    NAME = "manent_traffic"
    TASK = traffic_task
