# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared documentation of the option_names option of every manent module."""

from __future__ import annotations


class ModuleDocFragment:  # pylint: disable=too-few-public-methods
    DOCUMENTATION = r"""
options:
  option_names:
    description:
      - How the caller names this module's options, a dict of option names and the names to show, for its error
        messages. An error about an option (a helm binary that O(manent.kubernetes.manent_render#module:helm_command)
        does not find, a duration that cannot be read) starts with the option's name; an option listed here is named
        as given instead.
      - The role C(manent.kubernetes.deploy) gives the variable that feeds each option, so that its errors say
        C(deploy_helm_command) where the module would say C(helm_command).
    type: dict
    default: {}
"""
