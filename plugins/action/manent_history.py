# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_history: every operation in the controller's worker process with a local connection
(the role's checkpoint reads the release in service this way); operation=rollback prints, every 10 seconds of the
rollout, which workloads are still rolling out, as manent_apply does (plugin_utils/task_action.py)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import history_task
from ansible_collections.manent.kubernetes.plugins.plugin_utils.task_action import TaskAction


class ActionModule(TaskAction):
    NAME = "manent_history"
    TASK = history_task
