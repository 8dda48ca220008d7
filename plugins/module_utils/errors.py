# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Typed errors of the manent engine.

Every error names what it is about (file, document, object, field) and says what to do next.
Errors raised by a deploy (or rollback) carry its partial result, always a ``deploy.DeployResult`` with
status failed, as ``partial``, so modules can report what was already done before the failure.
"""

from __future__ import annotations


class ManentError(Exception):
    """Base error: ``str(err)`` is the user-facing message."""

    def __init__(self, message, subject=None, hint=None, partial=None):
        self.message = message
        self.subject = subject
        self.hint = hint
        self.partial = partial
        super().__init__(self.render())

    def render(self):
        text = self.message
        if self.subject:
            text = "%s: %s" % (self.subject, text)
        if self.hint:
            text = "%s (%s)" % (text, self.hint)
        return text

    def __str__(self):
        return self.render()


class InputError(ManentError):
    """The artifact, a parameter or an object is invalid. Nothing was written to any cluster."""


class ArtifactError(InputError):
    """The artifact cannot be read, verified or unpacked."""


class RenderError(InputError):
    """Templating, helm rendering or object validation failed."""


class DiscoveryError(ManentError):
    """The cluster does not serve a kind, or discovery failed."""


class ApiError(ManentError):
    """The API server answered with an error status.

    ``status`` is the HTTP status, ``reason`` the Status reason (Forbidden, Conflict, Invalid, ...),
    ``transient`` tells whether a retry may succeed.
    """

    def __init__(self, message, status=None, reason=None, subject=None, hint=None, partial=None,
                 transient=False, body=None, retry_after=None):
        self.status = status
        self.reason = reason
        self.transient = transient
        self.body = body or {}
        self.retry_after = retry_after
        super().__init__(message, subject=subject, hint=hint, partial=partial)


class ConflictError(ApiError):
    """Server-side apply conflict, or a resourceVersion precondition failed."""


class NotFoundError(ApiError):
    """The object (or its kind) does not exist."""


class ApplyError(ManentError):
    """Applying (or deleting) objects of the release failed; the deploy sets ``partial``."""


class WaitError(ManentError):
    """A workload did not become ready; ``permanent`` is True when waiting longer cannot help."""

    def __init__(self, message, subject=None, hint=None, partial=None, permanent=False, statuses=None):
        self.permanent = permanent
        self.statuses = statuses or []
        super().__init__(message, subject=subject, hint=hint, partial=partial)


class HistoryError(ManentError):
    """Release history is unreadable, locked by another deploy, or too large."""


class LockedError(HistoryError):
    """Another deploy of the same release key holds the history lock."""
