# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Object identity helpers shared by every part of the engine.

A *ref* names one object: ``Kind/namespace/name`` (``Kind/name`` when cluster-scoped). The
*key* identifies it for duplicate detection and diffs: (group, kind, namespace, name); the
version is not part of the key because the same object is served under several versions.
"""

from __future__ import annotations

from collections import namedtuple

ObjectKey = namedtuple("ObjectKey", "group kind namespace name")


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
