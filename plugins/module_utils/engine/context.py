# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the planner (plan.py), the writer (write.py) and the dry run (dry_run.py) of one deploy work with
(:class:`DeployContext`): the connection, the live reader, applier and deleter built on it once by the Deployer
(deploy.py), and the deploy's options; with the history store of a release and the prune they all do the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import default_holder
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import prune
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore


@dataclass(frozen=True)
class DeployContext:
    """``kube`` and ``discovery`` of one cluster, the ``reader`` (cluster/live.py), ``applier`` (apply.py) and
    ``deleter`` (delete.py) sharing that reader, and ``options`` (deploy.DeployOptions)."""

    kube: object
    discovery: object
    reader: object
    applier: object
    deleter: object
    options: object

    @property
    def dry_run(self):
        return self.options.apply.dry_run

    def store(self, namespace, key):
        """The history of release ``key`` in ``namespace``, locked (when it writes) as this deploy's holder."""
        return HistoryStore(self.kube, namespace, key, holder=self.options.holder or default_holder())

    def prune(self, old_objects, new_objects, key, result=None):
        """Delete objects of the previous release that the new one no longer has (prune.py), those whose live copy
        carries the labels of release ``key``; their refs. Each is noted in the change set of ``result``."""
        return prune.prune(self.deleter, old_objects, new_objects, key, changes=result.changes if result else None,
                           diff=self.options.apply.diff, salt=self.options.apply.salt)
