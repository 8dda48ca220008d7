# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""objects.served_kinds: which kinds a CustomResourceDefinition serves (renderer, check mode, CRD wait)."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ServedKind, is_crd, served_kinds
from tests.objects import crd


def widget_crd(versions, kind="Widget", scope="Namespaced", api_version="apiextensions.k8s.io/v1"):
    return crd("example.com", kind, "widgets", versions=versions, scope=scope, api_version=api_version)


def test_every_served_version():
    widgets = widget_crd([{"name": "v1", "served": True, "storage": True}, {"name": "v1beta1"},
                          {"name": "v1alpha1", "served": False}], scope="Cluster")
    assert served_kinds(widgets) == [ServedKind("example.com", "v1", "Widget", "widgets", False),
                                     ServedKind("example.com", "v1beta1", "Widget", "widgets", False)]
    assert [served.api_version for served in served_kinds(widgets)] == ["example.com/v1", "example.com/v1beta1"]
    assert served_kinds(widget_crd([{"name": "v2"}]))[0].namespaced


@pytest.mark.parametrize("versions, kind", [
    ([{"name": "v1"}], ""),
    ([{"served": True}, "v1", None], "Widget"),
    ([], "Widget"),
    (None, "Widget"),
])
def test_nothing_served(versions, kind):
    assert served_kinds(widget_crd(versions, kind=kind)) == []


def test_is_crd():
    assert is_crd(widget_crd([])) and is_crd(widget_crd([], api_version="apiextensions.k8s.io/v1beta1"))
    assert not is_crd(widget_crd([], api_version="example.com/v1"))
    assert not is_crd({"apiVersion": "apiextensions.k8s.io/v1", "kind": "Widget"}) and not is_crd(None)
