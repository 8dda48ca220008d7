# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release identity: who a deploy is (tenant, application, artifact, environment, version, deployment id)
and the labels and annotations it stamps on every object (SPEC §7 step 2).

A *release key* (tenant, application, artifact, environment) owns one history; the version and the
deployment id tell releases of the same key apart.
"""

from __future__ import annotations

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
