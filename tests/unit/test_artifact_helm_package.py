# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real `helm package` output (gzip header with an extra field and a comment) is read as a chart: the whole
gzip stream is read and every member checked, as the renderer does before helm renders the package."""

import glob
import os

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.render.artifact import CHART, detect
from tests.helpers import CHARTS

PACKAGES = sorted(glob.glob(os.path.join(CHARTS, "*.tgz")))


def test_there_are_helm_packages():
    assert len(PACKAGES) >= 4


@pytest.mark.parametrize("path", PACKAGES, ids=os.path.basename)
def test_helm_packages_are_detected(path):
    with open(path, "rb") as f:
        header = f.read(4)
    assert header[:2] == b"\x1f\x8b"
    assert detect(path) == CHART


def test_manent_sample_carries_a_gzip_extra_field():
    with open(os.path.join(CHARTS, "manent-sample-0.1.0.tgz"), "rb") as f:
        flags = f.read(4)[3]
    assert flags & 0x04, "helm package writes FEXTRA; this is the case Python 3.11's r|gz reader gets wrong"
