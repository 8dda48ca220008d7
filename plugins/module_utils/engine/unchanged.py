# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Objects a deploy need not apply: the one decision of the redeploy fast path.

An object is *unchanged* (reported so, without a PATCH) only when all of these hold, anything else or
anything uncertain leaving it to server-side apply, which stays the source of truth:

1. its desired state equals the copy the release in service stored in history (``baseline``; release
   annotations are carried over before, see carry.py), and no delete policy recreates it on every deploy;
2. its live object, read with one paged LIST per kind and namespace selected by the release labels, still
   carries those labels and is not being deleted;
3. the managedFields entry of field manager ``manent`` (operation Apply, same apiVersion) owns *exactly*
   the fields of the desired object: every desired field, and no other (a field removed from the manifest
   that manent still owns would be removed by an apply: not unchanged);
4. the live object holds every desired value. Only fields present in the desired object are compared, so
   server defaults do not count; lists must have the same length, associative list items are matched by the
   key the server recorded in managedFields, atomic lists and maps (owned as a whole) must be equal.

Secrets are compared by sha256 digests of their values: a listed Secret's values are replaced by their
digests as soon as the page is read, and neither values nor digests appear in any result or message.

A deploy lists the candidates of all its tiers at once, before its first write (:meth:`UnchangedFinder.snapshot`:
the LISTs run concurrently, and the owner check reads only the objects they did not find). The tiers decide
from that snapshot only as long as the deploy has written nothing and waited for nothing since: the first
object applied, recreated or deleted, or the first wait, ends it (``Applier.forget_snapshot``), and the
following tiers list again, as each tier did before.
"""

from __future__ import annotations

import base64
import hashlib
import json

from ansible_collections.manent.kubernetes.plugins.module_utils.base.pages import list_items
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import FIELD_MANAGER, owner_of
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import concurrently
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of, metadata, namespace_of

_IDENTITY = ("apiVersion", "kind")
_META_IDENTITY = ("name", "namespace")
_SECRET_VALUES = ("data", "stringData")


def is_secret(obj):
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def rendered_differently(objects, baseline):
    """The objects (in order) whose copy stored by the release in service differs from them although both were
    rendered from the same artifact, version and parameters (the same deploy id): the chart makes values when
    it renders (random strings, generated certificates, or ``lookup``, which answers empty when manent renders).
    Objects recreated at every deploy (delete policy before-creation) and objects not stored are left out."""
    stored = {key_of(o): o for o in baseline or []}
    out = []
    for obj in objects:
        copy = stored.get(key_of(obj))
        if copy is not None and copy != obj and not recreated_each_deploy(obj):
            out.append(obj)
    return out


def recreated_each_deploy(obj):
    """Delete policy before-creation: deleted and created again at every deploy, whatever its stored copy."""
    return lifecycle.BEFORE_CREATION in lifecycle.delete_policies(obj)


class UnchangedFinder:
    """Finds the objects of a tier that need no apply. ``baseline``: the stored objects of the release in
    service (None or empty: nothing is unchanged); ``reader``: a LiveReader (its kube, discovery, path)."""

    def __init__(self, reader, baseline, manager=FIELD_MANAGER):
        self.reader = reader
        self.manager = manager
        self.baseline = {key_of(o): o for o in baseline or []}

    def candidates(self, objects):
        """The objects that may be unchanged: equal to their stored copy, of a served kind, labelled with a
        release, without delete policy before-creation."""
        out = []
        for obj in objects:
            stored = self.baseline.get(key_of(obj))
            if stored is None or stored != obj or owner_of(obj) is None:
                continue
            if recreated_each_deploy(obj):
                continue
            if not self.reader.discovery.served(obj.get("apiVersion"), obj.get("kind")):
                continue
            out.append(obj)
        return out

    def snapshot(self, candidates):
        """The :class:`Snapshot` of ``candidates`` (what :meth:`candidates` answered), read now (one LIST per kind,
        namespace and release, all at once)."""
        live, listed = self.read(candidates, with_listed=True)
        return Snapshot(live, listed)

    def find(self, objects, snapshot=None):
        """(keys of the unchanged objects, {key: live} of the other listed objects that are not Secrets).
        The second map spares apply a GET; Secrets are never handed on (their values were replaced).
        ``snapshot``: live copies read before (only those it listed are taken from it, the others are read)."""
        candidates = self.candidates(objects)
        if not candidates:
            return set(), {}
        if snapshot is None:
            live = self.read(candidates)
        else:
            keys = [key_of(o) for o in candidates]
            live = {k: snapshot.live.get(k) for k in keys if k in snapshot.listed}
            live.update(self.read([o for o, k in zip(candidates, keys) if k not in snapshot.listed]))
        unchanged, known = set(), {}
        for obj in candidates:
            key = key_of(obj)
            found = live.get(key)
            if found is None:
                continue
            if holds(obj, found, self.manager):
                unchanged.add(key)
            elif not is_secret(obj):
                known[key] = found
        return unchanged, known

    def read(self, objects, with_listed=False):
        """{key: live} of ``objects``: one paged LIST per kind, namespace and release (label selector); a LIST
        that fails (not allowed, or an API error left after the client's retries) leaves its objects unknown:
        they are applied, and the apply reports the error if there is one. ``with_listed``: also the keys of
        the objects whose LIST succeeded (those absent from the map do not exist with the release's labels)."""
        groups = {}
        for obj in objects:
            selector = owner_of(obj).selector()
            groups.setdefault((obj["apiVersion"], obj["kind"], namespace_of(obj), selector), []).append(obj)

        def read(unit):
            (_api_version, _kind, _namespace, selector), members = unit
            try:
                return members, self._list(members[0], selector)
            except ApiError:
                return members, None  # not allowed, gone, or the server failed: apply says what it is

        out, listed = {}, set()
        for members, items in concurrently(read, list(groups.items()), self.reader.concurrency):
            wanted = {key_of(o) for o in members}
            if items is None:
                continue
            listed.update(wanted)
            for item in items:
                item.setdefault("apiVersion", members[0]["apiVersion"])
                item.setdefault("kind", members[0]["kind"])
                key = key_of(item)
                if key in wanted:
                    out[key] = item
        return (out, listed) if with_listed else out

    def _list(self, first, selector):
        subject = "/".join(p for p in (first["kind"], namespace_of(first)) if p)
        items = list(list_items(self.reader.kube, self.reader.path(first, with_name=False),
                                {"labelSelector": selector}, subject=subject))
        if is_secret(first):
            for item in items:
                digest_values(item)
        return items


class Snapshot:
    """Live copies of a deploy's candidates read before its first write: ``live`` ``{key: live object}`` (Secrets
    with their values replaced by digests), ``listed`` the keys whose LIST succeeded (a listed key absent from
    ``live`` has no live object with the release's labels)."""

    def __init__(self, live, listed):
        self.live = live
        self.listed = listed


# ---------------------------------------------------------------------- Secrets


def _digest(text):
    return "sha256:" + hashlib.sha256(str(text).encode("utf-8")).hexdigest()


def digest_values(secret):
    """Replace the values of a live Secret's ``data`` (base64 text) by their digests, in place."""
    data = secret.get("data")
    if isinstance(data, dict):
        secret["data"] = {k: _digest(v) for k, v in data.items()}
    secret.pop("stringData", None)
    return secret


def _desired_digests(obj):
    """{key: digest of the base64 value} of a desired Secret's data and stringData; None when a key is in both
    or a value is not text."""
    out = {}
    for k, v in (obj.get("data") or {}).items():
        if not isinstance(v, str):
            return None
        out[k] = _digest(v)
    for k, v in (obj.get("stringData") or {}).items():
        if k in out or not isinstance(v, str):
            return None
        out[k] = _digest(base64.b64encode(v.encode("utf-8")).decode("ascii"))
    return out


# ---------------------------------------------------------------------- the decision


def holds(desired, live, manager=FIELD_MANAGER):
    """True when ``live`` needs no apply of ``desired``: it carries the same release labels, is not being
    deleted, ``manager``'s Apply entry owns exactly the desired fields and every desired value is live."""
    owner = owner_of(live)
    if metadata(live).get("deletionTimestamp") or owner is None or owner != owner_of(desired):
        return False
    entry = _apply_entry(live, manager, desired.get("apiVersion"))
    if entry is None:
        return False
    fields = entry.get("fieldsV1")
    if not isinstance(fields, dict):
        return False
    body = {k: v for k, v in desired.items() if k not in _IDENTITY}
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in _META_IDENTITY}
    if meta:
        body["metadata"] = meta
    else:
        body.pop("metadata", None)
    if is_secret(desired):
        fields = dict(fields)
        for name in _SECRET_VALUES:
            if not _owns_keys(fields.pop("f:" + name, None), body.pop(name, None)):
                return False
        wanted = _desired_digests(desired)
        have = live.get("data") or {}
        if wanted is None or any(have.get(k) != v for k, v in wanted.items()):
            return False
    return _match(body, fields, live)


def _apply_entry(live, manager, api_version):
    """The one managedFields entry of ``manager`` with operation Apply on the main resource, in
    ``api_version``; None when there is none, more than one, or it is of another version."""
    entries = [e for e in metadata(live).get("managedFields") or []
               if isinstance(e, dict) and e.get("manager") == manager and e.get("operation") == "Apply"
               and not e.get("subresource")]
    if len(entries) != 1 or entries[0].get("apiVersion") != api_version or \
            entries[0].get("fieldsType", "FieldsV1") != "FieldsV1":
        return None
    return entries[0]


def _owns_keys(fields, values):
    """True when a Secret's data/stringData fieldset names exactly the keys of ``values`` (both may be absent)."""
    if not values:
        return not fields
    if not isinstance(values, dict) or not isinstance(fields, dict):
        return False
    return {k for k in fields if k != "."} == {"f:" + k for k in values} and \
        all(fields["f:" + k] == {} for k in values)


def _match(desired, fields, live):
    """True when the fieldset ``fields`` owns exactly ``desired`` and ``live`` holds every desired value."""
    if not isinstance(fields, dict):
        return False
    if isinstance(desired, dict):
        if not fields:  # owned as a whole (atomic map), or an empty map: must be equal
            return _equal(desired, live)
        if not isinstance(live, dict):
            return False
        children = {k for k in fields if k != "."}
        if children != {"f:" + k for k in desired}:
            return False
        return all(k in live and _match(v, fields["f:" + k], live[k]) for k, v in desired.items())
    if isinstance(desired, list):
        if not fields:  # atomic list
            return _equal(desired, live)
        return _match_list(desired, fields, live)
    if fields:  # a scalar owned with children: not a shape we know
        return False
    return _equal(desired, live)


def _match_list(desired, fields, live):
    """An associative (``k:``) or set (``v:``) list: same length as live, each item matched to the entry
    the server recorded for it, no entry left over."""
    if not isinstance(live, list) or len(live) != len(desired):
        return False
    entries = {}
    for name, sub in fields.items():
        if name == ".":
            continue
        if name[:2] not in ("k:", "v:"):
            return False  # i: (positional) or unknown entries: uncertain
        try:
            entries[name] = (name[:1], json.loads(name[2:]), sub)
        except ValueError:
            return False
    if len(entries) != len(desired):
        return False
    used = set()
    for want, have in zip(desired, live):
        name = _entry_for(want, have, entries, used)
        if name is None:
            return False
        used.add(name)
        kind, _value, sub = entries[name]
        if kind == "k" and not _match(want, sub, have):
            return False
        if kind == "v" and (sub or not _equal(want, have)):
            return False
    return True


def _entry_for(want, have, entries, used):
    for name, (kind, value, _sub) in entries.items():
        if name in used:
            continue
        if kind == "k" and isinstance(want, dict) and isinstance(have, dict) and isinstance(value, dict) and \
                value and all(k in have and _equal(v, have[k]) for k, v in value.items()):
            return name
        if kind == "v" and not isinstance(want, (dict, list)) and _equal(value, want):
            return name
    return None


def _equal(a, b):
    """Deep equality that does not take True for 1 or "1" for 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)):
        return isinstance(b, (int, float)) and a == b
    if a is None or b is None:
        return False
    return type(a) is type(b) and a == b
