# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile and broken input, handled without a cluster (issue 14): every case must stop with a typed error that
names the file, document, object or field at fault, within bounded time and memory.

One table per input channel (archives, manifest text, objects, parameters, digests, bundles, history records);
each row is (case, how to build the input, what the error must name). Big inputs (bombs, 10 001 members) are
generated at test time, never committed. Each case that held is recorded for RELIABILITY.md
(tests/reliability.py, category ``input``). The same refusals through the real clusters, with zero writes, are in
tests/integration/test_hostile_deploy.py.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import stat
import tarfile
import zipfile

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.render import artifact, bundle
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_check import check_record
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    OBJECTS_KEY, decode_record, encode_record)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError, InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import (
    HelmOptions, set_values_tree, verify_binary, _values_text)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.render.manifests import parse, validate_object
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import (
    outside_namespace_warning, stamp, validate_namespace)
from ansible_collections.manent.kubernetes.plugins.module_utils.render.variables import builtin_values
from tests.reliability import record

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n"
MiB = 1024 * 1024


def _checked(case, run, *expected, error=InputError):
    """Run ``run``; it must raise ``error`` whose message contains every ``expected`` text. Records the case."""
    try:
        with pytest.raises(error) as raised:
            run()
        message = str(raised.value)
        for text in expected:
            assert text in message, "%s: %r not in %r" % (case, text, message)
    except BaseException:
        record("input", case, False, source=__name__)
        raise
    record("input", case, True, detail=message[:300], source=__name__)
    return message


# --------------------------------------------------------------------------- archives

def _add(tar, name, data=b"", kind=tarfile.REGTYPE, linkname="", size=None, pax=None):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = 0o644
    if pax:
        info.pax_headers = pax
    if kind == tarfile.REGTYPE:
        info.size = len(data) if size is None else size
        tar.addfile(info, io.BytesIO(data))
    else:
        tar.addfile(info)


def _targz(tmp_path, fill, name="artifact.tar.gz"):
    path = str(tmp_path / name)
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, compresslevel=1) as tar:
        fill(tar)
    return path


def _gzip_bomb(tmp_path):
    """A .tar.gz of ~300 KiB whose one member unpacks to 300 MiB of zeros (written in chunks: no big buffer)."""
    path = str(tmp_path / "bomb.tar.gz")
    size = 300 * MiB
    info = tarfile.TarInfo("bomb.yaml")
    info.size = size
    header = info.tobuf(format=tarfile.USTAR_FORMAT)
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(header)
        chunk = bytes(MiB)
        for _chunk in range(size // MiB):
            out.write(chunk)
        out.write(bytes(1024))
    return path


def _pax_bomb(tmp_path):
    """The bytes hide in a pax header, which member sizes do not count: only the bounded stream stops it."""
    return _targz(tmp_path, lambda tar: _add(tar, "a.yaml", CM.encode(), pax={"comment": "x" * (3 * MiB)}))


def _many_members(tmp_path):
    def fill(tar):
        for number in range(artifact.MAX_MEMBERS + 1):
            _add(tar, "m/%05d.txt" % number)
    return _targz(tmp_path, fill)


def _plain(tmp_path, data, name="artifact.tar"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _ustar(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        _add(tar, "a.yaml", CM.encode())
    return _plain(tmp_path, buf.getvalue())


def _zip(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("a.yaml", CM)
    return _plain(tmp_path, buf.getvalue(), "artifact.zip")


def _truncated(tmp_path):
    whole = open(_targz(tmp_path, lambda tar: _add(tar, "a.yaml", (CM * 2000).encode()), "whole.tar.gz"), "rb").read()
    return _plain(tmp_path, whole[:len(whole) // 2], "cut.tar.gz")


ARCHIVES = [
    ("archive member with ../ path", lambda t: _targz(t, lambda tar: _add(tar, "../evil.yaml", CM.encode())),
     ("artifact.tar.gz", "../evil.yaml", "'..'")),
    ("archive member with nested ../ path", lambda t: _targz(t, lambda tar: _add(tar, "a/b/../../../x.yaml")),
     ("a/b/../../../x.yaml", "'..'")),
    ("archive member with absolute path", lambda t: _targz(t, lambda tar: _add(tar, "/etc/evil.yaml")),
     ("/etc/evil.yaml", "absolute path")),
    ("archive member with a drive-letter path", lambda t: _targz(t, lambda tar: _add(tar, "C:/evil.yaml")),
     ("C:/evil.yaml", "absolute path")),
    ("archive symlink to /etc/passwd", lambda t: _targz(t, lambda tar: _add(
        tar, "app/pw.yaml", kind=tarfile.SYMTYPE, linkname="/etc/passwd")), ("app/pw.yaml", "symbolic link")),
    ("archive hard link", lambda t: _targz(t, lambda tar: (_add(tar, "a.yaml", CM.encode()), _add(
        tar, "b.yaml", kind=tarfile.LNKTYPE, linkname="a.yaml"))), ("b.yaml", "hard link")),
    ("archive character device", lambda t: _targz(t, lambda tar: _add(tar, "dev/null", kind=tarfile.CHRTYPE)),
     ("dev/null", "device")),
    ("archive block device", lambda t: _targz(t, lambda tar: _add(tar, "dev/sda", kind=tarfile.BLKTYPE)),
     ("dev/sda", "device")),
    ("archive fifo", lambda t: _targz(t, lambda tar: _add(tar, "pipe", kind=tarfile.FIFOTYPE)), ("pipe", "fifo")),
    ("archive member listed twice", lambda t: _targz(t, lambda tar: (_add(tar, "a.yaml", CM.encode()), _add(
        tar, "./a.yaml", CM.encode()))), ("a.yaml appears twice",)),
    ("gzip bomb (300 MiB member in ~300 KiB)", _gzip_bomb, ("bomb.tar.gz", "unpacks to more than", "bomb.yaml")),
    ("archive with 10001 members", _many_members, ("artifact.tar.gz", "more than 10000 members")),
    ("uncompressed tar", _ustar, ("artifact.tar", "uncompressed tar")),
    ("zip archive", _zip, ("artifact.zip", "zip archive")),
    ("truncated .tar.gz", _truncated, ("cut.tar.gz", "not a valid .tar.gz")),
    ("gzip of something that is not a tar", lambda t: _plain(t, gzip.compress(b"hello " * 200), "x.tar.gz"),
     ("x.tar.gz", "not a valid .tar.gz")),
    ("archive member that is not UTF-8", lambda t: _targz(t, lambda tar: _add(tar, "a.yaml", b"name: \xff\xfe\n")),
     ("a.yaml", "not UTF-8")),
    ("plain manifest that is not UTF-8", lambda t: _plain(t, b"apiVersion: v1\nkind: \xc3\x28\n", "app.yaml"),
     ("app.yaml", "not UTF-8")),
    ("two charts in one package", lambda t: _targz(t, lambda tar: (_add(tar, "one/Chart.yaml", b"name: one\n"), _add(
        tar, "two/Chart.yaml", b"name: two\n"))), ("several charts", "one, two")),
    ("chart template that links outside the chart", lambda t: _targz(t, lambda tar: (
        _add(tar, "c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 0.1.0\n"),
        _add(tar, "c/templates/pw.yaml", kind=tarfile.SYMTYPE, linkname="../../../../etc/passwd"))),
     ("c/templates/pw.yaml", "symbolic link")),
]


@pytest.mark.parametrize("case, build, expected", ARCHIVES, ids=[row[0] for row in ARCHIVES])
def test_hostile_archives(tmp_path, case, build, expected):
    path = build(tmp_path)
    _checked(case, lambda: artifact.read_manifests(path), *expected)


def test_bomb_hidden_in_a_pax_header(tmp_path):
    """Bytes in a pax header are not counted by member sizes: the bounded stream stops them (small limits here
    so that the test does not build hundreds of MiB; the default limits use the same code)."""
    path = _pax_bomb(tmp_path)
    _checked("bomb hidden in a pax header", lambda: artifact.read_archive_manifests(
        path, max_total_size=MiB, max_members=10), "artifact.tar.gz", "unpacks to more than")
    assert artifact.read_archive_manifests(path)[0][0] == "a.yaml"  # within the default limits it is fine


# --------------------------------------------------------------------------- manifest text

def _laughs(levels=9):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        lines.append("a%d: &a%d [%s]" % (level, level, ", ".join(["*a%d" % (level - 1)] * 10)))
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\n" + "\n".join(lines) + "\n"


TEXTS = [
    ("YAML alias bomb (billion laughs)", "bomb.yaml", _laughs(), ("bomb.yaml#1", "alias expansion too large")),
    ("YAML undefined alias", "app.yaml", CM + "extra: *nothing\n", ("app.yaml#1", "undefined alias")),
    ("YAML nested 100000 levels", "deep.yaml", "a: " + "[" * 100000 + "]" * 100000, ("deep.yaml#1", "nesting")),
    ("JSON nested 100000 levels", "deep.json", "[" * 100000 + "]" * 100000, ("deep.json#1",)),
    ("JSON nested 300 levels", "deep.json", '{"a": ' + "[" * 300 + "]" * 300 + "}", ("deep.json#1", "nesting")),
    ("document over the size limit", "big.yaml", CM + "  blob: " + "x" * (2 * MiB) + "\n",
     ("big.yaml#1", "above the limit")),
    ("second document over the size limit", "big.yaml", CM + "---\n" + CM + "  blob: " + "x" * (2 * MiB) + "\n",
     ("big.yaml#2", "above the limit")),
    ("duplicate key", "dup.yaml", CM + "  k: again\n", ("dup.yaml#1", "duplicate key 'k'", "line 7")),
    ("duplicate key in metadata", "dup.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
     ("dup.yaml#1", "duplicate key 'name'")),
    ("duplicate key in the third document", "dup.yaml", CM + "---\n" + CM + "---\n" + CM + "kind: Secret\n",
     ("dup.yaml#3", "duplicate key 'kind'")),
    ("YAML syntax error", "bad.yaml", "apiVersion: v1\nkind: [ConfigMap\n", ("bad.yaml#1", "line")),
    ("tab indentation", "tab.yaml", "metadata:\n\tname: x\n", ("tab.yaml#1", "invalid YAML")),
    ("JSON syntax error", "app.json", '{"apiVersion": "v1", "kind": }', ("app.json#1", "JSON syntax error")),
    ("JSON NaN", "app.json", '{"apiVersion": "v1", "kind": "ConfigMap", "x": NaN}', ("app.json#1", "NaN")),
    ("JSON top-level array of numbers", "app.json", "[1, 2]", ("app.json#1", "expected a JSON object")),
    ("List whose items is not a list", "list.yaml", "apiVersion: v1\nkind: List\nitems: {a: b}\n",
     ("list.yaml#1", "items must be a list")),
    ("YAML with a Python object tag", "tag.yaml", "a: !!python/object/apply:os.system ['true']\n",
     ("tag.yaml#1", "python/object")),
]


@pytest.mark.parametrize("case, filename, text, expected", TEXTS, ids=[row[0] for row in TEXTS])
def test_hostile_manifest_text(case, filename, text, expected):
    _checked(case, lambda: parse(text, filename), *expected)


# --------------------------------------------------------------------------- objects

def _cm(name="cfg", **meta):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict({"name": name}, **meta)}


OBJECTS = [
    ("object name with upper case", _cm("Web"), ("metadata.name 'Web'", "not a valid ConfigMap name")),
    ("object name with a slash", _cm("a/b"), ("metadata.name 'a/b'",)),
    ("object name of 254 characters", _cm("a" * 254), ("longer than 253",)),
    ("object name with spaces", _cm("my app"), ("metadata.name 'my app'",)),
    ("Service name with a dot", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web.v2"}},
     ("not a valid Service name",)),
    ("Namespace name of 64 characters", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n" * 64}},
     ("longer than 63",)),
    ("ClusterRole name with a slash", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                       "metadata": {"name": "a/b"}}, ("may not contain '/'",)),
    ("name given as a number", _cm(12), ("metadata.name must be a string",)),
    ("only generateName", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-"}},
     ("generateName is not supported",)),
    ("namespace with upper case and underscore", _cm(namespace="Bad_NS"), ("metadata.namespace 'Bad_NS'",)),
    ("namespace of 64 characters", _cm(namespace="n" * 64), ("metadata.namespace",)),
    ("label key with a space", _cm(labels={"bad key": "x"}), ("metadata.labels key 'bad key'",)),
    ("label key with an invalid prefix", _cm(labels={"Bad_Prefix/k": "x"}), ("prefix 'Bad_Prefix'",)),
    ("label value of 64 characters", _cm(labels={"k": "v" * 64}), ("metadata.labels.k value",)),
    ("label value with a space", _cm(labels={"k": "a b"}), ("metadata.labels.k value 'a b'",)),
    ("label value given as a number", _cm(labels={"replicas": 3}), ("metadata.labels.replicas must be a string",)),
    ("labels given as a list", _cm(labels=["a"]), ("metadata.labels must be a mapping",)),
    ("annotation key with a space", _cm(annotations={"my note": "x"}), ("metadata.annotations key 'my note'",)),
    ("kind with a dash", {"apiVersion": "v1", "kind": "Config-Map", "metadata": {"name": "a"}},
     ("kind 'Config-Map' is not a valid kind",)),
    ("kind missing", {"apiVersion": "v1", "metadata": {"name": "a"}}, ("kind is missing",)),
    ("apiVersion with two slashes", {"apiVersion": "apps/v1/x", "kind": "Deployment", "metadata": {"name": "a"}},
     ("apiVersion 'apps/v1/x' is not valid",)),
    ("apiVersion as a number", {"apiVersion": 1, "kind": "ConfigMap", "metadata": {"name": "a"}},
     ("apiVersion must be a string",)),
    ("metadata as a list", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": ["a"]},
     ("metadata must be a mapping",)),
    ("document that is a list", ["a", "b"], ("expected a Kubernetes object",)),
]


@pytest.mark.parametrize("case, obj, expected", OBJECTS, ids=[row[0] for row in OBJECTS])
def test_hostile_objects(case, obj, expected):
    _checked(case, lambda: validate_object(obj, "app.yaml#1 (line 1)"), "app.yaml#1", *expected)


def test_valid_names_pass():
    """The rules are not stricter than the API server's: names it accepts pass."""
    for obj in (_cm("a.b-c1"), _cm("x" * 253, namespace="n" * 63, labels={"example.com/k_1": "A.b-1", "k": ""}),
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "system:aggregate-to-edit"}},
                {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "r"}}):
        validate_object(obj, "ok.yaml#1")


# --------------------------------------------------------------------------- parameters

def _laughs_value():
    return "\n".join(line for line in _laughs().splitlines()[3:])


PARAMETERS = [
    ("helm_value that is not valid YAML", lambda: set_values_tree({"image.tag": "{unclosed"}),
     ("helm_value.image.tag", "not valid YAML")),
    ("helm_value alias bomb", lambda: set_values_tree({"x": _laughs_value()}), ("helm_value.x", "alias")),
    ("helm_value with duplicate keys", lambda: set_values_tree({"x": "{a: 1, a: 2}"}),
     ("helm_value.x", "duplicate key 'a'")),
    ("helm_value path with an empty part", lambda: set_values_tree({"image..tag": "1"}),
     ("helm_value.image..tag", "invalid value path")),
    ("helm_value holding two documents", lambda: set_values_tree({"x": "a: 1\n---\nb: 2\n"}),
     ("helm_value.x", "more than one YAML document")),
    ("helm_values alias bomb", lambda: _values_text(_laughs_value()), ("helm_values", "alias")),
    ("helm_values nested 100000 levels", lambda: _values_text("a: " + "[" * 100000 + "]" * 100000),
     ("helm_values", "nest")),
    ("helm_values that is a list", lambda: _values_text("- a\n"), ("helm_values", "must be a YAML mapping")),
    ("variable name starting with a digit", lambda: builtin_values("a", "e", "1", "ns", "d", {"1X": "v"}),
     ("var.1X", "not a valid variable name")),
    ("variable overriding a MANENT_ name", lambda: builtin_values("a", "e", "1", "ns", "d", {"MANENT_VERSION": "9"}),
     ("var.MANENT_VERSION", "reserved")),
    ("variable given a mapping", lambda: builtin_values("a", "e", "1", "ns", "d", {"X": {"a": 1}}),
     ("var.X", "single value")),
    ("release namespace with a dot", lambda: validate_namespace("shop.prod"), ("namespace", "'shop.prod'")),
]


@pytest.mark.parametrize("case, run, expected", PARAMETERS, ids=[row[0] for row in PARAMETERS])
def test_hostile_parameters(case, run, expected):
    _checked(case, run, *expected)


# --------------------------------------------------------------------------- digests

def _fake_helm(tmp_path):
    path = tmp_path / "helm"
    path.write_text("#!/bin/sh\necho should-not-run > %s/ran\n" % tmp_path)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _verify(path, expected):
    with artifact.verified_copy(path, expected):
        pass


DIGESTS = [
    ("artifact sha256 mismatch", lambda t: _verify(_plain(t, CM.encode(), "app.yaml"), "ab" * 32),
     ("app.yaml", "sha256 mismatch", "ab" * 32)),
    ("artifact sha256 that is not hex", lambda t: _verify(_plain(t, CM.encode(), "app.yaml"), "xyz"),
     ("sha256", "not a sha256 digest")),
    ("artifact without sha256", lambda t: _verify(_plain(t, CM.encode(), "app.yaml"), ""),
     ("app.yaml", "no sha256 given")),
    ("helm binary sha256 mismatch", lambda t: verify_binary(HelmOptions(command=_fake_helm(t), sha256="cd" * 32)),
     ("helm_sha256", "expected " + "cd" * 32)),
    ("helm_sha256 that is not hex", lambda t: verify_binary(HelmOptions(command=_fake_helm(t), sha256="nope")),
     ("helm_sha256", "64 hex digits")),
]


@pytest.mark.parametrize("case, run, expected", DIGESTS, ids=[row[0] for row in DIGESTS])
def test_hostile_digests(tmp_path, case, run, expected):
    _checked(case, lambda: run(tmp_path), *expected)
    assert not (tmp_path / "ran").exists(), "a binary whose checksum differs must never run"


# --------------------------------------------------------------------------- bundles (edited after rendering)

KEY = ReleaseKey("shop", "shop-api", "test")
RELEASE = Release(KEY, "1.0.0", "d1")


def _bundle_file(tmp_path, change):
    obj = stamp({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "shop"}}, RELEASE)
    data = bundle.Bundle(release=RELEASE, namespace="shop", objects=[obj], sources=["app.yaml#1 (line 1)"]).to_dict()
    change(data)
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(data) if isinstance(data, dict) else data)
    return str(path)


BUNDLES = [
    ("bundle object renamed to an invalid name",
     lambda d: d["objects"][0]["metadata"].update(name="Bad_Name"), ("app.yaml#1", "metadata.name 'Bad_Name'")),
    ("bundle object without kind", lambda d: d["objects"][0].pop("kind"), ("app.yaml#1", "kind is missing")),
    ("bundle namespace invalid", lambda d: d.update(namespace="../etc"), ("bundle", "'../etc'")),
    ("bundle objects not a list", lambda d: d.update(objects={"a": 1}), ("bundle", "objects must be a list")),
    ("bundle release incomplete", lambda d: d["release"].pop("version"), ("bundle", "release must name")),
]


@pytest.mark.parametrize("case, change, expected", BUNDLES, ids=[row[0] for row in BUNDLES])
def test_hostile_bundles(tmp_path, case, change, expected):
    path = _bundle_file(tmp_path, change)
    _checked(case, lambda: bundle.read(path), *expected)


def test_untouched_bundle_reads(tmp_path):
    assert bundle.read(_bundle_file(tmp_path, lambda d: None)).objects[0]["metadata"]["name"] == "cfg"


# --------------------------------------------------------------------------- history records (tampered)

def _record(objects=None):
    objects = objects if objects is not None else [
        stamp({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "shop"}}, RELEASE)]
    return encode_record(RELEASE, "shop", objects, {"status": "deployed"})


def _packed(payload):
    raw = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
    return base64.b64encode(gzip.compress(raw)).decode()


def _tampered(change):
    cm = _record()
    change(cm)
    return cm


def _decode_and_check(cm):
    meta, objects = decode_record(cm)
    check_record(cm, KEY, objects)
    return meta


OTHER = ReleaseKey("bank", "vault", "prod")
FOREIGN = stamp({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                 "metadata": {"name": "grab", "namespace": "kube-system"}}, RELEASE)
STOLEN = stamp({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "shop"}},
               Release(OTHER, "1", "d"))
RECORDS = [
    ("history record with bad gzip", lambda cm: cm["binaryData"].update(
        {OBJECTS_KEY: base64.b64encode(b"\x1f\x8bnot gzip").decode()}), ("objects are corrupt",)),
    ("history record with bad base64", lambda cm: cm["binaryData"].update({OBJECTS_KEY: "%%%"}),
     ("objects are corrupt",)),
    ("history record gzip bomb of garbage", lambda cm: cm["binaryData"].update(
        {OBJECTS_KEY: _packed(b"\x00" * MiB)}), ("objects are corrupt",)),
    ("history record objects not a list", lambda cm: cm["binaryData"].update({OBJECTS_KEY: _packed({"a": 1})}),
     ("not a list of objects",)),
    ("history record object without kind", lambda cm: cm["binaryData"].update(
        {OBJECTS_KEY: _packed([{"apiVersion": "v1", "metadata": {"name": "a"}}])}),
     ("not a Kubernetes object",)),
    ("history record data not a mapping", lambda cm: cm.update(data=["x"]), ("'data' is not a mapping",)),
    ("history record of an unknown format", lambda cm: cm["data"].update(format="99"), ("format '99'",)),
    ("history record with an unknown status", lambda cm: cm["data"].update(status="owned"), ("'owned'",)),
    ("history record claiming another version", lambda cm: cm["data"].update(version="9.9.9"),
     ("claims version '9.9.9'",)),
    ("history record claiming another release", lambda cm: cm["metadata"]["labels"].update(
        {"manent.io/application": "vault"}), ("labels name another release", "manent.io/application")),
    ("history record holding an object outside the release namespace", lambda cm: cm["binaryData"].update(
        {OBJECTS_KEY: _packed([FOREIGN])}), ("RoleBinding/kube-system/grab", "outside the release namespace shop")),
    ("history record holding another release's object", lambda cm: cm["binaryData"].update(
        {OBJECTS_KEY: _packed([STOLEN])}), ("ConfigMap/shop/x", "belongs to another release")),
]


@pytest.mark.parametrize("case, change, expected", RECORDS, ids=[row[0] for row in RECORDS])
def test_tampered_history_records(case, change, expected):
    cm = _tampered(change)
    _checked(case, lambda: _decode_and_check(cm), record_name(KEY, "1.0.0"), *expected, error=HistoryError)


def test_untampered_record_passes():
    assert _decode_and_check(_record())["version"] == "1.0.0"


def test_a_release_may_span_namespaces_for_prune():
    """Outside rollback and audit (prune, carry-over), objects of other namespaces are the release's own."""
    cm = _record([FOREIGN])
    check_record(cm, KEY, decode_record(cm)[1], own_namespace=False)


def test_a_rollback_refusing_a_release_that_spans_namespaces_says_what_to_do_instead():
    """The refusal is the documented limit, not an accusation: it names the object and the way to roll back."""
    cm = _record([FOREIGN])
    with pytest.raises(HistoryError) as caught:
        check_record(cm, KEY, decode_record(cm)[1])
    said = str(caught.value)
    assert "RoleBinding/kube-system/grab is outside the release namespace shop" in said, said
    assert "nothing was changed" in said and "deploying the artifact of the version you want again" in said, said
    assert "changed outside manent" not in said, said


def test_render_warns_of_objects_outside_the_release_namespace_before_any_rollback_needs_them():
    inside = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "shop"}}
    cluster_scoped = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}
    assert outside_namespace_warning([inside, cluster_scoped], "shop") == []
    outside = [dict(FOREIGN, metadata=dict(FOREIGN["metadata"], name="grab-%d" % i)) for i in range(4)]
    (said,) = outside_namespace_warning([inside] + outside, "shop")
    assert said.startswith("4 object(s) outside the release namespace shop (RoleBinding/kube-system/grab-0, "
                           "RoleBinding/kube-system/grab-1, RoleBinding/kube-system/grab-2 and 1 more)"), said
    assert "roll back by deploying the previous version's artifact again" in said, said


def test_bounded_decompression_limit_is_near_the_archive_limits():
    limit = artifact._stream_limit(artifact.MAX_TOTAL_SIZE, artifact.MAX_MEMBERS)  # pylint: disable=protected-access
    assert artifact.MAX_TOTAL_SIZE < limit < artifact.MAX_TOTAL_SIZE + 64 * MiB
