# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bundle file: the rendered, validated, ordered objects of one release for one cluster.

``manent_render`` writes it, ``manent_apply`` reads it: thousands of objects travel as a file path,
never through Ansible variables. JSON, one document::

    {"format": 1, "cluster": URL, "namespace": NS, "release": {...}, "artifact": {...},
     "objects": [...], "sources": [...], "hooks_skipped": [...], "warnings": [...],
     "deprecations": [...] (the warnings that name a deprecated apiVersion still served),
     "slot": "" or the traffic slot the objects were made for}
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey, is_label_value
from ansible_collections.manent.kubernetes.plugins.module_utils.render.manifests import validate_object

FORMAT = 1


@dataclass
class Bundle:
    release: Release
    namespace: str
    objects: list
    sources: list
    cluster: str = ""
    artifact: dict = field(default_factory=dict)
    hooks_skipped: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    slot: str = ""
    deprecations: list = field(default_factory=list)  # those of the warnings about a deprecated apiVersion

    def to_dict(self):
        k = self.release.key
        return {
            "format": FORMAT,
            "cluster": self.cluster,
            "namespace": self.namespace,
            "release": {"tenant": k.tenant, "application": k.application, "artifact": k.artifact,
                        "environment": k.environment, "version": self.release.version,
                        "deployment": self.release.deployment},
            "artifact": self.artifact,
            "objects": self.objects,
            "sources": self.sources,
            "hooks_skipped": self.hooks_skipped,
            "warnings": self.warnings,
            "deprecations": self.deprecations,
            "slot": self.slot,
        }

    def summary(self):
        counts = {}
        for obj in self.objects:
            counts[obj.get("kind")] = counts.get(obj.get("kind"), 0) + 1
        return {"objects": len(self.objects), "kinds": dict(sorted(counts.items())),
                "hooks_skipped": list(self.hooks_skipped), "warnings": list(self.warnings)}


def write(bundle, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # may hold Secret data
    with os.fdopen(fd, "w") as f:
        # dumps, not dump: json.dump encodes in Python, dumps with the C encoder (several times faster)
        f.write(json.dumps(bundle.to_dict(), separators=(",", ":"), sort_keys=True))
    os.replace(tmp, path)
    return path


def read(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as exc:
        raise InputError("cannot read bundle %s: %s" % (path, exc.strerror), subject="bundle",
                         hint="run manent_render first and pass its bundle path")
    except ValueError as exc:
        raise InputError("bundle %s is not valid JSON: %s" % (path, exc), subject="bundle")
    if not isinstance(data, dict):
        raise InputError("bundle %s is not a JSON object" % path, subject="bundle",
                         hint="run manent_render first and pass its bundle path")
    if data.get("format") != FORMAT:
        raise InputError("bundle %s has format %r, this collection reads %d" % (path, data.get("format"), FORMAT),
                         subject="bundle", hint="render again with the same collection version")
    _check(data, path)
    r = data["release"]
    release = Release(ReleaseKey(application=r["application"], artifact=r["artifact"],
                                 environment=r["environment"], tenant=r["tenant"]),
                      version=r["version"], deployment=r.get("deployment", ""))
    return Bundle(release=release, namespace=data["namespace"], objects=data["objects"],
                  sources=data.get("sources", []), cluster=data.get("cluster", ""),
                  artifact=data.get("artifact", {}), hooks_skipped=data.get("hooks_skipped", []),
                  warnings=data.get("warnings", []), slot=data.get("slot", ""),
                  deprecations=data.get("deprecations", []))


def _check(data, path):
    """A bundle is checked whole before manent_apply writes anything: it may have been edited since rendering."""
    where = "bundle %s" % path
    release = data.get("release")
    fields = ("application", "artifact", "environment", "tenant", "version")
    if not isinstance(release, dict) or not all(isinstance(release.get(k), str) for k in fields):
        raise InputError("%s: release must name application, artifact, environment, tenant and version" % where,
                         subject="bundle", hint="render the bundle again with manent_render")
    namespace = data.get("namespace")
    if not isinstance(namespace, str) or not is_label_value(namespace) or namespace != namespace.lower() \
            or "_" in namespace or "." in namespace:
        raise InputError("%s: namespace %r is not a valid namespace name" % (where, namespace), subject="bundle",
                         hint="render the bundle again with a valid namespace")
    objects = data.get("objects")
    if not isinstance(objects, list):
        raise InputError("%s: objects must be a list" % where, subject="bundle",
                         hint="render the bundle again with manent_render")
    sources = data.get("sources") or []
    for index, obj in enumerate(objects):
        source = sources[index] if index < len(sources) and isinstance(sources[index], str) else "object #%d" % index
        validate_object(obj, "%s: %s" % (where, source))
