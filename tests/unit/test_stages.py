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
    def __init__(self, live):
        self.reader = _Reader(live)
        self.deleted = []

    def delete(self, obj, wait=True, propagation=None, uid=None):
        self.deleted.append((obj["metadata"]["name"], uid, wait))
        return True


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
