# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one write path: every request that changes the cluster goes through :func:`write`, which adds the field
manager and, in a dry run, ``dryRun=All`` (the server checks everything and stores nothing). The verbs manent
uses are named on top of it: :func:`apply` (server-side apply), :func:`merge_patch` (a few fields, conditioned on
the resourceVersion read when the body carries one), :func:`create`, :func:`replace` (PUT, conditioned on the
body's resourceVersion) and :func:`delete` (propagation, uid and resourceVersion preconditions).

Callers keep what is theirs: the path of the object (cluster/live.py ``LiveReader.path`` or their own), how a 409
or 404 is read, and their retries (base/conflicts.py)."""

from __future__ import annotations

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"


def write(kube, method, path, body, subject, dry_run=False, field_manager=None, query=None,
          content_type="application/json", **kw):
    """Send one write; the server's answer (a base/client.py Response). ``field_manager`` is recorded with the
    fields written; ``dry_run`` makes the server validate without storing."""
    # fieldManager first in the URL, as request logs and the fault tests read it
    query = dict({"fieldManager": field_manager} if field_manager else {}, **(query or {}))
    if dry_run:
        query["dryRun"] = "All"
    return kube.request(method, path, query=query, body=body, content_type=content_type, subject=subject, **kw)


def apply(kube, path, obj, subject, field_manager, force=False, dry_run=False):
    """Server-side apply of the whole object ``obj`` as ``field_manager`` (``force``: take fields over)."""
    return write(kube, "PATCH", path, obj, subject, dry_run=dry_run, field_manager=field_manager,
                 query={"force": "true" if force else "false"}, content_type=APPLY_PATCH)


def merge_patch(kube, path, patch, subject, field_manager, dry_run=False):
    """A JSON merge patch; with ``metadata.resourceVersion`` in ``patch`` the server refuses it (409) when the
    object changed since that version was read."""
    return write(kube, "PATCH", path, patch, subject, dry_run=dry_run, field_manager=field_manager,
                 content_type=MERGE_PATCH)


def create(kube, path, body, subject, dry_run=False, **kw):
    """POST ``body`` to the collection at ``path``; 409 when an object of its name exists."""
    return write(kube, "POST", path, body, subject, dry_run=dry_run, **kw)


def replace(kube, path, body, subject, dry_run=False, **kw):
    """PUT ``body``, conditioned on its ``metadata.resourceVersion``: 409 when the object changed since."""
    return write(kube, "PUT", path, body, subject, dry_run=dry_run, **kw)


def delete(kube, path, subject, propagation=None, uid=None, dry_run=False, resource_version=None, **kw):
    """DELETE the object at ``path`` (``propagation``: Foreground, Background or Orphan; ``uid``: only the
    object of that uid, 409 when another of the same name replaced it; ``resource_version``: only while it is
    at that version, 409 once anything wrote it since). NotFoundError when it is absent."""
    body = {"kind": "DeleteOptions", "apiVersion": "v1"}
    query = {}
    if propagation:
        body["propagationPolicy"] = propagation
        query["propagationPolicy"] = propagation
    preconditions = {name: value for name, value in (("uid", uid), ("resourceVersion", resource_version)) if value}
    if preconditions:
        body["preconditions"] = preconditions
    if dry_run:
        body["dryRun"] = ["All"]
    return write(kube, "DELETE", path, body, subject, dry_run=dry_run, query=query, **kw)
