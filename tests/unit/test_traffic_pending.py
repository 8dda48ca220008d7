# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""traffic/pending.py: the record of a traffic operation in progress, and what ``status`` says of one that did not
finish (the route's weights and the workloads read live, against the record's targets); state.py's begin, finish
and stopped, which write it."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import pending
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.options import TrafficResult
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.state import ReleaseState

STEP = {"operation": "step", "percent": 10, "version": "2.0.0", "slot": "b", "weights": {"a": 90, "b": 10},
        "replicas": {"Deployment/shop/shop-b": 3}, "by": "ci@runner:41", "started": "2026-12-06T23:50:01Z"}


def test_a_record_round_trips_and_an_unreadable_one_is_said_so():
    assert pending.decode(pending.encode(STEP)) == STEP
    assert pending.decode("") is None
    assert pending.decode("not json") == {"unreadable": "not json"}
    assert pending.decode("[1]") == {"unreadable": "[1]"}
    assert pending.title(pending.decode("nope")).startswith("an operation (its record is unreadable: nope")


@pytest.mark.parametrize("record,title", [
    (STEP, "step to 10 %"),
    (dict(STEP, operation="promote"), "promote of 2.0.0"),
    (dict(STEP, operation="abort"), "abort of 2.0.0"),
    (dict(STEP, operation="retire", version="1.0.0"), "retire of 1.0.0"),
    (dict(STEP, operation="rollback", version="1.0.0"), "rollback to 1.0.0"),
])
def test_titles(record, title):
    assert pending.title(record) == title


def test_a_step_killed_during_its_scale_up():
    text = pending.describe(STEP, {"a": 100, "b": 0}, {"Deployment/shop/shop-b": (1, 1)})
    assert text == ("step to 10 % interrupted: started 2026-12-06T23:50:01Z by ci@runner:41, not finished (its run "
                    "ended without a word: killed); the route sends a 100, b 0, target a 90, b 10 (weights not "
                    "written yet); scale-up of Deployment/shop/shop-b to 3 replicas not finished (1 now); rerun the "
                    "step to 10 % to finish it, step elsewhere, or abort")


def test_a_step_stopped_after_its_weights_with_pods_not_ready():
    record = dict(STEP, stopped="2026-12-06T23:50:09Z", reason="the run was stopped (SIGTERM)")
    text = pending.describe(record, {"a": 90, "b": 10}, {"Deployment/shop/shop-b": (3, 2)})
    assert "(stopped 2026-12-06T23:50:09Z: the run was stopped (SIGTERM))" in text
    assert "the route sends a 90, b 10, target a 90, b 10; Deployment/shop/shop-b at 3 replicas, 2 ready;" in text


def test_an_abort_killed_before_the_candidate_went_to_zero():
    record = dict(STEP, operation="abort", weights={"a": 100, "b": 0},
                  replicas={"Deployment/shop/shop-a": 4, "Deployment/shop/shop-b": 0})
    text = pending.describe(record, {"a": 100, "b": 0},
                            {"Deployment/shop/shop-a": (4, 4), "Deployment/shop/shop-b": (1, 1)})
    assert text.endswith("the route sends a 100, b 0, target a 100, b 0; scale-down of Deployment/shop/shop-b to 0 "
                         "replicas not done (1 now); rerun abort to finish it")


def test_same_operation_and_targets():
    assert pending.same(STEP, dict(STEP, by="other", started="later"))
    assert not pending.same(STEP, dict(STEP, percent=50, weights={"a": 50, "b": 50}))
    assert not pending.same(STEP, None)


class _Store:
    """The history store as ReleaseState uses it: the locator fields it was given, updated in place."""

    holder = "ci@runner:41"
    locator_name = "locator"

    def __init__(self, **fields):
        self.fields = dict(fields, version="1.0.0")
        self.actions = []

    def locator(self):
        return dict(self.fields)

    def update_locator(self, action, **fields):
        self.actions.append(action)
        self.fields.update(fields)


def _state(store, dry_run=False):
    return ReleaseState(store, "shop", dry_run=dry_run, now=lambda: datetime.datetime(2026, 12, 6, 23, 50, 1))


def test_begin_records_before_the_first_write_and_finish_clears_it():
    store = _Store()
    state = _state(store)
    state.read()
    result = TrafficResult("step")
    state.begin("step", result, version="2.0.0", slot="b", weights={"a": 90, "b": 10},
                replicas={"Deployment/shop/shop-b": 1}, percent=10)
    assert pending.decode(store.fields["inProgress"]) == dict(
        STEP, replicas={"Deployment/shop/shop-b": 1}, started="2026-12-06T23:50:01Z")
    assert result.warnings == [] and result.written == [], "bookkeeping: not a change of the release"
    state.finish()
    assert store.fields["inProgress"] == "" and store.actions == ["record the step to 10 % in progress",
                                                                  "clear the step to 10 % in progress"]
    state.finish()
    assert len(store.actions) == 2, "nothing begun: nothing to clear"


def test_a_stopped_operation_keeps_its_record_with_why_and_the_next_one_says_what_it_does_with_it():
    store = _Store()
    state = _state(store)
    state.read()
    state.begin("step", TrafficResult("step"), version="2.0.0", slot="b", weights={"a": 90, "b": 10}, replicas={},
                percent=10)
    state.stopped("the run was stopped (SIGTERM) while this task worked")
    record = pending.decode(store.fields["inProgress"])
    assert (record["stopped"], record["reason"]) == ("2026-12-06T23:50:01Z",
                                                     "the run was stopped (SIGTERM) while this task worked")
    for operation, weights, percent, verb in (("step", {"a": 90, "b": 10}, 10, "finishes"),
                                              ("step", {"a": 50, "b": 50}, 50, "replaces"),
                                              ("abort", {"a": 100, "b": 0}, None, "replaces")):
        following = _state(store)
        following.read()
        result = TrafficResult(operation)
        following.begin(operation, result, version="2.0.0", slot="b", weights=weights, replicas={}, percent=percent)
        assert result.warnings == ["the step to 10 %% started 2026-12-06T23:50:01Z by ci@runner:41 did not finish: "
                                   "this %s %s it" % (pending.title(following.begun), verb)]
        store.fields["inProgress"] = pending.encode(record)


def test_check_mode_records_nothing():
    store = _Store()
    state = _state(store, dry_run=True)
    state.read()
    state.begin("abort", TrafficResult("abort"), version="2.0.0", slot="b", weights={"a": 100, "b": 0}, replicas={})
    state.finish()
    state.stopped("x")
    assert store.actions == [] and "inProgress" not in store.fields
