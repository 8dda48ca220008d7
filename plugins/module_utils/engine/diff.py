# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Comparing objects without server noise, and redacting Secret data.

``normalize`` drops what the server changes on its own (managedFields, resourceVersion, uid,
creationTimestamp, generation, status, the last-applied annotation); ``redact`` replaces every
value of a Secret's ``data``/``stringData`` by a marker that only says whether it changed, so
diffs, results and errors never carry secret values.
"""

from __future__ import annotations

import base64
import copy

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core; the modules report its absence
    yaml = None
    HAS_YAML = False

from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import sha256_text

NOISE_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
REDACTED = "<redacted>"


def normalize(obj):
    if obj is None:
        return None
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.get("metadata") or {}
    for k in NOISE_METADATA:
        meta.pop(k, None)
    ann = meta.get("annotations")
    if ann and LAST_APPLIED in ann:
        ann = dict(ann)
        ann.pop(LAST_APPLIED)
        if ann:
            meta["annotations"] = ann
        else:
            meta.pop("annotations")
    return out


def is_secret(obj):
    return bool(obj) and obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def redact(obj, salt=""):
    """Copy of obj with Secret values replaced; equal values get equal markers within one salt so a
    diff still shows which keys changed, without revealing anything about the value."""
    if not is_secret(obj):
        return obj
    out = copy.deepcopy(obj)
    for field in ("data", "stringData"):
        values = out.get(field)
        if isinstance(values, dict):
            out[field] = {k: "%s %s" % (REDACTED, _fingerprint(salt, v)) for k, v in values.items()}
    ann = (out.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED in ann:
        ann[LAST_APPLIED] = REDACTED
    return out


def _fingerprint(salt, value):
    return sha256_text("%s\0%s" % (salt, value))[:8]


def to_yaml(obj):
    if obj is None:
        return ""
    return yaml.safe_dump(obj, default_flow_style=False, sort_keys=True)


def diff_entry(before, after, subject, salt):
    """An Ansible diff dict for one object (normalized, redacted)."""
    b = redact(normalize(before), salt)
    a = redact(normalize(after), salt)
    return {"before": to_yaml(b), "after": to_yaml(a),
            "before_header": "%s (live)" % subject if before else "%s (absent)" % subject,
            "after_header": "%s (applied)" % subject if after else "%s (deleted)" % subject}


def same(before, after):
    return normalize(before) == normalize(after)


def scrub_secret_values(obj, text):
    """``text`` (e.g. an API error about obj) with every value of a Secret's data/stringData replaced, in
    plain and base64 form: the API server quotes invalid values in its messages."""
    if not is_secret(obj) or not text:
        return text
    values = set()
    for field in ("data", "stringData"):
        for value in (obj.get(field) or {}).values():
            if isinstance(value, str) and len(value) >= 3:
                values.add(value)
                if field == "stringData":
                    values.add(base64.b64encode(value.encode()).decode())
                else:
                    try:
                        values.add(base64.b64decode(value, validate=True).decode())
                    except (ValueError, UnicodeDecodeError):
                        pass
    for value in sorted(values, key=len, reverse=True):
        if len(value) >= 3:
            text = text.replace(value, REDACTED)
    return text
