# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""status.compute, is_permanent_failure and pod_problems, driven by tests/unit/fixtures/status/*.yaml.

compute_*.yaml: a list of ``{name, object, expect: {status, reason?, message?, permanent?}}``.
pod_problems.yaml: a list of ``{name, pods, expect: [line, ...]}``.
"""

from __future__ import annotations

import glob
import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import status

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "status")


def _load(pattern):
    cases = []
    for path in sorted(glob.glob(os.path.join(FIXTURES, pattern))):
        with open(path, encoding="utf-8") as handle:
            for case in yaml.safe_load(handle):
                cases.append(pytest.param(case, id="%s: %s" % (os.path.basename(path)[:-5], case["name"])))
    return cases


COMPUTE_CASES = _load("compute_*.yaml")
POD_CASES = _load("pod_problems.yaml")


def test_fixtures_are_found():
    assert len(COMPUTE_CASES) >= 80
    assert len(POD_CASES) >= 10


@pytest.mark.parametrize("case", COMPUTE_CASES)
def test_compute(case):
    expect = case["expect"]
    result = status.compute(case["object"])
    assert result.status == expect["status"]
    if "reason" in expect:
        assert result.reason == expect["reason"]
    if "message" in expect:
        assert result.message == expect["message"]
    if "permanent" in expect:
        assert status.is_permanent_failure(case["object"], result) is expect["permanent"]


@pytest.mark.parametrize("case", COMPUTE_CASES)
def test_only_failed_results_can_be_permanent(case):
    result = status.compute(case["object"])
    if result.status != status.FAILED:
        assert status.is_permanent_failure(case["object"], result) is False


@pytest.mark.parametrize("case", POD_CASES)
def test_pod_problems(case):
    assert status.pod_problems(case["pods"]) == case["expect"]


def test_compute_none_is_not_found():
    assert status.compute(None) == status.Result(status.NOT_FOUND, "Resource not found", "NotFound")


def test_compute_non_dict_is_unknown():
    assert status.compute(["not", "an", "object"]).status == status.UNKNOWN


def test_result_fields():
    result = status.Result(status.CURRENT, "ok")
    assert (result.status, result.message, result.reason) == ("Current", "ok", "")


def test_status_constants_match_kstatus():
    assert (status.IN_PROGRESS, status.FAILED, status.CURRENT, status.TERMINATING, status.NOT_FOUND,
            status.UNKNOWN) == ("InProgress", "Failed", "Current", "Terminating", "NotFound", "Unknown")


def test_permanent_failure_needs_the_object():
    result = status.Result(status.FAILED, "Progress deadline exceeded", status.PROGRESS_DEADLINE_EXCEEDED)
    assert status.is_permanent_failure(None, result) is False


def test_stalled_deployment_is_not_permanent():
    # A Stalled condition fails the object but is not the progress deadline: the wait keeps polling.
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "status": {"conditions": [{"type": "Stalled", "status": "True", "reason": "Oops"}]}}
    result = status.compute(deployment)
    assert result == status.Result(status.FAILED, "Stalled", "Oops")
    assert status.is_permanent_failure(deployment, result) is False


def test_pod_problems_ignores_non_dicts_and_empty_input():
    assert status.pod_problems(None) == []
    assert status.pod_problems(["x", None]) == []


@pytest.mark.parametrize("obj, expected", [
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"deletionTimestamp": "2026-12-04T10:00:00Z"},
      "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}},
     ("Current", "Job Completed. succeeded: 1/1")),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"deletionTimestamp": "2026-12-04T10:00:00Z"},
      "status": {"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded",
                                              "message": "Job was active longer than specified deadline"}]}},
     ("Failed", "Job Failed. failed: 1/1: DeadlineExceeded: Job was active longer than specified deadline")),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"deletionTimestamp": "2026-12-04T10:00:00Z"},
      "status": {"phase": "Succeeded"}}, ("Current", "Pod has completed successfully")),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {}, "status": {"active": 1, "startTime": "x"}}, None),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {},
      "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}, None),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {}, "status": {"phase": "Running"}}, None),
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}, "status": {}}, None),
    (None, None),
])
def test_finished_is_the_outcome_of_a_job_or_pod_also_while_it_is_deleted(obj, expected):
    result = status.finished(obj)
    assert (None if result is None else (result.status, result.message)) == expected
    if obj and obj["metadata"].get("deletionTimestamp"):
        assert status.compute(obj).status == "Terminating"  # what kstatus says meanwhile
