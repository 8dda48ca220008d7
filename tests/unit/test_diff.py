# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""diff.py: server noise dropped, Secret values never shown, Ansible diff entries."""

from __future__ import annotations

import copy
import os
import re

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.engine import diff

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "diff")


def _load(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


NORMALIZE = _load("normalize.yaml")
REDACT = _load("redact.yaml")
MARKER = re.compile(r"^<redacted> [0-9a-f]{8}$")


def _at(obj, dotted):
    for part in dotted.split("."):
        obj = obj[part]
    return obj


@pytest.mark.parametrize("case", NORMALIZE, ids=[c["name"] for c in NORMALIZE])
def test_normalize(case):
    original = copy.deepcopy(case["input"])
    assert diff.normalize(case["input"]) == case["expected"]
    assert case["input"] == original  # the argument is not modified


@pytest.mark.parametrize("case", NORMALIZE, ids=[c["name"] for c in NORMALIZE])
def test_same_ignores_noise(case):
    assert diff.same(case["input"], case["expected"]) is True


def test_same_sees_a_real_change():
    a = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "1"}, "data": {"k": "1"}}
    b = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "1"}, "data": {"k": "2"}}
    assert diff.same(a, b) is False
    assert diff.same(None, a) is False


@pytest.mark.parametrize("case", REDACT, ids=[c["name"] for c in REDACT])
def test_redact(case):
    before = diff.redact(case["before"], "salt-1")
    after = diff.redact(case["after"], "salt-1")
    if case.get("untouched"):
        assert before == case["before"] and after == case["after"]
        return
    for key in case["same"]:
        assert MARKER.match(_at(before, key)) and _at(before, key) == _at(after, key)
    for key in case["different"]:
        assert MARKER.match(_at(before, key)) and MARKER.match(_at(after, key))
        assert _at(before, key) != _at(after, key)
        # another salt (another run) gives other markers: fingerprints cannot be compared across runs
        assert _at(diff.redact(case["before"], "salt-2"), key) != _at(before, key)
    text = yaml.safe_dump([before, after])
    for secret in case["secrets"]:
        assert secret not in text
    assert case["before"] != before  # the argument itself is not modified
    assert "<redacted>" not in yaml.safe_dump(case["before"])


def test_diff_entry_of_a_changed_secret():
    live = copy.deepcopy(REDACT[0]["before"])
    live["metadata"].update(resourceVersion="7", uid="u-1", managedFields=[{"manager": "manent"}])
    live["status"] = {}
    entry = diff.diff_entry(live, REDACT[0]["after"], "Secret/ns/db", "s")
    assert set(entry) == {"before", "after", "before_header", "after_header"}
    assert entry["before_header"] == "Secret/ns/db (live)"
    assert entry["after_header"] == "Secret/ns/db (applied)"
    for noise in ("resourceVersion", "uid", "managedFields", "status"):
        assert noise not in entry["before"]
    assert "b2xkLXBhc3N3b3Jk" not in entry["before"] and "bmV3LXBhc3N3b3Jk" not in entry["after"]
    assert yaml.safe_load(entry["before"])["metadata"] == {"name": "db"}


@pytest.mark.parametrize("before, after, headers", [
    (None, {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c"}},
     ("ConfigMap/ns/c (absent)", "ConfigMap/ns/c (applied)")),
    ({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c"}}, None,
     ("ConfigMap/ns/c (live)", "ConfigMap/ns/c (deleted)")),
])
def test_diff_entry_of_created_and_deleted_objects(before, after, headers):
    entry = diff.diff_entry(before, after, "ConfigMap/ns/c", "")
    assert (entry["before_header"], entry["after_header"]) == headers
    assert (entry["before"] == "") is (before is None)
    assert (entry["after"] == "") is (after is None)


def test_secret_values_are_scrubbed_from_error_messages():
    from ansible_collections.manent.kubernetes.plugins.module_utils.engine.diff import scrub_secret_values
    import base64
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
              "data": {"a": base64.b64encode(b"hunter2-password").decode()}, "stringData": {"b": "tok-123456"}}
    message = ('Secret "s" is invalid: data[a]: Invalid value: "%s" (%s); stringData[b]: "tok-123456" / %s'
               % (secret["data"]["a"], "hunter2-password", base64.b64encode(b"tok-123456").decode()))
    scrubbed = scrub_secret_values(secret, message)
    for leaked in ("hunter2-password", secret["data"]["a"], "tok-123456", base64.b64encode(b"tok-123456").decode()):
        assert leaked not in scrubbed
    assert scrubbed.count("<redacted>") == 4
    assert scrub_secret_values({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": "xyz1"}}, "xyz1") == "xyz1"
