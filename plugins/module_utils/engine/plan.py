# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning one deploy before any write: what is in service, the phase, the objects of this phase, what may be
pruned or is unchanged, whether it is a rerun, the rules a traffic release must respect (:class:`Planner`), and
the read-only checks sent together before the first write: owners, access, objects absent."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import together
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, InputError, ManentError, listing
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import is_crd, ref, served_kinds
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import access
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import owners, prune, stages, unchanged
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.carry import carry_release_annotations
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import SKIPPED, Change
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.result import DeployResult
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import is_secret
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle, slots
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.ordering import TIER_NAMESPACES, tier_of

INSTALL, UPGRADE, ROLLBACK = lifecycle.INSTALL, lifecycle.UPGRADE, lifecycle.ROLLBACK


@dataclass
class Plan:
    """One deploy, decided before any write: the bundle, its history, the objects of this phase, what it may
    prune, whether it is a rerun of the deployed release (``noop``), and how far the writes got."""

    bundle: object
    store: object
    phase: str
    result: DeployResult
    selected: list
    stages: list
    previous_objects: list
    noop: bool
    replaced: str
    create_ns: bool
    started: float
    locked: bool = False
    saved: bool = False
    saving: bool = False  # the record was being saved: a stop may leave it written although saving did not return
    slot_rerun: bool = False  # the traffic release in service deployed again (same deploy id) to its own slot
    # the version in service deployed again (other deploy id, or a changed rendering): its record keeps what is in
    # service until the redeploy succeeded (note_strays before the first write, the record at the end)
    redeploy: bool = False
    strays_noted: bool = False  # the redeploy listed objects it adds in the record in service
    located: dict = None  # the locator as planned from (compared again once the lock is held)

    @property
    def meta(self):
        return {"artifactSha256": self.bundle.artifact.get("sha256", ""), "replaced": self.replaced,
                "slot": self.bundle.slot}


class Planner:
    """Plans deploys with the connection, reader, applier and options of a DeployContext (context.py)."""

    def __init__(self, context):
        self.context = context

    def plan(self, bundle, phase, previous_objects, replaced):
        started = time.monotonic()
        store = self.context.store(bundle.namespace, bundle.release.key)
        # Three independent reads sent together (one round trip, not three, over a distant link). Their errors
        # come in this order: the version's first (credentials and reachability), then the namespace's, then
        # history's. The locator is one read: the release in service and the traffic candidate.
        _version, create_ns, located = together(self.context.kube.version,
                                                lambda: self._release_namespace(bundle, store), store.locator)
        located = located or {}
        current = store.in_service(located)
        same = same_release(current, located, bundle) and phase != ROLLBACK
        if not same:
            check_traffic_release(bundle, current, located)
        phase = phase or (INSTALL if current is None else UPGRADE)
        result = DeployResult(status="pending", namespace=bundle.namespace, release=bundle.release.version,
                              previous=(current or {}).get("version", ""), phase=phase,
                              warnings=list(bundle.warnings) + hook_warnings(bundle), slot=bundle.slot,
                              record=record_name(bundle.release.key, bundle.release.version),
                              hooks_skipped=list(bundle.hooks_skipped), host=getattr(self.context.kube, "url", ""),
                              application=bundle.release.key.application, environment=bundle.release.key.environment)
        if previous_objects is None:
            previous_objects = prune.candidates(store, current, secrets=any(is_secret(o) for o in bundle.objects),
                                                candidate=located.get("candidate"))
        if bundle.slot:  # a candidate's deploy never prunes the stable slot's (or an un-slotted release's) workloads
            previous_objects = slots.prunable_by(previous_objects, bundle.slot)
        carry_release_annotations(bundle.objects, previous_objects)
        # objects equal to these may need no apply (unchanged.py)
        self.context.applier.known.use_baseline(previous_objects)
        # A rerun of the release in service writes no history, unless it rendered objects differently from their
        # stored copies: those are applied again, and the record must hold what is live, or a rollback to this
        # version would restore the first rendering.
        slot_rerun = same and in_its_slot(current, bundle)
        regenerated = unchanged.rendered_differently(bundle.objects, previous_objects) \
            if same and not slot_rerun else None
        if regenerated:
            result.warnings.append(unstable_render_warning(regenerated))
        if replaced is None:
            replaced = replaced_version(current, located, bundle)
        selected = select(bundle.objects, phase, result)
        return Plan(bundle=bundle, store=store, phase=phase, result=result, selected=selected,
                    stages=stages.plan(selected, phase), previous_objects=previous_objects,
                    noop=slot_rerun or regenerated == [], replaced=replaced, create_ns=create_ns, started=started,
                    slot_rerun=slot_rerun, located=located,
                    redeploy=version_in_service(current, bundle) and not bundle.slot)

    def _release_namespace(self, bundle, store):
        """True when the release namespace must be created (create_namespace); a missing namespace that
        neither the bundle nor the options create is an error before any write. The Namespace read goes to
        ``store`` (whether the release key has anchors: history/anchor.py)."""
        if any(o.get("kind") == "Namespace" and o.get("apiVersion") == "v1" and
               (o.get("metadata") or {}).get("name") == bundle.namespace for o in bundle.objects):
            return False
        try:
            store.know_namespace(self.context.kube.get_json("/api/v1/namespaces/%s" % bundle.namespace,
                                                            subject="Namespace/%s" % bundle.namespace))
            return False
        except ApiError as exc:
            if exc.status != 404:  # e.g. 403 for a namespace-scoped Role: it cannot tell, so it goes on
                return False
            if self.context.options.create_namespace:
                return True
            raise InputError("the release namespace %s does not exist" % bundle.namespace,
                             subject="Namespace/%s" % bundle.namespace,
                             hint="add a Namespace object to the artifact, create the namespace, or set "
                                  "create_namespace: true; nothing was written")

    def check(self, plan):
        """The checks before any write, in check mode too. All three only read (LISTs, access reviews), so they are
        sent together; an object of another release is reported before a missing permission. The third learns
        which objects do not exist yet, for every tier at once (Applier.list_absent)."""
        # the objects that may be unchanged, decided once
        candidates = self.context.applier.known.candidates(plan.selected)
        together(lambda: self._check_owners(plan, candidates), lambda: self._check_access(plan),
                 lambda: self._list_absent(plan, candidates))

    def _check_access(self, plan):
        """Every object of this phase may be written by these credentials (access.py), before the first write."""
        try:
            access.check(self.context.kube, self.context.discovery, plan.selected)
        except ManentError as exc:
            plan.result.status = "failed"
            exc.partial = plan.result
            raise

    def _check_owners(self, plan, candidates):
        """No object belongs to another release (owners.py). The live copies of the objects that may be
        unchanged are read first, all kinds at once (unchanged.py): the owner check need not read again those
        listed with this release's labels, and the tiers decide from them until the first write."""
        result, key = plan.result, plan.bundle.release.key
        try:
            snapshot = self.context.applier.known.take_snapshot(candidates)
            result.adopted = owners.check(self.context.reader, plan.selected, key, adopt=self.context.options.adopt,
                                          rollback=plan.phase == ROLLBACK, known=snapshot.live if snapshot else None)
        except ManentError as exc:
            result.status = "failed"
            exc.partial = result
            raise
        result.warnings.extend(owners.warnings(result.adopted, key, self.context.dry_run))

    def _list_absent(self, plan, candidates):
        """Which objects of the tiers after the Namespaces do not exist yet (Applier.list_absent)."""
        self.context.applier.known.list_absent([o for o in plan.selected if tier_of(o) != TIER_NAMESPACES], candidates)


def crd_kinds(objects):
    """{(apiVersion, kind)} that the CustomResourceDefinitions among ``objects`` define."""
    return {(served.api_version, served.kind) for crd in objects if is_crd(crd) for served in served_kinds(crd)}


def select(objects, phase, result):
    """The objects applied in ``phase``; the others are recorded in ``result`` as skipped."""
    selected, skipped = [], []
    for obj in objects:
        (selected if lifecycle.applies_in(obj, phase) else skipped).append(obj)
    result.skipped = ["%s (deploy-on: not in %s)" % (ref(o), phase) for o in skipped]
    result.changes.extend(Change(ref(o), SKIPPED, reason="deploy-on excludes %s" % phase) for o in skipped)
    return selected


def hook_warnings(bundle):
    """One warning per Helm hook the renderer left out (helm_hooks: skip, or a test hook)."""
    return ["Helm hook not applied: %s; set helm_hooks: apply to run hooks as lifecycle stages (test hooks never "
            "apply)" % hook for hook in bundle.hooks_skipped]


def unstable_render_warning(regenerated):
    """The warning for a rerun of the release in service (same deploy id: same artifact, version and parameters)
    that rendered ``regenerated`` (objects) differently from their stored copies: each such rerun changes them
    again."""
    return ("%d object(s) rendered differently from the release in service although artifact, version and "
            "parameters are the same (%s): the artifact makes values when it is rendered (random strings, "
            "generated certificates or keys, or helm's lookup, which answers empty when manent renders), so every "
            "rerun changes them again (and rewrites the release's record with them); give such values explicitly "
            "(chart values, variables) to make a rerun a no-op"
            % (len(regenerated), listing([ref(o) for o in regenerated], 5)))


def check_traffic_release(bundle, current, located=None):
    """What a traffic release (``bundle.slot``) that is not a rerun must respect, before anything is written:
    - a version of its own: history keeps one record per version, so a candidate of the version in service would
      replace that release's record with the other slot's objects, and abort, rollback and prune would then work
      from the wrong slot;
    - the slot not in service: a bundle made for the slot in service (rendered before another release took that
      slot, or given that slot) would replace the serving objects under the route's weight;
    - no candidate receiving traffic (the weight its last step set, in the locator ``located``) replaced by another
      version: the new one would serve the share the old one was given, unchecked (slots.py, the rule
      manent_render's slot choice applies too)."""
    if not bundle.slot:
        return
    slots.refuse_replacing_a_live_candidate(located, bundle.release.version)
    in_service = version_in_service(current, bundle)
    if current and current.get("slot") == bundle.slot and not in_service:
        raise InputError("rendered for traffic slot %s, where version %s is in service now: a traffic release goes to "
                         "the slot not in service" % (bundle.slot, current["version"]),
                         subject="version %s" % bundle.release.version,
                         hint="render it again (manent_render chooses the slot from the history it reads), or give "
                              "the other slot; nothing was written")
    if in_service:
        raise InputError("version %s is already in service%s: a traffic release needs a version of its own (history "
                         "keeps one record per version, and the candidate's would replace the record of the release "
                         "in service)" % (bundle.release.version,
                                          " in slot %s" % current["slot"] if current.get("slot") else ""),
                         subject="version %s" % bundle.release.version,
                         hint="give this release a new version (e.g. a build suffix: %s-2), or deploy it with the "
                              "rolling strategy; nothing was written" % bundle.release.version)


def replaced_version(current, located, bundle):
    """The version the deployed ``bundle`` replaces (what a rollback returns to): the release in service, or,
    when ``bundle`` deploys the version in service again (other parameters, or a rendering that changed), the
    version that one replaced: a version never replaces itself."""
    if version_in_service(current, bundle):  # traffic: only a rerun in its own slot (_check_traffic_release)
        return located.get("replaced", "") or ""
    return (current or {}).get("version", "")


def same_release(current, located, bundle):
    """True when ``bundle`` is already deployed: the release in service or, for traffic, the candidate."""
    deployment = bundle.release.deployment
    if bundle.slot:
        return (located.get("candidate") == bundle.release.version and
                located.get("candidateDeployment") == deployment) or \
            (in_its_slot(current, bundle) and current.get("deployment") == deployment)
    return version_in_service(current, bundle) and current.get("deployment") == deployment


def slot_rerun_result(plan, dry_run):
    """The result of a rerun of the traffic release in service (same version and deploy id, its own slot): nothing
    is applied. Its slot's replicas and the route's weights belong to manent_traffic since the promotion (with
    proportional replicas the rendering starts workloads at 1 replica); applying the rendering again would undo
    them in production."""
    result = plan.result
    result.status = "checked" if dry_run else "deployed"
    reason = "in service in traffic slot %s: a rerun applies nothing" % plan.bundle.slot
    result.changes.extend(Change(ref(o), SKIPPED, reason=reason) for o in plan.selected)
    result.warnings.append("version %s (deploy %s) is already in service in traffic slot %s: nothing was applied; "
                           "deploy a new version to change it" % (plan.bundle.release.version,
                                                                  plan.bundle.release.deployment, plan.bundle.slot))
    result.timings = {"total": time.monotonic() - plan.started}
    return result


def in_its_slot(current, bundle):
    """True when ``bundle`` is the version in service, rendered for the slot it is in service in (manent_render
    chooses that slot for a rerun of the release in service: slots.choose_slot)."""
    return bool(bundle.slot) and version_in_service(current, bundle) and current.get("slot") == bundle.slot


def version_in_service(current, bundle):
    """True when ``bundle`` deploys the version in service (``current``: as HistoryStore.in_service gives it)."""
    return bool(current) and current.get("version") == bundle.release.version
