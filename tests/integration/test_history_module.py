"""manent_history through Ansible itself (ad-hoc module runs): audit and rewrite of stored history, unlock."""

import json

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import encode_record
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from tests.integration.playbook_helpers import run_history_module

pytestmark = pytest.mark.integration
KEY = ReleaseKey("olds", "olds", "prod")


def history(cluster, namespace, check=False, **args):
    return run_history_module(cluster, namespace, KEY, check=check, timeout=120, **args)


def old_record(cluster, namespace, version, objects):
    cm = encode_record(Release(KEY, version, "d-old"), namespace, [], meta={"status": "deployed"})
    cm.pop("binaryData", None)
    cm["data"]["objects.json"] = json.dumps(objects)
    cluster.kube.request("POST", "/api/v1/namespaces/%s/configmaps" % namespace, body=cm)


def test_audit_then_rewrite_stored_history(cluster, namespace):
    old = {"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "web", "namespace": namespace},
           "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
               "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    old_record(cluster, namespace, "1.0.0", [old])

    audit = history(cluster, namespace, operation="audit")
    assert not audit.get("failed"), audit
    assert [(f["object"], f["level"], f["replacement"]) for f in audit["findings"]] == [
        ("Deployment/%s/web" % namespace, "error", "apps/v1")]

    dry = history(cluster, namespace, check=True, operation="rewrite")
    assert dry["changed"] is True and [f["action"] for f in dry["findings"]] == ["would-rewrite"]
    stored = HistoryStore(cluster.kube, namespace, KEY).load("1.0.0")[1]
    assert stored[0]["apiVersion"] == "apps/v1beta2", "check mode changed nothing"

    done = history(cluster, namespace, operation="rewrite")
    assert done["changed"] is True and [f["action"] for f in done["findings"]] == ["rewritten"]
    assert HistoryStore(cluster.kube, namespace, KEY).load("1.0.0")[1][0]["apiVersion"] == "apps/v1"
    assert cluster.get("v1", "ConfigMap", namespace, record_name(KEY, "1.0.0") + "-bak") is not None

    again = history(cluster, namespace, operation="rewrite")
    assert again["changed"] is False and again["findings"] == []
    assert history(cluster, namespace, operation="audit")["findings"] == []


def test_unlock_removes_a_stale_lock(cluster, namespace):
    store = HistoryStore(cluster.kube, namespace, KEY, holder="killed@ci:1")
    store.acquire()
    listed = history(cluster, namespace)
    assert listed["in_service"] is None and listed["changed"] is False
    result = history(cluster, namespace, operation="unlock")
    assert result["changed"] is True and result["unlocked"] == "killed@ci:1"
    assert HistoryStore(cluster.kube, namespace, KEY).locator()["lockHolder"] == ""
