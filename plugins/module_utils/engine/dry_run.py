# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check mode of a deploy (docs/requirements.md §10): every object applied with dryRun=All, tier by tier, and
nothing stored, history included; objects in Namespaces or of kinds that the release itself would create cannot
be verified and are counted as skipped (:class:`DryRun`). What the ``succeeded`` delete policies would delete once
each stage succeeded is listed, and nothing is deleted."""

from __future__ import annotations

import time

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, ManentError, NotFoundError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import namespace_of, ref
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import stages
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.changeset import SKIPPED, Change, change_warnings
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.plan import crd_kinds
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.ordering import TIER_NAMESPACES, tier_of


class DryRun:
    """Checks planned deploys with the connection, applier and options of a DeployContext (context.py)."""

    def __init__(self, context):
        self.context = context

    def run(self, plan):
        result, timings = plan.result, {}
        t = time.monotonic()
        checkable, skipped = self._verifiable(plan.bundle, plan.selected)
        verifiable = {id(obj) for obj in checkable}
        try:
            self.context.applier.apply_tier([o for o in checkable if tier_of(o) == TIER_NAMESPACES], result.changes)
            for stage in plan.stages:
                for _weight, objs in stage.groups:
                    self.context.applier.apply_group([o for o in objs if id(o) in verifiable], result.changes)
                stages.would_delete(stage, result.changes)
            for obj, why in skipped:
                result.changes.append(Change(ref(obj), SKIPPED, reason="not verifiable in check mode: %s" % why))
            result.objects_skipped = len(skipped)
            if self.context.options.prune:
                result.pruned = self.context.prune(plan.previous_objects, plan.bundle.objects, plan.bundle.release.key,
                                                   result)
            result.status = "checked"
        except ManentError as exc:
            result.status = "failed"
            exc.partial = result
            raise
        finally:
            timings["apply"] = time.monotonic() - t
            timings["total"] = time.monotonic() - plan.started
            result.timings = timings
            result.warnings.extend(change_warnings(result.changes))
        return result

    def _verifiable(self, bundle, selected):
        """(objects a dry run can check, [(object, why not)]): not those in Namespaces or of kinds (CRDs) that
        the release itself creates."""
        new_namespaces = self._new_namespaces(bundle, selected)
        new_kinds = {kind for kind in crd_kinds(selected) if not self.context.discovery.served(*kind)}
        checkable, skipped = [], []
        for obj in selected:
            if namespace_of(obj) in new_namespaces:
                skipped.append((obj, "namespace %s does not exist yet" % namespace_of(obj)))
            elif (obj.get("apiVersion"), obj.get("kind")) in new_kinds:
                skipped.append((obj, "kind %s %s is defined by a CustomResourceDefinition of this release that "
                                     "does not exist yet" % (obj.get("apiVersion"), obj.get("kind"))))
            else:
                checkable.append(obj)
        return checkable, skipped

    def _new_namespaces(self, bundle, selected):
        """Namespaces the deploy would create (create_namespace, Namespace objects) that do not exist yet."""
        out = set()
        if self.context.options.create_namespace:
            try:
                self.context.kube.get_json("/api/v1/namespaces/%s" % bundle.namespace)
            except NotFoundError:
                out.add(bundle.namespace)
            except ApiError:
                pass  # not allowed to read Namespaces: the dry run of each object will tell
        for obj in selected:
            if obj.get("kind") == "Namespace" and obj.get("apiVersion") == "v1":
                try:
                    self.context.kube.get_json("/api/v1/namespaces/%s" % obj["metadata"]["name"])
                except NotFoundError:
                    out.add(obj["metadata"]["name"])
        return out
