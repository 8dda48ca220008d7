# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared documentation of the release key options (module_common.RELEASE_SPEC) of manent_render,
manent_history and manent_traffic."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    DOCUMENTATION = r"""
options:
  application:
    description: Application of the release key (label C(manent.io/application)).
    type: str
    required: true
  artifact_name:
    description: Artifact of the release key (label C(manent.io/artifact)). Defaults to O(application).
    type: str
  environment:
    description: Environment of the release key (label C(manent.io/environment)), for example C(prod).
    type: str
    required: true
  tenant:
    description: Tenant of the release key (label C(manent.io/tenant)); C(untenanted) when no tenant lists the
      application.
    type: str
    default: untenanted
"""
