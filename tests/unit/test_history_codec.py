# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history encoding (docs/requirements.md §8, §9): ConfigMap names and labels (naming.py), records
(record_format.py) and their Secrets (companion_format.py), the locator and its lock (locator_format.py), the
retention rule (retention_rule.py)."""

from __future__ import annotations

import base64
import copy
import datetime
import gzip
import hashlib
import json
import os
import random
import re

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history.companion_format import (
    companion_name, encode_companion, migrate, needs_migration, restore_secrets)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.locator_format import (
    LOCATOR_FIELDS, decode_locator, encode_locator, lock_state, with_lock, without_lock)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import (
    HISTORY_LOCATOR, HISTORY_RECORD, LOCATOR_MAX, history_labels, history_selector, key_hash, label_value,
    locator_name, record_name, sanitize, version_part)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.packing import RECORD_LIMIT
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    STATUSES, STRAYS_KEY, decode_record, decode_strays, encode_record, set_status, split_secrets, stray_of,
    with_strays)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.retention_rule import (
    check_keep_releases, records_to_delete)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.times import parse_time
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError, InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN_CHARS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

SHOP = ReleaseKey(application="shop", artifact="shop-api", environment="prod")
ACME = ReleaseKey(application="billing", artifact="billing-worker", environment="staging", tenant="acme")
OBJECTS = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop", "namespace": "shop-prod"},
     "data": {"greeting": "ciao, città — привет", "n": "3"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop", "namespace": "shop-prod"},
     "spec": {"replicas": 3, "paused": False, "template": {"spec": {"containers": [{"name": "app"}]}}}},
]


def sha(text, length):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize("key, expected", [
    (SHOP, "29195a97"),
    (ACME, "edbbd321"),
])
def test_key_hash_is_stable(key, expected):
    # The literal values pin the format; the hashlib line documents how they are made.
    assert sha("\n".join((key.tenant, key.application, key.artifact, key.environment)), 8) == expected
    assert key_hash(key) == expected


def test_locator_and_record_names_follow_the_spec_example():
    assert locator_name(SHOP) == "manent-untenanted-shop-shop-api-prod-29195a97"
    assert locator_name(ACME) == "manent-acme-billing-billing-worker-staging-edbbd321"
    assert record_name(SHOP, "1-4-0") == "manent-untenanted-shop-shop-api-prod-29195a97-1-4-0"
    assert record_name(SHOP, "1.4.0") == "manent-untenanted-shop-shop-api-prod-29195a97-1-4-0-" + sha("1.4.0", 6)


@pytest.mark.parametrize("text, expected", [
    ("shop", "shop"),
    ("Shop_API", "shop-api"),
    ("1.4.0+build.7", "1-4-0-build-7"),
    ("v2_RC1", "v2-rc1"),
    ("--a--b--", "a--b"),
    ("..x..", "x"),
    ("", "x"),
    ("+++", "x"),
    ("città", "citt"),
    ("a b\tc", "a-b-c"),
])
def test_sanitize(text, expected):
    assert sanitize(text) == expected


@pytest.mark.parametrize("version, expected", [
    ("1-4-0", "1-4-0"),
    ("v2", "v2"),
    ("1.4.0+build.7", "1-4-0-build-7-21f7fd"),
    ("v2_RC1", "v2-rc1-174a29"),
    ("V2", "v2-" + sha("V2", 6)),
    ("", "x-" + sha("", 6)),
])
def test_version_part(version, expected):
    assert version_part(version) == expected


def test_long_version_is_cut_to_63_with_hash():
    version = "9" * 100
    part = version_part(version)
    assert part == "9" * 56 + "-" + sha(version, 6)
    assert len(part) == 63


def test_record_name_of_sanitised_version_never_collides_with_literal_one():
    assert record_name(SHOP, "1.4.0") != record_name(SHOP, "1-4-0")
    assert record_name(SHOP, "1.4.0") != record_name(SHOP, "1_4_0")


def tricky_versions():
    versions = set()
    cores = ["1.4.0", "1-4-0", "1_4_0", "1+4+0", "1.4..0", "1.4.0.", ".1.4.0", "1--4--0", "V1.4.0", "v1.4.0"]
    for core in cores:
        for extra in ("", "+build.7", "-build.7", "_build_7", "+BUILD.7", "-rc.1", "-RC.1", "-rc1"):
            versions.add(core + extra)
    long_base = "release-" + "x" * 60
    for index in range(30):
        versions.add("%s.%d" % (long_base, index))
        versions.add("%s-%d" % (long_base, index))
        versions.add("%s_%d" % (long_base.upper(), index))
    versions.update(["", "-", "_", ".", "+", "x", "X", "ä", "ö", "😀", "a😀", "a😁"])
    return sorted(versions)


def test_no_collisions_across_tricky_versions():
    versions = tricky_versions()
    names = [record_name(SHOP, version) for version in versions]
    assert len(set(names)) == len(versions)
    labels = [label_value(version) for version in versions]
    assert len(set(labels)) == len(versions)
    for name in names:
        assert len(name) <= 253
        assert DNS_SUBDOMAIN_CHARS.match(name), name
        assert DNS_LABEL.match(name[len(locator_name(SHOP)) + 1:]), name
    for label in labels:
        assert len(label) <= 63 and LABEL_VALUE.match(label), label


@pytest.mark.parametrize("key", [
    ReleaseKey(application="a" * 300, artifact="b" * 10, environment="c" * 100, tenant="T" * 5),
    ReleaseKey(application="app-" * 80, artifact="art." * 80, environment="env" * 90, tenant="t" * 253),
    ReleaseKey(application="x", artifact="y", environment="z" * 1000, tenant="w"),
])
def test_very_long_keys_fit(key):
    locator = locator_name(key)
    record = record_name(key, "V" * 500)
    assert len(locator) <= LOCATOR_MAX == 189
    assert len(record) <= 253
    assert DNS_SUBDOMAIN_CHARS.match(locator) and DNS_SUBDOMAIN_CHARS.match(record)
    assert locator.startswith("manent-") and locator.endswith("-" + key_hash(key))
    assert record.startswith(locator + "-")
    assert locator_name(key) == locator  # deterministic


def test_shortening_is_proportional_and_keeps_every_part():
    key = ReleaseKey(application="a" * 300, artifact="b" * 10, environment="c" * 100, tenant="t" * 5)
    parts = locator_name(key).split("-")
    assert parts[0] == "manent" and parts[-1] == key_hash(key)
    tenant, app, artifact, env = parts[1:5]
    assert set(tenant) == {"t"} and set(app) == {"a"} and set(artifact) == {"b"} and set(env) == {"c"}
    assert len(app) + len(artifact) + len(env) + len(tenant) == 170
    assert len(app) > len(env) > len(artifact) and len(artifact) <= 10 and len(tenant) <= 5
    assert len(app) < 300 and len(env) < 100


def test_keys_differing_only_past_the_cut_get_different_names():
    first = ReleaseKey(application="a" * 300 + "1", artifact="b", environment="prod")
    second = ReleaseKey(application="a" * 300 + "2", artifact="b", environment="prod")
    assert locator_name(first) != locator_name(second)
    assert locator_name(first)[:-8] == locator_name(second)[:-8]


@pytest.mark.parametrize("text, expected", [
    ("shop", "shop"),
    ("1.4.0", "1.4.0"),
    ("Shop_API.v1", "Shop_API.v1"),
    ("", ""),
    ("a" * 63, "a" * 63),
    ("a" * 64, "a" * 56 + "-" + sha("a" * 64, 6)),
    ("1.4.0+build.7", "1.4.0-build.7-" + sha("1.4.0+build.7", 6)),
    ("-x-", "x-" + sha("-x-", 6)),
    ("+++", sha("+++", 6)),
])
def test_label_value(text, expected):
    value = label_value(text)
    assert value == expected
    assert len(value) <= 63 and LABEL_VALUE.match(value)


def test_history_labels():
    locator = history_labels(SHOP, HISTORY_LOCATOR)
    assert locator == {
        "app.kubernetes.io/managed-by": "manent",
        "manent.io/application": "shop",
        "manent.io/artifact": "shop-api",
        "manent.io/tenant": "untenanted",
        "manent.io/environment": "prod",
        "manent.io/history": "locator",
    }
    record = history_labels(SHOP, HISTORY_RECORD, "1.4.0+b")
    assert record["manent.io/history"] == "record"
    assert record["manent.io/release-version"] == "1.4.0-b-" + sha("1.4.0+b", 6)
    long_key = ReleaseKey(application="A" * 100, artifact="b", environment="prod")
    for value in history_labels(long_key, HISTORY_RECORD, "v" * 99).values():
        assert len(value) <= 63 and LABEL_VALUE.match(value)


def test_history_selector():
    assert history_selector(SHOP, "record") == (
        "app.kubernetes.io/managed-by=manent,manent.io/application=shop,manent.io/artifact=shop-api,"
        "manent.io/environment=prod,manent.io/history=record,manent.io/tenant=untenanted")
    assert history_selector(SHOP).endswith(",manent.io/tenant=untenanted,manent.io/history")


# --------------------------------------------------------------------------- records


def make_record(version="1.4.0", objects=None, **meta):
    meta.setdefault("created", T0)
    meta.setdefault("artifactSha256", "ab" * 32)
    release = Release(SHOP, version, "deploy-42")
    return encode_record(release, "shop-prod", OBJECTS if objects is None else objects, meta)


def test_encode_record_manifest():
    cm = make_record(status="deployed", slot="b", replaced="1.3.0")
    assert cm["apiVersion"] == "v1" and cm["kind"] == "ConfigMap"
    assert cm["metadata"]["name"] == "manent-untenanted-shop-shop-api-prod-29195a97-1-4-0-" + sha("1.4.0", 6)
    assert cm["metadata"]["namespace"] == "shop-prod"
    assert cm["metadata"]["labels"] == history_labels(SHOP, "record", "1.4.0")
    assert cm["metadata"]["annotations"] == {"manent.io/version": "1.4.0", "manent.io/deployment": "deploy-42"}
    assert cm["data"] == {
        "version": "1.4.0", "deployment": "deploy-42", "artifactSha256": "ab" * 32,
        "created": "2024-05-01T12:00:00Z", "status": "deployed", "slot": "b", "replaced": "1.3.0",
        "objectCount": "2", "format": "1", "secrets": "",
    }
    assert list(cm["binaryData"]) == ["objects.json.gz"]
    assert all(isinstance(value, str) for value in cm["data"].values())


def test_record_defaults_to_pending_and_empty_fields():
    cm = encode_record(Release(SHOP, "2"), "ns", [], {"created": "2024-05-01T12:00:00Z"})
    assert cm["data"]["status"] == "pending"
    assert cm["data"]["slot"] == cm["data"]["replaced"] == cm["data"]["deployment"] == ""
    assert cm["data"]["objectCount"] == "0"


def test_round_trip_keeps_objects():
    original = copy.deepcopy(OBJECTS)
    cm = make_record()
    meta, objects = decode_record(json.loads(json.dumps(cm)))
    assert objects == original
    assert OBJECTS == original  # input untouched
    assert meta["version"] == "1.4.0" and meta["status"] == "pending" and meta["objectCount"] == "2"
    assert meta["name"] == cm["metadata"]["name"] and meta["namespace"] == "shop-prod"


def test_strays_list_only_new_objects_and_only_what_prune_needs():
    """A redeploy of the version in service lists in its record the objects that record does not hold (none of its
    own, each once, earlier ones kept), with identity, labels and annotations only: never a spec or Secret value."""
    cm = make_record(status="deployed")
    assert decode_strays(cm) == []
    added = {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "token", "namespace": "shop-prod", "labels": {"a": "1"}, "annotations": {"manent.io/keep": "no"},
        "uid": "x", "resourceVersion": "7"}, "data": {"token": "c2VjcmV0"}, "type": "Opaque"}
    strays = [stray_of(obj) for obj in OBJECTS + [added]]
    assert strays[-1] == {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "token", "namespace": "shop-prod", "labels": {"a": "1"}, "annotations": {"manent.io/keep": "no"}}}
    once = with_strays(cm, strays, "record")
    assert decode_strays(json.loads(json.dumps(once))) == strays[-1:]
    assert decode_record(once) == decode_record(cm) and once["data"] == cm["data"]
    assert "c2VjcmV0" not in json.dumps(once) and "secret" not in gzip.decompress(
        base64.b64decode(once["binaryData"][STRAYS_KEY])).decode()
    later = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later", "namespace": "shop-prod"}}
    twice = with_strays(once, [stray_of(later), strays[-1]], "record")
    assert [o["metadata"]["name"] for o in decode_strays(twice)] == ["token", "later"]
    assert with_strays(cm, strays[:2], "record")["binaryData"] == cm["binaryData"]  # nothing new: no key
    assert cm == make_record(status="deployed")  # input untouched


def test_round_trip_accepts_raw_bytes():
    cm = make_record()
    cm["binaryData"]["objects.json.gz"] = base64.b64decode(cm["binaryData"]["objects.json.gz"])
    assert decode_record(cm)[1] == OBJECTS


def test_bytes_are_deterministic_and_canonical():
    first = make_record()["binaryData"]["objects.json.gz"]
    reordered = [dict(reversed(list(obj.items()))) for obj in OBJECTS]
    second = make_record(objects=reordered)["binaryData"]["objects.json.gz"]
    assert first == second
    packed = base64.b64decode(first)
    assert packed[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # magic, deflate, mtime 0, OS unknown
    expected = json.dumps(OBJECTS, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert gzip.decompress(packed) == expected


def random_configmap(size, seed):
    payload = base64.b64encode(random.Random(seed).randbytes(size)).decode("ascii")
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "blob"}, "data": {"blob": payload}}


def test_over_size_record_is_refused():
    with pytest.raises(HistoryError) as info:
        make_record(objects=[random_configmap(1000 * 1024, 1)])
    text = str(info.value)
    assert text.startswith("release untenanted/shop/shop-api/prod version 1.4.0: the 1 objects take ")
    assert "above the history limit of 921600 bytes (900 KiB)" in text
    assert "split the artifact" in text and "nothing was written" in text
    size = int(re.search(r"take (\d+) bytes", text).group(1))
    assert size > RECORD_LIMIT


def test_record_just_under_the_limit_is_accepted():
    cm = make_record(objects=[random_configmap(600 * 1024, 2)])
    assert len(base64.b64decode(cm["binaryData"]["objects.json.gz"])) <= RECORD_LIMIT


@pytest.mark.parametrize("meta, message", [
    ({"status": "done"}, "unknown release status 'done'"),
    ({"colour": "red"}, "unknown record field(s) colour"),
    ({"deployment": "deploy-7"}, "record field deployment differs from the release ('deploy-42')"),
    ({"created": "yesterday"}, "created 'yesterday' is not an RFC 3339 time"),
])
def test_encode_record_rejects_bad_meta(meta, message):
    with pytest.raises(InputError) as info:
        make_record(**meta)
    assert message in str(info.value)


def test_encode_record_checks_version_and_deployment_in_meta():
    release = Release(SHOP, "1.4.0", "deploy-42")
    same = encode_record(release, "ns", [], {"version": "1.4.0", "deployment": "deploy-42", "created": T0})
    assert same["data"]["version"] == "1.4.0" and same["data"]["deployment"] == "deploy-42"
    with pytest.raises(InputError) as info:
        encode_record(release, "ns", [], {"version": "9.9", "created": T0})
    assert "record field version differs from the release ('1.4.0')" in str(info.value)


def test_encode_record_rejects_unserialisable_objects():
    with pytest.raises(InputError) as info:
        make_record(objects=[{"kind": "ConfigMap", "data": {"day": datetime.date(2024, 5, 1)}}])
    assert "cannot be saved as JSON" in str(info.value)


def test_decode_older_uncompressed_record():
    cm = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "manent-old-1-3-0", "namespace": "shop-prod",
                     "annotations": {"manent.io/version": "1.3.0"}},
        "data": {"objects.json": json.dumps(OBJECTS), "status": "superseded", "created": "2024-04-01T00:00:00Z"},
    }
    meta, objects = decode_record(cm)
    assert objects == OBJECTS
    assert meta["version"] == "1.3.0" and meta["status"] == "superseded"
    assert meta["format"] == "" and meta["slot"] == "" and meta["name"] == "manent-old-1-3-0"


def corrupt(binary=None, data=None):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "manent-x-1", "namespace": "ns"},
            "data": data or {"version": "1"}, "binaryData": binary or {}}


@pytest.mark.parametrize("cm, message", [
    (corrupt({"objects.json.gz": "!!not base64!!"}), "the saved objects are corrupt"),
    (corrupt({"objects.json.gz": base64.b64encode(b"plain text").decode()}), "the saved objects are corrupt"),
    (corrupt({"objects.json.gz": base64.b64encode(gzip.compress(b"{nope")).decode()}),
     "the saved objects are corrupt"),
    (corrupt({"objects.json.gz": base64.b64encode(gzip.compress(b"{\"a\":1}")).decode()}),
     "the saved objects are not a list of objects"),
    (corrupt(data={"objects.json": "[1, 2]"}), "the saved objects are not a list of objects"),
    (corrupt(), "the record holds no objects"),
    (corrupt(data={"format": "3", "objects.json": "[]"}), "record format '3' is newer than this manent"),
    (corrupt(data=["x"]), "'data' is not a mapping"),
])
def test_corrupt_record_names_the_configmap(cm, message):
    with pytest.raises(HistoryError) as info:
        decode_record(cm)
    assert str(info.value).startswith("ConfigMap/ns/manent-x-1: ")
    assert message in str(info.value)


def test_set_status_returns_patched_copy():
    cm = make_record()
    before = copy.deepcopy(cm)
    patched = set_status(cm, "superseded", replaced="1.3.0", slot=None)
    assert cm == before
    assert patched["data"]["status"] == "superseded"
    assert patched["data"]["replaced"] == "1.3.0" and patched["data"]["slot"] == ""
    assert patched["binaryData"] == cm["binaryData"]
    assert {k: v for k, v in patched["data"].items() if k not in ("status", "replaced")} == \
        {k: v for k, v in cm["data"].items() if k not in ("status", "replaced")}


@pytest.mark.parametrize("status, fields, message", [
    ("gone", {}, "unknown release status 'gone'"),
    ("failed", {"version": "2"}, "field(s) version cannot be changed"),
    ("failed", {"objectCount": "9"}, "field(s) objectCount cannot be changed"),
])
def test_set_status_rejects(status, fields, message):
    with pytest.raises(InputError) as info:
        set_status(make_record(), status, **fields)
    assert message in str(info.value)


@pytest.mark.parametrize("status", STATUSES)
def test_every_status_is_accepted(status):
    assert set_status(make_record(), status)["data"]["status"] == status
    assert STATUSES == ("pending", "deployed", "failed", "superseded", "rolled-back", "candidate", "aborted")


# --------------------------------------------------------------------------- locator


def test_locator_round_trip():
    current = {"version": "1.4.0", "deployment": "deploy-42", "artifactSha256": "ab" * 32,
               "record": record_name(SHOP, "1.4.0"), "slot": "b", "replaced": "1.3.0",
               "replacedRecord": record_name(SHOP, "1.3.0")}
    cm = encode_locator(SHOP, "shop-prod", current, now=T0)
    assert cm["metadata"] == {"name": "manent-untenanted-shop-shop-api-prod-29195a97", "namespace": "shop-prod",
                              "labels": history_labels(SHOP, "locator")}
    traffic = {"candidate": "", "candidateDeployment": "", "candidateRecord": "", "candidateSlot": "", "weight": "",
               "promoted": "", "retired": ""}
    assert cm["data"] == dict(current, updated="2024-05-01T12:00:00Z", lockHolder="", lockSince="", lockExpires="",
                              **traffic)
    assert decode_locator(cm) == dict(cm["data"], inProgress=""), "inProgress is written only when set"
    busy = encode_locator(SHOP, "shop-prod", dict(current, inProgress='{"operation":"step"}'), now=T0)
    assert decode_locator(busy)["inProgress"] == '{"operation":"step"}'
    # a locator written before the artifact's sha256 was recorded (or without one) reads it as ''
    unrecorded = encode_locator(SHOP, "shop-prod", dict(current, artifactSha256=""), now=T0)
    assert "artifactSha256" not in unrecorded["data"] and decode_locator(unrecorded)["artifactSha256"] == ""


def test_locator_updated_is_kept_without_now():
    cm = encode_locator(SHOP, "ns", {"version": "1", "updated": "2024-01-01T00:00:00Z"})
    assert cm["data"]["updated"] == "2024-01-01T00:00:00Z"
    fresh = encode_locator(SHOP, "ns", None)
    assert parse_time(fresh["data"]["updated"]) is not None and fresh["data"]["version"] == ""


def test_decode_locator_fills_missing_fields():
    decoded = decode_locator({"metadata": {"name": "l"}, "data": {"version": "1.0"}})
    assert decoded == dict({field: "" for field in LOCATOR_FIELDS}, version="1.0")
    assert decode_locator({"metadata": {"name": "l"}})["version"] == ""


def test_encode_locator_rejects_unknown_field():
    with pytest.raises(InputError) as info:
        encode_locator(SHOP, "ns", {"verison": "1"})
    assert "unknown locator field(s) verison" in str(info.value)


# --------------------------------------------------------------------------- lock


def locked(minutes_ago, holder="job-1"):
    return with_lock({"version": "1"}, holder, T0 - datetime.timedelta(minutes=minutes_ago))


@pytest.mark.parametrize("data, state", [
    ({}, ("free", "", "")),
    ({"lockHolder": "", "lockSince": "2024-05-01T11:00:00Z"}, ("free", "", "")),
    (locked(1), ("held", "job-1", "2024-05-01T11:59:00Z")),
    (locked(14), ("held", "job-1", "2024-05-01T11:46:00Z")),
    (locked(15), ("expired", "job-1", "2024-05-01T11:45:00Z")),
    (locked(60), ("expired", "job-1", "2024-05-01T11:00:00Z")),
    ({"lockHolder": "old", "lockSince": "2024-05-01T11:50:00Z"}, ("held", "old", "2024-05-01T11:50:00Z")),
    ({"lockHolder": "old", "lockSince": "2024-05-01T11:40:00Z"}, ("expired", "old", "2024-05-01T11:40:00Z")),
])
def test_lock_state(data, state):
    assert lock_state(data, T0) == state


def test_lock_state_accepts_naive_now():
    assert lock_state(locked(1), T0.replace(tzinfo=None))[0] == "held"


def test_unreadable_lock_is_an_error():
    with pytest.raises(HistoryError) as info:
        lock_state({"lockHolder": "job-9", "lockSince": "soon"}, T0)
    assert "history lock: the lock held by 'job-9' has no readable lockSince/lockExpires" in str(info.value)
    assert "clear the lock fields" in str(info.value)


def test_with_lock_and_without_lock():
    data = {"version": "1.4.0"}
    taken = with_lock(data, "job-1", T0)
    assert data == {"version": "1.4.0"}
    assert taken == {"version": "1.4.0", "lockHolder": "job-1", "lockSince": "2024-05-01T12:00:00Z",
                     "lockExpires": "2024-05-01T12:15:00Z"}
    renewed = with_lock(taken, "job-1", T0 + datetime.timedelta(minutes=10), ttl=60)
    assert renewed["lockSince"] == "2024-05-01T12:00:00Z" and renewed["lockExpires"] == "2024-05-01T12:11:00Z"
    stolen = with_lock(taken, "job-2", T0 + datetime.timedelta(minutes=20))
    assert stolen["lockHolder"] == "job-2" and stolen["lockSince"] == "2024-05-01T12:20:00Z"
    freed = without_lock(renewed)
    assert freed == {"version": "1.4.0", "lockHolder": "", "lockSince": "", "lockExpires": ""}
    assert lock_state(freed, T0) == ("free", "", "")
    with pytest.raises(InputError):
        with_lock(data, "", T0)


# --------------------------------------------------------------------------- retention


def rec(name, created, status="superseded"):
    return {"name": name, "version": name, "created": created, "status": status}


HISTORY = [
    rec("r3", "2024-03-01T00:00:00Z"),
    rec("r1", "2024-01-01T00:00:00Z"),
    rec("r5", "2024-05-01T00:00:00Z", "deployed"),
    rec("r2", "2024-02-01T00:00:00Z"),
    rec("r4", "2024-04-01T00:00:00+00:00"),
    rec("r6", "2024-05-01T00:00:00.5Z", "pending"),
]


@pytest.mark.parametrize("records, keep, protect, expected", [
    (HISTORY, 5, set(), ["r1"]),
    (HISTORY, 3, set(), ["r1", "r2", "r3"]),
    (HISTORY, 2, {"r5", "r6"}, ["r1", "r2", "r3", "r4"]),
    (HISTORY, 2, {"r2", "r6"}, ["r1", "r3", "r4"]),
    (HISTORY, 6, set(), []),
    (HISTORY, 10, set(), []),
    ([], 2, set(), []),
    ([rec("b", "2024-01-01T00:00:00Z"), rec("a", "2024-01-01T00:00:00Z"), rec("c", "2024-01-01T00:00:00Z")],
     2, set(), ["a"]),
    ([rec("new", "2024-01-01T00:00:00Z"), rec("hand-made", ""), rec("mid", "2023-01-01T00:00:00Z")],
     2, set(), ["hand-made"]),
])
def test_records_to_delete(records, keep, protect, expected):
    assert records_to_delete(records, keep, protect) == expected


@pytest.mark.parametrize("keep", [1, 0, -3, "5", True, None])
def test_keep_below_two_is_refused(keep):
    with pytest.raises(InputError) as info:
        records_to_delete(HISTORY, keep, set())
    assert str(info.value).startswith("keep_releases: must be a whole number of at least 2")


@pytest.mark.parametrize("keep", [1, 0, "5", True, None, 2.5])
def test_the_keep_releases_rule_is_one_function(keep):
    """apply_task, manent_history and records_to_delete all ask check_keep_releases."""
    with pytest.raises(InputError) as info:
        check_keep_releases(keep)
    assert str(info.value).startswith("keep_releases: must be a whole number of at least 2")
    assert "history needs the release in service and the one before it" in str(info.value)
    assert check_keep_releases(2) == 2 and check_keep_releases(5) == 5


# --------------------------------------------------------------------------- Secrets kept out of ConfigMaps


SECRET = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
          "metadata": {"name": "db", "namespace": "shop-prod", "labels": {"app": "shop"}},
          "data": {"password": base64.b64encode(b"hunter2-value").decode()}, "stringData": {"user": "admin-name"}}


def _all_text(cm):
    """Every string of ``cm`` with its gzip-compressed binaryData unpacked."""
    parts = [json.dumps(cm)]
    for value in (cm.get("binaryData") or {}).values():
        parts.append(gzip.decompress(base64.b64decode(value)).decode())
    return "\n".join(parts)


def test_secret_values_never_reach_the_configmap():
    cm = make_record(objects=OBJECTS + [SECRET])
    text = _all_text(cm)
    for value in ("hunter2-value", SECRET["data"]["password"], "admin-name"):
        assert value not in text
    assert cm["data"]["format"] == "2" and cm["data"]["secrets"] == cm["metadata"]["name"]
    assert cm["data"]["objectCount"] == "3"
    stored = decode_record(cm)[1]
    assert stored[2] == {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": SECRET["metadata"]}
    assert stored[:2] == OBJECTS


def test_companion_holds_the_secrets_and_restores_them_exactly():
    cm = make_record(objects=[SECRET] + OBJECTS)
    cm["metadata"]["uid"] = "1234"
    companion = encode_companion(cm, split_secrets([SECRET] + OBJECTS)[1])
    assert companion["kind"] == "Secret" and companion["type"] == "manent.io/release-secrets.v1"
    assert companion["metadata"]["name"] == cm["metadata"]["name"]
    assert companion["metadata"]["labels"] == cm["metadata"]["labels"]
    assert companion["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": cm["metadata"]["name"], "uid": "1234"}]
    assert list(companion["data"]) == ["secrets.json.gz"]
    restored = restore_secrets(decode_record(cm)[1], companion, cm)
    assert restored == [SECRET] + OBJECTS


def test_no_companion_without_secrets():
    cm = make_record()
    assert encode_companion(cm, split_secrets(OBJECTS)[1]) is None
    assert companion_name(cm) == "" and not needs_migration(cm)


@pytest.mark.parametrize("companion, message", [
    (None, "missing or not of type manent.io/release-secrets.v1"),
    ({"type": "Opaque", "data": {}}, "missing or not of type"),
    ({"type": "manent.io/release-secrets.v1", "data": {"secrets.json.gz": "!!"}}, "corrupt"),
    ({"type": "manent.io/release-secrets.v1", "data": {}}, "corrupt"),
])
def test_bad_companion_is_a_clear_error(companion, message):
    cm = make_record(objects=[SECRET])
    with pytest.raises(HistoryError) as info:
        restore_secrets(decode_record(cm)[1], companion, cm)
    assert message in str(info.value) and cm["metadata"]["name"] in str(info.value)


def test_companion_missing_one_secret_names_it():
    cm = make_record(objects=[SECRET])
    other = dict(SECRET, metadata={"name": "other", "namespace": "shop-prod"})
    companion = encode_companion(cm, [other])
    with pytest.raises(HistoryError) as info:
        restore_secrets(decode_record(cm)[1], companion, cm)
    assert "Secret/shop-prod/db is not in Secret/shop-prod/" in str(info.value)


def _old_format(objects):
    cm = make_record(objects=[])
    raw = json.dumps(objects, sort_keys=True, separators=(",", ":")).encode()
    cm["binaryData"] = {"objects.json.gz": base64.b64encode(gzip.compress(raw)).decode()}
    cm["data"].pop("secrets")
    cm["data"]["format"] = "1"
    cm["data"]["objectCount"] = str(len(objects))
    return cm


def test_migrate_moves_secret_values_out_and_keeps_the_rest():
    old = _old_format(OBJECTS + [SECRET])
    assert needs_migration(old) and "admin-name" not in json.dumps(old)  # only inside the gzip
    assert SECRET["data"]["password"] in _all_text(old) and "admin-name" in _all_text(old)
    new, companion = migrate(old)
    assert SECRET["data"]["password"] not in _all_text(new) and "admin-name" not in _all_text(new)
    assert not needs_migration(new)
    assert new["data"]["format"] == "2" and new["metadata"] == old["metadata"]
    assert {k: v for k, v in new["data"].items() if k not in ("format", "secrets")} == \
        {k: v for k, v in old["data"].items() if k != "format"}
    assert restore_secrets(decode_record(new)[1], companion, new) == OBJECTS + [SECRET]


def test_migrate_without_secrets_only_marks_the_record():
    old = _old_format(OBJECTS)
    new, companion = migrate(old)
    assert companion is None and new["data"]["secrets"] == "" and new["binaryData"] == old["binaryData"]
    assert new["data"]["format"] == "1"


def test_companion_size_is_guarded():
    big = dict(SECRET, data={"blob": base64.b64encode(os.urandom(1000 * 1024)).decode()})
    cm = make_record(objects=[])
    with pytest.raises(HistoryError) as info:
        encode_companion(cm, [big])
    assert "Secret objects take" in str(info.value) and "KiB" in str(info.value)
