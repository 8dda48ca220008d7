# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release identity: who a deploy is (tenant, application, artifact, environment, version, deployment id)
and the labels and annotations it stamps on every object (docs/requirements.md §7 step 2).

A *release key* (tenant, application, artifact, environment) owns one history; the version and the
deployment id tell releases of the same key apart. A live object belongs to the release key its labels
name (:func:`owner_of`); :func:`other_owner` is the one answer to "does this live object belong to another
release?", used before any write (objects of another release are refused unless adopted) and by prune
(an object another release took over is not deleted). The parts of a release key become label values:
:func:`is_label_value` is the check.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "manent"
LABEL_APPLICATION = "manent.io/application"
LABEL_ARTIFACT = "manent.io/artifact"
LABEL_TENANT = "manent.io/tenant"
LABEL_ENVIRONMENT = "manent.io/environment"
ANNOTATION_VERSION = "manent.io/version"
ANNOTATION_DEPLOYMENT = "manent.io/deployment"
UNTENANTED = "untenanted"
FIELD_MANAGER = "manent"
RELEASE_LABELS = (LABEL_TENANT, LABEL_APPLICATION, LABEL_ARTIFACT, LABEL_ENVIRONMENT)
LABEL_VALUE_MAX = 63

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def is_label_value(text):
    """True when ``text`` is a valid Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', starting
    and ending with a letter or digit (the empty string is one too)."""
    return len(text) <= LABEL_VALUE_MAX and _LABEL_VALUE.fullmatch(text) is not None


@dataclass(frozen=True)
class ReleaseKey:
    """The four names that own one history."""

    application: str
    artifact: str
    environment: str
    tenant: str = UNTENANTED

    def __post_init__(self):
        if not self.tenant:
            object.__setattr__(self, "tenant", UNTENANTED)
        if not self.artifact:
            object.__setattr__(self, "artifact", self.application)

    def labels(self):
        return {
            MANAGED_BY: MANAGER,
            LABEL_APPLICATION: self.application,
            LABEL_ARTIFACT: self.artifact,
            LABEL_TENANT: self.tenant,
            LABEL_ENVIRONMENT: self.environment,
        }

    def selector(self):
        """Label selector string that finds every object of this release key."""
        return ",".join("%s=%s" % item for item in sorted(self.labels().items()))

    def describe(self):
        """``tenant/application/artifact/environment``, as messages name a release key."""
        return "/".join((self.tenant, self.application, self.artifact, self.environment))

    def to_dict(self):
        return {"tenant": self.tenant, "application": self.application, "artifact": self.artifact,
                "environment": self.environment}


def owner_of(obj):
    """The release key an object's labels name, or None when it carries no complete set of manent release labels
    (``app.kubernetes.io/managed-by: manent`` and the four ``manent.io/`` labels): objects of other tools, and the
    release namespace that ``create_namespace`` creates."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(MANAGED_BY) != MANAGER or any(labels.get(k) is None for k in RELEASE_LABELS):
        return None
    return ReleaseKey(application=str(labels[LABEL_APPLICATION]), artifact=str(labels[LABEL_ARTIFACT]),
                      environment=str(labels[LABEL_ENVIRONMENT]), tenant=str(labels[LABEL_TENANT]))


def other_owner(live, key):
    """The release key owning the ``live`` object when that is a manent release other than ``key``, else None
    (absent, not manent's, or ``key``'s own). ``key`` None: any manent release is another one."""
    owner = owner_of(live)
    return owner if owner is not None and owner != key else None


@dataclass(frozen=True)
class Release:
    """One deploy of a release key."""

    key: ReleaseKey
    version: str
    deployment: str = ""

    def labels(self):
        return self.key.labels()

    def annotations(self):
        return {ANNOTATION_VERSION: self.version, ANNOTATION_DEPLOYMENT: self.deployment}


def default_holder():
    """Who holds a release lock: ``user@host:pid`` of the process that runs the operation."""
    return "%s@%s:%d" % (os.environ.get("USER", "manent"), socket.gethostname(), os.getpid())
