# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""helm_migration.helm_release_exists: the one request that tells whether Helm keeps a release (the deletion of
Helm's release Secrets and the rendering as helm upgrade run against real clusters: tests/integration)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.history.helm_migration import helm_release_exists
from tests.unit.fakes import FakeKube


class _Secrets(FakeKube):
    def __init__(self, items):
        super().__init__()
        self.items = items

    def answer(self, method, path, **kwargs):
        return {"items": self.items}


def test_one_list_of_helm_release_secrets_not_uninstalled_at_most_one_item():
    kube = _Secrets([{"metadata": {"name": "sh.helm.release.v1.shop.v3"}}])
    assert helm_release_exists(kube, "prod", "shop") is True
    assert kube.sent("query") == [("GET", "/api/v1/namespaces/prod/secrets", {
        "fieldSelector": "type=helm.sh/release.v1", "labelSelector": "owner=helm,name=shop,status!=uninstalled",
        "limit": "1"})]
    assert helm_release_exists(_Secrets([]), "prod", "shop") is False


def test_a_name_no_helm_release_can_have_sends_nothing():
    kube = _Secrets([{"metadata": {"name": "x"}}])
    for name in ("", None, "a,b", "owner=helm", "x" * 64):
        assert helm_release_exists(kube, "prod", name) is False
    assert kube.calls == []
