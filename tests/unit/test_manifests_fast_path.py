# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The YAML fast path of manifests.py (objects built straight from the parser's events) gives exactly what the
bounded composer gives, and leaves to the composer every stream it cannot read the same way."""

from __future__ import annotations

import random

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.render import manifests
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import RenderError


def composed(text, filename="app.yaml", monkeypatch=None):
    """What the composer path returns (or raises) for ``text``, the fast path switched off."""
    monkeypatch.setattr(manifests, "_plain_documents", lambda *_args: None)
    try:
        return manifests.parse(text, filename)
    except RenderError as err:
        return ("error", str(err))
    finally:
        monkeypatch.undo()


def doc_tuples(docs):
    return [(d.obj, d.source, d.filename, d.document, d.line) for d in docs]


SCALARS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: scalars
  labels: {a: b, "quoted": 'single'}
  annotations:
    when: 2001-12-14t21:59:43.10-05:00
    date: 2002-12-14
data:
  ints: [0, -1, +7, 0x1F, 0o17, 017, 1_000, 190:20:30]
  floats: [1.5, -0.5e3, .inf, -.Inf, .nan, 6.8523015e+5, 1_000.5]
  bools: [true, false, yes, no, on, off, True, NO, y, n]
  nulls: [~, null, Null, "", '~']
  strings: ["0x1F", '1.5', "true", plain words, "with: colon", 'it''s', "\\u00e9t\\u00e9", été]
  block: |
    line one
      indented
    last
  folded: >-
    folded
    text
  keys: {1: int key, "1": string key}
  bool_keys: {true: bool key, false: other}
  empty_map: {}
  empty_list: []
  nested: [[1, [2, [3]]], {a: {b: {c: [d]}}}]
"""

ANCHORS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: &labels
    app: web
    tier: &tier front
spec:
  selector:
    matchLabels: *labels
  template:
    metadata:
      labels: *labels
    spec:
      containers:
      - &main {name: main, image: "nginx:1.27", args: [*tier, *tier]}
      - *main
"""

STREAM = """\
# leading comment
---
---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: one}
--- null
---
apiVersion: v1
kind: Secret
metadata:
  name: two
stringData: {password: hunter2}
...
---
{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flow"}}
"""

PLAIN = [SCALARS, ANCHORS, STREAM, "", "# nothing\n", "---\n", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"]

# Streams the fast path leaves to the composer (None), each with what the composer does with them.
NOT_PLAIN = {
    "merge key": "base: &b {x: 1}\nobj:\n  <<: *b\n  y: 2\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\n",
    "explicit tag": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: t}\ndata: {a: !!str 1}\n",
    "binary tag": "apiVersion: v1\nkind: Secret\nmetadata: {name: t}\ndata: {a: !!binary aGk=}\n",
    "custom tag": "apiVersion: v1\nkind: ConfigMap\nmetadata: !custom {name: t}\n",
    "duplicate key": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nmetadata: {name: b}\n",
    "same key twice by value": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {1: x, 0x1: y}\n",
    "bool key equal to an int key": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {1: x, true: y}\n",
    "float key": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {.nan: x, .NaN: y}\n",
    "null key": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {~: x}\n",
    "mapping key": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {? {a: b} : x}\n",
    "alias key": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: &n a}\ndata: {*n : x}\n",
    "value key": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {=: x}\n",
    "undefined alias": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: *nope}\n",
    "recursive alias": "apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: a, self: *m}\n",
    "list kind": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n",
    "scalar document": "just text\n",
    "list document": "- apiVersion: v1\n  kind: ConfigMap\n",
    "syntax error": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\n",
    "deep nesting": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: " + "[" * 300 + "]" * 300 + "\n",
    "billion laughs": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        "%s: &%s [%s]\n" % (c, c, ", ".join(["*" + p] * 10)) for p, c in zip("abcdefg", "bcdefgh")),
    "large document": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {a: %s}\n"
                      % ("x" * (manifests.MAX_DOCUMENT_BYTES + 10)),
}


@pytest.mark.parametrize("text", PLAIN, ids=["scalars", "anchors", "stream", "empty", "comment", "dashes", "tiny"])
def test_plain_streams_are_read_by_the_fast_path_exactly_as_the_composer_reads_them(text, monkeypatch):
    fast = manifests._plain_documents(text, "app.yaml")
    assert fast is not None, "this stream is plain: the fast path must read it"
    assert doc_tuples(fast) == doc_tuples(composed(text, monkeypatch=monkeypatch))
    assert doc_tuples(manifests.parse(text, "app.yaml")) == doc_tuples(fast)


def test_values_reached_through_aliases_are_independent_copies():
    (doc,) = manifests._plain_documents(ANCHORS, "app.yaml")
    spec = doc.obj["spec"]
    assert spec["selector"]["matchLabels"] == doc.obj["metadata"]["labels"] == {"app": "web", "tier": "front"}
    spec["template"]["metadata"]["labels"]["extra"] = "1"
    assert "extra" not in spec["selector"]["matchLabels"]
    assert "extra" not in doc.obj["metadata"]["labels"]
    first, second = spec["template"]["spec"]["containers"]
    assert first == second and first is not second and first["args"] is not second["args"]


def test_scalars_construct_as_the_loader_constructs_them():
    (doc,) = manifests._plain_documents(SCALARS, "app.yaml")
    data = doc.obj["data"]
    assert data["ints"] == [0, -1, 7, 31, "0o17", 15, 1000, 685230]  # YAML 1.1: 0o17 is text, 017 octal
    assert [type(v) for v in data["bools"]] == [bool] * 8 + [str, str]  # PyYAML reads y and n as text
    assert data["nulls"] == [None, None, None, "", "~"]
    assert data["strings"][:3] == ["0x1F", "1.5", "true"]
    assert doc.obj["metadata"]["annotations"] == {"when": "2001-12-14t21:59:43.10-05:00", "date": "2002-12-14"}
    assert data["keys"] == {1: "int key", "1": "string key"}
    assert data["bool_keys"] == {True: "bool key", False: "other"}


@pytest.mark.parametrize("name", sorted(NOT_PLAIN))
def test_other_streams_are_left_to_the_composer(name, monkeypatch):
    text = NOT_PLAIN[name]
    assert manifests._plain_documents(text, "app.yaml") is None
    expected = composed(text, monkeypatch=monkeypatch)
    try:
        got = doc_tuples(manifests.parse(text, "app.yaml"))
    except RenderError as err:
        got = ("error", str(err))
    assert got == (expected if isinstance(expected, tuple) else doc_tuples(expected))


def test_one_document_that_is_not_plain_sends_the_whole_stream_to_the_composer(monkeypatch):
    text = STREAM + "---\n" + NOT_PLAIN["merge key"]
    assert manifests._plain_documents(text, "app.yaml") is None
    assert doc_tuples(manifests.parse(text, "app.yaml")) == doc_tuples(composed(text, monkeypatch=monkeypatch))


def test_generated_releases_read_the_same_both_ways(monkeypatch):
    """Random objects of every scalar kind, nested maps and lists, some written with anchors and aliases."""
    rng = random.Random(20261202)
    words = ["a", "b", "web", "x y", "0x1F", "1.5", "yes", "~", "null", "2001-12-14", "-", "é", "'q'", '"d"', ""]

    def scalar():
        return rng.choice([rng.randint(-5, 10 ** 6), rng.random() * 100, rng.choice([True, False, None]),
                           rng.choice(words)])

    def value(depth):
        roll = rng.random()
        if depth > 4 or roll < 0.5:
            return scalar()
        if roll < 0.75:
            return [value(depth + 1) for position in range(rng.randint(0, 4))]
        return {rng.choice(words[:4]) + str(i): value(depth + 1) for i in range(rng.randint(0, 4))}

    docs = []
    for i in range(60):
        shared = value(2)
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-%d" % i},
               "data": {"one": shared, "two": shared, "three": value(1)}}
        docs.append(yaml.safe_dump(obj, default_flow_style=rng.random() < 0.3, allow_unicode=rng.random() < 0.5))
    text = "---\n".join(docs)
    fast = manifests._plain_documents(text, "gen.yaml")
    assert fast is not None
    assert doc_tuples(fast) == doc_tuples(composed(text, "gen.yaml", monkeypatch=monkeypatch))
