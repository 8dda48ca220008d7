# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lifecycle stages on real API servers (issue 12): pre-/post- deploy-on stages and Helm hooks in order,
weights, the succeeded/failed delete policies, skipped hooks in the result, docs/requirements.md §11's per-cluster result,
and StatefulSet (partition, OnDelete) and DaemonSet rollouts waited for.

Pods of the local kwok clusters become Ready about a second after they are scheduled and the pods of Jobs
then succeed; a pod annotated ``manent.test/never-ready`` waits forever with ImagePullBackOff. A Job fails
here through ``activeDeadlineSeconds`` (the Job controller deletes its pods then)."""

from __future__ import annotations

import os
import threading

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import apply_task
from ansible_collections.manent.kubernetes.plugins.module_utils.render.bundle import write
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name
from tests.helpers import chart_path, helm_binary
from tests.integration.deploy_helpers import (
    KEY, deploy, deployer, locator, record_status, render_bundle, render_chart_bundle)
from tests.objects import NEVER_READY, PAUSE, configmap, deployment

pytestmark = pytest.mark.integration


def job(name, annotations=None, never_ready=False, deadline=None):
    spec = {"backoffLimit": 0, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "job", "image": PAUSE, "command": ["/pause"]}]}}}
    if never_ready:
        spec["template"]["metadata"] = {"annotations": dict(NEVER_READY)}
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "annotations": dict(annotations or {})},
            "spec": spec}


def _subjects(result, namespace):
    """(action, Kind/name) of the change set, in the order the deploy recorded them."""
    prefix = "/%s/" % namespace
    return [(c.action, c.subject.replace(prefix, "/")) for c in result.changes]


def _manent_time(obj):
    return max(e["time"] for e in obj["metadata"]["managedFields"] if e["manager"] == "manent")


# --------------------------------------------------------------------------- stages in order


def test_pre_stage_completes_before_the_main_objects_and_post_stage_runs_after_the_rollout(
        cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [configmap("app", v="1"), deployment("web")], namespace, version="1")
    result = deploy(cluster, tmp_path, [
        job("migrate", {"werf.io/deploy-on": "pre-upgrade"}),
        configmap("app", v="2"), deployment("web", template_annotations={"v": "2"}),
        job("smoke", {"manent.io/deploy-on": "post-upgrade"})], namespace, version="2")

    assert result.status == "deployed"
    assert result.stages == [{"stage": "pre-upgrade", "objects": 1, "status": "done"},
                             {"stage": "upgrade", "objects": 2, "status": "done"},
                             {"stage": "post-upgrade", "objects": 1, "status": "done"}]
    assert _subjects(result, namespace) == [
        ("created", "Job/migrate"), ("configured", "ConfigMap/app"), ("configured", "Deployment/web"),
        ("created", "Job/smoke")]
    waited = [(w["ref"].replace("/%s/" % namespace, "/"), w["status"]) for w in result.waited]
    assert waited == [("Job/migrate", "Current"), ("Deployment/web", "Current"), ("Job/smoke", "Current")]
    # on the cluster: the migration completed before the ConfigMap was written, the smoke test was created
    # after the new Deployment was available (timestamps have one-second resolution: ordering, not timing)
    migrate = cluster.get("batch/v1", "Job", namespace, "migrate")
    assert migrate["status"]["completionTime"] <= _manent_time(cluster.get("v1", "ConfigMap", namespace, "app"))
    web = cluster.get("apps/v1", "Deployment", namespace, "web")
    available = [c for c in web["status"]["conditions"] if c["type"] == "Available"][0]
    smoke = cluster.get("batch/v1", "Job", namespace, "smoke")
    assert smoke["metadata"]["creationTimestamp"] >= available["lastUpdateTime"]
    assert smoke["status"].get("succeeded") == 1


def test_failed_pre_stage_job_stops_before_the_main_tiers_and_a_rerun_converges(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [configmap("app", v="1")], namespace, version="1")
    failing = job("migrate", {"werf.io/deploy-on": "pre-upgrade", "werf.io/delete-policy": "failed"},
                  never_ready=True, deadline=2)
    with pytest.raises(WaitError) as err:
        deploy(cluster, tmp_path, [failing, configmap("app", v="2"),
                                   job("smoke", {"werf.io/deploy-on": "post-upgrade"})], namespace, version="2")

    message = str(err.value)
    assert message.startswith("Job/%s/migrate: pre-upgrade stage failed, the main objects were not applied: "
                              "rollout failed: Job Failed" % namespace), message
    assert "DeadlineExceeded" in message
    assert "ImagePullBackOff: container job" in message  # its pods' reason, although the Job controller deleted them
    partial = err.value.partial
    assert partial.status == "failed"
    assert partial.stages == [{"stage": "pre-upgrade", "objects": 1, "status": "failed"}]
    assert _subjects(partial, namespace) == [("created", "Job/migrate"), ("deleted", "Job/migrate")]
    # nothing of the main stage was touched, the post stage never ran, history says where it stopped
    assert cluster.get("v1", "ConfigMap", namespace, "app")["data"] == {"v": "1"}
    assert cluster.get("batch/v1", "Job", namespace, "smoke") is None
    assert record_status(cluster, namespace, "2") == "failed"
    assert locator(cluster, namespace)["version"] == "1"
    # delete-policy failed: deleted once its reasons were reported
    cluster.assert_deleted("batch/v1", "Job", namespace, "migrate", timeout=60)

    fixed = job("migrate", {"werf.io/deploy-on": "pre-upgrade", "werf.io/delete-policy": "failed"})
    rerun = deploy(cluster, tmp_path, [fixed, configmap("app", v="2"),
                                       job("smoke", {"werf.io/deploy-on": "post-upgrade"})], namespace, version="2")
    assert rerun.status == "deployed"
    assert [s["status"] for s in rerun.stages] == ["done", "done", "done"]
    assert cluster.get("v1", "ConfigMap", namespace, "app")["data"] == {"v": "2"}
    assert record_status(cluster, namespace, "2") == "deployed"
    assert locator(cluster, namespace)["version"] == "2"
    assert cluster.get("batch/v1", "Job", namespace, "migrate")["status"].get("succeeded") == 1


def test_post_stage_waits_for_the_main_rollout(cluster, namespace, tmp_path):
    broken = deployment("web", template_annotations=NEVER_READY, deadline=1)
    with pytest.raises(WaitError) as err:
        deploy(cluster, tmp_path, [broken, job("smoke", {"werf.io/deploy-on": "post-install"})], namespace,
               version="1", wait=False)  # wait: false, but a post stage needs the main rollout Current
    assert "Deployment/%s/web" % namespace in str(err.value)
    assert [s["status"] for s in err.value.partial.stages] == ["failed"]
    assert cluster.get("batch/v1", "Job", namespace, "smoke") is None


def test_rollback_runs_the_pre_and_post_rollback_stages_of_the_stored_release(cluster, namespace, tmp_path):
    hooks = [job("restore", {"werf.io/deploy-on": "pre-rollback"}), job("verify", {"werf.io/deploy-on": "post-rollback"})]
    first = deploy(cluster, tmp_path, hooks + [configmap("app", v="1")], namespace, version="1")
    assert [s["stage"] for s in first.stages] == ["install"]  # rollback-only objects: not applied on install
    assert cluster.get("batch/v1", "Job", namespace, "restore") is None
    deploy(cluster, tmp_path, [configmap("app", v="2")], namespace, version="2")

    result = deployer(cluster).rollback(namespace, KEY)
    assert result.status == "rolled-back"
    assert result.stages == [{"stage": "pre-rollback", "objects": 1, "status": "done"},
                             {"stage": "rollback", "objects": 1, "status": "done"},
                             {"stage": "post-rollback", "objects": 1, "status": "done"}]
    assert _subjects(result, namespace) == [("created", "Job/restore"), ("configured", "ConfigMap/app"),
                                            ("created", "Job/verify")]
    restore = cluster.get("batch/v1", "Job", namespace, "restore")
    assert restore["status"]["completionTime"] <= _manent_time(cluster.get("v1", "ConfigMap", namespace, "app"))


# --------------------------------------------------------------------------- Helm hooks, weights, policies


def test_hook_annotations_map_to_stages_weights_and_delete_policies(cluster, namespace, tmp_path):
    def hook(name, weight, policy="before-hook-creation"):
        return job(name, {"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": str(weight),
                          "helm.sh/hook-delete-policy": policy})

    objects = [hook("second", 5, "hook-succeeded"), hook("first", -5), configmap("app", v="1"),
               configmap("seed", {"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "0"}, v="1")]
    result = deploy(cluster, tmp_path, objects, namespace, version="1")
    assert result.stages[0] == {"stage": "pre-install", "objects": 3, "status": "done"}
    assert _subjects(result, namespace) == [
        ("created", "Job/first"), ("created", "ConfigMap/seed"), ("created", "Job/second"),
        ("deleted", "Job/second"), ("created", "ConfigMap/app")]
    first = cluster.get("batch/v1", "Job", namespace, "first")
    assert first["status"]["succeeded"] == 1  # before-hook-creation only: kept until the next deploy
    # hook-succeeded: deleted after it completed
    cluster.assert_deleted("batch/v1", "Job", namespace, "second", timeout=60)

    # next deploy: the hooks run again (pre-upgrade), before-hook-creation recreates the first one
    again = deploy(cluster, tmp_path, objects[:3], namespace, version="2")
    assert _subjects(again, namespace)[:3] == [("recreated", "Job/first"), ("created", "Job/second"),
                                               ("deleted", "Job/second")]
    assert cluster.get("batch/v1", "Job", namespace, "first")["metadata"]["uid"] != first["metadata"]["uid"]


class _ChangeWhileStageRuns(threading.Thread):
    """As soon as ConfigMap ``touched`` appears in ``namespace``, changes it as another field manager, then lets the
    hook Deployment ``gate`` become ready (its pods never do while their template carries NEVER_READY): the stage
    cannot end before the ConfigMap was changed."""

    def __init__(self, cluster, namespace):
        super().__init__(daemon=True, name="change-while-stage-runs")
        self.cluster, self.namespace, self.error = cluster, namespace, None
        self.start()

    def run(self):
        try:
            # each object is waited for: the Deployment (hook weight 1) is applied after the ConfigMap (weight 0)
            for api_version, kind, name, path, patch in (
                    ("v1", "ConfigMap", "touched", "/api/v1/namespaces/%s/configmaps/touched",
                     {"data": {"by": "someone-else"}}),
                    ("apps/v1", "Deployment", "gate", "/apis/apps/v1/namespaces/%s/deployments/gate",
                     {"spec": {"template": {"metadata": {"annotations": {"manent.test/never-ready": None}}}}})):
                self.cluster.wait(lambda v=api_version, k=kind, n=name: self.cluster.get(v, k, self.namespace, n),
                                  timeout=120, interval=0.05, what="%s %s" % (kind, name))
                self.cluster.kube.request("PATCH", path % self.namespace, query={"fieldManager": "someone-else"},
                                          body=patch, content_type="application/merge-patch+json", subject=kind)
        except Exception as exc:  # pylint: disable=broad-except  # reported by the test
            self.error = exc


def test_succeeded_deletes_hooks_of_every_kind_and_leaves_one_someone_else_changed(cluster, namespace, tmp_path):
    """hook-succeeded on a ServiceAccount, a Role, a RoleBinding and ConfigMaps (not only Jobs and Pods): each is
    deleted once the pre-install stage succeeded, and the change set says so; a ConfigMap that another field manager
    changed while the stage ran is left (its resourceVersion and content are no longer what this deploy applied),
    with the reason."""
    succeeded = {"helm.sh/hook": "pre-install", "helm.sh/hook-delete-policy": "hook-succeeded"}
    rbac = "rbac.authorization.k8s.io/v1"
    objects = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "hook", "annotations": dict(succeeded)}},
        {"apiVersion": rbac, "kind": "Role", "metadata": {"name": "hook", "annotations": dict(succeeded)},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        {"apiVersion": rbac, "kind": "RoleBinding", "metadata": {"name": "hook", "annotations": dict(succeeded)},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "hook"},
         "subjects": [{"kind": "ServiceAccount", "name": "hook", "namespace": namespace}]},
        configmap("plain", dict(succeeded), v="1"), configmap("touched", dict(succeeded), v="1"),
        deployment("gate", template_annotations=dict(NEVER_READY),
                   annotations={"helm.sh/hook": "pre-install", "helm.sh/hook-weight": "1"}),
        configmap("app", v="1")]
    changer = _ChangeWhileStageRuns(cluster, namespace)
    result = deploy(cluster, tmp_path, objects, namespace, version="1")
    changer.join(5)
    assert changer.error is None, changer.error
    by_policy = sorted((c.action, c.subject.replace("/%s/" % namespace, "/"), c.reason) for c in result.changes
                       if c.reason.startswith("delete-policy"))
    assert by_policy == sorted([
        ("skipped", "ConfigMap/touched", "delete-policy succeeded: not deleted: changed since this deploy applied it "
                                         "(by someone-else)"),
        ("deleted", "ConfigMap/plain", "delete-policy succeeded"),
        ("deleted", "RoleBinding/hook", "delete-policy succeeded"),
        ("deleted", "Role/hook", "delete-policy succeeded"),
        ("deleted", "ServiceAccount/hook", "delete-policy succeeded")])
    for api_version, kind, name in (("v1", "ServiceAccount", "hook"), (rbac, "Role", "hook"),
                                    (rbac, "RoleBinding", "hook"), ("v1", "ConfigMap", "plain")):
        assert cluster.get(api_version, kind, namespace, name) is None, (kind, name)  # gone when the deploy ends
    assert cluster.get("v1", "ConfigMap", namespace, "touched")["data"] == {"v": "1", "by": "someone-else"}
    assert cluster.get("apps/v1", "Deployment", namespace, "gate") is not None  # no policy that deletes it


def test_a_failed_weight_group_stops_the_later_groups(cluster, namespace, tmp_path):
    objects = [job("first", {"werf.io/deploy-on": "pre-install", "werf.io/weight": "-1"}, never_ready=True,
                   deadline=2),
               job("second", {"werf.io/deploy-on": "pre-install", "werf.io/weight": "1"}), configmap("app", v="1")]
    with pytest.raises(WaitError) as err:
        deploy(cluster, tmp_path, objects, namespace, version="1")
    assert "pre-install stage failed" in str(err.value)
    assert cluster.get("batch/v1", "Job", namespace, "first") is not None  # no failed policy: kept for a look
    assert cluster.get("batch/v1", "Job", namespace, "second") is None
    assert cluster.get("v1", "ConfigMap", namespace, "app") is None
    assert record_status(cluster, namespace, "1") == "failed"


def test_chart_hook_runs_as_a_pre_install_stage_and_skipped_hooks_are_reported(cluster, namespace, tmp_path):
    helm, chart = helm_binary(), chart_path("manent-sample-0.1.0.tgz")
    values = {"route": {"enabled": False}, "replicaCount": 1}
    bundle = render_chart_bundle(cluster, chart, namespace, helm, helm_release="sample", helm_skip_crds=True,
                                 helm_hooks="apply", helm_value=values)
    result = deployer(cluster).deploy(bundle)
    assert [s["stage"] for s in result.stages] == ["pre-install", "install"]
    subjects = _subjects(result, namespace)
    assert subjects[:2] == [("created", "Job/sample-manent-sample-migrate"),
                            ("deleted", "Job/sample-manent-sample-migrate")]  # hook-succeeded
    assert ("created", "Deployment/sample-manent-sample") in subjects[2:]
    assert result.hooks_skipped == ["Pod/sample-manent-sample-test-connection (hook: test)"]
    cluster.assert_deleted("batch/v1", "Job", namespace, "sample-manent-sample-migrate", timeout=60)

    skipped = render_chart_bundle(cluster, chart, namespace, helm, version="0.1.1", helm_release="sample",
                                  helm_skip_crds=True, helm_value=values)
    second = deployer(cluster).deploy(skipped)
    out = second.to_dict()
    assert sorted(out["details"]["helm_hooks_skipped"]) == [
        "Job/sample-manent-sample-migrate (hook: pre-install,pre-upgrade)",
        "Pod/sample-manent-sample-test-connection (hook: test)"]
    assert [w for w in out["warnings"] if w.startswith("Helm hook not applied")] == [
        "Helm hook not applied: %s; set helm_hooks: apply to run hooks as lifecycle stages (test hooks never apply)"
        % hook for hook in out["details"]["helm_hooks_skipped"]]
    assert cluster.get("batch/v1", "Job", namespace, "sample-manent-sample-migrate") is None


# --------------------------------------------------------------------------- docs/requirements.md §11 result


def _params(cluster, bundle_path, **extra):
    params = {name: spec.get("default") for name, spec in apply_task.argument_spec().items()}
    params.update(api_server=cluster.url, token=cluster.token, ca_file=cluster.ca_file, bundle=bundle_path,
                  work_dir=str(os.path.dirname(bundle_path)))
    params.update(extra)
    return params


def test_manent_apply_result_has_the_spec_shape(cluster, namespace, tmp_path):
    first = render_bundle(cluster, tmp_path, [configmap("a", v="1"), configmap("b", v="1")], namespace, version="1")
    write(first, str(tmp_path / "b1.json"))
    apply_task.run(_params(cluster, str(tmp_path / "b1.json")), False, False)
    second = render_bundle(cluster, tmp_path, [configmap("a", v="2")], namespace, version="2")
    write(second, str(tmp_path / "b2.json"))
    out = apply_task.run(_params(cluster, str(tmp_path / "b2.json"), prune=True), False, False)
    assert out["host"] == cluster.url and out["status"] == "deployed"
    details = out["details"]
    assert details["namespace"] == namespace
    assert details["objects"] == 1  # ConfigMap a; the pruned b is not the release's any more
    assert details["release"] == record_name(KEY, "2") and details["release"].startswith("manent-")
    assert details["version"] == "2" and details["previous"] == "1"
    assert details["pruned"] == ["ConfigMap/%s/b" % namespace]
    assert details["helm_hooks_skipped"] == [] and details["objects_skipped"] == 0
    assert cluster.get("v1", "ConfigMap", namespace, record_name(KEY, "2")) is not None  # the name is real


# --------------------------------------------------------------------------- StatefulSet and DaemonSet rollouts


def _statefulset(name, replicas=3, strategy=None, template_annotations=None):
    template = {"metadata": {"labels": {"sts": name}}, "spec": {"containers": [{"name": "db", "image": PAUSE}]}}
    if template_annotations:
        template["metadata"]["annotations"] = dict(template_annotations)
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name, "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"sts": name}}, "template": template,
                     "updateStrategy": strategy or {"type": "RollingUpdate"}}}


def _daemonset(name, strategy=None, template_annotations=None):
    template = {"metadata": {"labels": {"ds": name}}, "spec": {"containers": [{"name": "agent", "image": PAUSE}]}}
    if template_annotations:
        template["metadata"]["annotations"] = dict(template_annotations)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"ds": name}}, "template": template,
                     "updateStrategy": strategy or {"type": "RollingUpdate"}}}


def _revisions(cluster, namespace, label):
    return {p["metadata"]["name"]: p["metadata"]["labels"].get("controller-revision-hash")
            for p in cluster.list("v1", "Pod", namespace, label) if not p["metadata"].get("deletionTimestamp")}


def test_statefulset_partition_rollout_is_waited_for_up_to_the_partition(cluster, namespace, tmp_path):
    partition = {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
    deploy(cluster, tmp_path, [_statefulset("db", strategy=partition)], namespace, version="1", wait_timeout=120)
    result = deploy(cluster, tmp_path, [_statefulset("db", strategy=partition, template_annotations={"v": "2"})],
                    namespace, version="2", wait_timeout=120)
    assert [(w["status"]) for w in result.waited] == ["Current"]
    live = cluster.get("apps/v1", "StatefulSet", namespace, "db")
    assert live["status"]["updatedReplicas"] == 1 and live["status"]["readyReplicas"] == 3
    revisions = _revisions(cluster, namespace, "sts=db")
    assert revisions["db-2"] == live["status"]["updateRevision"]  # the ordinal at the partition: updated
    assert revisions["db-0"] == revisions["db-1"] == live["status"]["currentRevision"] != revisions["db-2"]


def test_statefulset_ondelete_waits_for_ready_replicas_not_for_updates(cluster, namespace, tmp_path):
    ondelete = {"type": "OnDelete"}
    with pytest.raises(WaitError) as err:  # kstatus would call it Current at once
        deploy(cluster, tmp_path, [_statefulset("stuck", 2, ondelete, NEVER_READY)], namespace, version="1",
               wait_timeout=5)
    assert "StatefulSet/%s/stuck" % namespace in str(err.value) and "Ready: 0/2" in str(err.value)

    deploy(cluster, tmp_path, [_statefulset("db", 2, ondelete)], namespace, version="2", wait_timeout=120)
    assert cluster.get("apps/v1", "StatefulSet", namespace, "db")["status"]["readyReplicas"] == 2
    before = _revisions(cluster, namespace, "sts=db")
    result = deploy(cluster, tmp_path, [_statefulset("db", 2, ondelete, {"v": "2"})], namespace, version="3",
                    wait_timeout=60)  # does not wait for pods that nothing replaces
    assert [(w["ref"], w["status"]) for w in result.waited] == [("StatefulSet/%s/db" % namespace, "Current")]
    assert _revisions(cluster, namespace, "sts=db") == before


def test_daemonset_rollout_is_waited_for_on_every_node(cluster, namespace, tmp_path):
    nodes = len(cluster.list("v1", "Node"))
    deploy(cluster, tmp_path, [_daemonset("agent")], namespace, version="1", wait_timeout=120)
    result = deploy(cluster, tmp_path, [_daemonset("agent", template_annotations={"v": "2"})], namespace,
                    version="2", wait_timeout=120)
    assert [w["status"] for w in result.waited] == ["Current"]
    live = cluster.get("apps/v1", "DaemonSet", namespace, "agent")
    status = live["status"]
    assert status["desiredNumberScheduled"] == nodes
    assert status["updatedNumberScheduled"] == status["numberReady"] == nodes
    pods = cluster.list("v1", "Pod", namespace, "ds=agent")
    assert len([p for p in pods if (p["metadata"].get("annotations") or {}).get("v") == "2"
                and not p["metadata"].get("deletionTimestamp")]) == nodes


def test_daemonset_ondelete_does_not_wait_for_pods_nothing_replaces(cluster, namespace, tmp_path):
    ondelete = {"type": "OnDelete"}
    deploy(cluster, tmp_path, [_daemonset("agent", ondelete)], namespace, version="1", wait_timeout=120)
    before = _revisions(cluster, namespace, "ds=agent")
    result = deploy(cluster, tmp_path, [_daemonset("agent", ondelete, {"v": "2"})], namespace, version="2",
                    wait_timeout=30)
    assert [w["status"] for w in result.waited] == ["Current"]
    assert _revisions(cluster, namespace, "ds=agent") == before
    assert cluster.get("apps/v1", "DaemonSet", namespace, "agent")["status"].get("updatedNumberScheduled", 0) == 0
