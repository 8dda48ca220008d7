# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The release history store against real API servers: lock, records, promotion, retention, API-version
rewrite and Helm secret removal (docs/requirements.md §8, docs/history.md). Nothing here is mocked."""

from __future__ import annotations

import base64
import datetime
import os
import threading

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history.locator_format import encode_locator
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import (
    HISTORY_BACKUP, HISTORY_LOCATOR, HISTORY_RECORD, LABEL_HISTORY, backup_name, history_labels, locator_name,
    record_name, version_part)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import RECORD_FIELDS
from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    HistoryError, InputError, LockedError)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import (
    ACTION_ERROR, ACTION_REWRITTEN, ACTION_WOULD_REWRITE, HistoryStore)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from tests.objects import configmap, deployment

pytestmark = pytest.mark.integration

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
SHOP = ReleaseKey(application="shop", artifact="shop-api", environment="prod")
SHOP_WORKER = ReleaseKey(application="shop", artifact="shop-worker", environment="prod")
BILLING = ReleaseKey(application="billing", artifact="billing", environment="prod", tenant="acme")


def at(moment):
    return lambda: moment


def store(cluster, namespace, key=SHOP, holder="deploy-1", now=None, kube=None):
    return HistoryStore(kube or cluster.kube, namespace, key, holder=holder, now=now)


def cm_names(cluster, namespace):
    """The ConfigMaps of ``namespace`` but the one the root CA publisher adds to every namespace (late, under load)."""
    return sorted(cm["metadata"]["name"] for cm in cluster.list("v1", "ConfigMap", namespace)
                  if cm["metadata"]["name"] != "kube-root-ca.crt")


def get_cm(cluster, namespace, name):
    return cluster.get("v1", "ConfigMap", namespace, name)


# --------------------------------------------------------------------------- lock


def test_first_acquire_creates_the_locked_locator(cluster, namespace):
    history = store(cluster, namespace, now=at(T0))
    assert history.locator() is None
    assert history.in_service() is None

    got = history.acquire()

    cm = get_cm(cluster, namespace, "manent-untenanted-shop-shop-api-prod-29195a97")
    assert cm["metadata"]["labels"] == history_labels(SHOP, HISTORY_LOCATOR)
    assert cm["data"] == {"version": "", "deployment": "", "record": "", "slot": "", "replaced": "",
                          "replacedRecord": "", "updated": "2024-05-01T12:00:00Z", "lockHolder": "deploy-1",
                          "lockSince": "2024-05-01T12:00:00Z", "lockExpires": "2024-05-01T12:15:00Z",
                          "candidate": "", "candidateDeployment": "", "candidateRecord": "", "candidateSlot": "",
                          "weight": "", "promoted": "", "retired": ""}
    # the fields written only when set read as ''
    assert got == dict(cm["data"], artifactSha256="", inProgress="", name=cm["metadata"]["name"],
                       resourceVersion=cm["metadata"]["resourceVersion"])
    assert history.locator() == got
    assert history.in_service() is None
    assert history.records() == []
    assert history.previous_objects() == []
    assert history.notes == []


def test_second_holder_is_refused_and_the_holder_renews(cluster, namespace):
    store(cluster, namespace, holder="deploy-1", now=at(T0)).acquire()
    before = store(cluster, namespace).locator()

    with pytest.raises(LockedError) as err:
        store(cluster, namespace, holder="deploy-2", now=at(T0 + datetime.timedelta(seconds=60))).acquire()
    message = str(err.value)
    assert "'deploy-1' holds the release lock since 2024-05-01T12:00:00Z until 2024-05-01T12:15:00Z" in message
    assert "ConfigMap/%s/manent-untenanted-shop-shop-api-prod-29195a97" % namespace in message
    assert "break_lock: true" in message
    assert store(cluster, namespace).locator() == before  # the refused deploy wrote nothing

    renewed = store(cluster, namespace, holder="deploy-1", now=at(T0 + datetime.timedelta(seconds=600))).acquire()
    assert (renewed["lockHolder"], renewed["lockSince"], renewed["lockExpires"]) == \
        ("deploy-1", "2024-05-01T12:00:00Z", "2024-05-01T12:25:00Z")


def test_expired_lock_is_taken_over(cluster, namespace):
    store(cluster, namespace, holder="crashed", now=at(T0)).acquire()
    with pytest.raises(LockedError):
        store(cluster, namespace, holder="deploy-2", now=at(T0 + datetime.timedelta(seconds=899))).acquire()

    late = store(cluster, namespace, holder="deploy-2", now=at(T0 + datetime.timedelta(seconds=900)))
    got = late.acquire()
    assert (got["lockHolder"], got["lockSince"], got["lockExpires"]) == \
        ("deploy-2", "2024-05-01T12:15:00Z", "2024-05-01T12:30:00Z")
    assert len(late.notes) == 1
    assert "took over the expired release lock of deploy 'crashed'" in late.notes[0]


def test_break_lock_takes_a_held_lock(cluster, namespace):
    store(cluster, namespace, holder="stuck", now=at(T0)).acquire()
    breaker = store(cluster, namespace, holder="operator", now=at(T0 + datetime.timedelta(seconds=5)))
    got = breaker.acquire(break_lock=True)
    assert (got["lockHolder"], got["lockSince"]) == ("operator", "2024-05-01T12:00:05Z")
    assert "broke the release lock held by deploy 'stuck'" in breaker.notes[0]
    with pytest.raises(LockedError, match="'operator' holds the release lock"):
        store(cluster, namespace, holder="stuck", now=at(T0 + datetime.timedelta(seconds=6))).acquire()


@pytest.mark.parametrize("holder", ["d2", "ghost"])
def test_unreadable_lock_needs_break_lock(cluster, namespace, holder):
    cluster.apply(dict(encode_locator(SHOP, namespace, {"lockHolder": "ghost", "lockSince": "yesterday"}, T0),
                       metadata={"name": locator_name(SHOP), "namespace": namespace}))
    with pytest.raises(HistoryError, match="no readable lockSince/lockExpires"):
        store(cluster, namespace, holder=holder).acquire()
    breaker = store(cluster, namespace, holder=holder, now=at(T0))
    got = breaker.acquire(break_lock=True)
    assert (got["lockHolder"], got["lockSince"]) == (holder, "2024-05-01T12:00:00Z")
    assert breaker.notes == ["broke the release lock held by deploy 'ghost' since yesterday (break_lock: true) on "
                             "ConfigMap/%s/%s" % (namespace, locator_name(SHOP))]


def test_release_lock_only_clears_our_own_lock(cluster, namespace):
    assert store(cluster, namespace).release_lock() is False  # no locator at all: nothing to do
    store(cluster, namespace, holder="deploy-1", now=at(T0)).acquire()
    assert store(cluster, namespace, holder="someone-else").release_lock() is False
    assert store(cluster, namespace).locator()["lockHolder"] == "deploy-1"

    assert store(cluster, namespace, holder="deploy-1").release_lock() is True
    data = store(cluster, namespace).locator()
    assert (data["lockHolder"], data["lockSince"], data["lockExpires"]) == ("", "", "")
    assert store(cluster, namespace, holder="deploy-2").acquire()["lockHolder"] == "deploy-2"


def test_acquire_without_holder_is_an_input_error(cluster, namespace):
    with pytest.raises(InputError, match="needs a holder"):
        store(cluster, namespace, holder="").acquire()
    assert store(cluster, namespace).locator() is None


@pytest.mark.parametrize("locator_exists, read_first", [(False, False), (False, True), (True, False)],
                         ids=["fresh-key", "fresh-key-read-first", "existing-locator"])
@pytest.mark.parametrize("round_", range(5))
def test_two_concurrent_acquirers_exactly_one_wins(cluster, namespace, locator_exists, read_first, round_):
    """``read_first``: each deploy read the locator (none) before locking, as a deploy does: both then create it
    without reading it again, and the one whose create is refused (409) is told who holds the lock."""
    key = ReleaseKey(application="race", artifact="race-%d" % round_, environment="prod")
    if locator_exists:
        first = store(cluster, namespace, key=key, holder="setup")
        first.acquire()
        first.release_lock()
    kubes = [Kube(cluster.connection()) for _i in range(2)]
    barrier = threading.Barrier(2)
    outcome = {}

    def run(holder, kube):
        history = store(cluster, namespace, key=key, holder=holder, kube=kube)
        if read_first:
            assert history.locator() is None
        barrier.wait()
        try:
            outcome[holder] = history.acquire()["lockHolder"]
        except LockedError as err:
            outcome[holder] = err

    threads = [threading.Thread(target=run, args=("racer-%d" % i, kubes[i])) for i in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for kube in kubes:
            kube.close()
    winners = [holder for holder, result in outcome.items() if result == holder]
    losers = [result for result in outcome.values() if isinstance(result, LockedError)]
    assert len(winners) == 1 and len(losers) == 1, outcome
    assert "%r holds the release lock" % winners[0] in str(losers[0])
    assert store(cluster, namespace, key=key).locator()["lockHolder"] == winners[0]


def test_forbidden_keeps_the_server_message(cluster, namespace):
    path = os.path.join(cluster.dir, "deployer.token")
    if not os.path.exists(path):
        pytest.fail("this test needs the deployer token written by hack/clusters.py")
    with open(path, encoding="utf-8") as f:
        token = f.read().strip()
    with Kube(cluster.connection(token=token)) as limited:
        with pytest.raises(HistoryError) as err:
            store(cluster, namespace, kube=limited).acquire()
    message = str(err.value)
    assert 'User "manent-deployer" cannot get resource "configmaps"' in message
    assert "ConfigMap/%s/%s" % (namespace, locator_name(SHOP)) in message
    assert "in namespace %s" % namespace in message


# --------------------------------------------------------------------------- records


def test_save_mark_promote_round_trip(cluster, namespace):
    history = store(cluster, namespace, now=at(T0))
    history.acquire()
    v1 = Release(SHOP, "1.0.0", "deploy-1")
    v1_objects = [configmap("shop", namespace=namespace, greeting="ciao"), deployment("shop", namespace)]
    name1 = history.save_record(v1, v1_objects, {"artifactSha256": "ab" * 32})
    assert name1 == "manent-untenanted-shop-shop-api-prod-29195a97-1-0-0-" + version_part("1.0.0")[-6:]
    record = get_cm(cluster, namespace, name1)
    assert record["metadata"]["labels"] == history_labels(SHOP, HISTORY_RECORD, "1.0.0")
    assert record["data"]["status"] == "pending" and record["data"]["created"] == "2024-05-01T12:00:00Z"
    assert history.in_service() is None

    history.promote(v1, None)
    assert history.in_service() == {"version": "1.0.0", "deployment": "deploy-1", "artifact": "ab" * 32, "slot": "",
                                    "record": name1}
    meta, objects = history.load("1.0.0")
    assert meta["status"] == "deployed" and meta["replaced"] == "" and meta["artifactSha256"] == "ab" * 32
    assert objects == v1_objects

    v2 = Release(SHOP, "2.0.0", "deploy-2")
    v2_objects = [configmap("shop", namespace=namespace, greeting="hello")]
    later = store(cluster, namespace, holder="deploy-1", now=at(T0 + datetime.timedelta(minutes=5)))
    name2 = later.save_record(v2, v2_objects)
    assert later.mark("2.0.0", "pending", slot="b")["slot"] == "b"
    located = later.promote(v2, "1.0.0")
    assert {k: located[k] for k in ("version", "deployment", "record", "slot", "replaced", "replacedRecord")} == \
        {"version": "2.0.0", "deployment": "deploy-2", "record": name2, "slot": "b", "replaced": "1.0.0",
         "replacedRecord": name1}
    assert located["lockHolder"] == "deploy-1"  # promotion keeps the lock
    # saved without an artifact's sha256: in service, none is recorded (the one of 1.0.0 is not kept)
    assert later.in_service() == {"version": "2.0.0", "deployment": "deploy-2", "artifact": "", "slot": "b",
                                  "record": name2}
    assert "artifactSha256" not in get_cm(cluster, namespace, located["name"])["data"]
    assert later.previous_objects() == v2_objects
    assert [(r["version"], r["status"], r["replaced"]) for r in later.records()] == \
        [("2.0.0", "deployed", "1.0.0"), ("1.0.0", "superseded", "")]

    # a deploy stopped while saving marks only a record it wrote (its deploy id), if there is one
    assert later.mark("2.0.0", "failed", missing_ok=True, of_deployment="deploy-3")["status"] == "deployed"
    assert later.mark("9.9.9", "failed", missing_ok=True, of_deployment="deploy-3") is None
    assert later.mark("2.0.0", "failed", missing_ok=True, of_deployment="deploy-2")["status"] == "failed"
    assert get_cm(cluster, namespace, name2)["data"]["status"] == "failed"
    with pytest.raises(HistoryError, match="no record of version 9.9.9"):
        later.mark("9.9.9", "failed")
    with pytest.raises(HistoryError, match="no record of version 9.9.9"):
        later.load("9.9.9")
    with pytest.raises(InputError, match="unknown release status"):
        later.mark("2.0.0", "exploded")


def test_concurrent_marks_are_retried_after_conflicts(cluster, namespace):
    history = store(cluster, namespace)
    history.save_record(Release(SHOP, "1.0.0", "d"), [configmap("a", namespace=namespace)])
    kubes = [Kube(cluster.connection()) for _i in range(5)]  # <= CONFLICT_RETRIES: each round one writer wins
    barrier = threading.Barrier(len(kubes))
    results = {}

    def run(index):
        barrier.wait()
        try:
            results[index] = store(cluster, namespace, kube=kubes[index]).mark("1.0.0", "pending",
                                                                               replaced="r%d" % index)
        except HistoryError as err:  # pragma: no cover - reported by the assertion below
            results[index] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(kubes))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for kube in kubes:
            kube.close()
    assert all(isinstance(meta, dict) for meta in results.values()) and len(results) == len(kubes), results
    assert results[0]["replaced"] == "r0"
    assert history.load("1.0.0")[0]["replaced"] in {"r%d" % i for i in range(len(kubes))}


def test_redeploying_a_version_replaces_its_record(cluster, namespace):
    history = store(cluster, namespace, now=at(T0))
    history.acquire()
    release = Release(SHOP, "1.0.0", "deploy-1")
    history.save_record(release, [configmap("a", namespace=namespace)])
    history.promote(release)
    again = Release(SHOP, "1.0.0", "deploy-2")
    history.save_record(again, [configmap("b", namespace=namespace)])
    meta, objects = history.load("1.0.0")
    assert (meta["deployment"], meta["status"], objects) == (
        "deploy-2", "pending", [configmap("b", namespace=namespace)])
    assert "is redeployed" in history.notes[-1]
    assert len(history.records()) == 1


def test_promote_is_refused_when_another_deploy_took_the_lock(cluster, namespace):
    mine = store(cluster, namespace, holder="slow", now=at(T0))
    mine.acquire()
    release = Release(SHOP, "1.0.0", "slow")
    mine.save_record(release, [configmap("a", namespace=namespace)])
    store(cluster, namespace, holder="fast", now=at(T0 + datetime.timedelta(hours=1))).acquire()
    with pytest.raises(LockedError, match="cannot promote version 1.0.0: deploy 'fast' holds"):
        mine.promote(release)
    assert mine.in_service() is None
    assert mine.load("1.0.0")[0]["status"] == "pending"


class _Counting:
    """The cluster's Kube, with the methods of its requests listed (every request still goes to the server)."""

    def __init__(self, kube):
        self._kube = kube
        self.sent = []

    def __getattr__(self, name):
        return getattr(self._kube, name)

    def request(self, method, path, **kw):
        self.sent.append(method)
        return self._kube.request(method, path, **kw)


def test_remembered_versions_spare_reads_but_never_decide_alone(cluster, namespace):
    """The history client starts a write from the version it last read or wrote (no GET before the PUT); a stale
    version only costs a 409 and a re-read, and "locked by someone else" or "nothing to do" is decided on a fresh
    read (history/client.py)."""
    kube = _Counting(cluster.kube)
    other = store(cluster, namespace, holder="other", now=at(T0))
    other.acquire()
    mine = store(cluster, namespace, holder="mine", now=at(T0 + datetime.timedelta(seconds=1)), kube=kube)
    assert mine.locator()["lockHolder"] == "other"  # remembered while the other deploy holds the lock
    other.release_lock()
    kube.sent.clear()
    assert mine.acquire()["lockHolder"] == "mine"  # not refused on the remembered version
    assert kube.sent == ["GET", "PUT"]

    kube.sent.clear()
    release = Release(SHOP, "1.0.0", "mine")
    name = mine.save_record(release, [configmap("a", namespace=namespace)])
    assert mine.mark("1.0.0", "pending", slot="a")["slot"] == "a"
    assert kube.sent == ["POST", "PUT"]  # the record just created is marked without reading it

    # Someone else edits the record: the remembered version is stale, the mark re-reads and keeps their edit.
    edited = get_cm(cluster, namespace, name)
    edited["metadata"].setdefault("annotations", {})["example.com/note"] = "kept"
    cluster.kube.request("PUT", "/api/v1/namespaces/%s/configmaps/%s" % (namespace, name), body=edited)
    kube.sent.clear()
    assert mine.mark("1.0.0", "failed")["status"] == "failed"
    assert kube.sent == ["PUT", "GET", "PUT"]
    assert get_cm(cluster, namespace, name)["metadata"]["annotations"]["example.com/note"] == "kept"

    # Another deploy breaks the lock: promote's remembered locator (locked by mine) is stale, the server says 409.
    store(cluster, namespace, holder="breaker", now=at(T0 + datetime.timedelta(seconds=2))).acquire(break_lock=True)
    with pytest.raises(LockedError, match="deploy 'breaker' holds"):
        mine.promote(release)
    assert mine.in_service() is None

    # The remembered locator was deleted meanwhile: locking creates it again.
    cluster.delete("v1", "ConfigMap", namespace, locator_name(SHOP))
    assert mine.acquire()["lockHolder"] == "mine"
    assert get_cm(cluster, namespace, locator_name(SHOP))["data"]["lockHolder"] == "mine"


def test_a_locator_read_absent_is_created_locked_without_reading_it_again(cluster, namespace):
    """A first deploy reads the locator (404) while planning; locking then creates it at once (one POST, no second
    GET: a round trip less to a distant cluster). Created meanwhile by someone else: the 409 leads to a read and
    the usual lock, without deciding anything on the first read."""
    kube = _Counting(cluster.kube)
    mine = store(cluster, namespace, holder="mine", now=at(T0), kube=kube)
    assert mine.locator() is None
    kube.sent.clear()
    assert mine.acquire()["lockHolder"] == "mine"
    assert kube.sent == ["POST"]
    mine.release_lock()

    late = store(cluster, namespace, key=SHOP_WORKER, holder="late", now=at(T0), kube=kube)
    assert late.locator() is None
    store(cluster, namespace, key=SHOP_WORKER, holder="other", now=at(T0)).acquire()
    kube.sent.clear()
    with pytest.raises(LockedError, match="deploy 'other' holds"):
        late.acquire()
    assert kube.sent == ["POST", "GET"]


def test_records_are_listed_newest_first_without_other_histories(cluster, namespace):
    history = store(cluster, namespace)
    for minutes, version in ((0, "1.0.0"), (10, "3.0.0"), (5, "2.0.0"), (10, "2.5.0")):
        history.save_record(Release(SHOP, version, "d-" + version), [configmap("x", namespace=namespace)],
                            {"created": T0 + datetime.timedelta(minutes=minutes)})
    store(cluster, namespace, key=SHOP_WORKER).save_record(Release(SHOP_WORKER, "9.0.0"),
                                                           [configmap("y", namespace=namespace)])
    records = history.records()
    # created desc; the tie at minute 10 is broken by name (desc)
    assert [r["version"] for r in records] == ["3.0.0", "2.5.0", "2.0.0", "1.0.0"]
    assert set(records[0]) == set(RECORD_FIELDS) | {"name", "namespace"}
    assert records[0]["objectCount"] == "1" and records[0]["namespace"] == namespace


def test_cleanup_keeps_the_newest_and_the_protected_records_of_this_key_only(cluster, namespace):
    history = store(cluster, namespace, holder="d")
    history.acquire()
    versions = ["1.0.%d" % i for i in range(7)]
    for i, version in enumerate(versions):
        history.save_record(Release(SHOP, version, "d"), [configmap("x", namespace=namespace)],
                            {"created": T0 + datetime.timedelta(minutes=i)})
    # In service: an old release (1.0.1) that replaced the oldest (1.0.0), e.g. after a rollback.
    history.promote(Release(SHOP, "1.0.1", "d"), "1.0.0")
    others = []
    for key in (SHOP_WORKER, BILLING):
        other = store(cluster, namespace, key=key, holder="o")
        other.acquire()
        for i in range(4):
            others.append(other.save_record(Release(key, "0.%d" % i), [configmap("y", namespace=namespace)],
                                            {"created": T0 - datetime.timedelta(days=30 - i)}))
        other.promote(Release(key, "0.3"), "0.2")
    unrelated = configmap("manent-untenanted-shop-shop-api-prod-29195a97-handmade", namespace=namespace)
    cluster.apply(unrelated)
    before = cm_names(cluster, namespace)

    deleted = history.cleanup(3)

    assert deleted == [record_name(SHOP, "1.0.2"), record_name(SHOP, "1.0.3")]  # oldest first
    assert [r["version"] for r in history.records()] == ["1.0.6", "1.0.5", "1.0.4", "1.0.1", "1.0.0"]
    assert cm_names(cluster, namespace) == sorted(set(before) - set(deleted))
    assert set(others) <= set(cm_names(cluster, namespace))
    assert history.cleanup(3) == []
    with pytest.raises(InputError, match="at least 2"):
        history.cleanup(1)


def test_cleanup_under_the_lock_counts_records_written_after_its_listing(cluster, namespace):
    """Holding the lock, cleanup works from the listing migration_pending took, plus the records the locator names
    that this store wrote or read since (here one written by another client meanwhile); released, it lists again."""
    history = store(cluster, namespace, holder="d")
    history.acquire()
    history.save_record(Release(SHOP, "1.0.0", "d"), [configmap("x", namespace=namespace)], {"created": T0})
    history.migration_pending()  # the listing under the lock: 1.0.0 only
    meanwhile = store(cluster, namespace, holder="d")  # another client of the same holder
    meanwhile.save_record(Release(SHOP, "1.0.1", "d"), [configmap("x", namespace=namespace)],
                          {"created": T0 + datetime.timedelta(minutes=1)})
    history.save_record(Release(SHOP, "1.0.2", "d"), [configmap("x", namespace=namespace)],
                        {"created": T0 + datetime.timedelta(minutes=2)})
    history.promote(Release(SHOP, "1.0.2", "d"), "1.0.1")  # reads 1.0.1 to mark it superseded

    assert history.cleanup(2) == [record_name(SHOP, "1.0.0")]
    assert [r["version"] for r in history.records()] == ["1.0.2", "1.0.1"]
    history.release_lock()
    # without the lock nothing is taken from the earlier listing: a record written since counts (an old one here)
    meanwhile.save_record(Release(SHOP, "0.9.0", "d"), [configmap("x", namespace=namespace)],
                          {"created": T0 - datetime.timedelta(minutes=1)})
    assert history.cleanup(2) == [record_name(SHOP, "0.9.0")]


def test_oversize_record_is_refused_before_anything_is_written(cluster, namespace):
    history = store(cluster, namespace)
    history.acquire()
    before = cm_names(cluster, namespace)
    noise = base64.b64encode(os.urandom(1024 * 1024)).decode()
    release = Release(SHOP, "1.0.0", "d")
    objects = [configmap("dashboards", namespace=namespace, blob=noise)]
    with pytest.raises(HistoryError) as err:
        history.prepare_record(release, objects)
    assert "above the history limit of 921600 bytes (900 KiB)" in str(err.value)
    assert "release untenanted/shop/shop-api/prod version 1.0.0" in str(err.value)
    with pytest.raises(HistoryError, match="above the history limit"):
        history.save_record(release, objects)
    assert cm_names(cluster, namespace) == before
    with pytest.raises(InputError, match="does not belong to this history"):
        history.save_record(Release(BILLING, "1.0.0"), [])


# --------------------------------------------------------------------------- stored API versions


def test_rewrite_api_versions_maps_renames_backs_up_and_is_idempotent(cluster, namespace):
    served = cluster.discovery.served
    assert not served("apps/v1beta2", "Deployment") and not served("apps/v1beta1", "Deployment")
    history = store(cluster, namespace)
    renamed = Release(SHOP, "1.0.0", "d1")
    stuck = Release(SHOP, "2.0.0", "d2")
    old_cm = configmap("settings", namespace=namespace, a="1")
    renamed_name = history.save_record(renamed, [old_cm, deployment("web", namespace, api_version="apps/v1beta2")])
    no_replacement = {"apiVersion": "policy/v1beta1", "kind": "PodSecurityPolicy", "metadata": {"name": "restricted"}}
    stuck_name = history.save_record(stuck, [no_replacement])
    originals = {name: get_cm(cluster, namespace, name) for name in (renamed_name, stuck_name)}

    preview = history.rewrite_api_versions(served, dry_run=True)
    assert [(e["record"], e["action"]) for e in preview] == [(renamed_name, ACTION_WOULD_REWRITE),
                                                             (stuck_name, ACTION_ERROR)]
    assert backup_name(renamed_name) not in cm_names(cluster, namespace)
    assert get_cm(cluster, namespace, renamed_name)["metadata"]["resourceVersion"] == \
        originals[renamed_name]["metadata"]["resourceVersion"]

    report = {e["record"]: e for e in history.rewrite_api_versions(served)}
    done = report[renamed_name]
    assert (done["action"], done["version"], done["errors"], done["backup"]) == \
        (ACTION_REWRITTEN, "1.0.0", [], renamed_name + "-bak")
    assert len(done["changes"]) == 1
    assert "stored as apps/v1beta2" in done["changes"][0] and "using apps/v1 instead" in done["changes"][0]
    failed = report[stuck_name]
    assert (failed["action"], failed["changes"], failed["backup"]) == (ACTION_ERROR, [], "")
    assert len(failed["errors"]) == 1 and "has no replacement" in failed["errors"][0]
    assert "PodSecurityPolicy/restricted" in failed["errors"][0] and "drop_removed: true" in failed["errors"][0]

    _meta, objects = history.load("1.0.0")
    assert objects == [old_cm, deployment("web", namespace, api_version="apps/v1")]
    assert get_cm(cluster, namespace, stuck_name)["metadata"]["resourceVersion"] == \
        originals[stuck_name]["metadata"]["resourceVersion"]
    assert backup_name(stuck_name) not in cm_names(cluster, namespace)
    backup = get_cm(cluster, namespace, renamed_name + "-bak")
    assert backup["data"] == originals[renamed_name]["data"]
    assert backup["binaryData"] == originals[renamed_name]["binaryData"]
    assert backup["metadata"]["labels"][LABEL_HISTORY] == HISTORY_BACKUP
    assert backup["metadata"]["annotations"]["manent.io/backup-of"] == renamed_name
    assert [r["version"] for r in history.records()] == ["2.0.0", "1.0.0"]  # the backup is not a record
    # The mapped object is accepted by the API server as it is.
    mapped = objects[1]
    cluster.kube.request("PATCH", cluster.path("apps/v1", "Deployment", namespace, "web"),
                         query={"fieldManager": "test", "dryRun": "All"}, body=mapped,
                         content_type="application/apply-patch+yaml")

    versions = {n: get_cm(cluster, namespace, n)["metadata"]["resourceVersion"]
                for n in (renamed_name, stuck_name, backup["metadata"]["name"])}
    again = history.rewrite_api_versions(served)
    assert [(e["record"], e["action"]) for e in again] == [(stuck_name, ACTION_ERROR)]
    assert {n: get_cm(cluster, namespace, n)["metadata"]["resourceVersion"] for n in versions} == versions


def test_rewrite_backup_of_a_longest_record_name_fits(cluster, namespace):
    key = ReleaseKey(application="a" * 90, artifact="b" * 90, environment="c" * 60, tenant="t" * 40)
    version = "V" + "9" * 80 + "."
    history = store(cluster, namespace, key=key)
    name = history.save_record(Release(key, version), [deployment("web", namespace, api_version="apps/v1beta2")])
    assert len(name) == 253
    report = history.rewrite_api_versions(cluster.discovery.served)
    assert len(report) == 1
    entry = report[0]
    assert entry["action"] == ACTION_REWRITTEN
    assert len(entry["backup"]) == 253 and entry["backup"].endswith("-bak") and entry["backup"] != name
    assert get_cm(cluster, namespace, entry["backup"])["metadata"]["annotations"]["manent.io/backup-of"] == name
    assert history.load(version)[1][0]["apiVersion"] == "apps/v1"
    # cleanup removes the backup together with its record
    for i in range(3):
        history.save_record(Release(key, "n%d" % i), [], {"created": T0 + datetime.timedelta(days=400 + i)})
    history.save_record(Release(key, version), [deployment("web", namespace)], {"created": T0})
    assert history.cleanup(3) == [name]
    assert entry["backup"] not in cm_names(cluster, namespace)


# --------------------------------------------------------------------------- helm


def helm_release_secret(name, namespace, type_="helm.sh/release.v1"):
    return {"apiVersion": "v1", "kind": "Secret", "type": type_, "metadata": {"name": name, "namespace": namespace},
            "data": {"release": base64.b64encode(b"H4sI").decode()}}


def test_delete_helm_release_secrets_deletes_only_that_release(cluster, namespace):
    doomed = ["sh.helm.release.v1.web.v1", "sh.helm.release.v1.web.v2", "sh.helm.release.v1.web.v10"]
    survivors = [helm_release_secret("sh.helm.release.v1.other.v1", namespace),
                 helm_release_secret("sh.helm.release.v1.web-x.v1", namespace),
                 helm_release_secret("sh.helm.release.v1.web.v1.bak", namespace),
                 helm_release_secret("sh.helm.release.v1.web.v3", namespace, "Opaque"),
                 helm_release_secret("unrelated", namespace, "Opaque")]
    for obj in [helm_release_secret(name, namespace) for name in doomed] + survivors:
        cluster.apply(obj)
    cluster.apply(configmap("sh.helm.release.v1.web.v4", namespace=namespace))

    deleted = store(cluster, namespace).delete_helm_release_secrets("web")

    assert deleted == doomed  # by revision
    left = sorted(s["metadata"]["name"] for s in cluster.list("v1", "Secret", namespace))
    assert left == sorted(s["metadata"]["name"] for s in survivors)
    assert "sh.helm.release.v1.web.v4" in cm_names(cluster, namespace)
    assert store(cluster, namespace).delete_helm_release_secrets("web") == []
