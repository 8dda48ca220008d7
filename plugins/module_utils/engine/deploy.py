# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One deploy of one bundle to one cluster (docs/requirements.md §7 steps 3-6, §10); :class:`Deployer` is the public
entry, for rollback (rollback.py) too. It builds the connection's live reader, applier and deleter once, in a
:class:`DeployContext` (context.py), and hands a deploy to the planner (plan.py), then to the writer (write.py) or,
in check mode, the dry run (dry_run.py), each working with that context.

Order: validate (credentials, version, record size, objects of another release: see owners.py) ->
Namespaces -> a dry run of every object that will be written (Applier.verify: a refusal stops the deploy
here) -> save the release in history (pending, under a lock) -> the pre stage (objects with
``deploy-on: pre-<phase>``, applied and waited for; stages.py) -> remaining tiers of the main objects (CRDs
Established before their resources) -> wait for all workloads at once -> the post stage -> prune -> mark the
release in service, clean up history. Inside a stage objects go in groups of ascending weight. A failure
after the record was saved marks it failed; the in-service pointer only moves after a successful rollout. A
rerun of the release in service (same version and deploy id) writes no history at all, unless objects rendered
differently from their stored copies (then the record is rewritten). The version in service deployed again
(another deploy id, or such a rendering) keeps its record, objects and status until its rollout succeeded:
before the first write the record lists the objects the redeploy adds (prunable if it fails), and only a
success replaces it. It also keeps the version it replaced: a rollback returns to that one, never to itself. A
traffic release (``bundle.slot``) becomes the candidate, not the release in service, and prunes nothing of the
other slot.

In check mode (dry_run) every object is applied with dryRun=All and nothing, history included,
is written; objects in Namespaces that the bundle itself would create are counted as skipped.

Every error raised once the deploy has a result carries it as ``partial`` (a :class:`DeployResult`, status
failed), so modules report what was done before the failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import default_holder
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import LiveReader
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import rollback
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.apply import Applier, ApplyOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.carry import carry_release_annotations
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import change_warnings
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.context import DeployContext
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.delete import DeleteOptions, Deleter
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.dry_run import DryRun
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.plan import Planner, slot_rerun_result
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.result import DeployResult
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.write import Writer

__all__ = ("Deployer", "DeployOptions", "DeployResult", "carry_release_annotations", "change_warnings",
           "default_holder")


@dataclass
class DeployOptions:
    apply: ApplyOptions = field(default_factory=ApplyOptions)
    wait: bool = True
    wait_timeout: float = 300.0
    prune: bool = False
    keep_releases: int = 5
    break_lock: bool = False
    holder: str = ""
    helm_migrate_release: str = ""
    create_namespace: bool = False
    adopt: bool = False
    on_progress: object = None


class Deployer:
    """Deploys bundles to one cluster: ``deploy`` (plan, then write or dry run) and ``rollback``. The live reader,
    applier and deleter are built once, in its :class:`DeployContext` (context.py), which the planner, the writer
    and the dry run work with."""

    def __init__(self, kube, discovery, options=None):
        options = options or DeployOptions()
        reader = LiveReader(kube, discovery, options.apply.concurrency)
        deleter = Deleter(kube, discovery, reader, DeleteOptions(dry_run=options.apply.dry_run,
                                                                 timeout=options.apply.delete_timeout))
        applier = Applier(kube, discovery, options.apply, reader=reader, deleter=deleter)
        self.context = DeployContext(kube=kube, discovery=discovery, reader=reader, applier=applier, deleter=deleter,
                                     options=options)

    def deploy(self, bundle, phase=None, previous_objects=None, replaced=None, anchor=True):
        """Deploy ``bundle``. ``previous_objects`` overrides what it may prune (default: from history),
        ``replaced`` the release recorded as replaced (default: the one in service); without ``anchor`` its record
        is written without anchoring it (history/anchor.py: a rollback of a record the anchor did not vouch for)."""
        context = self.context
        planner = Planner(context)
        plan = planner.plan(bundle, phase, previous_objects, replaced)
        plan.store.anchor_records(anchor)
        if plan.slot_rerun:
            return slot_rerun_result(plan, context.dry_run)
        try:
            planner.check(plan)
            if not context.dry_run and not plan.noop:
                plan.store.prepare_record(bundle.release, bundle.objects, plan.meta)  # size check before writing
            if context.dry_run:
                return DryRun(context).run(plan)
            return Writer(context).write(plan)
        finally:
            context.applier.known.forget_snapshot()
            context.applier.known.forget_absent()
            context.applier.applied.clear()

    def rollback(self, namespace, key, to_version=None):
        """Re-apply the stored objects of the previous release (or ``to_version``): rollback.py, docs/requirements.md
        §8."""
        return rollback.rollback(self, namespace, key, to_version=to_version)
