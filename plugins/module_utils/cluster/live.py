# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading live objects: one object by its served path (:meth:`LiveReader.get`), and the live copies of many
objects before anything is written (:meth:`LiveReader.read_live`: one GET each, or one metadata-only LIST per
kind and namespace holding many of them), and full objects of many kinds at once for the rollout wait
(:meth:`LiveReader.read_many`: one LIST per kind and namespace)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import CONCURRENCY, concurrently
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, ManentError, NotFoundError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.pages import list_items
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of, name_of, namespace_of, ref

# metadata only (no Secret data, no history payloads); a server without it answers plain JSON, also fine
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
LIST_FROM = 4  # objects of one kind in one namespace from which read_live LISTs instead of GETting each


class LiveReader:
    """Reads objects from the cluster; ``concurrency`` reads at once in :meth:`read_live`."""

    def __init__(self, kube, discovery, concurrency=CONCURRENCY):
        self.kube = kube
        self.discovery = discovery
        self.concurrency = concurrency

    def path(self, obj, with_name=True):
        """The API path of ``obj`` (of its kind's collection without ``with_name``), by its apiVersion."""
        return self.discovery.path(obj["apiVersion"], obj["kind"], namespace_of(obj) or None,
                                   name_of(obj) if with_name else None, subject=ref(obj))

    def get(self, obj):
        """The live object, or None when it does not exist."""
        try:
            return self.kube.get_json(self.path(obj), subject=ref(obj))
        except NotFoundError:
            return None

    def _groups(self, objects, served_only=False):
        """``objects`` grouped by apiVersion, kind and namespace (one list per group, in order of appearance);
        ``served_only``: leaving out kinds the cluster does not serve (yet)."""
        groups = {}
        for obj in objects:
            if not served_only or self.discovery.served(obj.get("apiVersion"), obj.get("kind")):
                groups.setdefault((obj["apiVersion"], obj["kind"], namespace_of(obj)), []).append(obj)
        return list(groups.values())

    def read_live(self, objects, selector=None, list_from=LIST_FROM):
        """The live copies of ``objects``, ``{key_of(obj): live}``, read concurrently before any write.

        Objects of one kind in one namespace are read with one GET each, or, from ``list_from`` of them, with
        one LIST of their metadata (paged, ``selector`` as label selector: objects it does not match are left
        out). Left out too, as unknown: objects that do not exist, kinds the cluster does not serve yet (a CRD
        of the release defines them), and what the credentials may not read (403; a LIST refused falls back
        to GETs), so that a namespace-scoped token that may apply is not stopped by a read it may not do."""
        units = []
        for members in self._groups(objects, served_only=True):
            if len(members) >= list_from:
                units.append((self._list_live, members, selector))
            else:
                units.extend((self._get_live, [obj], None) for obj in members)

        def read(unit):
            work, members, sel = unit
            try:
                return work(members, sel), None
            except ManentError as exc:
                return None, exc

        out = {}
        for found, exc in concurrently(read, units, self.concurrency):
            if exc is not None:
                raise exc
            out.update(found)
        return out

    def read_many(self, objects):
        """``{key_of(obj): live}`` of ``objects`` (those that do not exist are absent), full objects: one paged
        LIST per kind and namespace holding two or more of them (a LIST the credentials may not do falls back
        to GETs), one GET otherwise. Errors are raised as :meth:`get` raises them."""
        out = {}
        for members in self._groups(objects):
            if len(members) > 1:
                try:
                    out.update(self._list_full(members))
                    continue
                except ApiError as exc:
                    if exc.status != 403:
                        raise
            for obj in members:
                live = self.get(obj)
                if live is not None:
                    out[key_of(obj)] = live
        return out

    def _pages(self, first, selector="", accept="application/json"):
        """The items of the paged LIST of ``first``'s kind in its namespace (``selector``: label selector)."""
        subject = "/".join(p for p in (first["kind"], namespace_of(first)) if p)
        return list_items(self.kube, self.path(first, with_name=False), {"labelSelector": selector or None},
                          subject=subject, accept=accept)

    def _list_full(self, members):
        by_name = {name_of(obj): key_of(obj) for obj in members}
        out = {}
        for item in self._pages(members[0]):
            key = by_name.get((item.get("metadata") or {}).get("name"))
            if key is not None:
                item.setdefault("apiVersion", members[0]["apiVersion"])
                item.setdefault("kind", members[0]["kind"])
                out[key] = item
        return out

    def absent(self, objects, list_from=LIST_FROM):
        """Keys of ``objects`` known not to exist, learnt with one metadata-only LIST per kind and namespace
        holding ``list_from`` or more of them (served kinds only). Objects of smaller groups, and of a LIST that
        failed (not allowed, or an error left after the client's retries), are not known: the caller reads them
        one by one. A first install thus costs a few LISTs instead of one GET per object."""
        return self.existence(objects, list_from)[0]

    def existence(self, objects, list_from=LIST_FROM):
        """(absent, listed): as :meth:`absent`, with the keys of every object whose LIST answered (those not
        absent existed then)."""
        units = [members for members in self._groups(objects, served_only=True) if len(members) >= list_from]

        def names(members):
            try:
                return members, {(i.get("metadata") or {}).get("name")
                                 for i in self._pages(members[0], accept=METADATA_LIST_ACCEPT)}
            except ApiError:
                return members, None

        absent, listed = set(), set()
        for members, present in concurrently(names, units, self.concurrency):
            if present is not None:
                keys = [key_of(obj) for obj in members]
                listed.update(keys)
                absent.update(k for k, obj in zip(keys, members) if name_of(obj) not in present)
        return absent, listed

    def _get_live(self, members, _selector=None):
        out = {}
        for obj in members:
            try:
                live = self.get(obj)
            except ApiError as exc:
                if exc.status == 403:
                    continue
                raise
            if live is not None:
                out[key_of(obj)] = live
        return out

    def _list_live(self, members, selector=None):
        by_name = {name_of(obj): key_of(obj) for obj in members}
        out = {}
        try:
            for item in self._pages(members[0], selector, accept=METADATA_LIST_ACCEPT):
                key = by_name.get((item.get("metadata") or {}).get("name"))
                if key is not None:
                    out[key] = item
        except ApiError as exc:
            if exc.status == 403:
                return self._get_live(members)
            raise
        return out
