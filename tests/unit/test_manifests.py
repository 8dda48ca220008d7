# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsing manifest text into objects with their source, and object validation."""

from __future__ import annotations

import json
import os
import time

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.render.manifests import (
    Doc, load_value, parse, parse_files, validate_object)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "artifact")

MULTI = """\
# leading comment
apiVersion: v1
kind: ConfigMap
metadata:
  name: one
---
---
# only a comment
---
null
---
apiVersion: v1
kind: Secret
metadata: {name: two}
...
---
apiVersion: v1
kind: Service
metadata: {name: three}
"""


def _billion_laughs():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghij":
        lines.append("%s: &%s [%s]" % (name, name, ", ".join(["*" + previous] * 9)))
        previous = name
    return "\n".join(lines) + "\n"


def test_multi_document_yaml_sources_and_empty_documents():
    docs = parse(MULTI, "app.yaml")
    assert [(d.obj["metadata"]["name"], d.source) for d in docs] == [
        ("one", "app.yaml#1 (line 2)"),
        ("two", "app.yaml#5 (line 12)"),
        ("three", "app.yaml#6 (line 17)"),
    ]
    assert docs[1] == Doc(obj={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "two"}},
                          source="app.yaml#5 (line 12)", filename="app.yaml", document=5, line=12)


@pytest.mark.parametrize("text", ["", "\n\n", "---\n", "# nothing\n", "---\nnull\n---\n~\n"])
def test_empty_input_gives_no_objects(text):
    assert not parse(text, "empty.yaml")


def test_json_object():
    text = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, indent=2)
    docs = parse("\n\n" + text, "c.json")
    assert [(d.obj["kind"], d.source) for d in docs] == [("ConfigMap", "c.json#1 (line 3)")]


def test_json_list_is_flattened():
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b"}},
    ]})
    docs = parse(text, "list.json")
    assert [(d.obj["metadata"]["name"], d.source) for d in docs] == [
        ("a", "list.json#1 items[0] (line 1)"), ("b", "list.json#1 items[1] (line 1)")]


def test_json_stream_of_objects():
    text = '{"kind": "A", "metadata": {"name": "a"}}\n\n{"kind": "B", "metadata": {"name": "b"}}\n'
    assert [(d.obj["kind"], d.source) for d in parse(text, "s.json")] == [
        ("A", "s.json#1 (line 1)"), ("B", "s.json#2 (line 3)")]


def test_typed_list_in_yaml_is_flattened_with_item_lines():
    text = ("apiVersion: v1\nkind: ConfigMapList\nitems:\n"
            "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
            "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n")
    assert [(d.obj["metadata"]["name"], d.source, d.line) for d in parse(text, "l.yaml")] == [
        ("a", "l.yaml#1 items[0] (line 4)", 4), ("b", "l.yaml#1 items[1] (line 5)", 5)]


def test_list_with_null_items_gives_nothing():
    assert not parse("apiVersion: v1\nkind: List\nitems: null\n", "l.yaml")


def test_list_with_non_list_items_is_an_error():
    with pytest.raises(RenderError) as info:
        parse("apiVersion: v1\nkind: List\nitems: {a: 1}\n", "l.yaml")
    assert str(info.value) == ("l.yaml#1 (line 1): items must be a list, got mapping "
                               "(a List holds its objects in a list: items: [...])")


def test_kind_ending_in_list_without_items_is_an_object():
    docs = parse("apiVersion: x/v1\nkind: AllowList\nmetadata: {name: a}\n", "a.yaml")
    assert docs[0].obj["kind"] == "AllowList"


def test_json_syntax_error_location():
    with pytest.raises(RenderError) as info:
        parse('{"kind": "A"}\n{"kind": "B",\n "x": }\n', "bad.json")
    assert str(info.value) == ("bad.json#2: JSON syntax error at line 3, column 7: Expecting value "
                               "(fix the manifest and publish a new artifact)")


def test_json_top_level_array_is_rejected():
    with pytest.raises(RenderError) as info:
        parse("[1, 2]", "bad.json")
    assert "bad.json#1 (line 1): expected a JSON object (a Kubernetes object or a List), got list" in str(info.value)


def test_json_nan_is_rejected():
    with pytest.raises(RenderError, match="NaN is not valid JSON"):
        parse('{"replicas": NaN}', "bad.json")


def test_yaml_flow_mapping_in_yaml_file_falls_back_to_yaml():
    assert parse("{kind: A, metadata: {name: a}}\n", "a.yaml")[0].obj == {"kind": "A", "metadata": {"name": "a"}}


LIBYAML = getattr(yaml, "CSafeLoader", None) is not None


@pytest.mark.parametrize("text, where, problem", [
    ("a: 1\n---\nb: c: d\n", "app.yaml#2: invalid YAML at line 3, column 5: ",
     "mapping values are not allowed in this context"),
    ("a: 1\n---\nk: [1, 2\n", "app.yaml#2: invalid YAML at line 4, column 1: ",
     "did not find expected ',' or ']' (while parsing a flow sequence at line 3)"),
    ("a: 1\nb:\n\t- x\n", "app.yaml#1: invalid YAML at line 3, column 1: ",
     "found character that cannot start any token (while scanning for the next token at line 3)"),
    ("a: *nothing\n", "app.yaml#1: invalid YAML at line 1, column 4: ", "found undefined alias 'nothing'"),
    ("a: !custom 1\n", "app.yaml#1: invalid YAML at line 1, column 4: ",
     "could not determine a constructor for the tag '!custom'"),
    ("a: 1\n---\nb: &x\n  c: *x\n", "app.yaml#2: invalid YAML at line 4, column 6: ",
     "found recursive alias 'x' (an anchor that contains itself)"),
])
def test_yaml_errors_name_file_document_line_and_column(text, where, problem):
    with pytest.raises(RenderError) as info:
        parse(text, "app.yaml")
    message = str(info.value)
    assert message.startswith(where)
    assert message.endswith(" (fix the manifest and publish a new artifact)")
    if LIBYAML:  # the problem text is the parser's own; the pure-Python parser words some differently
        assert message == where + problem + " (fix the manifest and publish a new artifact)"


def test_anchors_are_scoped_to_their_document():
    with pytest.raises(RenderError, match=r"app.yaml#2: .*undefined alias 'l'"):
        parse("a: &l {x: 1}\n---\nb: *l\n", "app.yaml")


def test_billion_laughs_fails_fast():
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\n" + _billion_laughs()
    start = time.monotonic()
    with pytest.raises(RenderError) as info:
        parse(text, "bomb.yaml")
    assert time.monotonic() - start < 1.0
    assert info.value.subject == "bomb.yaml#2"
    assert info.value.message.startswith("YAML alias expansion too large: aliases add more than 100000 nodes")


def test_alias_limit_is_configurable():
    text = "a: &a [1, 2, 3]\nb: [*a, *a]\n"  # each alias adds 4 nodes
    assert parse(text, "a.yaml", max_alias_nodes=8)[0].obj == {"a": [1, 2, 3], "b": [[1, 2, 3], [1, 2, 3]]}
    with pytest.raises(RenderError, match="more than 7 nodes"):
        parse(text, "a.yaml", max_alias_nodes=7)


def test_aliased_values_are_independent_copies():
    text = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shop\n  labels: &labels {app: shop}\n"
            "spec:\n  selector:\n    matchLabels: *labels\n  template:\n    metadata:\n      labels: *labels\n")
    obj = parse(text, "d.yaml")[0].obj
    obj["metadata"]["labels"]["manent.io/application"] = "shop"
    assert obj["spec"]["selector"]["matchLabels"] == {"app": "shop"}
    assert obj["spec"]["template"]["metadata"]["labels"] == {"app": "shop"}
    assert obj["spec"]["selector"]["matchLabels"] is not obj["spec"]["template"]["metadata"]["labels"]


def test_merge_keys_work():
    text = "base: &base {a: 1, b: 2}\nobj:\n  <<: *base\n  b: 3\n"
    assert parse(text, "m.yaml")[0].obj["obj"] == {"a": 1, "b": 3}


def test_deep_nesting_is_an_error_not_a_crash():
    depth = 100000
    with pytest.raises(RenderError, match="nesting deeper than 200 levels"):
        parse("a: " + "[" * depth + "]" * depth, "deep.yaml")


def test_reasonable_nesting_is_accepted():
    depth = 150
    obj = parse("a: " + "[" * depth + "]" * depth, "deep.yaml")[0].obj
    assert isinstance(obj["a"], list)


def test_timestamps_stay_strings():
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  day: 2024-01-31\n  k: one\n"
    obj = parse(text, "c.yaml")[0].obj
    assert obj["data"] == {"day": "2024-01-31", "k": "one"}
    json.dumps(obj)  # serializable as sent to the API


def test_duplicate_keys_fail_naming_both_lines():
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  k: one\n  k: two\n"
    with pytest.raises(RenderError) as err:
        parse(text, "c.yaml")
    assert "c.yaml#1" in str(err.value) and "duplicate key 'k' (first at line 5)" in str(err.value)


def test_utf8_text_and_bom():
    docs = parse("\ufeffapiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {greeting: ciao è}\n",
                 "c.yaml")
    assert docs[0].obj["data"] == {"greeting": "ciao è"}


def test_parse_files_keeps_file_order():
    docs = parse_files([("b.yaml", "kind: B\n"), ("a.yaml", "kind: A\n---\nkind: A2\n")])
    assert [d.source for d in docs] == ["b.yaml#1 (line 1)", "a.yaml#1 (line 1)", "a.yaml#2 (line 3)"]


def _validate_cases():
    with open(os.path.join(FIXTURES, "validate_object.yaml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("case", _validate_cases(), ids=lambda case: case["id"])
def test_validate_object(case):
    if "error" not in case:
        validate_object(case["obj"], "app.yaml#1 (line 1)")
        return
    with pytest.raises(RenderError) as info:
        validate_object(case["obj"], "app.yaml#1 (line 1)")
    assert str(info.value) == case["error"]


def test_validate_object_on_parsed_document_names_its_source():
    doc = parse("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {version: 1.10}\n",
                "cm.yaml")[0]
    with pytest.raises(RenderError) as info:
        validate_object(doc.obj, doc.source)
    assert info.value.subject == "cm.yaml#1 (line 2) ConfigMap/c"
    assert info.value.message == "metadata.labels.version must be a string, got number 1.1"


class _TaggedStr(str):
    """What ansible-core 2.19 passes for templated strings: a str subclass."""


def test_a_value_given_as_a_str_subclass_is_read():
    # PyYAML's C parser refuses str subclasses ("a string or stream input is required")
    assert load_value(_TaggedStr("a: [1, 2]\nb: true\n"), "helm_value.x") == {"a": [1, 2], "b": True}
