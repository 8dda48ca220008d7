# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared test helpers: where the pinned tools built by hack/build-tools.sh live."""

from __future__ import annotations

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHARTS = os.path.join(ROOT, "tests", "data", "charts")


def tool_versions():
    """The pins of hack/versions.env as a dict (KEY=VALUE lines; comments ignored)."""
    versions = {}
    with open(os.path.join(ROOT, "hack", "versions.env"), encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, value = line.split("=", 1)
                versions[key.strip()] = value.strip().strip("\"'")
    return versions


def tools_cache():
    """$MANENT_CACHE, else $XDG_CACHE_HOME/manent, else ~/.cache/manent (as hack/build-tools.sh)."""
    if os.environ.get("MANENT_CACHE"):
        return os.environ["MANENT_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "manent")


def helm_binary():
    """Path of the pinned helm ($MANENT_HELM overrides); fails the test (never skips) when it is missing."""
    path = os.environ.get("MANENT_HELM")
    origin = "MANENT_HELM"
    if not path:
        version = tool_versions()["HELM_VERSION"]
        path = os.path.join(tools_cache(), "helm-%s" % version, "bin", "helm")
        origin = "hack/build-tools.sh (HELM_VERSION=%s)" % version
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail("helm binary not found at %s (from %s): run `hack/build-tools.sh helm` to build it, "
                    "or set MANENT_HELM to a helm v3 binary" % (path, origin), pytrace=False)
    return path


def chart_path(name):
    """Path of a packaged test chart in tests/data/charts (e.g. 'manent-sample-0.1.0.tgz')."""
    path = os.path.join(CHARTS, name)
    if not os.path.isfile(path):
        pytest.fail("test chart %s is missing: run hack/package-test-charts.sh" % path, pytrace=False)
    return path
