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


class Interrupted(BaseException):
    """The run was stopped while a task worked (SIGTERM or SIGINT: a cancelled CI or AWX job, Ctrl-C, the end of
    ansible-playbook; plugin_utils/stopping.py). A BaseException, as KeyboardInterrupt is, so that no handler of
    API errors or retry loop takes it for a failure to go on from: it goes up through the deploy, which marks its
    record failed and releases the history lock on the way. ``partial`` as for a ManentError."""

    def __init__(self, message, partial=None):
        self.message = message
        self.partial = partial
        super().__init__(message)

    def __str__(self):
        return self.message


# ---------------------------------------------------------------------------------------------
# many objects failing for the same reason

SHOWN_PER_REASON = 3
_SUBJECT_SEPARATORS = (" apply failed: ", " delete failed: ", ": ")
# what to do, by the shape of a reason shared by many objects
_HINTS = (
    ('namespaces "', '" not found', "create the namespace first: add it to the manifests, or set create_namespace "
                                    "(role: deploy_create_namespace: true) for the release namespace"),
)


def _split(line):
    """('Kind/ns/name', reason) of a line '<Kind/ns/name> apply failed: <reason>' (or '<subject>: <reason>')."""
    subject, _sep, rest = line.partition(" ")
    if "/" not in subject:
        return None, line
    for sep in _SUBJECT_SEPARATORS:
        if line.startswith(subject.rstrip(":") + sep):
            return subject.rstrip(":"), line[len(subject.rstrip(":")) + len(sep):]
    return None, line


def _reason_key(subject, reason):
    """The reason with the object's own name blanked, so '"cm-1" is invalid' and '"cm-2" is invalid' group."""
    name = subject.rsplit("/", 1)[-1]
    return reason.replace('"%s"' % name, '"<name>"') if name else reason


def _hint(reason):
    for start, end, hint in _HINTS:
        if start in reason and end in reason:
            return hint
    return ""


def listing(names, shown):
    """The first ``shown`` of ``names`` joined by commas, then "and N more" for the others: how a message names
    many objects."""
    names = list(names)
    listed = ", ".join(names[:shown])
    if len(names) > shown:
        listed = "%s and %d more" % (listed, len(names) - shown)
    return listed


def group_failures(lines, shown=SHOWN_PER_REASON):
    """One line per distinct reason of per-object failure lines ('<Kind/ns/name> apply failed: <reason>'):
    a reason shared by several objects is said once, with their count, the first ``shown`` names and what to
    do; a reason of one object keeps its line. Order: first appearance."""
    groups, order = {}, []
    for line in lines:
        subject, reason = _split(line)
        key = _reason_key(subject, reason) if subject else line
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((subject, line))
    out = []
    for key in order:
        members = groups[key]
        if len(members) == 1 or members[0][0] is None:
            out.extend(line for _subject, line in members)
            continue
        names = [subject for subject, _line in members]
        text = "%d objects: %s (%s)" % (len(names), key, listing(names, shown))
        hint = _hint(key)
        if hint:
            text = "%s; %s" % (text, hint)
        out.append(text)
    return out
