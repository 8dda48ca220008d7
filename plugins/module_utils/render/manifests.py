# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse manifest text into Kubernetes objects that remember where they came from.

- YAML: one or more ``---`` documents, read with a safe loader (the libyaml one when available).
  Anchors and aliases work, but the number of nodes that aliases add to one document is bounded
  (``MAX_ALIAS_NODES``): a "billion laughs" document fails at once instead of exhausting memory.
  Objects built with aliases are copied so that no two places share one Python object (adding a
  label to ``metadata.labels`` must not change a selector that was written as ``*labels``).
  Timestamps stay strings, as with kubectl. A key written twice in one mapping is an error naming both
  lines (kubectl refuses it too; silently keeping one of them hides a mistake). A document larger than
  ``MAX_DOCUMENT_BYTES`` is refused (the API server would refuse the object anyway, maybe after others
  were written).
- JSON: one object, or a stream of objects; nesting is bounded as for YAML. Text that starts with ``{`` or ``[`` is read as JSON;
  if that fails, a ``.json`` file reports the JSON error and any other file is read as YAML.
- A ``List`` (or any ``*List`` kind) with ``items`` is flattened into its items.
- Empty and null documents are skipped.

Every object comes back as a :class:`Doc` whose ``source`` reads like ``app.yaml#3 (line 14)``: the
file, the 1-based document number and the line where the document starts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

try:
    import yaml
    HAS_YAML = True
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core; the modules report its absence
    yaml = None
    HAS_YAML = False

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref

MAX_ALIAS_NODES = 100000
MAX_DEPTH = 200
# etcd's default request limit: a larger object can never be stored.
MAX_DOCUMENT_BYTES = 1536 * 1024

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
    """Safe loader with a bounded composer; timestamps stay strings (like kubectl); duplicate keys fail."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            _check_duplicate_keys(node)
        return super().construct_mapping(node, deep=deep)


def _check_duplicate_keys(node):
    seen = {}
    for key_node, _value in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = (key_node.tag, key_node.value)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, "duplicate key %r (first at line %d)" % (key_node.value, seen[key] + 1),
                key_node.start_mark)
        seen[key] = key_node.start_mark.line


def load_value(text, subject, max_alias_nodes=MAX_ALIAS_NODES):
    """One YAML value (a parameter, not a manifest) read with the bounded loader: aliases, nesting and duplicate
    keys are limited as in manifests. Raises InputError naming ``subject``."""
    if not isinstance(text, (str, bytes)):
        raise InputError("must be YAML text, got %s" % type(text).__name__, subject=subject, hint="give the value as text")
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")  # a plain str: Ansible's tagged
        # strings (str subclasses) are refused by PyYAML's C parser ("a string or stream input is required")
    loader = ManifestLoader(text)
    loader.max_alias_nodes = max_alias_nodes
    try:
        if not loader.check_node():
            return None
        node = loader.get_node()
        if loader.check_node():
            raise InputError("holds more than one YAML document", subject=subject, hint="give one value")
        return loader.construct_document(node)
    except ExpansionError as err:
        raise InputError(str(err), subject=subject, hint="write the value out instead of repeating aliases") from None
    except yaml.YAMLError as err:
        raise InputError("is not valid YAML: %s" % _one_line(err), subject=subject,
                         hint="quote strings that contain ':' or start with special characters") from None
    except RecursionError:
        raise InputError("is nested too deep", subject=subject, hint="values do not nest this deep") from None
    finally:
        loader.dispose()


def _one_line(err):
    return " ".join(str(err).split())


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
    """The documents of ``text``: built straight from the parser's events when every document is plain
    (:func:`_plain_documents`), else, and for every error, by the bounded composer and the loader's constructors,
    which define the result."""
    docs = _plain_documents(text, filename, max_alias_nodes)
    if docs is not None:
        return docs
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
                _check_size(node.end_mark.index - node.start_mark.index, filename, number, node.start_mark.line + 1)
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


class _NotPlain(Exception):
    """The fast path leaves this stream to the composer."""


_STR_TAG = "tag:yaml.org,2002:str"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_SCALAR_TAGS = frozenset(("tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                          "tag:yaml.org,2002:float"))
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"


def _plain_documents(text, filename, max_alias_nodes=MAX_ALIAS_NODES):
    """The Docs of ``text`` built directly from the parser's events, without the node graph (about twice as fast
    on a large release), or None when one document is not plain: explicit tags, merge keys, a key written twice
    or not a scalar, nesting deeper than ``MAX_DEPTH``, aliases that add more than ``max_alias_nodes`` nodes or
    name an anchor not closed yet, a document above the size limit, a top-level ``items`` list, a root that is
    neither a mapping nor empty, or any YAML error. Those streams go to the composer (:func:`_parse_yaml`),
    which reads them or reports what is wrong. Scalars resolve and construct exactly as the loader's (a timestamp
    stays a string); an alias becomes a copy of its anchor's value, as the composer's documents are unshared."""
    loader = ManifestLoader(text)
    docs = []
    number = 0
    tags = {}  # (text, plain) -> the loader's tag: keys and values repeat from object to object
    try:
        loader.get_event()  # StreamStartEvent
        while not loader.check_event(yaml.StreamEndEvent):
            loader.get_event()  # DocumentStartEvent
            number += 1
            obj, start, end = _plain_root(loader, max_alias_nodes, tags)
            loader.get_event()  # DocumentEndEvent
            if obj is None:
                continue
            if end.index - start.index > MAX_DOCUMENT_BYTES or "items" in obj:
                return None
            docs.extend(_flatten(obj, filename, number, start.line + 1, []))
        return docs
    except (_NotPlain, yaml.YAMLError, RecursionError, ValueError, TypeError):
        return None
    finally:
        loader.dispose()


def _plain_root(loader, max_alias_nodes, tags):
    """(object, start mark, end mark) of one document's root, from its events; None for an empty document.
    ``tags``: the cache of :func:`_plain_scalar`."""
    event = loader.get_event()
    if _empty_document(loader, event):
        return None, event.start_mark, event.end_mark
    start = event.start_mark
    root = {}
    # per open mapping or list: [value, size in nodes, anchor, key waiting for its value (a 1-tuple) or None]
    stack = [[root, 1, _collection_start(loader, event, yaml.MappingNode, _MAP_TAG), None]]
    anchors = {}  # anchor -> (closed value, its size in nodes)
    expanded = 0
    while True:
        event = loader.get_event()
        cls = event.__class__
        opened = None
        if cls is yaml.ScalarEvent:
            if event.tag not in (None, "!"):
                raise _NotPlain()
            value, size = _plain_scalar(loader, event, tags), 1
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1)
        elif cls is yaml.MappingStartEvent or cls is yaml.SequenceStartEvent:
            if len(stack) >= MAX_DEPTH:
                raise _NotPlain()
            mapping = cls is yaml.MappingStartEvent
            anchor = _collection_start(loader, event, yaml.MappingNode if mapping else yaml.SequenceNode,
                                       _MAP_TAG if mapping else _SEQ_TAG)
            value, size = ({} if mapping else []), 0  # its size is added when it closes
            opened = [value, 1, anchor, None]
            if anchor is not None:
                anchors.pop(anchor, None)  # an alias to it before it closes is recursive: not plain
        elif cls is yaml.MappingEndEvent or cls is yaml.SequenceEndEvent:
            value, size, anchor, _key = stack.pop()
            if anchor is not None:
                anchors[anchor] = (value, size)
            if not stack:
                return root, start, event.end_mark
            stack[-1][1] += size
            continue
        else:  # an alias: a copy of its anchor's closed value
            value, size = _aliased(anchors, event, expanded, max_alias_nodes)
            expanded += size
        parent = stack[-1]
        container = parent[0]
        if container.__class__ is list:
            container.append(value)
        elif parent[3] is None:  # a key
            if cls is not yaml.ScalarEvent or value.__class__ not in (str, int, bool) or value in container:
                raise _NotPlain()  # not a scalar, or written twice
            parent[3] = (value,)
        else:
            container[parent[3][0]] = value
            parent[3] = None
        if opened is not None:
            stack.append(opened)
        else:
            parent[1] += size


def _empty_document(loader, event):
    """True when a document's first event is a plain null (an empty document); _NotPlain unless it starts a plain
    mapping."""
    if isinstance(event, yaml.ScalarEvent):
        if event.anchor is not None or event.tag not in (None, "!") or \
                loader.resolve(yaml.ScalarNode, event.value, event.implicit) != "tag:yaml.org,2002:null":
            raise _NotPlain()
        return True
    if not isinstance(event, yaml.MappingStartEvent):
        raise _NotPlain()
    return False


def _aliased(anchors, event, expanded, max_alias_nodes):
    """(a copy of the closed value an alias names, its size in nodes); _NotPlain for an unknown or recursive
    anchor, or when the aliases of the document would expand to more than ``max_alias_nodes`` nodes."""
    found = anchors.get(event.anchor)
    if found is None or expanded + found[1] > max_alias_nodes:
        raise _NotPlain()
    return _unshare(found[0]), found[1]


def _collection_start(loader, event, node_class, default_tag):
    """The anchor of a mapping or list that starts with ``event``; _NotPlain when it has an explicit tag."""
    if event.tag not in (None, "!") or loader.resolve(node_class, None, event.implicit) != default_tag:
        raise _NotPlain()
    return event.anchor


def _plain_scalar(loader, event, tags):
    """The value of a scalar without explicit tag, as the loader would construct it (``tags``: a cache of the
    loader's resolution)."""
    key = (event.value, event.implicit[0])
    tag = tags.get(key)
    if tag is None:
        tag = tags[key] = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag == _STR_TAG or tag == _TIMESTAMP_TAG:
        return event.value
    if tag not in _SCALAR_TAGS:
        raise _NotPlain()  # a merge key or the value key '='
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
    return loader.yaml_constructors[tag](loader, node)


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


def _check_size(size, filename, number, line):
    if size > MAX_DOCUMENT_BYTES:
        raise RenderError("the document takes %d bytes, above the limit of %d bytes per object"
                          % (size, MAX_DOCUMENT_BYTES), subject=source_of(filename, number, line),
                          hint="the API server cannot store an object this large; split the data (e.g. several "
                               "ConfigMaps) or mount it from a volume")


def _deeper_than(obj, limit):
    """Whether ``obj`` nests more than ``limit`` mappings/lists (iterative: no recursion on hostile input)."""
    stack = [(obj, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


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
        start = index
        try:
            obj, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError as err:
            raise _JsonFailed(RenderError(
                "JSON syntax error at line %d, column %d: %s" % (err.lineno, err.colno, err.msg),
                subject="%s#%d" % (filename, number), hint="fix the manifest and publish a new artifact")) from None
        except (ValueError, RecursionError) as err:
            raise _JsonFailed(RenderError("invalid JSON: %s" % err, subject="%s#%d" % (filename, number),
                                          hint="fix the manifest and publish a new artifact")) from None
        _check_size(index - start, filename, number, line)
        if _deeper_than(obj, MAX_DEPTH):
            raise _JsonFailed(RenderError("JSON nesting deeper than %d levels" % MAX_DEPTH,
                                          subject=source_of(filename, number, line),
                                          hint="manifests do not nest this deep; check the file"))
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
    _check_names(obj, meta, subject)


# --- names the API server would refuse (checked before the first write) ------------------------

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_VERSION = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
# Kinds whose names are DNS-1123 labels (no dots, at most 63 characters).
LABEL_NAMED_KINDS = ("Namespace", "Service")
# Kinds whose names only need to be valid path segments (e.g. ClusterRole system:aggregate-to-edit).
PATH_NAMED_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def _check_names(obj, meta, subject):
    kind, api_version = obj["kind"], obj["apiVersion"]
    if len(kind) > 63 or not _KIND.fullmatch(kind):
        raise RenderError("kind %r is not a valid kind" % kind, subject=subject,
                          hint="kinds are CamelCase words of letters and digits, e.g. Deployment")
    group, _sep, version = api_version.rpartition("/")
    if (group and (len(group) > 253 or not _DNS_SUBDOMAIN.fullmatch(group))) or not _VERSION.fullmatch(version):
        raise RenderError("apiVersion %r is not valid" % api_version, subject=subject,
                          hint="write <group>/<version> (e.g. apps/v1) or v1 for the core group")
    name = meta["name"]
    if kind in PATH_NAMED_KINDS and api_version.startswith("rbac.authorization.k8s.io/"):
        problem = _path_segment_problem(name)
        rule = "a name without '/' or '%'"
    elif kind in LABEL_NAMED_KINDS and api_version == "v1":
        problem = _pattern_problem(name, _DNS_LABEL, 63)
        rule = "at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit"
    else:
        problem = _pattern_problem(name, _DNS_SUBDOMAIN, 253)
        rule = "at most 253 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
    if problem:
        raise RenderError("metadata.name %r is not a valid %s name: %s" % (name, kind, problem), subject=subject,
                          hint="use %s" % rule)
    namespace = meta.get("namespace")
    if namespace:
        problem = _pattern_problem(namespace, _DNS_LABEL, 63)
        if problem:
            raise RenderError("metadata.namespace %r is not a valid namespace: %s" % (namespace, problem),
                              subject=subject, hint="use at most 63 lower-case letters, digits and '-', starting "
                                                    "and ending with a letter or digit")
    for field in ("labels", "annotations"):
        for key in meta.get(field) or {}:
            problem = qualified_name_problem(key)
            if problem:
                raise RenderError("metadata.%s key %r is not valid: %s" % (field, key, problem), subject=subject,
                                  hint="keys are [prefix/]name: the prefix a DNS subdomain, the name at most 63 "
                                       "letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
    for key, value in (meta.get("labels") or {}).items():
        if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            raise RenderError("metadata.labels.%s value %r is not a valid label value" % (key, value),
                              subject=subject, hint="label values are at most 63 letters, digits, '-', '_' or '.', "
                                                    "starting and ending with a letter or digit (or empty)")


def _pattern_problem(text, pattern, limit):
    if not text:
        return "it is empty"
    if len(text) > limit:
        return "longer than %d characters" % limit
    if not pattern.fullmatch(text):
        return "it contains characters or a form that are not allowed"
    return ""


def _path_segment_problem(name):
    if name in (".", ".."):
        return "it may not be %r" % name
    for char in ("/", "%"):
        if char in name:
            return "it may not contain %r" % char
    return ""


def qualified_name_problem(key):
    """Why ``key`` is not a valid label/annotation key ('' when it is)."""
    prefix, _sep, name = key.rpartition("/")
    if _sep and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return "the prefix %r is not a DNS subdomain" % prefix
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return "the name part %r is not valid" % name
    return ""


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
