# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""schemas.py: the field-type check against published OpenAPI v3 schemas, on small schemas written here in the
shapes the API server publishes (built-in types through allOf/$ref, IntOrString, Quantity's oneOf, CRD keywords).
tests/integration/test_schemas.py holds the check against a real API server's own verdicts."""

import json

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import schemas
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import NotFoundError

COMPONENTS = {
    "v1.Thing": {
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Thing"}],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"default": {}, "allOf": [{"$ref": "#/components/schemas/v1.Meta"}]},
            "spec": {"allOf": [{"$ref": "#/components/schemas/v1.Spec"}]},
            "data": {"type": "object", "additionalProperties": {"type": "string"}},
            "blob": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
        },
    },
    "v1.Meta": {"type": "object", "properties": {"name": {"type": "string"},
                                                 "labels": {"type": "object",
                                                            "additionalProperties": {"type": "string"}}}},
    "v1.Spec": {
        "type": "object",
        "properties": {
            "replicas": {"type": "integer", "format": "int32"},
            "ratio": {"type": "number"},
            "paused": {"type": "boolean"},
            "port": {"$ref": "#/components/schemas/IntOrString"},
            "size": {"$ref": "#/components/schemas/Quantity"},
            "raw": {"$ref": "#/components/schemas/RawExtension"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                     "properties": {"known": {"type": "integer"}}},
            "closed": {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}},
            "anything": {},
            "crdPort": {"x-kubernetes-int-or-string": True},
            "args": {"type": "array", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["port", "protocol"],
                      "items": {"default": {}, "allOf": [{"$ref": "#/components/schemas/v1.Port"}]}},
        },
    },
    "v1.Port": {"type": "object", "properties": {"port": {"type": "integer"},
                                                 "protocol": {"type": "string", "default": "TCP"},
                                                 "name": {"type": "string"}}},
    "IntOrString": {"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]},
    "Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]},
    "RawExtension": {"type": "object"},
}


class Kube:
    """Serves an index and one group version's document, counting the requests."""

    url = "https://cluster.example:6443"

    def __init__(self, components=None, index_status=None):
        self.components = components or COMPONENTS
        self.index_status = index_status
        self.sent = []
        self.hash = "AAA"

    def get_json(self, path, query=None, subject=None):
        self.sent.append((path, query))
        if path == "/openapi/v3":
            if self.index_status:
                raise NotFoundError("not found", subject=subject)
            return {"paths": {"apis/example.com/v1": {"serverRelativeURL": "/openapi/v3/apis/example.com/v1?hash="
                                                      + self.hash}}}
        assert path == "/openapi/v3/apis/example.com/v1" and query == {"hash": self.hash}
        return {"components": {"schemas": json.loads(json.dumps(self.components))}}


def thing(**fields):
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}
    obj.update(fields)
    return obj


def problems(obj, kube=None):
    return schemas.Schemas(kube or Kube()).problems(obj)


def test_an_object_that_fits_has_no_problem():
    assert problems(thing(spec={
        "replicas": 3, "ratio": 0.5, "paused": False, "port": "http", "size": "500m", "crdPort": 8080,
        "raw": {"anything": [1, {"x": True}]}, "free": {"known": 1, "unknown": {"deep": "yes"}}, "closed": {"a": "b"},
        "anything": [{"x": 1}], "args": ["--port", "80"],
        "ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}, {"port": 443, "protocol": "TCP"}]},
        data={"a": "1"}, blob={"k": "aGVsbG8="})) == []


def test_null_is_accepted_anywhere_and_integral_floats_pass_for_integers():
    assert problems(thing(spec={"replicas": 2.0, "paused": None, "port": None, "args": None},
                          data={"a": None}, metadata={"name": "t", "labels": None})) == []


def test_quantity_and_int_or_string_take_a_number_or_a_string_only():
    assert problems(thing(spec={"size": 2, "port": 80, "crdPort": "http"})) == []
    found = problems(thing(spec={"size": [1], "port": True, "crdPort": 1.5}))
    assert found == ["spec.size: expected a string or a number, got a list",
                     "spec.port: expected an integer or a string, got a boolean",
                     "spec.crdPort: expected an integer or a string, got a number"]


def test_scalars_of_the_wrong_type_are_named_with_their_path_and_what_to_do():
    found = problems(thing(spec={"replicas": "3", "ratio": "x", "paused": "true", "args": ["--port", 8080]},
                           data={"enabled": True, "port": 8080}))
    assert "spec.replicas: expected an integer, got a string (remove the quotes in the manifest)" in found
    assert "spec.ratio: expected a number, got a string (remove the quotes in the manifest)" in found
    assert "spec.paused: expected true or false, got a string (remove the quotes in the manifest)" in found
    assert "spec.args[1]: expected a string, got an integer (quote it in the manifest)" in found
    assert "data.enabled: expected a string, got a boolean (quote it in the manifest)" in found
    assert "data.port: expected a string, got an integer (quote it in the manifest)" in found
    assert len(found) == 6


def test_non_integral_floats_and_booleans_are_not_integers():
    assert problems(thing(spec={"replicas": 1.5})) == ["spec.replicas: expected an integer, got a number"]
    assert problems(thing(spec={"replicas": True})) == ["spec.replicas: expected an integer, got a boolean"]


def test_containers_of_the_wrong_shape():
    found = problems(thing(spec={"args": "--port 80", "free": ["x"]}, data=["a"]))
    assert found == ["spec.args: expected a list, got a string", "spec.free: expected a mapping, got a list",
                     "data: expected a mapping, got a list"]


def test_unknown_fields_are_refused_where_the_schema_is_closed_only():
    found = problems(thing(spec={"replica": 3, "closed": {"b": "c"}, "free": {"other": 1}}, extra=1,
                           metadata={"name": "t", "labelz": {}}))
    assert sorted(found) == sorted([
        "spec.replica: no such field in this kind (check its spelling and indentation against `kubectl explain`)",
        "spec.closed.b: no such field in this kind (check its spelling and indentation against `kubectl explain`)",
        "extra: no such field in this kind (check its spelling and indentation against `kubectl explain`)",
        "metadata.labelz: no such field in this kind (check its spelling and indentation against `kubectl "
        "explain`)"])


def test_base64_fields_must_be_strict_standard_base64():
    assert problems(thing(blob={"ok": "aGVsbG8=", "empty": "", "wrapped": "aGVs\r\nbG8=\n"})) == []
    found = problems(thing(blob={"spaces": "not base64!", "unpadded": "aGVsbG8", "space": "aGVs bG8=",
                                 "url": "-_-_"}))
    assert found == ["blob.%s: is not valid base64 (standard alphabet, padded with '=')" % k
                     for k in ("spaces", "unpadded", "space", "url")]


def test_list_entries_with_the_same_key_are_refused_a_missing_key_taking_its_default():
    found = problems(thing(spec={"ports": [{"port": 80}, {"port": 81}, {"port": 80, "protocol": "TCP"}]}))
    assert found == ['spec.ports[2]: the same key as spec.ports[0] (port=80,protocol="TCP"); each entry needs its '
                     'own']


def test_values_are_never_shown():
    secret = "s3cr3t-value-8080"
    found = problems(thing(spec={"replicas": secret, "args": [{"x": secret}], "paused": secret},
                           data={"password": 123456789}, blob={"key": secret}))
    assert len(found) == 5
    assert not any(secret in text or "123456789" in text for text in found)


def test_problems_per_object_are_capped():
    found = problems(thing(data={"k%d" % i: i for i in range(30)}))
    assert len(found) == schemas.MAX_PER_OBJECT


def test_kinds_without_a_published_schema_are_not_checked():
    kube = Kube()
    assert schemas.Schemas(kube).problems({"apiVersion": "other.io/v1", "kind": "Thing", "spec": 1}) == []
    assert schemas.Schemas(kube).problems({"apiVersion": "example.com/v1", "kind": "Other", "spec": 1}) == []
    unpublished = Kube(index_status=404)
    checker = schemas.Schemas(unpublished)
    assert checker.problems(thing(spec={"replicas": "x"})) == [] and checker.index_source == "none"
    assert checker.notes == []  # a server that does not publish the schemas is not a problem


def test_the_index_is_cached_with_a_ttl_and_documents_by_their_hash(tmp_path):
    kube = Kube()
    bad = thing(spec={"replicas": "x"})
    assert len(schemas.Schemas(kube, str(tmp_path)).problems(bad)) == 1
    assert [p for p, _q in kube.sent] == ["/openapi/v3", "/openapi/v3/apis/example.com/v1"]
    kube.sent.clear()
    second = schemas.Schemas(kube, str(tmp_path))
    assert len(second.problems(bad)) == 1 and kube.sent == [] and second.index_source == "cache"
    # a changed schema (new hash): a refresh reads the new index, then the new document
    kube.hash = "BBB"
    kube.components = dict(COMPONENTS, **{"v1.Spec": dict(COMPONENTS["v1.Spec"], properties=dict(
        COMPONENTS["v1.Spec"]["properties"], replicas={"type": "string"}))})
    assert second.refresh() is True
    assert second.problems(bad) == []
    assert [p for p, _q in kube.sent] == ["/openapi/v3", "/openapi/v3/apis/example.com/v1"]
    expired = schemas.Schemas(kube, str(tmp_path), ttl=0)
    kube.sent.clear()
    expired.problems(bad)
    assert [p for p, _q in kube.sent] == ["/openapi/v3"]  # the index again; the document of that hash is cached


def test_the_cached_documents_keep_what_the_check_reads_only(tmp_path):
    meta = dict(COMPONENTS["v1.Meta"], description="long text", example={"name": "sample"})
    meta["properties"] = dict(meta["properties"], name={"type": "string", "pattern": "^[a-z]+$", "enum": ["zz"],
                                                        "description": "the name"})
    kube = Kube(components=dict(COMPONENTS, **{"v1.Meta": meta}))
    assert schemas.Schemas(kube, str(tmp_path)).problems(thing(metadata={"name": 5})) == [
        "metadata.name: expected a string, got an integer (quote it in the manifest)"]
    (stored,) = (tmp_path / "openapi-v3").iterdir()
    text = stored.read_text()
    assert "v1.Meta" in text and "long text" not in text and "sample" not in text and "^[a-z]+$" not in text
    assert "the name" not in text and "zz" not in text
    kube.sent.clear()  # read back from the cache, the same verdicts
    cached = schemas.Schemas(kube, str(tmp_path))
    assert cached.problems(thing(metadata={"name": 5})) == ["metadata.name: expected a string, got an integer "
                                                            "(quote it in the manifest)"]
    assert cached.problems(thing(spec={"ports": [{"port": 1}, {"port": 1, "protocol": "TCP"}]})) != []
    assert kube.sent == []


@pytest.mark.parametrize("value", [{"$ref": "#/definitions/elsewhere"}, {"$ref": "#/components/schemas/Missing"}])
def test_references_that_cannot_be_followed_accept_anything(value):
    kube = Kube(components=dict(COMPONENTS, **{"v1.Spec": {"type": "object", "properties": {"replicas": value}}}))
    assert problems(thing(spec={"replicas": ["x"]}), kube) == []
