# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wait.wait_for with ``fetch_many``: each round reads the objects not yet Current together (one call), the
statuses are those of one ``fetch`` each; a transient error makes one round Unknown, a permanent one raises."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import wait_for


def _deployment(name, ready):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ns", "generation": 1},
            "spec": {"replicas": 1},
            "status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                       "readyReplicas": 1 if ready else 0, "availableReplicas": 1 if ready else 0,
                       "conditions": [{"type": "Available", "status": "True" if ready else "False"},
                                      {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"
                                       if ready else "ReplicaSetUpdated"}]}}


class _Clock:
    def __init__(self):
        self.now = 0.0

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_one_batch_read_per_round_of_the_objects_not_yet_current():
    objects = [_deployment("a", True), _deployment("b", True)]
    rounds = []

    def fetch_many(objs):
        rounds.append(sorted(o["metadata"]["name"] for o in objs))
        ready = len(rounds) > 1  # b becomes ready in the second round
        return {key_of(o): _deployment(o["metadata"]["name"], o["metadata"]["name"] == "a" or ready) for o in objs}

    def fetch(_obj):
        raise AssertionError("no single reads when fetch_many is given")

    clock = _Clock()
    entries = wait_for(objects, fetch, fetch_many=fetch_many, clock=clock.clock, sleep=clock.sleep, timeout=30)
    assert rounds == [["a", "b"], ["b"]]
    assert [e["status"] for e in entries] == ["Current", "Current"]


def test_transient_error_is_one_unknown_round_permanent_error_raises():
    objects = [_deployment("a", True)]
    calls = []

    def flaky(objs):
        calls.append(1)
        if len(calls) == 1:
            raise ApiError("etcd leader changed", status=503, transient=True)
        return {key_of(o): o for o in objs}

    clock = _Clock()
    entries = wait_for(objects, None, fetch_many=flaky, clock=clock.clock, sleep=clock.sleep, timeout=30)
    assert len(calls) == 2 and entries[0]["status"] == "Current"

    def refused(_objs):
        raise ApiError("forbidden", status=403)

    with pytest.raises(ApiError):
        wait_for(objects, None, fetch_many=refused, clock=clock.clock, sleep=clock.sleep, timeout=30)


def test_absent_object_is_not_found_until_the_deadline():
    clock = _Clock()
    with pytest.raises(Exception) as err:
        wait_for([_deployment("a", True)], None, fetch_many=lambda objs: {}, clock=clock.clock, sleep=clock.sleep,
                 timeout=3)
    assert "not found" in str(err.value)
