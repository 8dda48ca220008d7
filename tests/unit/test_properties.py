# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property-based tests (hypothesis) of manifest reading and variable substitution (issue 14).

Bounded: a fixed number of examples per property, no per-example deadline, and no example database (the runs
are reproducible from the seed hypothesis prints on failure). The whole file runs in well under 20 s.

Properties:
- any text either parses into objects or fails with RenderError: never another exception, never a hang;
- objects written as YAML or JSON (one or several documents) read back equal, in order, with their document
  numbers in their sources;
- any mapping either passes validate_object or fails with RenderError;
- substitution replaces exactly the known ``${NAME}`` references, leaves every other byte as it was, and never
  touches ``$${NAME}``; a manifest whose quoted values are variables reads back with those values.
"""

from __future__ import annotations

import json
import re

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.render.manifests import parse, validate_object
from ansible_collections.manent.kubernetes.plugins.module_utils.render.variables import substitute

BOUNDED = settings(max_examples=40, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
DNS = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 12, 10 ** 12), st.text(max_size=20),
                    st.floats(allow_nan=False, allow_infinity=False))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4)), max_leaves=20)
# Text made of the pieces that matter to the parsers and to substitution, plus any character.
PIECES = st.sampled_from(["---\n", "- ", ": ", "{", "}", "[", "]", "&a ", "*a", "!!", "\t", "\n", "  ", "#", '"', "'",
                          "${X}", "$${X}", "${", "}", "|", ">", "? ", "%YAML 1.1\n", "\\", "\ufeff", "\x00"])
MANIFEST_TEXT = st.lists(st.one_of(PIECES, st.text(max_size=6)), max_size=40).map("".join)


# YAML 1.1 reads NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR as line breaks; PyYAML's emitter writes them raw
# inside plain scalars with allow_unicode, so they could not round-trip through any YAML reader.
DATA_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x85\u2028\u2029"),
                    max_size=30)  # Cs: surrogates, which no UTF-8 file can hold


def configmaps():
    return st.builds(lambda name, data, labels: {"apiVersion": "v1", "kind": "ConfigMap",
                                                 "metadata": {"name": name, "labels": labels}, "data": data},
                     DNS, st.dictionaries(st.from_regex(r"[A-Za-z0-9_.-]{1,10}", fullmatch=True), DATA_TEXT, max_size=5),
                     st.dictionaries(DNS, DNS, max_size=3))


@BOUNDED
@given(MANIFEST_TEXT, st.sampled_from(["app.yaml", "app.json", "app"]))
def test_any_text_parses_or_fails_with_render_error(text, filename):
    try:
        docs = parse(text, filename)
    except RenderError as err:
        assert filename in str(err)
        return
    for doc in docs:
        assert doc.source.startswith(filename)
        json.dumps(doc.obj)  # what was read can be sent to the API server


@BOUNDED
@given(st.lists(configmaps(), min_size=1, max_size=5), st.booleans())
def test_objects_round_trip_in_order(objects, as_json):
    if as_json:
        text = "\n".join(json.dumps(obj) for obj in objects)
    else:
        text = yaml.safe_dump_all(objects, allow_unicode=True)
    docs = parse(text, "app.json" if as_json else "app.yaml")
    assert [doc.obj for doc in docs] == objects
    assert [doc.document for doc in docs] == list(range(1, len(objects) + 1))
    for doc in docs:
        validate_object(doc.obj, doc.source)


@BOUNDED
@given(st.dictionaries(st.sampled_from(["apiVersion", "kind", "metadata", "spec"]), VALUES),
       st.dictionaries(st.sampled_from(["name", "namespace", "labels", "annotations", "generateName"]), VALUES))
def test_any_mapping_validates_or_fails_with_render_error(obj, meta):
    if meta:
        obj = dict(obj, metadata=meta)
    try:
        validate_object(obj, "app.yaml#1")
    except RenderError as err:
        assert "app.yaml#1" in str(err)


@BOUNDED
@given(st.lists(st.one_of(st.text(alphabet=st.characters(blacklist_characters="$"), max_size=8),
                          NAMES.map(lambda n: ("ref", n)), NAMES.map(lambda n: ("escaped", n))), max_size=12),
       st.dictionaries(NAMES, st.text(max_size=10), max_size=5))
def test_substitution_replaces_exactly_the_known_references(pieces, values):
    text, expected = "", ""
    for piece in pieces:
        if isinstance(piece, tuple):
            kind, name = piece
            literal = ("${%s}" if kind == "ref" else "$${%s}") % name
            text += literal
            if kind == "ref":
                expected += values[name] if name in values else literal
            else:
                expected += literal
        else:
            text += piece
            expected += piece
    assert substitute(text, values) == expected
    assert substitute(text, {}) == text


@BOUNDED
@given(st.text(max_size=60), st.dictionaries(NAMES, st.text(max_size=10), max_size=5))
def test_text_without_references_is_untouched(text, values):
    if not re.search(r"(?<!\$)\$\{[A-Za-z_][A-Za-z0-9_]*\}", text):
        assert substitute(text, values) == text


@BOUNDED
@given(st.dictionaries(NAMES, st.from_regex(r"[A-Za-z0-9 ._:/-]{0,20}", fullmatch=True), min_size=1, max_size=5))
def test_substituted_manifest_reads_back_the_values(values):
    data = "".join('  k%d: "${%s}"\n' % (number, name) for number, name in enumerate(values))
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n" + data
    obj = parse(substitute(text, values), "app.yaml")[0].obj
    assert obj["data"] == {"k%d" % number: values[name] for number, name in enumerate(values)}
