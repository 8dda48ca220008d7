# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one pager: the items of a LIST read page by page (``limit`` and ``continue``), so that a namespace of
thousands of objects never comes back as one answer. Every page of one LIST reads the same snapshot: its
``resourceVersion`` is where a WATCH of the collection starts (cluster/watch.py)."""

from __future__ import annotations

LIST_PAGE = 500  # items per page


def list_items(kube, path, query=None, subject=None, accept="application/json", page=LIST_PAGE, meta=None):
    """Yield the items of the LIST at ``path`` (``query``: its other parameters, e.g. ``labelSelector``), one page
    of ``page`` items per request. ``meta``, a dict, gets the ``resourceVersion`` of the list."""
    query = {k: v for k, v in (query or {}).items() if v is not None}
    query["limit"] = str(page)
    while True:
        answer = kube.request("GET", path, query=query, accept=accept, subject=subject).data or {}
        if meta is not None:
            meta["resourceVersion"] = (answer.get("metadata") or {}).get("resourceVersion")
        yield from answer.get("items") or []
        token = (answer.get("metadata") or {}).get("continue")
        if not token:
            return
        query["continue"] = token
