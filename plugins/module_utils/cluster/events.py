# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The story of a rollout as Kubernetes Events (events.k8s.io/v1, docs/events.md): :func:`event` builds one, regarding
the object it concerns (the history record of a version), and :class:`Recorder` posts it through the one write path
(writes.py). Events are best-effort: a refused or failed write never fails the operation; the first one of a
Recorder (one per module call) becomes a warning, the others are silent. In a dry run nothing is posted.

The note is masked (every form and piece of every given secret: base/masking.py) before it is cut to the API's 1024
bytes, so that no cut can leave the start of a secret unmasked."""

from __future__ import annotations

import datetime
import socket
import time

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import MANAGED_BY, MANAGER
from ansible_collections.manent.kubernetes.plugins.module_utils.base.masking import Mask
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import writes

API_VERSION = "events.k8s.io/v1"
REPORTING_CONTROLLER = "manent"
NORMAL, WARNING = "Normal", "Warning"
NOTE_LIMIT = 1024  # bytes (validation of events.k8s.io/v1)
FIELD_LIMIT = 128  # reportingInstance, action, reason
NAME_LIMIT = 253
CUT = "..."

# reason -> (action, type): the operations whose completion is recorded
REASONS = {
    "Deployed": ("Deploy", NORMAL),
    "DeployFailed": ("Deploy", WARNING),
    "RolledBack": ("Rollback", NORMAL),
    "RollbackFailed": ("Rollback", WARNING),
    "TrafficStep": ("Step", NORMAL),
    "Promoted": ("Promote", NORMAL),
    "Aborted": ("Abort", NORMAL),
    "Retired": ("Retire", NORMAL),
    "AnalysisSuccessful": ("Analyze", NORMAL),
    "AnalysisFailed": ("Analyze", WARNING),
    "AnalysisInconclusive": ("Analyze", WARNING),
    "AnalysisError": ("Analyze", WARNING),
}


def record_ref(namespace, name, uid=""):
    """The reference of the history record ConfigMap ``name`` in ``namespace`` (``uid`` when known)."""
    out = {"apiVersion": "v1", "kind": "ConfigMap", "namespace": namespace, "name": name}
    if uid:
        out["uid"] = uid
    return out


def masker(secrets):
    """The base/masking.Mask of ``secrets`` (credential values, or a Mask already)."""
    return secrets if isinstance(secrets, Mask) else Mask(secrets or ())


def cut(text, limit):
    """``text`` in at most ``limit`` UTF-8 bytes, ending in ... when cut, never inside a character."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit - len(CUT)].decode("utf-8", errors="ignore") + CUT


def micro_time(epoch):
    """``epoch`` seconds as the API's MicroTime (RFC 3339, microseconds, UTC)."""
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event(regarding, reason, note, instance, epoch, secrets=()):
    """The events.k8s.io/v1 Event body of ``reason`` (one of REASONS) about ``regarding`` (an object reference with
    namespace and name), in the namespace of ``regarding``; ``note`` masked (``secrets``: values or a Mask), then cut
    to the API's limit."""
    action, kind = REASONS[reason]
    stamp = "%x" % int(epoch * 1e9)
    prefix = regarding["name"][:NAME_LIMIT - len(stamp) - 1].rstrip(".-")
    return {
        "apiVersion": API_VERSION, "kind": "Event",
        "metadata": {"name": "%s.%s" % (prefix, stamp), "namespace": regarding["namespace"],
                     "labels": {MANAGED_BY: MANAGER}},
        "eventTime": micro_time(epoch),
        "reportingController": REPORTING_CONTROLLER,
        "reportingInstance": cut(instance or "unknown", FIELD_LIMIT),
        "action": action, "reason": reason, "type": kind,
        "regarding": dict(regarding),
        "note": cut(" ".join(masker(secrets)(str(note)).split()), NOTE_LIMIT),
    }


def path_of(namespace):
    return "/apis/events.k8s.io/v1/namespaces/%s/events" % namespace


class Recorder:
    """Posts the Events of one module call with ``kube`` (base/client.py Kube). ``dry_run``: nothing is posted.
    ``secrets``: values (or a base/masking.Mask) masked in every note. ``posted`` lists the events accepted, in order."""

    def __init__(self, kube, dry_run=False, secrets=(), instance=None, clock=time.time):
        self.kube = kube
        self.dry_run = dry_run
        self.secrets = masker(secrets)
        self.instance = instance or socket.gethostname()
        self.clock = clock
        self.warned = False
        self.posted = []

    def record(self, regarding, reason, note, warnings=None):
        """Post the Event of ``reason`` about ``regarding``; True when the server accepted it. A failure is never
        raised: the first of this Recorder is appended to ``warnings`` (a list), later ones are dropped."""
        if self.dry_run or not regarding or not regarding.get("name") or not regarding.get("namespace"):
            return False
        body = event(regarding, reason, note, self.instance, self.clock(), self.secrets)
        try:
            writes.create(self.kube, path_of(body["metadata"]["namespace"]), body,
                          "Event %s/%s" % (body["metadata"]["namespace"], reason))
        except Exception as exc:  # pylint: disable=broad-except  # best-effort: the operation's outcome stands
            if not self.warned and warnings is not None:
                warnings.append(
                    "the Kubernetes Event %s could not be recorded in namespace %s, nor will later ones of this task "
                    "be (the operation itself is not affected): %s; grant create on events.k8s.io events in that "
                    "namespace to record the rollout's story (docs/events.md)"
                    % (reason, body["metadata"]["namespace"], self.secrets(_said(exc))))
            self.warned = True
            return False
        self.posted.append(body)
        return True


def _said(exc):
    text = str(exc).strip().splitlines()
    return text[0][:500] if text else type(exc).__name__
