# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""render/pipeline.py and the traffic slot: the slot reaches helm only when given, and the deploy id tells them apart."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import HelmOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import (
    RenderOptions, default_deployment_id, load_documents)
from ansible_collections.manent.kubernetes.tests.helpers import chart_path, helm_binary

RELEASE = Release(ReleaseKey("shop", "shop-api", "prod"), "1.4.0", "d1")
SHA = "a" * 64


class NoDiscovery:
    """Discovery of a cluster that serves nothing but what helm assumes anyway."""

    @staticmethod
    def api_versions():
        return []


def test_deployment_id_distinguishes_slot_and_no_slot():
    ids = {slot: default_deployment_id("1.4.0", SHA, RenderOptions(slot=slot)) for slot in ("", "a", "b")}
    assert len(set(ids.values())) == 3
    assert ids[""] == default_deployment_id("1.4.0", SHA, RenderOptions())
    assert ids["a"] == default_deployment_id("1.4.0", SHA, RenderOptions(slot="a"))  # stable: a rerun changes nothing


def load(chart, slot):
    options = RenderOptions(namespace="shop-prod", slot=slot, allow_unverified=True)
    docs, _hooks, _warnings, is_chart = load_documents(chart_path(chart), RELEASE, options, (1, 34, "v1.34.4"),
                                                       NoDiscovery(), HelmOptions(command=helm_binary()))
    assert is_chart
    return docs


def test_strict_schema_chart_through_render_options():
    docs = load("strict-schema-0.1.0.tgz", "")
    assert [obj["kind"] for obj, _source in docs] == ["ConfigMap", "Service", "Deployment"]
    with pytest.raises(RenderError, match="rejects the key manent"):
        load("strict-schema-0.1.0.tgz", "b")


@pytest.mark.parametrize("slot, name", [("", "shop-api-strict-schema-slot"), ("a", "shop-api-strict-schema-slot-a")])
def test_slot_reaches_the_chart_only_when_given(slot, name):
    (deploy, _source), = load("strict-schema-slot-0.1.0.tgz", slot)
    assert deploy["metadata"]["name"] == name
