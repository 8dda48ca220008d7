# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse manifest text into Kubernetes objects that remember where they came from.

- YAML: one or more ``---`` documents, read with a safe loader (the libyaml one when available).
  Anchors and aliases work, but the number of nodes that aliases add to one document is bounded
  (``MAX_ALIAS_NODES``): a "billion laughs" document fails at once instead of exhausting memory.
  Objects built with aliases are copied so that no two places share one Python object (adding a
  label to ``metadata.labels`` must not change a selector that was written as ``*labels``).
  Timestamps stay strings, as with kubectl. Duplicate keys: the last one wins, as with kubectl.
- JSON: one object, or a stream of objects. Text that starts with ``{`` or ``[`` is read as JSON;
  if that fails, a ``.json`` file reports the JSON error and any other file is read as YAML.
- A ``List`` (or any ``*List`` kind) with ``items`` is flattened into its items.
- Empty and null documents are skipped.

Every object comes back as a :class:`Doc` whose ``source`` reads like ``app.yaml#3 (line 14)``: the
file, the 1-based document number and the line where the document starts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core; the modules report its absence
    yaml = None
    HAS_YAML = False

from ansible_collections.manent.kubernetes.plugins.module_utils.errors import RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.objects import ref

MAX_ALIAS_NODES = 100000
MAX_DEPTH = 200

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader) if HAS_YAML else object


class ExpansionError(yaml.YAMLError if HAS_YAML else Exception):
    """A document's aliases expand to too many nodes."""


class _IterativeComposer:  # pylint: disable=no-member  # a mixin: the parser and resolver come with the loader
    """Builds the node graph of a document from parser events without recursion.

    libyaml's own composer recurses in C and crashes the process on very deep nesting; this one keeps an
    explicit stack, bounds the depth, rejects recursive aliases and counts the nodes that aliases add when
    expanded (``alias_nodes``), so a billion-laughs document stops as soon as the limit is passed.
    """

    max_alias_nodes = MAX_ALIAS_NODES
    max_depth = MAX_DEPTH
    alias_nodes = 0

    def check_node(self):
        if self.check_event(yaml.StreamStartEvent):
            self.get_event()
        return not self.check_event(yaml.StreamEndEvent)

    def get_node(self):
        if self.check_event(yaml.StreamEndEvent):
            return None
        self.get_event()  # DocumentStartEvent
        root = self._compose_root()
        self.get_event()  # DocumentEndEvent
        return root

    def _compose_root(self):
        anchors = {}
        sizes = {}  # id(node) -> expanded size, for closed anchored nodes
        stack = []  # [node, children, expanded size, anchor]
        self.alias_nodes = 0
        while True:
            event = self.get_event()
            if isinstance(event, yaml.AliasEvent):
                node, size = self._resolve_alias(event, anchors, sizes)
            elif isinstance(event, yaml.ScalarEvent):
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
                node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                size = 1
                if event.anchor is not None:
                    anchors[event.anchor] = node
                    sizes[id(node)] = 1
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if len(stack) >= self.max_depth:
                    raise yaml.composer.ComposerError(None, None, "nesting deeper than %d levels" % self.max_depth,
                                                      event.start_mark)
                node_class = yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
                tag = event.tag
                if tag is None or tag == "!":
                    tag = self.resolve(node_class, None, event.implicit)
                node = node_class(tag, [], event.start_mark, None, flow_style=event.flow_style)
                if event.anchor is not None:
                    anchors[event.anchor] = node
                stack.append([node, [], 1, event.anchor])
                continue
            else:  # SequenceEndEvent, MappingEndEvent
                node, children, size, anchor = stack.pop()
                node.end_mark = event.end_mark
                if isinstance(node, yaml.MappingNode):
                    node.value = list(zip(children[0::2], children[1::2]))
                else:
                    node.value = children
                if anchor is not None:
                    sizes[id(node)] = size
            if not stack:
                return node
            stack[-1][1].append(node)
            stack[-1][2] += size

    def _resolve_alias(self, event, anchors, sizes):
        node = anchors.get(event.anchor)
        if node is None:
            raise yaml.composer.ComposerError(None, None, "found undefined alias %r" % event.anchor,
                                              event.start_mark)
        size = sizes.get(id(node))
        if size is None:
            raise yaml.composer.ComposerError(None, None, "found recursive alias %r (an anchor that contains "
                                              "itself)" % event.anchor, event.start_mark)
        self.alias_nodes += size
        if self.alias_nodes > self.max_alias_nodes:
            raise ExpansionError("YAML alias expansion too large: aliases add more than %d nodes (at line %d, "
                                 "alias *%s)" % (self.max_alias_nodes, event.start_mark.line + 1, event.anchor))
        return node, size


class ManifestLoader(_IterativeComposer, _BaseLoader):  # pylint: disable=too-many-ancestors
    """Safe loader with a bounded composer; timestamps stay strings (like kubectl)."""


if HAS_YAML:
    ManifestLoader.add_constructor("tag:yaml.org,2002:timestamp", ManifestLoader.construct_yaml_str)


@dataclass
class Doc:
    """One object read from a manifest, with its origin."""

    obj: dict
    source: str
    filename: str = ""
    document: int = 0
    line: int = 0


def parse(text, filename, max_alias_nodes=MAX_ALIAS_NODES):
    """Parse YAML or JSON manifest text into a list of :class:`Doc` (lists flattened, empty documents skipped).

    Raises RenderError naming the file, document number, line and column on syntax errors, and when alias
    expansion is too large.
    """
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return _parse_json(text, filename)
        except _JsonFailed as failed:
            if filename.lower().endswith(".json"):
                raise failed.error from None
    return _parse_yaml(text, filename, max_alias_nodes)


def parse_files(files, max_alias_nodes=MAX_ALIAS_NODES):
    """Parse ``[(filename, text), ...]`` in the given order; returns every Doc of every file."""
    docs = []
    for filename, text in files:
        docs.extend(parse(text, filename, max_alias_nodes=max_alias_nodes))
    return docs


def source_of(filename, document, line):
    return "%s#%d (line %d)" % (filename, document, line)


# --- YAML ---------------------------------------------------------------------------------------

def _parse_yaml(text, filename, max_alias_nodes):
    docs = []
    loader = ManifestLoader(text)
    loader.max_alias_nodes = max_alias_nodes
    number = 0
    try:
        while True:
            try:
                if not loader.check_node():
                    break
                node = loader.get_node()
                number += 1
                obj = loader.construct_document(node)
            except ExpansionError as err:
                raise RenderError(str(err), subject="%s#%d" % (filename, number + 1),
                                  hint="write the objects out instead of repeating large aliases") from None
            except yaml.MarkedYAMLError as err:
                raise _yaml_error(err, filename, number + (0 if _in_construction(err) else 1)) from None
            except yaml.YAMLError as err:
                raise RenderError("YAML error: %s" % err, subject="%s#%d" % (filename, number + 1),
                                  hint="fix the manifest and publish a new artifact") from None
            except RecursionError:
                raise RenderError("YAML nesting too deep", subject="%s#%d" % (filename, number),
                                  hint="manifests do not nest this deep; check the file") from None
            if obj is None:
                continue
            if loader.alias_nodes:
                obj = _unshare(obj)
            line = node.start_mark.line + 1
            docs.extend(_flatten(obj, filename, number, line, _item_lines(node)))
    finally:
        loader.dispose()
    return docs


def _in_construction(err):
    return isinstance(err, yaml.constructor.ConstructorError)


def _yaml_error(err, filename, number):
    mark = err.problem_mark or err.context_mark
    problem = err.problem or err.context or "invalid YAML"
    where = ""
    if mark is not None:
        where = " at line %d, column %d" % (mark.line + 1, mark.column + 1)
    context = ""
    if err.context and err.problem and err.context_mark is not None:
        context = " (%s at line %d)" % (err.context, err.context_mark.line + 1)
    return RenderError("invalid YAML%s: %s%s" % (where, problem, context),
                       subject="%s#%d" % (filename, number), hint="fix the manifest and publish a new artifact")


def _item_lines(node):
    """1-based lines of the ``items`` entries of a List document (empty when not a list)."""
    if not isinstance(node, yaml.MappingNode):
        return []
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == "items" \
                and isinstance(value_node, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value_node.value]
    return []


def _unshare(obj):
    """Deep copy without a memo: values reached through two aliases become two independent copies."""
    if isinstance(obj, dict):
        return {key: _unshare(value) for key, value in obj.items()}
    if isinstance(obj, list):
        return [_unshare(value) for value in obj]
    return obj


# --- JSON ---------------------------------------------------------------------------------------

class _JsonFailed(Exception):
    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def _reject_constant(name):
    raise ValueError("%s is not valid JSON" % name)


def _parse_json(text, filename):
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    docs = []
    index = 0
    number = 0
    length = len(text)
    while True:
        while index < length and text[index] in " \t\r\n":
            index += 1
        if index >= length:
            break
        number += 1
        line = text.count("\n", 0, index) + 1
        try:
            obj, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError as err:
            raise _JsonFailed(RenderError(
                "JSON syntax error at line %d, column %d: %s" % (err.lineno, err.colno, err.msg),
                subject="%s#%d" % (filename, number), hint="fix the manifest and publish a new artifact")) from None
        except (ValueError, RecursionError) as err:
            raise _JsonFailed(RenderError("invalid JSON: %s" % err, subject="%s#%d" % (filename, number),
                                          hint="fix the manifest and publish a new artifact")) from None
        if obj is None:
            continue
        if not isinstance(obj, dict):
            raise _JsonFailed(RenderError(
                "expected a JSON object (a Kubernetes object or a List), got %s" % _type_name(obj),
                subject=source_of(filename, number, line), hint="wrap the objects in a List: "
                '{"apiVersion": "v1", "kind": "List", "items": [...]}'))
        docs.extend(_flatten(obj, filename, number, line, []))
    return docs


# --- lists and validation -----------------------------------------------------------------------

def _is_list(obj):
    kind = obj.get("kind") if isinstance(obj, dict) else None
    return isinstance(kind, str) and kind.endswith("List") and "items" in obj


def _flatten(obj, filename, number, line, item_lines):
    source = source_of(filename, number, line)
    if not _is_list(obj):
        return [Doc(obj=obj, source=source, filename=filename, document=number, line=line)]
    items = obj.get("items")
    if items is None:
        return []
    if not isinstance(items, list):
        raise RenderError("items must be a list, got %s" % _type_name(items), subject=source,
                          hint="a %s holds its objects in a list: items: [...]" % obj.get("kind"))
    docs = []
    for position, item in enumerate(items):
        item_line = item_lines[position] if position < len(item_lines) else line
        docs.append(Doc(obj=item, source="%s#%d items[%d] (line %d)" % (filename, number, position, item_line),
                        filename=filename, document=number, line=item_line))
    return docs


def validate_object(obj, source):
    """Check the shape every applied object needs; raise RenderError naming the field and the fix."""
    if not isinstance(obj, dict):
        raise RenderError("expected a Kubernetes object (a mapping with apiVersion, kind and metadata), got %s"
                          % _type_name(obj), subject=source, hint="fix the manifest")
    subject = _subject(obj, source)
    for field in ("apiVersion", "kind"):
        value = obj.get(field)
        if value is None or value == "":
            raise RenderError("%s is missing" % field, subject=subject,
                              hint="every Kubernetes object needs apiVersion and kind")
        if not isinstance(value, str):
            raise RenderError("%s must be a string, got %s" % (field, _type_name(value)), subject=subject,
                              hint="quote it in the manifest")
    meta = obj.get("metadata")
    if meta is None:
        raise RenderError("metadata is missing", subject=subject, hint="add metadata.name")
    if not isinstance(meta, dict):
        raise RenderError("metadata must be a mapping, got %s" % _type_name(meta), subject=subject,
                          hint="write metadata: {name: ...}")
    name = meta.get("name")
    if name is None or name == "":
        if meta.get("generateName"):
            raise RenderError("metadata.generateName is not supported with server-side apply", subject=subject,
                              hint="set a fixed metadata.name (objects are applied by name so that a deploy is "
                                   "repeatable)")
        raise RenderError("metadata.name is missing", subject=subject, hint="give the object a name")
    for field in ("name", "namespace"):
        value = meta.get(field)
        if value is not None and not isinstance(value, str):
            raise RenderError("metadata.%s must be a string, got %s" % (field, _describe(value)),
                              subject=subject, hint="quote it in the manifest")
    for field in ("labels", "annotations"):
        _check_string_map(meta.get(field), "metadata.%s" % field, subject)


def _check_string_map(value, path, subject):
    if value is None:
        return
    if not isinstance(value, dict):
        raise RenderError("%s must be a mapping of strings, got %s" % (path, _type_name(value)), subject=subject,
                          hint="write %s: {key: \"value\"}" % path)
    for key, item in value.items():
        if not isinstance(key, str):
            raise RenderError("%s has a key that is not a string: %r" % (path, key), subject=subject,
                              hint="quote the key in the manifest")
        if not isinstance(item, str):
            raise RenderError("%s.%s must be a string, got %s" % (path, key, _describe(item)),
                              subject=subject, hint='quote it in the manifest, e.g. %s: "%s"'
                              % (key, _yaml_text(item)))


def _subject(obj, source):
    kind = obj.get("kind")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if isinstance(kind, str) and kind and isinstance(name, str) and name:
        namespace = meta.get("namespace")
        shape = {"kind": kind, "metadata": {"name": name, "namespace": namespace if isinstance(namespace, str) else ""}}
        return "%s %s" % (source, ref(shape))
    return source


def _type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def _describe(value):
    if value is None or isinstance(value, (bool, int, float)):
        text = _yaml_text(value)
        return "%s %s" % (_type_name(value), text) if text else "null"
    return _type_name(value)


def _yaml_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)
