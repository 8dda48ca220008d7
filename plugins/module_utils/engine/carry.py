# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release annotations carried over: an object that did not change since the previous release keeps the
``manent.io/version`` and ``manent.io/deployment`` of the release that last changed it, so that applying it
again writes nothing (its resourceVersion stays)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import (
    ANNOTATION_DEPLOYMENT, ANNOTATION_VERSION)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of

RELEASE_ANNOTATIONS = (ANNOTATION_VERSION, ANNOTATION_DEPLOYMENT)


def carry_release_annotations(objects, previous_objects):
    """Objects whose content did not change since the previous release keep that release's
    ``manent.io/version`` and ``manent.io/deployment`` annotations: the annotations name the release that
    last changed the object, and an unchanged object is not rewritten (its resourceVersion stays)."""
    if not previous_objects:
        return
    before = {key_of(o): o for o in previous_objects}
    for obj in objects:
        old = before.get(key_of(obj))
        if old is None:
            continue
        old_ann = (old.get("metadata") or {}).get("annotations") or {}
        if _without_release_annotations(old) == _without_release_annotations(obj):
            ann = obj["metadata"].setdefault("annotations", {})
            for k in RELEASE_ANNOTATIONS:
                if k in old_ann:
                    ann[k] = old_ann[k]


def _without_release_annotations(obj):
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    ann = dict(meta.get("annotations") or {})
    for k in RELEASE_ANNOTATIONS:
        ann.pop(k, None)
    meta["annotations"] = ann
    out["metadata"] = meta
    return out
