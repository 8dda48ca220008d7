# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's decisions made from history alone, before any write: is this deploy a rerun of the release in
service (no-op), which release a rollback re-applies and which it marks rolled back, what a deploy may prune.

The history is a recorded one (records as the store returns them, newest first); the cluster side of each
decision is covered by the integration tests (test_history_flow.py, test_deploy.py)."""

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.engine import prune, rollback
from ansible_collections.manent.kubernetes.plugins.module_utils.render.bundle import Bundle
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.plan import check_traffic_release, same_release
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import choose_slot

KEY = ReleaseKey("shop", "shop-api", "prod")


def cm(name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


class RecordedStore:
    """The read side of HistoryStore over recorded records: {version: (status, objects)}, newest first."""

    def __init__(self, records, replaced=None):
        self._records = records
        self._replaced = replaced

    def records(self):
        return [{"version": v, "status": s} for v, (s, _objects) in self._records.items()]

    def load(self, version, secrets=True, strays=False):
        return {"version": version}, list(self._records[version][1])

    def previous_objects(self, secrets=False, strays=False):
        deployed = [v for v, (s, _objects) in self._records.items() if s == "deployed"]
        return list(self._records[deployed[0]][1]) if deployed else []

    def locator(self):
        return {"replaced": self._replaced} if self._replaced is not None else None


def bundle(version, deployment, slot=""):
    return Bundle(release=Release(KEY, version, deployment), namespace="ns", objects=[], sources=[], slot=slot)


# ------------------------------------------------------------------------------------------- no-op


@pytest.mark.parametrize("current, located, candidate, expected", [
    ({"version": "1.0.0", "deployment": "d1"}, {}, bundle("1.0.0", "d1"), True),
    ({"version": "1.0.0", "deployment": "d1"}, {}, bundle("1.0.0", "d2"), False),  # same version, new deploy id
    ({"version": "1.0.0", "deployment": "d1"}, {}, bundle("1.1.0", "d1"), False),
    (None, {}, bundle("1.0.0", "d1"), False),  # first install
    # traffic: the candidate slot's release decides, not the release in service
    ({"version": "1.0.0", "deployment": "d1"}, {"candidate": "1.1.0", "candidateDeployment": "d2"},
     bundle("1.1.0", "d2", slot="b"), True),
    ({"version": "1.1.0", "deployment": "d2"}, {"candidate": "", "candidateDeployment": ""},
     bundle("1.1.0", "d2", slot="b"), False),
])
def test_a_deploy_is_a_noop_only_for_the_same_version_and_deploy_id(current, located, candidate, expected):
    assert same_release(current, located, candidate) is expected


STABLE_A = {"version": "1.0.0", "deployment": "d1", "slot": "a"}


@pytest.mark.parametrize("located, candidate, refused", [
    ({"candidate": "1.1.0", "candidateSlot": "b", "weight": "0"}, bundle("1.2.0", "d3", slot="b"), ""),
    ({"candidate": "1.1.0", "candidateSlot": "b", "weight": ""}, bundle("1.2.0", "d3", slot="b"), ""),
    ({"candidate": "1.1.0", "candidateSlot": "b", "weight": "10"}, bundle("1.2.0", "d3", slot="b"),
     "candidate 1.1.0 in slot b receives 10 % of the traffic"),
    # the same candidate version again (other parameters) keeps its weight: it is that candidate's to change
    ({"candidate": "1.1.0", "candidateSlot": "b", "weight": "10"}, bundle("1.1.0", "d4", slot="b"), ""),
])
def test_a_candidate_that_receives_traffic_is_not_replaced_by_another_version(located, candidate, refused):
    if not refused:
        check_traffic_release(candidate, STABLE_A, located)
        return
    with pytest.raises(InputError) as exc:
        check_traffic_release(candidate, STABLE_A, located)
    assert refused in str(exc.value) and "abort the candidate first" in str(exc.value)


@pytest.mark.parametrize("current, candidate, refused", [
    # traffic: a new version goes to the slot not in service
    ({"version": "1.0.0", "deployment": "d1", "slot": "a"}, bundle("1.1.0", "d2", slot="b"), ""),
    (None, bundle("1.0.0", "d1", slot="a"), ""),  # first traffic release
    ({"version": "1.0.0", "deployment": "d1", "slot": ""}, bundle("1.1.0", "d2", slot="a"), ""),  # migrate
    # made for the slot in service (rendered before another release took it): it would replace the serving objects
    ({"version": "1.0.0", "deployment": "d1", "slot": "a"}, bundle("1.1.0", "d2", slot="a"), "where version 1.0.0"),
    # the version in service as a candidate in the other slot
    ({"version": "1.0.0", "deployment": "d1", "slot": "a"}, bundle("1.0.0", "d2", slot="b"), "already in service"),
    ({"version": "1.0.0", "deployment": "d1", "slot": "a"}, bundle("1.1.0", "d2"), ""),  # rolling: not a slot
])
def test_a_traffic_release_needs_its_own_version_and_the_slot_not_in_service(current, candidate, refused):
    """Checked for every deploy that is not a rerun of the release in service (same version and deploy id, which
    same_release finds first and which applies nothing in its slot)."""
    if not refused:
        check_traffic_release(candidate, current)
        return
    with pytest.raises(InputError) as exc:
        check_traffic_release(candidate, current)
    assert refused in str(exc.value) and "nothing was written" in str(exc.value)


# ------------------------------------------------------------------------------------------- rollback target


def test_rollback_after_a_failed_deploy_reapplies_the_release_in_service():
    store = RecordedStore({"1.1.0": ("failed", []), "1.0.0": ("deployed", [])}, replaced="0.9.0")
    assert rollback._target(store, {"version": "1.0.0"}, None, "ns") == ("1.0.0", "1.1.0")


def test_rollback_of_a_healthy_release_goes_to_the_release_it_replaced():
    store = RecordedStore({"1.1.0": ("deployed", []), "1.0.0": ("superseded", [])}, replaced="1.0.0")
    assert rollback._target(store, {"version": "1.1.0"}, None, "ns") == ("1.0.0", "1.1.0")


def test_rollback_to_a_named_version_marks_the_release_in_service_rolled_back():
    store = RecordedStore({"1.2.0": ("deployed", []), "1.1.0": ("superseded", []), "1.0.0": ("superseded", [])},
                          replaced="1.1.0")
    assert rollback._target(store, {"version": "1.2.0"}, "1.0.0", "ns") == ("1.0.0", "1.2.0")


def test_rollback_to_the_failed_release_itself_rolls_back_the_release_in_service():
    store = RecordedStore({"1.1.0": ("failed", []), "1.0.0": ("deployed", [])})
    assert rollback._target(store, {"version": "1.0.0"}, "1.1.0", "ns") == ("1.1.0", "1.0.0")


def test_rollback_of_a_first_release_names_the_missing_previous_release():
    store = RecordedStore({"1.0.0": ("deployed", [])}, replaced="")
    with pytest.raises(ManentError) as caught:
        rollback._target(store, {"version": "1.0.0"}, None, "ns")
    assert "release 1.0.0 replaced nothing" in str(caught.value)
    assert "rollback_to" in caught.value.hint


# ------------------------------------------------------------------------------------------- prune candidates


@pytest.mark.parametrize("status, unfinished", [("failed", "1.1.0"), ("pending", "1.1.0"), ("aborted", "1.1.0"),
                                                ("superseded", "")])
def test_only_a_newer_release_that_did_not_finish_is_unfinished(status, unfinished):
    store = RecordedStore({"1.1.0": (status, []), "1.0.0": ("deployed", [])})
    assert prune.unfinished_release(store, {"version": "1.0.0"}) == unfinished


def test_prune_candidates_add_what_a_failed_release_created_once_each():
    store = RecordedStore({"1.1.0": ("failed", [cm("a"), cm("only-failed")]), "1.0.0": ("deployed", [cm("a"), cm("b")])})
    names = [o["metadata"]["name"] for o in prune.candidates(store, {"version": "1.0.0"})]
    assert names == ["a", "b", "only-failed"]


def test_prune_candidates_include_the_traffic_candidate_and_nothing_on_a_first_install():
    store = RecordedStore({"2.0.0": ("pending", [cm("c")]), "1.0.0": ("deployed", [cm("a")])})
    names = [o["metadata"]["name"] for o in prune.candidates(store, {"version": "1.0.0"}, candidate="2.0.0")]
    assert names == ["a", "c"]
    assert prune.candidates(RecordedStore({}), None) == []


def test_rendering_a_new_version_over_a_candidate_that_receives_traffic_is_refused_before_any_cluster_write():
    """manent_render chooses the slot (traffic.choose_slot) with the same rule as manent_apply: in playbooks/
    deploy.yml the refusal comes in the plan play, before any wave."""
    live = {"version": "1.0.0", "deployment": "d1", "slot": "a", "candidate": "1.1.0", "candidateSlot": "b",
            "weight": "25"}
    with pytest.raises(InputError) as exc:
        choose_slot(live, version="1.2.0")
    assert "candidate 1.1.0 in slot b receives 25 % of the traffic" in str(exc.value)
    assert choose_slot(dict(live, weight="0"), version="1.2.0") == "b"
    assert choose_slot(live, version="1.1.0") == "b"  # the candidate itself again
