# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress lines (progress.py): what a workload waits for, why, for how long; once per change."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.engine.progress import Reporter, Workload, explain
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import wait_for

from tests.unit.fakes import FakeClock
from tests.unit.wait_fakes import Script, live_deployment

UNSCHEDULABLE = "0/3 nodes are available: 3 Insufficient cpu."


def pending_pod(name):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop"},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": UNSCHEDULABLE}]}}


def web(seconds, message="Available: 0/2", problems=(), done=False):
    return Workload("Deployment/shop/web", "Current" if done else "InProgress", message, seconds, problems, done)


def test_explanation_names_status_and_pod_reasons():
    workload = web(45, problems=("2 pods: Unschedulable: %s" % UNSCHEDULABLE,))
    assert explain(workload) == "Available: 0/2; 2 pods: Unschedulable: %s" % UNSCHEDULABLE


def test_a_line_per_change_not_per_poll_then_ready():
    reporter = Reporter()
    assert reporter.lines([web(10)]) == ["still rolling out: Deployment/shop/web (10 s): Available: 0/2"]
    assert reporter.lines([web(20)]) == []
    assert reporter.lines([web(30)]) == []
    assert reporter.lines([web(40, "Available: 1/2")]) == [
        "still rolling out: Deployment/shop/web (40 s): Available: 1/2"]
    assert reporter.lines([web(52, "Deployment is available. Replicas: 2", done=True)]) == [
        "Deployment/shop/web: ready after 52 s"]
    assert reporter.lines([web(52, done=True)]) == []


def test_an_unchanged_explanation_is_repeated_only_every_minute():
    reporter = Reporter(repeat_every=60)
    printed = [reporter.lines([web(seconds)]) for seconds in range(10, 140, 10)]
    assert [lines[0].split("(")[1].split(")")[0] for lines in printed if lines] == ["10 s", "70 s", "130 s"]


def test_ready_before_any_report_prints_nothing():
    reporter = Reporter()
    assert reporter.lines([web(5, done=True)]) == []


def test_a_new_wait_of_the_same_workload_reports_again():
    reporter = Reporter()
    assert reporter.lines([web(30)])
    assert reporter.lines([web(10)]) == ["still rolling out: Deployment/shop/web (10 s): Available: 0/2"]


def test_wait_for_reports_reasons_seconds_and_once_per_change():
    """Through the wait loop: a Deployment whose pods cannot be scheduled for 35 s, then available."""
    stuck = live_deployment("web", ready=0)
    answers = [stuck] * 35 + [live_deployment("web")]
    clock = FakeClock()
    reporter, printed = Reporter(), []
    wait_for([stuck], Script({"Deployment/shop/web": answers}), clock=clock.clock, sleep=clock.sleep, interval=1.0,
             timeout=300.0, list_pods=lambda obj: [pending_pod("web-1"), pending_pod("web-2")],
             on_progress=lambda workloads: printed.extend(reporter.lines(workloads)))
    assert printed == ["still rolling out: Deployment/shop/web (10 s): Available: 0/2; 2 pods: Unschedulable: %s"
                       % UNSCHEDULABLE]
