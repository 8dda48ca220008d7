# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Object identity helpers shared by every part of the engine.

A *ref* names one object: ``Kind/namespace/name`` (``Kind/name`` when cluster-scoped). The
*key* identifies it for duplicate detection and diffs: (group, kind, namespace, name); the
version is not part of the key because the same object is served under several versions.

:func:`served_kinds` is the one reader of which kinds a CustomResourceDefinition serves: the renderer accepts
custom resources whose CRD comes in the same artifact, check mode skips objects of kinds not served yet, and
apply waits until discovery serves them (crds.py).
"""

from __future__ import annotations

from collections import namedtuple

ObjectKey = namedtuple("ObjectKey", "group kind namespace name")

CRD_KIND = "CustomResourceDefinition"
CRD_GROUP = "apiextensions.k8s.io"


def split_api_version(api_version):
    """'apps/v1' -> ('apps', 'v1'); 'v1' -> ('', 'v1')."""
    api_version = api_version or ""
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


def group_of(obj):
    return split_api_version(obj.get("apiVersion"))[0]


def metadata(obj):
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def name_of(obj):
    return metadata(obj).get("name") or ""


def namespace_of(obj):
    return metadata(obj).get("namespace") or ""


def key_of(obj):
    return ObjectKey(group_of(obj), obj.get("kind") or "", namespace_of(obj), name_of(obj))


def ref(obj):
    """Kind/namespace/name, or Kind/name for cluster-scoped objects."""
    return ref_of_key(key_of(obj))


def ref_of_key(key):
    if key.namespace:
        return "%s/%s/%s" % (key.kind, key.namespace, key.name)
    return "%s/%s" % (key.kind, key.name)


def labels(obj):
    return metadata(obj).get("labels") or {}


def annotations(obj):
    return metadata(obj).get("annotations") or {}


class ServedKind(namedtuple("ServedKind", "group version kind plural namespaced")):
    """One kind in one served version of a CRD, as discovery will list it."""

    __slots__ = ()

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version)


def is_crd(obj):
    """True for a CustomResourceDefinition of apiextensions.k8s.io (any version)."""
    return (isinstance(obj, dict) and obj.get("kind") == CRD_KIND
            and str(obj.get("apiVersion", "")).startswith(CRD_GROUP + "/"))


def served_kinds(crd):
    """A :class:`ServedKind` for every served version of ``crd`` (``served`` defaults to true); none when the CRD
    names no kind. Versions without a name are skipped."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    kind = names.get("kind") or ""
    if not kind:
        return []
    group = spec.get("group") or ""
    plural = names.get("plural") or ""
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    return [ServedKind(group, version["name"], kind, plural, namespaced) for version in spec.get("versions") or []
            if isinstance(version, dict) and version.get("served", True) and version.get("name")]
