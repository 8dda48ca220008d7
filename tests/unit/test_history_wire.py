# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""History on the wire: ConfigMaps and companion Secrets recorded from an earlier manent
(tests/unit/fixtures/history/recorded.yaml) still read as they were, and the same inputs give the same bytes."""

from __future__ import annotations

import copy
import datetime
import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.history.companion_format import (
    companion_name, encode_companion, migrate, needs_migration, restore_secrets)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.locator_format import (
    LOCK_EXPIRED, LOCK_HELD, LOCK_TTL_SECONDS, decode_locator, encode_locator, lock_state, with_lock)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import ANNOTATION_BACKUP_OF
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_check import check_record
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    RECORD_FORMAT, RECORD_FORMAT_SECRETS, STATUS_DEPLOYED, decode_record, decode_strays, encode_backup, encode_record,
    record_meta, set_status, split_secrets, stray_of, with_strays)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey

with open(os.path.join(os.path.dirname(__file__), "fixtures", "history", "recorded.yaml"), encoding="utf-8") as _f:
    RECORDED = yaml.safe_load(_f)
INPUTS = RECORDED["inputs"]
WRITTEN = RECORDED["written"]
KEY = ReleaseKey(**INPUTS["key"])
RELEASE = Release(KEY, INPUTS["version"], INPUTS["deployment"])
NAMESPACE = INPUTS["namespace"]
NOW = datetime.datetime.fromisoformat(INPUTS["now"].replace("Z", "+00:00"))


def objects():
    return copy.deepcopy(INPUTS["objects"])


def without_secrets():
    return [obj for obj in objects() if obj["kind"] != "Secret"]


def written(name):
    return copy.deepcopy(WRITTEN[name])


# --------------------------------------------------------------------------- read what was written


def test_recorded_record_reads_back_with_its_secrets():
    record = written("record")
    meta, stored = decode_record(record)
    assert {field: meta[field] for field in INPUTS["meta"]} == INPUTS["meta"]
    assert meta["version"] == INPUTS["version"] and meta["deployment"] == INPUTS["deployment"]
    assert meta["format"] == RECORD_FORMAT_SECRETS and meta["secrets"] == record["metadata"]["name"]
    assert stored == split_secrets(objects())[0]
    assert restore_secrets(stored, written("companion"), record) == objects()
    check_record(record, KEY, stored, own_namespace=False)


def test_recorded_record_without_secrets_reads_back():
    meta, stored = decode_record(written("record_without_secrets"))
    assert meta["format"] == RECORD_FORMAT and meta["secrets"] == "" and meta["version"] == "1.3.0"
    assert stored == without_secrets()
    assert companion_name(written("record_without_secrets")) == ""


def test_recorded_strays_status_and_backup_read_back():
    assert decode_strays(written("record_with_strays")) == [stray_of(obj) for obj in INPUTS["strays"]]
    assert decode_record(written("record_with_strays"))[1] == split_secrets(objects())[0]
    assert record_meta(written("record_marked"))["status"] == STATUS_DEPLOYED
    backup = written("backup")
    assert backup["metadata"]["annotations"][ANNOTATION_BACKUP_OF] == WRITTEN["record"]["metadata"]["name"]
    assert decode_record(backup)[1] == split_secrets(objects())[0]


def test_recorded_earlier_format_record_reads_and_migrates():
    earlier = written("earlier_format_record")
    assert needs_migration(earlier)
    assert decode_record(earlier)[1] == objects()
    record, companion = migrate(earlier)
    assert not needs_migration(record)
    assert restore_secrets(decode_record(record)[1], companion, record) == objects()


def test_recorded_locator_reads_back_with_its_lock():
    locator = written("locator")
    data = decode_locator(locator)
    assert {field: data[field] for field in INPUTS["locator"]} == INPUTS["locator"]
    assert lock_state(data, NOW) == (LOCK_HELD, INPUTS["deployment"], INPUTS["now"])
    assert lock_state(data, NOW + datetime.timedelta(seconds=LOCK_TTL_SECONDS))[0] == LOCK_EXPIRED


# --------------------------------------------------------------------------- write the same bytes again


def encoded_record():
    return encode_record(RELEASE, NAMESPACE, objects(), dict(INPUTS["meta"]))


def owned(record):
    record = copy.deepcopy(record)
    record["metadata"]["uid"] = INPUTS["uid"]
    return record


@pytest.mark.parametrize("name, encode", [
    ("record", encoded_record),
    ("companion", lambda: encode_companion(owned(encoded_record()), split_secrets(objects())[1])),
    ("record_without_secrets", lambda: encode_record(
        Release(KEY, "1.3.0", "deploy-41"), NAMESPACE, without_secrets(), dict(INPUTS["meta"], slot="a", replaced=""))),
    ("record_with_strays", lambda: with_strays(encoded_record(), [stray_of(obj) for obj in INPUTS["strays"]], "test")),
    ("record_marked", lambda: set_status(encoded_record(), STATUS_DEPLOYED, replaced="1.3.0")),
    ("backup", lambda: encode_backup(encoded_record(), KEY, NAMESPACE)),
    ("migrated", lambda: dict(zip(("record", "companion"), migrate(written("earlier_format_record"))))),
    ("locator", lambda: encode_locator(
        KEY, NAMESPACE, with_lock(INPUTS["locator"], INPUTS["deployment"], NOW), now=NOW)),
])
def test_same_inputs_write_the_same_bytes(name, encode):
    assert encode() == WRITTEN[name]
