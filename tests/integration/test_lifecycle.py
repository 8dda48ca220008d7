# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helm/Nelm lifecycle annotations on real API servers (docs/requirements.md §13, issue 7): delete policies of Jobs,
deploy-on install, delete propagation of prune, keep/anyone through prune and rollback."""

from __future__ import annotations

import pytest

from tests.integration.deploy_helpers import KEY, actions, deploy, deployer, locator, record_status, render_bundle
from tests.objects import PAUSE, configmap, job

pytestmark = pytest.mark.integration


def _uid(cluster, namespace, name, kind="Job", api_version="batch/v1"):
    obj = cluster.get(api_version, kind, namespace, name)
    return None if obj is None else obj["metadata"]["uid"]


def _job_done(cluster, namespace, name):
    j = cluster.get("batch/v1", "Job", namespace, name)
    return j and (j.get("status") or {}).get("succeeded") == 1


def test_changed_job_is_recreated_and_unchanged_job_left_alone(cluster, namespace, tmp_path):
    first = deploy(cluster, tmp_path, [job("migrate", command="-v"), configmap("cfg", v="1")], namespace,
                   version="1")
    assert actions(first) == {"Job/%s/migrate" % namespace: "created", "ConfigMap/%s/cfg" % namespace: "created"}
    uid = _uid(cluster, namespace, "migrate")
    cluster.wait(lambda: _job_done(cluster, namespace, "migrate"), timeout=30, what="job succeeded")
    rv = cluster.get("batch/v1", "Job", namespace, "migrate")["metadata"]["resourceVersion"]

    # the Job is the same in release 2: not touched (same uid, same resourceVersion)
    second = deploy(cluster, tmp_path, [job("migrate", command="-v"), configmap("cfg", v="2")], namespace,
                    version="2")
    assert actions(second) == {"Job/%s/migrate" % namespace: "unchanged", "ConfigMap/%s/cfg" % namespace: "configured"}
    live = cluster.get("batch/v1", "Job", namespace, "migrate")
    assert live["metadata"]["uid"] == uid and live["metadata"]["resourceVersion"] == rv

    # its pod template changed in release 3: immutable, so deleted and created again (default policy)
    third = deploy(cluster, tmp_path, [job("migrate", command="-version"), configmap("cfg", v="2")], namespace,
                   version="3")
    change = {c.subject: c for c in third.changes}["Job/%s/migrate" % namespace]
    assert change.action == "recreated"
    live = cluster.get("batch/v1", "Job", namespace, "migrate")
    assert live["metadata"]["uid"] != uid
    assert live["spec"]["template"]["spec"]["containers"][0]["command"] == ["/pause", "-version"]
    assert third.changed is True
    cluster.wait(lambda: _job_done(cluster, namespace, "migrate"), timeout=30, what="new job succeeded")


def test_before_creation_job_runs_again_on_an_unchanged_redeploy(cluster, namespace, tmp_path):
    objects = [job("migrate", command="-v", annotations={"werf.io/delete-policy": "before-creation"})]
    first = deploy(cluster, tmp_path, objects, namespace, version="1")
    assert actions(first) == {"Job/%s/migrate" % namespace: "created"}
    uid = _uid(cluster, namespace, "migrate")
    cluster.wait(lambda: _job_done(cluster, namespace, "migrate"), timeout=30, what="job succeeded")

    rerun = deploy(cluster, tmp_path, objects, namespace, version="1")  # same artifact, same version
    assert actions(rerun) == {"Job/%s/migrate" % namespace: "recreated"}
    assert rerun.changed is True and rerun.history == {}
    new_uid = _uid(cluster, namespace, "migrate")
    assert new_uid and new_uid != uid
    cluster.wait(lambda: _job_done(cluster, namespace, "migrate"), timeout=30, what="job ran again")


def test_install_only_object_is_applied_once_then_left_alone(cluster, namespace, tmp_path):
    seed = {"werf.io/deploy-on": "install", "werf.io/ownership": "anyone"}
    first = deploy(cluster, tmp_path, [configmap("seed", annotations=seed, value="initial"), configmap("app", v="1")],
                   namespace, version="1")
    assert first.phase == "install"
    assert actions(first) == {"ConfigMap/%s/seed" % namespace: "created", "ConfigMap/%s/app" % namespace: "created"}
    before = cluster.get("v1", "ConfigMap", namespace, "seed")["metadata"]["resourceVersion"]

    second = deploy(cluster, tmp_path, [configmap("seed", annotations=seed, value="changed"),
                                        configmap("app", v="2")], namespace, version="2", prune=True)
    assert second.phase == "upgrade"
    assert actions(second) == {"ConfigMap/%s/seed" % namespace: "skipped", "ConfigMap/%s/app" % namespace: "configured"}
    assert second.skipped == ["ConfigMap/%s/seed (deploy-on: not in upgrade)" % namespace]
    assert second.pruned == []
    live = cluster.get("v1", "ConfigMap", namespace, "seed")
    assert live["data"] == {"value": "initial"} and live["metadata"]["resourceVersion"] == before

    # even when it leaves the artifact: ownership anyone keeps it from being pruned
    third = deploy(cluster, tmp_path, [configmap("app", v="3")], namespace, version="3", prune=True)
    assert third.pruned == []
    assert cluster.get("v1", "ConfigMap", namespace, "seed")["metadata"]["resourceVersion"] == before


def _replicaset(name, replicas=2):
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "annotations": {"werf.io/delete-propagation": "Orphan"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"rs": name}},
                     "template": {"metadata": {"labels": {"rs": name}},
                                  "spec": {"containers": [{"name": "app", "image": PAUSE}]}}}}


def test_orphan_propagation_leaves_the_pods_of_a_pruned_replicaset(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [_replicaset("legacy"), configmap("cfg", v="1")], namespace, version="1")
    pods = cluster.wait(lambda: [p for p in cluster.list("v1", "Pod", namespace, "rs=legacy")
                                 if p["metadata"].get("ownerReferences")][:2]
                        if len(cluster.list("v1", "Pod", namespace, "rs=legacy")) == 2 else None,
                        timeout=30, what="two pods of the ReplicaSet")
    uids = sorted(p["metadata"]["uid"] for p in pods)

    result = deploy(cluster, tmp_path, [configmap("cfg", v="1")], namespace, version="2", prune=True)
    assert result.pruned == ["ReplicaSet/%s/legacy" % namespace]
    cluster.assert_deleted("apps/v1", "ReplicaSet", namespace, "legacy")

    def orphaned():
        left = cluster.list("v1", "Pod", namespace, "rs=legacy")
        return left if all(not p["metadata"].get("ownerReferences") for p in left) else None

    left = cluster.wait(orphaned, timeout=30, what="pods orphaned")
    assert sorted(p["metadata"]["uid"] for p in left) == uids
    assert all(not p["metadata"].get("deletionTimestamp") for p in left)


def test_keep_and_anyone_objects_survive_a_rollback_with_prune(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [configmap("app", v="1")], namespace, version="1")
    second = deploy(cluster, tmp_path, [
        configmap("app", v="2"), configmap("added", v="2"),
        configmap("added-keep", annotations={"helm.sh/resource-policy": "keep"}, v="2"),
        configmap("added-anyone", annotations={"manent.io/ownership": "anyone"}, v="2")], namespace, version="2")
    assert second.status == "deployed"

    result = deployer(cluster, prune=True).rollback(namespace, KEY)
    assert result.status == "rolled-back" and result.phase == "rollback"
    assert result.pruned == ["ConfigMap/%s/added" % namespace]
    assert actions(result) == {
        "ConfigMap/%s/app" % namespace: "configured", "ConfigMap/%s/added" % namespace: "deleted",
        "ConfigMap/%s/added-keep" % namespace: "skipped", "ConfigMap/%s/added-anyone" % namespace: "skipped"}
    assert cluster.get("v1", "ConfigMap", namespace, "app")["data"] == {"v": "1"}
    cluster.assert_deleted("v1", "ConfigMap", namespace, "added")
    assert cluster.get("v1", "ConfigMap", namespace, "added-keep") is not None
    assert cluster.get("v1", "ConfigMap", namespace, "added-anyone") is not None
    assert locator(cluster, namespace)["version"] == "1"
    assert record_status(cluster, namespace, "2") == "rolled-back"


def test_install_only_object_owned_by_the_release_does_what_the_warning_says(cluster, namespace, tmp_path):
    seed = {"werf.io/deploy-on": "install"}
    bundle = render_bundle(cluster, tmp_path, [configmap("seed", annotations=seed, value="initial"),
                                               configmap("app", v="1")], namespace, version="1")
    warning = [w for w in bundle.warnings if "ConfigMap/%s/seed" % namespace in w]
    assert len(warning) == 1
    assert "upgrades leave the live object as it is" in warning[0]
    assert "do not delete it while it stays in the artifact" in warning[0]
    assert "once it leaves the artifact, prune deletes it" in warning[0]
    deployer(cluster).deploy(bundle)
    before = cluster.get("v1", "ConfigMap", namespace, "seed")["metadata"]["resourceVersion"]

    # upgrades: neither updated nor deleted (prune on) while it stays in the artifact
    second = deploy(cluster, tmp_path, [configmap("seed", annotations=seed, value="changed"),
                                        configmap("app", v="2")], namespace, version="2", prune=True)
    assert actions(second)["ConfigMap/%s/seed" % namespace] == "skipped" and second.pruned == []
    assert cluster.get("v1", "ConfigMap", namespace, "seed")["metadata"]["resourceVersion"] == before

    # out of the artifact: prune deletes it, as every object of the release
    third = deploy(cluster, tmp_path, [configmap("app", v="3")], namespace, version="3", prune=True)
    assert third.pruned == ["ConfigMap/%s/seed" % namespace]
    cluster.assert_deleted("v1", "ConfigMap", namespace, "seed")
