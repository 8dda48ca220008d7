# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Credential values as people give them: inline, ``file:/path`` (read on the controller, e.g. the in-cluster
service-account token ``file:/var/run/secrets/kubernetes.io/serviceaccount/token``) or ``env:NAME`` (an environment
variable of the run). Used by the API server connection (client.py) and the Prometheus provider
(analysis/prometheus.py). Messages name the file or variable, never the value."""

from __future__ import annotations

import os

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError


def resolve_secret(value, what, subject="connection"):
    """Resolve ``file:``/``env:`` references; inline values are returned unchanged. ``what`` names the value in
    messages ("the bearer token"), ``subject`` the option block it belongs to."""
    if not value:
        return ""
    value = str(value)
    if value.startswith("file:"):
        path = os.path.expanduser(value[len("file:"):])
        try:
            with open(path, "r", encoding="utf-8") as f:
                return f.read().strip()
        except OSError as exc:
            raise InputError("cannot read %s from %s: %s" % (what, path, exc.strerror), subject=subject,
                             hint="check the file exists and is readable by the controller user")
    if value.startswith("env:"):
        name = value[len("env:"):]
        if name not in os.environ:
            raise InputError("environment variable %s for %s is not set" % (name, what), subject=subject)
        return os.environ[name].strip()
    return value
