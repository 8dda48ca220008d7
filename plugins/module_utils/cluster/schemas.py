# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The field types of every object, checked against the schemas the cluster publishes, before the first write.

The API server refuses a server-side apply whose object does not fit the kind's schema ("failed to create typed
patch object": a number where a string is expected, a field the kind does not have, two list entries with the
same key; "illegal base64 data" in a Secret): by then a deploy has created its namespace and saved its release
in history. The same rules are checked here on the rendered objects, against the OpenAPI v3 documents of the
cluster itself (``/openapi/v3``: built-in kinds at the cluster's version and the CRDs installed there), so such a
release stops at render, naming the object and the field, with nothing written.

The check only refuses what the server refuses: null is accepted anywhere, a field without a type (or a union
other than of plain types) accepts anything, an object with no declared properties (RawExtension) or with
``x-kubernetes-preserve-unknown-fields`` accepts unknown fields, integral floats pass for integers. Formats,
enums, patterns and required fields are left to the server (a mutating webhook may fill them). Values are never
shown in messages (an env value or a Secret's data may be a secret): only their type.

Requests: the index (``/openapi/v3``: one small document naming each group version's schema with a content hash)
is cached in the work directory with discovery's TTL; each group version's document is cached there by its hash
(its content never changes), reduced to what the check reads. A problem found with a cached index is checked again with a
fresh one (a CRD may have gained the field a moment ago). A server that does not publish the documents, or
refuses them, is not checked (the server still refuses at apply).
"""

from __future__ import annotations

import binascii
import base64
import json
import os
import threading
import time

from ansible_collections.manent.kubernetes.plugins.module_utils.base.cache_files import read_fresh, write_json
from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import sha256_text
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, NotFoundError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import split_api_version

INDEX_TTL = 600  # as discovery's (discovery.CACHE_TTL)
MAX_PER_OBJECT = 10
_REF_PREFIX = "#/components/schemas/"
_MAX_DEPTH = 100


class Schemas:
    """The OpenAPI v3 schemas of one cluster, read at most once per run and group version."""

    def __init__(self, kube, cache_dir=None, ttl=INDEX_TTL):
        self.kube = kube
        self.cache_dir = cache_dir
        self.ttl = ttl
        self.index_source = None  # "cache", "server", or "none" (not published or not readable)
        self.notes = []
        self._index = None
        self._documents = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- reading

    def _path(self, name):
        return os.path.join(self.cache_dir, name) if self.cache_dir else None

    @staticmethod
    def _write(path, data):
        if not path:
            return
        try:
            write_json(path, data)
        except OSError:
            pass  # a cache that cannot be written is read from the server next time

    def _load_index(self, fresh=False):
        path = self._path("openapi-v3-%s.json" % sha256_text(self.kube.url)[:16])
        cached = None if fresh else read_fresh(path, self.kube.url, self.ttl)
        if cached is not None:
            try:
                paths = dict(cached["paths"])
                self.index_source = "cache"
                return paths
            except (ValueError, KeyError, TypeError):
                pass
        try:
            doc = self.kube.get_json("/openapi/v3", subject="OpenAPI v3 index")
        except ApiError as exc:
            if not isinstance(exc, NotFoundError) and exc.status not in (401, 403, 404, 406):
                self.notes.append("the field types were not checked: the cluster's OpenAPI v3 index could not "
                                  "be read (%s); the API server checks them at apply" % exc.message)
            self.index_source = "none"
            return {}
        paths = {}
        for name, entry in ((doc or {}).get("paths") or {}).items():
            url = entry.get("serverRelativeURL") if isinstance(entry, dict) else None
            if isinstance(url, str) and url.startswith("/openapi/v3/"):
                paths[name] = url
        self.index_source = "server"
        self._write(path, {"time": time.time(), "url": self.kube.url, "paths": paths})
        return paths

    def index(self):
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = self._load_index()
        return self._index

    def refresh(self):
        """Read the index from the server (the cached one may predate a CRD change); True when it changed."""
        with self._lock:
            before = self._index
            self._index = self._load_index(fresh=True)
            return self._index != before

    def _document(self, gv_path):
        """{(group, version, kind): schema name}, components of one group version; None when not published."""
        url = self.index().get(gv_path)
        if url is None:
            return None
        if url in self._documents:
            return self._documents[url]
        path = self._path(os.path.join("openapi-v3", sha256_text(url)[:32] + ".json"))
        doc = None
        if path and os.path.exists(path):
            try:
                with open(path) as f:
                    doc = json.load(f)
            except (OSError, ValueError):
                doc = None
        if doc is None:
            route, _sep, query = url.partition("?")
            params = dict(part.partition("=")[::2] for part in query.split("&") if part)
            try:
                raw = self.kube.get_json(route, query=params or None, subject="OpenAPI v3 %s" % gv_path)
            except ApiError as exc:
                self.notes.append("the field types of %s were not checked: its OpenAPI v3 document could not be "
                                  "read (%s)" % (gv_path, exc.message))
                self._documents[url] = None
                return None
            found = ((raw or {}).get("components") or {}).get("schemas") or {}
            doc = {"schemas": {name: _compact(schema) for name, schema in found.items()}}
            self._write(path, doc)
        kinds = {}
        for name, schema in doc["schemas"].items():
            for gvk in (schema.get("x-kubernetes-group-version-kind") or []) if isinstance(schema, dict) else []:
                if isinstance(gvk, dict):
                    kinds[(gvk.get("group") or "", gvk.get("version") or "", gvk.get("kind") or "")] = name
        self._documents[url] = (kinds, doc["schemas"])
        return self._documents[url]

    def schema(self, api_version, kind):
        """(schema of the kind, components), or None when the cluster publishes none for it."""
        group, version = split_api_version(api_version)
        found = self._document("apis/%s/%s" % (group, version) if group else "api/%s" % version)
        if found is None:
            return None
        kinds, components = found
        name = kinds.get((group, version, kind))
        return None if name is None else (components[name], components)

    # ---------------------------------------------------------------- checking

    def problems(self, obj):
        """What the API server would refuse in the fields of ``obj`` (messages naming the field), [] when it fits
        or its kind has no published schema."""
        found = self.schema(obj.get("apiVersion") or "", obj.get("kind") or "")
        if found is None:
            return []
        root, components = found
        out = []
        _check(obj, root, components, "", out, 0)
        return out


_KEPT = ("type", "$ref", "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-list-type",
         "x-kubernetes-list-map-keys", "x-kubernetes-group-version-kind")


def _compact(node):
    """The parts of a schema node that the check reads (about a tenth of the document: no descriptions, enums,
    patterns or examples)."""
    if not isinstance(node, dict):
        return node
    out = {key: node[key] for key in _KEPT if key in node}
    if node.get("format") in ("int-or-string", "byte"):
        out["format"] = node["format"]
    default = node.get("default")
    if isinstance(default, (str, int, float, bool)):
        out["default"] = default
    if isinstance(node.get("properties"), dict):
        out["properties"] = {name: _compact(sub) for name, sub in node["properties"].items()}
    if "additionalProperties" in node:
        extra = node["additionalProperties"]
        out["additionalProperties"] = _compact(extra) if isinstance(extra, dict) else extra
    if "items" in node:
        out["items"] = _compact(node["items"])
    for key in ("allOf", "oneOf", "anyOf"):
        if isinstance(node.get(key), list):
            out[key] = [_compact(sub) for sub in node[key]]
    return out


def _resolve(node, components):
    """The schema node itself, following $ref (and the allOf: [{$ref}] of nested built-in types); None: any."""
    for _hop in range(_MAX_DEPTH):
        if not isinstance(node, dict):
            return None
        ref = node.get("$ref")
        if ref is None:
            all_of = node.get("allOf")
            if ("type" in node or "properties" in node or not isinstance(all_of, list) or len(all_of) != 1
                    or not isinstance(all_of[0], dict) or "$ref" not in all_of[0]):
                return node
            ref = all_of[0]["$ref"]
        if not isinstance(ref, str) or not ref.startswith(_REF_PREFIX):
            return None
        node = components.get(ref[len(_REF_PREFIX):])
    return None


_NAMES = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"), (dict, "a mapping"),
          (list, "a list"))  # bool before int: True is an int in Python


def _a(value):
    return next((name for kind, name in _NAMES if isinstance(value, kind)), type(value).__name__)


def _is_integer(value):
    return not isinstance(value, bool) and (isinstance(value, int) or (isinstance(value, float) and value.is_integer()))


def _is_number(value):
    return not isinstance(value, bool) and isinstance(value, (int, float))


_FITS = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}
_EXPECTED = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
             "object": "a mapping", "array": "a list"}


def _hint(expected, value):
    if expected == "a string" and isinstance(value, (bool, int, float)):
        return " (quote it in the manifest)"
    if expected in ("an integer", "a number", "true or false") and isinstance(value, str):
        return " (remove the quotes in the manifest)"
    return ""


def _wrong(out, path, expected, value):
    out.append("%s: expected %s, got %s%s" % (path or "(the object)", expected, _a(value), _hint(expected, value)))


def _check(value, node, components, path, out, depth):
    if len(out) >= MAX_PER_OBJECT or depth > _MAX_DEPTH or value is None:
        return
    node = _resolve(node, components)
    if node is None:
        return
    if node.get("x-kubernetes-int-or-string") or node.get("format") == "int-or-string":
        if not (isinstance(value, str) or _is_integer(value)):
            _wrong(out, path, "an integer or a string", value)
        return
    kind = node.get("type")
    if kind is None:
        union = node.get("oneOf") or node.get("anyOf")
        if isinstance(union, list) and union:
            types = [u.get("type") if isinstance(u, dict) else None for u in union]
            if all(t in _FITS for t in types) and not any(_FITS[t](value) for t in types):
                _wrong(out, path, " or ".join(_EXPECTED[t] for t in types), value)
            return
        if "properties" not in node:
            return  # no type: anything
        kind = "object"
    fits = _FITS.get(kind)
    if fits is None:
        return
    if not fits(value):
        _wrong(out, path, _EXPECTED[kind], value)
        return
    if kind == "string":
        if node.get("format") == "byte" and not _base64(value):
            out.append("%s: is not valid base64 (standard alphabet, padded with '=')" % path)
    elif kind == "object":
        _check_object(value, node, components, path, out, depth)
    elif kind == "array":
        items = node.get("items")
        for i, item in enumerate(value):
            _check(item, items, components, "%s[%d]" % (path, i), out, depth + 1)
        if node.get("x-kubernetes-list-type") == "map":
            _check_keys(value, node, _resolve(items, components), path, out)


def _check_object(value, node, components, path, out, depth):
    props = node.get("properties")
    props = props if isinstance(props, dict) else {}
    extra = node.get("additionalProperties")
    open_ = (node.get("x-kubernetes-preserve-unknown-fields") is True or extra is True
             or (not props and not isinstance(extra, dict) and extra is not False))
    for key, item in value.items():
        where = "%s.%s" % (path, key) if path else str(key)
        if key in props:
            _check(item, props[key], components, where, out, depth + 1)
        elif isinstance(extra, dict):
            _check(item, extra, components, where, out, depth + 1)
        elif not open_:
            out.append("%s: no such field in this kind (check its spelling and indentation against `kubectl "
                       "explain`)" % where)
        if len(out) >= MAX_PER_OBJECT:
            return


def _check_keys(items, node, item_schema, path, out):
    """Entries of a list keyed by x-kubernetes-list-map-keys (containers by name, ports by port and protocol)
    must be unique; a missing key takes the field's default, as the server does."""
    keys = node.get("x-kubernetes-list-map-keys")
    if not isinstance(keys, list) or not keys or not isinstance(item_schema, dict):
        return
    fields = item_schema.get("properties") if isinstance(item_schema.get("properties"), dict) else {}
    seen = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return
        values = []
        for key in keys:
            value = item.get(key)
            if value is None:
                value = (fields.get(key) or {}).get("default") if isinstance(fields.get(key), dict) else None
            values.append(value)
        if all(v is None for v in values):
            continue
        try:
            marker = json.dumps(values, sort_keys=True)
        except (TypeError, ValueError):
            continue
        if marker in seen:
            shown = ",".join("%s=%s" % (k, json.dumps(v)) for k, v in zip(keys, values) if v is not None)
            first = seen[marker]
            out.append("%s[%d]: the same key as %s[%d] (%s); each entry needs its own" % (path, i, path, first, shown))
        else:
            seen[marker] = i


def _base64(text):
    """As the API server decodes it (Go's standard encoding: line breaks are skipped, nothing else is)."""
    try:
        base64.b64decode(text.replace("\r", "").replace("\n", "").encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        return False
    return True
