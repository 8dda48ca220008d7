# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared test helpers: where the pinned tools built by hack/build-tools.sh live."""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHARTS = os.path.join(ROOT, "tests", "data", "charts")
if os.path.join(ROOT, "hack") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "hack"))
from clusters import cache_dir, versions  # noqa: E402  pylint: disable=wrong-import-position,import-error


def sha256_of(data):
    """The sha256 (hex) of bytes."""
    import hashlib  # pylint: disable=import-outside-toplevel
    return hashlib.sha256(data).hexdigest()


def helm_binary():
    """Path of the pinned helm ($MANENT_HELM overrides); fails the test (never skips) when it is missing."""
    path = os.environ.get("MANENT_HELM")
    origin = "MANENT_HELM"
    if not path:
        version = versions()["HELM_VERSION"]
        path = os.path.join(cache_dir(), "helm-%s" % version, "bin", "helm")
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


def public_chart(name):
    """(path, chart version) of the public chart NAME of PUBLIC_CHARTS (hack/versions.env), as hack/build-tools.sh
    charts packaged it, unchanged, with the pinned helm; fails the test (never skips) when it is missing."""
    import glob  # pylint: disable=import-outside-toplevel
    import tarfile  # pylint: disable=import-outside-toplevel

    import yaml  # pylint: disable=import-outside-toplevel

    pins = versions()
    entries = dict(entry.split("=", 1) for entry in pins.get("PUBLIC_CHARTS", "").split())
    if name not in entries:
        pytest.fail("no public chart %s in hack/versions.env PUBLIC_CHARTS" % name, pytrace=False)
    module = entries[name].split(":", 1)[0]
    folder = os.path.join(cache_dir(), "public-chart-%s-%s-helm-%s" % (name, module.rsplit("@", 1)[1],
                                                                       pins["HELM_VERSION"]))
    found = sorted(glob.glob(os.path.join(folder, "*.tgz")))
    if not found:
        pytest.fail("public chart %s not packaged in %s: run `hack/build-tools.sh charts` (make tools does)"
                    % (name, folder), pytrace=False)
    with tarfile.open(found[0]) as archive:
        top = [m for m in archive.getnames() if m.count("/") == 1 and m.endswith("/Chart.yaml")]
        chart = yaml.safe_load(archive.extractfile(top[0]).read())
    return found[0], str(chart["version"])
