# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""manent_history operation=rollback, from the task's parameters to its result, in one place.

Used by the module (``plugins/modules/manent_history.py``) and by its action plugin, which runs the same rollback
in the controller process when the connection is local so that it can print which workloads are still rolling
out while it waits (as manent_apply does).
"""

from __future__ import annotations

import dataclasses

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import apply_task, history_task
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import rollback
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common as mc
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.deploy import Deployer


def run(params, check_mode, diff, on_progress=None):
    """Roll the release key of ``params`` back (rollback.py); the module's result: the DeployResult, the per-object
    diffs in diff mode, then the release in service and the records. Raises ManentError."""
    options = dataclasses.replace(history_task.deploy_options(params, check_mode, diff), on_progress=on_progress)
    key = mc.release_key(params)
    kube, discovery = mc.open_cluster(params)
    try:
        deployer = Deployer(kube, discovery, options)
        result = rollback.rollback(deployer, params["namespace"], key, to_version=params.get("rollback_to"),
                                   converter=history_task.converter(params, discovery),
                                   restore_cluster_scoped=bool(params.get("restore_cluster_scoped")))
        out = apply_task.result_dict(result, diff)
        out.update(history_task.listing(deployer.store(params["namespace"], key)))
        return out
    finally:
        kube.close()
