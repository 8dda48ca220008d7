# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Before the first write of a deploy, every object it will write is dry-run at once (Applier.verify): an upgrade
whose object the API server refuses (an immutable field changed, a value its validation rejects) stops with nothing
written, not half-applied; what is not verified first, and what a verification costs, on a real API server."""

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApplyError
from tests.integration.deploy_helpers import actions, deploy, labelled_history, locator, record_status, versions
from tests.objects import configmap, deployment, service

pytestmark = pytest.mark.integration


def _dry_runs(monkeypatch):
    """The paths of the dry-run PATCHes sent from now on."""
    sent = []
    real = Kube.request

    def counted(kube, method, path, **kw):
        if method == "PATCH" and (kw.get("query") or {}).get("dryRun") == "All":
            sent.append(path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1])
        return real(kube, method, path, **kw)

    monkeypatch.setattr(Kube, "request", counted)
    return sent


def _v1():
    return [configmap("settings", mode="one"), deployment("web"), service("web")]


def test_an_upgrade_the_server_refuses_changes_nothing(cluster, namespace, tmp_path, monkeypatch):
    assert deploy(cluster, tmp_path, _v1(), namespace).status == "deployed"
    before, pointer, records = (versions(cluster, namespace), locator(cluster, namespace),
                                sorted(labelled_history(cluster, namespace)))
    moved = deployment("web")
    moved["spec"]["selector"]["matchLabels"] = {"app": "web", "track": "new"}  # immutable in apps/v1
    moved["spec"]["template"]["metadata"]["labels"]["track"] = "new"
    wide = service("web", port=70000)  # out of range: the server's validation refuses it
    sent = _dry_runs(monkeypatch)
    with pytest.raises(ApplyError) as err:
        deploy(cluster, tmp_path, [configmap("settings", mode="two"), moved, wide, configmap("added", a="1")],
               namespace, version="2.0.0")
    text = str(err.value)
    assert "2 object(s) refused by the API server's dry run; nothing was written" in text
    assert "Deployment/%s/web" % namespace in text and "field is immutable" in text
    assert "Service/%s/web" % namespace in text and "70000" in text
    assert err.value.partial.status == "failed"
    # nothing written: objects, history records and the pointer as they were; the new ConfigMap not created
    assert versions(cluster, namespace) == before
    assert locator(cluster, namespace) == pointer
    assert sorted(labelled_history(cluster, namespace)) == records
    # all four objects to write were dry-run (the new one too), in one pass
    assert sorted(sent) == sorted(["configmaps/settings", "deployments/web", "services/web", "configmaps/added"])


def _many():
    """Four or more objects of each kind (the deploy LISTs these before its first write in any case)."""
    configmaps = [configmap("settings-%d" % i, mode="one") for i in range(5)]
    return configmaps + [service("web-%d" % i) for i in range(4)]


def test_unchanged_objects_and_a_first_install_send_no_dry_run(cluster, namespace, tmp_path, monkeypatch):
    sent = _dry_runs(monkeypatch)
    assert deploy(cluster, tmp_path, _many(), namespace).status == "deployed"
    assert sent == []  # nothing existed: nothing running could be disturbed, no second request per object
    again = deploy(cluster, tmp_path, _many(), namespace)
    assert again.status == "deployed" and set(actions(again).values()) == {"unchanged"}
    assert sent == []
    changed = _many()
    changed[0]["data"]["mode"] = "two"
    result = deploy(cluster, tmp_path, changed, namespace, version="1.1.0")
    assert actions(result)["ConfigMap/%s/settings-0" % namespace] == "configured"
    assert sent == ["configmaps/settings-0"]  # only the object that changes
    assert cluster.get("v1", "ConfigMap", namespace, "settings-0")["data"] == {"mode": "two"}


def test_a_first_install_of_a_few_objects_lists_them_and_its_refused_object_fails_at_its_tier(
        cluster, namespace, tmp_path, monkeypatch):
    """The trade-off: a first install is not dry-run (nothing of the release runs yet; a dry run would double its
    requests). Kinds with few objects are listed once to know that (no dry run); an object the server refuses then
    fails the deploy at its tier, the record marked failed, as before, and nothing claimed in service."""
    sent = _dry_runs(monkeypatch)
    with pytest.raises(ApplyError) as err:
        deploy(cluster, tmp_path, [configmap("settings", mode="one"), service("web", port=70000)], namespace)
    assert sent == []
    assert "1 object(s) failed to apply" in str(err.value) and "70000" in str(err.value)
    assert record_status(cluster, namespace, "1.0.0") == "failed"
    assert (locator(cluster, namespace) or {}).get("version", "") == ""


def test_objects_a_delete_policy_recreates_are_not_refused_for_an_immutable_field(cluster, namespace, tmp_path):
    """An object that a delete policy recreates when an immutable field changed is left to its tier."""
    web = deployment("web", annotations={"werf.io/delete-policy": "before-creation-if-immutable"})
    assert deploy(cluster, tmp_path, [configmap("settings", mode="one"), web], namespace).status == "deployed"
    web["spec"]["selector"]["matchLabels"] = {"app": "web", "track": "new"}
    web["spec"]["template"]["metadata"]["labels"]["track"] = "new"
    result = deploy(cluster, tmp_path, [configmap("settings", mode="two"), web], namespace, version="2.0.0")
    assert result.status == "deployed"
    assert actions(result)["Deployment/%s/web" % namespace] == "recreated"
