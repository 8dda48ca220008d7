# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The release namespace: missing is an error before any write, unless the artifact or create_namespace creates it."""

import uuid

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from tests.integration.deploy_helpers import actions, deploy, labelled_history
from tests.objects import configmap

pytestmark = pytest.mark.integration


def test_missing_namespace_is_refused_before_any_write(cluster, tmp_path):
    ns = "absent-" + uuid.uuid4().hex[:8]
    with pytest.raises(InputError) as err:
        deploy(cluster, tmp_path, [configmap("a", v="1")], ns)
    assert "the release namespace %s does not exist" % ns in str(err.value)
    assert "create_namespace" in str(err.value)
    assert cluster.get("v1", "Namespace", None, ns) is None


def test_create_namespace_creates_it_once(cluster, tmp_path):
    ns = "created-" + uuid.uuid4().hex[:8]
    try:
        first = deploy(cluster, tmp_path, [configmap("a", v="1")], ns, create_namespace=True)
        assert actions(first)["Namespace/%s" % ns] == "created"
        assert cluster.get("v1", "Namespace", None, ns)["metadata"]["labels"]["app.kubernetes.io/managed-by"] == \
            "manent"
        assert labelled_history(cluster, ns)
        second = deploy(cluster, tmp_path, [configmap("a", v="1")], ns, create_namespace=True)
        assert not second.changed and "Namespace/%s" % ns not in actions(second)
    finally:
        cluster.delete_namespace(ns)
