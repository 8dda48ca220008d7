# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lifecycle stages: deploy-on and helm.sh/hook to stages, weights to groups, which objects a stage waits for,
delete policies after a wait, and the run order of one stage (recorded calls, no cluster)."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import stages
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of


def _obj(kind="ConfigMap", name="c", api_version="v1", **annotations):
    meta = {"name": name, "namespace": "n", "annotations": dict(annotations)}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def _job(name, **annotations):
    return _obj("Job", name, "batch/v1", **annotations)


def _names(stage):
    return [(weight, [o["metadata"]["name"] for o in objs]) for weight, objs in stage.groups]


@pytest.mark.parametrize("value,phase,expected", [
    ("pre-install", "install", {"pre"}),
    ("post-upgrade", "upgrade", {"post"}),
    ("upgrade", "upgrade", {"main"}),
    ("pre-upgrade,post-upgrade", "upgrade", {"pre", "post"}),
    ("pre-upgrade", "install", set()),
    ("pre-rollback,rollback", "rollback", {"pre", "main"}),
    ("pre-uninstall,post-uninstall", "upgrade", set()),
])
def test_deploy_on_values_map_to_stages(value, phase, expected):
    for prefix in ("werf.io/", "manent.io/"):
        assert lifecycle.stages_in(_obj(**{prefix + "deploy-on": value}), phase) == frozenset(expected)


@pytest.mark.parametrize("events,phase,expected", [
    ("pre-install,pre-upgrade", "install", {"pre"}),
    ("pre-install,pre-upgrade", "upgrade", {"pre"}),
    ("post-install", "install", {"post"}),
    ("post-install", "upgrade", set()),
    ("pre-rollback, post-rollback", "rollback", {"pre", "post"}),
    ("pre-delete", "install", set()),
])
def test_helm_hook_events_map_to_stages(events, phase, expected):
    assert lifecycle.stages_in(_obj(**{"helm.sh/hook": events}), phase) == frozenset(expected)


def test_deploy_on_wins_over_hook_events_and_plain_objects_are_main():
    obj = _obj(**{"helm.sh/hook": "pre-install", "werf.io/deploy-on": "post-install"})
    assert lifecycle.stages_in(obj, "install") == frozenset(["post"])
    assert all(lifecycle.stages_in(_obj(), phase) == frozenset(["main"]) for phase in lifecycle.PHASES)


@pytest.mark.parametrize("annotations,expected", [
    ({}, 0),
    ({"helm.sh/hook-weight": "-5"}, -5),
    ({"helm.sh/hook-weight": " 10 "}, 10),
    ({"werf.io/weight": "3", "helm.sh/hook-weight": "-5"}, 3),
    ({"manent.io/weight": "-2"}, -2),
    ({"helm.sh/hook-weight": ""}, 0),
])
def test_weight(annotations, expected):
    assert lifecycle.weight(_obj(**annotations)) == expected


def test_bad_weight_names_the_annotation_and_the_object():
    with pytest.raises(InputError) as err:
        lifecycle.weight(_obj(name="w", **{"helm.sh/hook-weight": "high"}))
    assert "helm.sh/hook-weight" in str(err.value) and "'high'" in str(err.value)
    assert err.value.subject == "ConfigMap/n/w"
    assert any("helm.sh/hook-weight" in w for w in lifecycle.lint(_obj(**{"helm.sh/hook-weight": "x"})))


def test_hook_delete_policies_map_to_manent_policies():
    obj = _obj(**{"helm.sh/hook": "pre-install",
                  "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded,hook-failed"})
    assert lifecycle.delete_policies(obj) == frozenset(["before-creation", "succeeded", "failed"])


def test_plan_orders_stages_and_weight_groups():
    objects = [
        _job("late", **{"werf.io/deploy-on": "pre-upgrade", "werf.io/weight": "10"}),
        _job("early", **{"helm.sh/hook": "pre-upgrade", "helm.sh/hook-weight": "-5"}),
        _obj(name="cfg-a", **{"werf.io/deploy-on": "pre-upgrade"}),
        _job("zero", **{"werf.io/deploy-on": "pre-upgrade"}),
        _obj(name="main"),
        _job("after", **{"werf.io/deploy-on": "post-upgrade"}),
        _job("twice", **{"werf.io/deploy-on": "pre-upgrade,post-upgrade", "werf.io/weight": "1"}),
        _obj(name="install-only", **{"werf.io/deploy-on": "pre-install"}),
    ]
    plan = stages.plan(objects, "upgrade")
    assert [(s.name, s.when) for s in plan] == [("pre-upgrade", "pre"), ("upgrade", "main"), ("post-upgrade", "post")]
    assert _names(plan[0]) == [(-5, ["early"]), (0, ["cfg-a", "zero"]), (1, ["twice"]), (10, ["late"])]
    assert _names(plan[1]) == [(0, ["main"])]
    assert _names(plan[2]) == [(0, ["after"]), (1, ["twice"])]
    assert plan[0].summary("done") == {"stage": "pre-upgrade", "objects": 5, "status": "done"}


def test_plan_always_has_the_main_stage():
    plan = stages.plan([_job("hook", **{"helm.sh/hook": "post-install"})], "install")
    assert [(s.name, len(s.objects)) for s in plan] == [("install", 0), ("post-install", 1)]


def test_what_a_stage_waits_for():
    deployment = _obj("Deployment", "web", "apps/v1")
    job, pod, cm = _job("j"), _obj("Pod", "p"), _obj()
    for when in ("pre", "post"):
        assert stages.waited_in(job, when) and stages.waited_in(pod, when) and stages.waited_in(deployment, when)
        assert not stages.waited_in(cm, when)
    assert stages.waited_in(deployment, "main") and not stages.waited_in(job, "main")
    assert stages.waited_in(_job("j", **{"werf.io/delete-policy": "succeeded"}), "main")
    assert stages.waited_in(_obj("Pod", "p", **{"helm.sh/hook-delete-policy": "hook-failed"}), "main")


def test_succeeded_and_failed_read_jobs_and_pods():
    complete = {"kind": "Job", "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    failing = {"kind": "Job", "status": {"conditions": [{"type": "FailureTarget", "status": "True"}]}}
    running = {"kind": "Job", "status": {"active": 1}}
    assert stages.succeeded(complete) and not stages.failed(complete)
    assert stages.failed(failing) and not stages.succeeded(failing)
    assert not stages.succeeded(running) and not stages.failed(running) and not stages.succeeded(None)
    assert stages.succeeded({"kind": "Pod", "status": {"phase": "Succeeded"}})
    assert stages.failed({"kind": "Pod", "status": {"phase": "Failed"}})


class _Reader:
    def __init__(self, live):
        self.live = live

    def get(self, obj):
        return self.live.get(obj["metadata"]["name"])


class _Deleter:
    """Records deletes: Jobs and Pods by uid (``delete``), other kinds as the deploy applied them
    (``delete_applied``: ``left`` maps a name to why it is left)."""

    def __init__(self, live, left=None, calls=None):
        self.reader = _Reader(live)
        self.deleted = []
        self.left = left or {}
        self.calls = calls if calls is not None else []

    def delete(self, obj, wait=True, propagation=None, uid=None):
        self.deleted.append((obj["metadata"]["name"], uid, wait))
        self.calls.append(("delete", obj["metadata"]["name"]))
        return True

    def delete_applied(self, obj, applied=None, wait=True):
        name = obj["metadata"]["name"]
        if name in self.left:
            return False, self.left[name]
        self.deleted.append((name, ((applied or {}).get("metadata") or {}).get("uid"), wait))
        self.calls.append(("delete", name))
        return True, ""


def _live(state, uid):
    conds = {"complete": [{"type": "Complete", "status": "True"}], "failed": [{"type": "Failed", "status": "True"}]}
    return {"kind": "Job", "metadata": {"uid": uid}, "status": {"conditions": conds[state]}}


def test_run_applies_groups_in_order_waits_each_and_deletes_succeeded():
    objects = [_job("b", **{"werf.io/deploy-on": "pre-upgrade", "werf.io/weight": "2",
                            "werf.io/delete-policy": "succeeded"}),
               _job("a", **{"werf.io/deploy-on": "pre-upgrade"}),
               _obj(name="cfg", **{"werf.io/deploy-on": "pre-upgrade"})]
    stage = stages.plan(objects, "upgrade")[0]
    calls, changes = [], []
    deleter = _Deleter({"a": _live("complete", "u-a"), "b": _live("complete", "u-b")})

    def wait(objs):
        calls.append(("wait", [o["metadata"]["name"] for o in objs]))
        return [{"ref": o["metadata"]["name"]} for o in objs]

    entries = stages.run(stage, lambda objs: calls.append(("apply", [o["metadata"]["name"] for o in objs])),
                         wait, deleter, changes, wait=False)  # pre stages wait even without wait
    assert calls == [("apply", ["a", "cfg"]), ("wait", ["a"]), ("apply", ["b"]), ("wait", ["b"])]
    assert entries == [{"ref": "a"}, {"ref": "b"}]
    assert deleter.deleted == [("b", "u-b", False)]
    assert [(c.subject, c.action, c.reason) for c in changes] == [
        ("Job/n/b", "deleted", "delete-policy succeeded")]


def test_run_stops_at_a_failed_group_deletes_failed_policy_jobs_and_names_the_stage():
    objects = [_job("bad", **{"werf.io/deploy-on": "pre-install", "werf.io/delete-policy": "failed"}),
               _job("later", **{"werf.io/deploy-on": "pre-install", "werf.io/weight": "1"})]
    stage = stages.plan(objects, "install")[0]
    applied, changes = [], []
    deleter = _Deleter({"bad": _live("failed", "u-bad")})

    def wait(objs):
        raise WaitError("rollout failed: Job Failed; pods: pod bad-x: ImagePullBackOff", subject="Job/n/bad",
                        permanent=True)

    with pytest.raises(WaitError) as err:
        stages.run(stage, lambda objs: applied.extend(o["metadata"]["name"] for o in objs), wait, deleter, changes)
    assert applied == ["bad"]
    assert str(err.value).startswith("Job/n/bad: pre-install stage failed, the main objects were not applied: "
                                     "rollout failed: Job Failed; pods: pod bad-x: ImagePullBackOff")
    assert deleter.deleted == [("bad", "u-bad", False)]
    assert [(c.subject, c.action) for c in changes] == [("Job/n/bad", "deleted")]


def test_main_stage_without_wait_does_not_wait():
    stage = stages.plan([_obj("Deployment", "web", "apps/v1")], "upgrade")[0]
    waited = []
    stages.run(stage, lambda objs: None, waited.append, _Deleter({}), [], wait=False)
    assert waited == []


def test_pod_witness_remembers_the_pods_of_a_running_job_to_explain_its_failure():
    running = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "n"},
               "status": {"active": 1}}
    failed = dict(running, status={"failed": 1, "conditions": [
        {"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]})
    bad_pod = {"kind": "Pod", "metadata": {"name": "j-x"}, "status": {"phase": "Pending", "containerStatuses": [
        {"name": "job", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off"}}}]}}
    listings = [[bad_pod], [], []]
    witness = stages.PodWitness(lambda obj: running, lambda obj: listings.pop(0))
    assert witness.fetch(running) is running  # lists the pods of the running Job: remembered
    assert witness.list_pods(failed) == [bad_pod]  # gone now (deadline exceeded): the last ones seen explain it


def test_pod_witness_shows_a_job_that_did_not_fail_with_its_pods_as_they_are_now():
    running = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "n"},
               "status": {"active": 1}}
    pending = {"kind": "Pod", "metadata": {"name": "j-x"}, "status": {"phase": "Pending"}}
    listings = [[pending], []]
    witness = stages.PodWitness(lambda obj: running, lambda obj: listings.pop(0))
    assert witness.fetch(running) is running
    assert witness.list_pods(running) == []  # the pod finished and is gone: no stale "Pending" in progress lines


def test_pod_witness_watches_jobs_read_together():
    running = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "n"},
               "status": {"active": 1}}
    done = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "k", "namespace": "n"},
            "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    listed = []
    witness = stages.PodWitness(None, lambda obj: listed.append(obj["metadata"]["name"]) or [],
                                lambda objs: {"j": running, "k": done})
    assert witness.fetch_many([running, done]) == {"j": running, "k": done}
    assert listed == ["j"]  # only the running Job's pods are listed


def _hook(kind, name, events, policy, api_version="v1", weight=None):
    annotations = {"helm.sh/hook": events, "helm.sh/hook-delete-policy": policy}
    if weight is not None:
        annotations["helm.sh/hook-weight"] = str(weight)
    obj = _obj(kind, name, api_version, **annotations)
    if kind.startswith("Cluster"):
        del obj["metadata"]["namespace"]
    return obj


def _recorder(calls):
    def apply(objs):
        calls.append(("apply", [o["metadata"]["name"] for o in objs]))

    def wait(objs):
        calls.append(("wait", [o["metadata"]["name"] for o in objs]))
        return []
    return apply, wait


def test_succeeded_deletes_every_kind_of_the_stage_once_it_is_done_in_reverse_order():
    """ingress-nginx's admission hooks: RBAC and a Job, before-hook-creation,hook-succeeded; Helm deletes them all
    at the end of the event, after every hook ran, the last one first."""
    policy = "before-hook-creation,hook-succeeded"
    events = "pre-install,pre-upgrade,post-install,post-upgrade"
    rbac = "rbac.authorization.k8s.io/v1"
    objects = [_hook("ServiceAccount", "adm", events, policy), _hook("ClusterRole", "adm", events, policy, rbac),
               _hook("ClusterRoleBinding", "adm", events, policy, rbac), _hook("Role", "adm-r", events, policy, rbac),
               _hook("Job", "create", "pre-install,pre-upgrade", policy, "batch/v1"),
               _hook("Job", "late", "pre-install", "hook-succeeded", "batch/v1", weight=5)]
    stage = stages.plan(objects, "install")[0]
    calls, changes = [], []
    deleter = _Deleter({"create": _live("complete", "u-c"), "late": _live("complete", "u-l")}, calls=calls)
    applied = {key_of(objects[1]): {"metadata": {"uid": "u-cr"}}}
    apply, wait = _recorder(calls)
    stages.run(stage, apply, wait, deleter, changes, applied=applied)
    assert calls == [("apply", ["adm", "adm", "adm", "adm-r", "create"]), ("wait", ["create"]),
                     ("apply", ["late"]), ("wait", ["late"]),
                     ("delete", "late"), ("delete", "create"), ("delete", "adm-r"), ("delete", "adm"),
                     ("delete", "adm"), ("delete", "adm")]
    assert ("adm", "u-cr", True) in deleter.deleted  # as this deploy applied it, waited until gone
    assert ("create", "u-c", False) in deleter.deleted  # a Job: the uid of the live copy judged, as before
    assert [(c.subject, c.action, c.reason) for c in changes] == [
        ("Job/n/late", "deleted", "delete-policy succeeded"), ("Job/n/create", "deleted", "delete-policy succeeded"),
        ("Role/n/adm-r", "deleted", "delete-policy succeeded"),
        ("ClusterRoleBinding/adm", "deleted", "delete-policy succeeded"),
        ("ClusterRole/adm", "deleted", "delete-policy succeeded"),
        ("ServiceAccount/n/adm", "deleted", "delete-policy succeeded")]


def test_an_object_needed_by_a_later_stage_is_deleted_after_each_stage_and_applied_again():
    objects = [_hook("ServiceAccount", "adm", "pre-install,post-install", "before-hook-creation,hook-succeeded")]
    plan = stages.plan(objects, "install")
    assert [s.name for s in plan] == ["pre-install", "install", "post-install"]
    calls, changes = [], []
    deleter = _Deleter({}, calls=calls)
    apply, wait = _recorder(calls)
    for stage in plan:
        stages.run(stage, apply, wait, deleter, changes)
    assert calls == [("apply", ["adm"]), ("delete", "adm"), ("apply", ["adm"]), ("delete", "adm")]


def test_an_object_changed_by_someone_else_is_left_and_said_so():
    objects = [_hook("ConfigMap", "seed", "pre-install", "hook-succeeded")]
    changes = []
    deleter = _Deleter({}, left={"seed": "changed since this deploy applied it (by kubectl-edit)"})
    stages.run(stages.plan(objects, "install")[0], lambda objs: None, lambda objs: [], deleter, changes)
    assert deleter.deleted == []
    assert [(c.subject, c.action, c.reason) for c in changes] == [
        ("ConfigMap/n/seed", "skipped", "delete-policy succeeded: not deleted: changed since this deploy applied it "
                                        "(by kubectl-edit)")]


def test_a_failed_wait_deletes_what_succeeded_by_succeeded_and_what_failed_by_failed():
    """As Helm when a hook fails: the hooks that ran before it are deleted by hook-succeeded, the failed one by
    hook-failed; the groups after it are not applied. A kind that cannot fail is never deleted by failed."""
    objects = [_hook("ServiceAccount", "sa", "pre-install", "hook-succeeded", weight=-1),
               _hook("ConfigMap", "kept", "pre-install", "hook-failed", weight=-1),
               _hook("Job", "ok", "pre-install", "hook-succeeded", "batch/v1", weight=-1),
               _hook("Job", "bad", "pre-install", "hook-failed,hook-succeeded", "batch/v1"),
               _hook("Job", "good", "pre-install", "hook-succeeded", "batch/v1"),
               _hook("Role", "next", "pre-install", "hook-succeeded", "rbac.authorization.k8s.io/v1", weight=1)]
    stage = stages.plan(objects, "install")[0]
    changes = []
    deleter = _Deleter({"ok": _live("complete", "u-ok"), "bad": _live("failed", "u-bad"),
                        "good": _live("complete", "u-good")})
    waits = []

    def wait(objs):
        waits.append([o["metadata"]["name"] for o in objs])
        if len(waits) == 2:
            raise WaitError("rollout failed: Job Failed", subject="Job/n/bad", permanent=True)
        return []

    with pytest.raises(WaitError) as err:
        stages.run(stage, lambda objs: None, wait, deleter, changes)
    assert "pre-install stage failed" in str(err.value)
    assert waits == [["ok"], ["bad", "good"]]
    assert [(c.subject, c.reason) for c in changes] == [
        ("Job/n/good", "delete-policy succeeded"), ("Job/n/bad", "delete-policy failed"),
        ("Job/n/ok", "delete-policy succeeded"), ("ServiceAccount/n/sa", "delete-policy succeeded")]


def test_a_workload_of_the_failed_group_is_judged_by_its_status():
    objects = [_hook("Deployment", "up", "pre-install", "hook-succeeded", "apps/v1"),
               _hook("Deployment", "down", "pre-install", "hook-failed", "apps/v1"),
               _hook("Deployment", "slow", "pre-install", "hook-failed,hook-succeeded", "apps/v1")]
    current = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"generation": 1},
               "spec": {"replicas": 1}, "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                                                   "readyReplicas": 1, "availableReplicas": 1, "conditions": [
                                                       {"type": "Available", "status": "True"}]}}
    failed = dict(current, status={"observedGeneration": 1, "replicas": 1, "conditions": [
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]})
    progressing = dict(current, status={"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1})
    changes = []
    deleter = _Deleter({"up": current, "down": failed, "slow": progressing})

    def wait(objs):
        raise WaitError("rollout failed", subject="Deployment/n/down", permanent=True)

    with pytest.raises(WaitError):
        stages.run(stages.plan(objects, "install")[0], lambda objs: None, wait, deleter, changes)
    assert [(c.subject, c.reason) for c in changes] == [
        ("Deployment/n/down", "delete-policy failed"), ("Deployment/n/up", "delete-policy succeeded")]


def test_a_main_stage_without_wait_deletes_only_what_needs_no_wait():
    objects = [_obj("ConfigMap", "once", **{"werf.io/delete-policy": "succeeded"}),
               _obj("Deployment", "web", "apps/v1", **{"werf.io/delete-policy": "succeeded"}),
               _job("j", **{"werf.io/delete-policy": "succeeded"})]
    changes = []
    deleter = _Deleter({"j": _live("complete", "u-j")})
    stages.run(stages.plan(objects, "upgrade")[0], lambda objs: None, lambda objs: [], deleter, changes, wait=False)
    assert [(c.subject, c.action) for c in changes] == [("ConfigMap/n/once", "deleted")]


def test_custom_resource_definitions_are_never_deleted_by_a_delete_policy():
    crd = _hook("CustomResourceDefinition", "widgets.example.com", "pre-install",
                "before-hook-creation,hook-succeeded", "apiextensions.k8s.io/v1")
    assert lifecycle.delete_policies(crd) == frozenset()
    assert any("never deleted by a delete policy" in w for w in lifecycle.lint(crd))
    assert not any("never deleted" in w for w in lifecycle.lint(
        _obj("CustomResourceDefinition", "w", "apiextensions.k8s.io/v1", **{"helm.sh/hook": "pre-install"})))
    changes = []
    stages.run(stages.plan([crd], "install")[0], lambda objs: None, lambda objs: [], _Deleter({}), changes)
    assert changes == []


def test_check_mode_lists_what_succeeded_would_delete():
    objects = [_hook("ServiceAccount", "adm", "pre-install", "before-hook-creation,hook-succeeded"),
               _hook("Job", "create", "pre-install", "hook-succeeded", "batch/v1"),
               _hook("ConfigMap", "kept", "pre-install", "before-hook-creation")]
    changes = []
    stages.would_delete(stages.plan(objects, "install")[0], changes)
    assert [(c.subject, c.action, c.reason) for c in changes] == [
        ("Job/n/create", "deleted", "delete-policy succeeded: once the pre-install stage succeeded (check mode: "
                                    "not deleted)"),
        ("ServiceAccount/n/adm", "deleted", "delete-policy succeeded: once the pre-install stage succeeded (check "
                                            "mode: not deleted)")]
