# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The API-version table (its invariants and contents), check(), delete_api_version(), and apiconvert: the conversion
of every removed kind, renames, drops, refusals and the user mapping file."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import apiconvert, apimappings, apiversions
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "apiversions")


def _load(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


REMOVALS = _load("removals.yaml")
CHECK_CASES = _load("check_cases.yaml")


# ---- table invariants

def test_entries_are_unique():
    keys = [(e.api_version, e.kind) for e in apiversions.entries()]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("entry", apiversions.entries(), ids=lambda e: "%s-%s" % (e.api_version, e.kind))
def test_entry_invariants(entry):
    assert entry.deprecated >= (1, 2)
    if entry.removed_in is not None:
        assert entry.removed > entry.deprecated
    assert entry.note.strip()
    if entry.replacement is None:
        assert entry.rename is False
    else:
        assert entry.replacement != entry.api_version
        # the replacement is not itself removed
        replaced_by = apiversions.lookup(entry.replacement, entry.new_kind)
        assert replaced_by is None or replaced_by.removed_in is None
    if entry.replacement_kind:
        assert entry.rename is False


@pytest.mark.parametrize("api_version,kind,deprecated_in,removed_in,replacement,rename", REMOVALS,
                         ids=["%s-%s" % (r[0], r[1]) for r in REMOVALS])
def test_table_holds_every_documented_removal(api_version, kind, deprecated_in, removed_in, replacement, rename):
    entry = apiversions.lookup(api_version, kind)
    assert entry is not None
    assert (entry.deprecated_in, entry.removed_in, entry.replacement, entry.rename) == (
        deprecated_in, removed_in, replacement, rename)


def test_every_removal_release_from_1_16_to_1_32_is_covered():
    releases = {e.removed_in for e in apiversions.entries() if e.removed_in}
    assert releases == {"1.16", "1.22", "1.23", "1.25", "1.26", "1.27", "1.29", "1.32"}


def test_lookup_of_current_or_unknown_apis_is_none():
    assert apiversions.lookup("apps/v1", "Deployment") is None
    assert apiversions.lookup("extensions/v1beta1", "Widget") is None
    assert apiversions.lookup(None, None) is None


def test_entry_properties():
    entry = apiversions.lookup("v1", "Endpoints")
    assert (entry.group, entry.version, entry.api_version) == ("", "v1", "v1")
    assert entry.new_kind == "EndpointSlice"
    assert entry.replacement_text == "discovery.k8s.io/v1 EndpointSlice"
    assert entry.removed is None
    assert apiversions.lookup("policy/v1beta1", "PodSecurityPolicy").replacement_text == "no replacement"


# ---- versions

@pytest.mark.parametrize("value,expected", [
    ((1, 34), (1, 34)), ([1, 9], (1, 9)), ("1.34", (1, 34)), ("v1.34.2", (1, 34)), ("1.34+", (1, 34)),
    (" v1.8.0-gke.1 ", (1, 8)),
])
def test_parse_version(value, expected):
    assert apiversions.parse_version(value) == expected


@pytest.mark.parametrize("value", ["", None, "one.two", "1"])
def test_parse_version_rejects(value):
    with pytest.raises(ValueError):
        apiversions.parse_version(value)


def test_version_priority_orders_like_kubernetes():
    versions = ["v1beta1", "v1alpha1", "v2beta2", "v1", "v2", "v1beta2", "v11alpha2", "foo", "v10"]
    ordered = sorted(versions, key=apiversions.version_priority, reverse=True)
    assert ordered == ["v10", "v2", "v1", "v2beta2", "v1beta2", "v1beta1", "v11alpha2", "v1alpha1", "foo"]
    assert apiversions.version_priority("apps/v1") == apiversions.version_priority("v1")[:3] + ("v1",)


# ---- check()

@pytest.mark.parametrize("case", CHECK_CASES, ids=[c["id"] for c in CHECK_CASES])
def test_check(case):
    api_version, kind, cluster, served = case["args"]
    finding = apiversions.check(api_version, kind, cluster, served)
    if case["level"] is None:
        assert finding is None
        return
    assert finding.level == case["level"]
    assert finding.replacement == case["replacement"]
    assert finding.rename is case["rename"]
    assert finding.entry is apiversions.lookup(api_version, kind)
    for text in case["message"]:
        assert text in finding.message


@pytest.mark.parametrize("entry", [e for e in apiversions.entries() if e.removed_in],
                         ids=lambda e: "%s-%s" % (e.api_version, e.kind))
def test_every_removed_entry_is_an_error_on_1_34(entry):
    finding = apiversions.check(entry.api_version, entry.kind, (1, 34), served=False)
    assert finding.level == "error"
    assert "%s %s" % (entry.api_version, entry.kind) in finding.message
    assert "removed in Kubernetes %s" % entry.removed_in in finding.message
    if entry.replacement:
        assert entry.replacement in finding.message


# ---- apiconvert: what a stored object becomes on a cluster that no longer serves its version

CONVERSIONS = _load("conversions.yaml")


def _obj(api_version, kind, name="web", namespace="shop", **spec):
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
    if namespace:
        obj["metadata"]["namespace"] = namespace
    if spec:
        obj["spec"] = spec
    return obj


def _served(*pairs):
    served = set(pairs)
    return lambda api_version, kind: (api_version, kind) in served


def _removed_on_1_34(api_version, kind):
    """Discovery of a 1.34 cluster, as far as the table goes: every removed version is gone, the rest served."""
    entry = apiversions.lookup(api_version, kind)
    return entry is None or entry.removed_in is None


@pytest.mark.parametrize("case", CONVERSIONS, ids=[c["id"] for c in CONVERSIONS])
def test_conversion(case):
    stored = case["stored"]
    original = copy.deepcopy(stored)
    converter = apiconvert.Converter(_removed_on_1_34)
    if "error" in case:
        with pytest.raises(InputError) as err:
            converter.convert(stored)
        for text in case["error"]:
            assert text in str(err.value)
        assert "mapping file" in err.value.hint
    else:
        outcome = converter.convert(stored)
        assert outcome.action == apiconvert.CONVERT
        assert outcome.obj == case["expected"]
        assert outcome.note.startswith("%s: stored as %s, which this cluster no longer serves"
                                       % (apiconvert.ref(stored), stored["apiVersion"]))
        for text in case.get("changes", ()):
            assert text in outcome.note
    assert stored == original  # never modified


_CONVERTED = [e for e in apiversions.entries() if e.removed_in and e.replacement and not e.rename]
_RENAMED = [e for e in apiversions.entries() if e.removed_in and e.rename]


@pytest.mark.parametrize("entry", _CONVERTED, ids=lambda e: "%s-%s" % (e.api_version, e.kind))
def test_every_removed_schema_change_has_a_conversion_case(entry):
    """Each has a case in conversions.yaml (test_conversion runs it), so none falls back to "no conversion"."""
    assert any((c["stored"]["apiVersion"], c["stored"]["kind"]) == (entry.api_version, entry.kind) for c in CONVERSIONS)


@pytest.mark.parametrize("entry", _RENAMED, ids=lambda e: "%s-%s" % (e.api_version, e.kind))
def test_every_removed_rename_changes_the_api_version_only(entry):
    obj = _obj(entry.api_version, entry.kind, spec_field={"kept": [1, 2]}, status={"x": 1})
    outcome = apiconvert.Converter(_removed_on_1_34).convert(obj)
    assert outcome.action == apiconvert.RENAME
    assert outcome.obj == dict(obj, apiVersion=entry.replacement)
    assert outcome.note.endswith("using %s instead, a pure rename" % entry.replacement)


def test_served_objects_are_kept_as_they_are():
    obj = _obj("apps/v1", "Deployment")
    outcome = apiconvert.Converter(_served(("apps/v1", "Deployment"))).convert(obj)
    assert (outcome.action, outcome.obj, outcome.note) == ("keep", obj, None)
    assert outcome.obj is obj


def test_apps_v1beta2_is_a_rename():
    obj = _obj("apps/v1beta2", "Deployment", selector={"matchLabels": {"app": "web"}})
    outcome = apiconvert.Converter(_served(("apps/v1", "Deployment"))).convert(obj)
    assert outcome.obj == dict(obj, apiVersion="apps/v1")
    assert outcome.note == ("Deployment/shop/web: stored as apps/v1beta2, which this cluster no longer serves "
                            "(removed in Kubernetes 1.16); using apps/v1 instead, a pure rename")


def test_rename_copies_deeply():
    obj = _obj("batch/v1beta1", "CronJob", schedule="* * * * *")
    outcome = apiconvert.Converter(_served(("batch/v1", "CronJob"))).convert(obj)
    outcome.obj["spec"]["schedule"] = "0 * * * *"
    assert obj["spec"]["schedule"] == "* * * * *" and obj["apiVersion"] == "batch/v1beta1"


def test_cluster_scoped_rename_note():
    obj = _obj("rbac.authorization.k8s.io/v1beta1", "ClusterRole", name="reader", namespace=None)
    outcome = apiconvert.Converter(_served(("rbac.authorization.k8s.io/v1", "ClusterRole"))).convert(obj)
    assert outcome.obj["apiVersion"] == "rbac.authorization.k8s.io/v1"
    assert outcome.note.startswith("ClusterRole/reader: stored as rbac.authorization.k8s.io/v1beta1")


@pytest.mark.parametrize("api_version", ["policy/v1beta1", "extensions/v1beta1"])
def test_kinds_without_replacement_are_refused_unless_dropped(api_version):
    obj = _obj(api_version, "PodSecurityPolicy", name="restricted", namespace=None)
    with pytest.raises(InputError) as err:
        apiconvert.Converter(_served()).convert(obj)
    assert err.value.subject == "PodSecurityPolicy/restricted"
    assert "has no replacement" in str(err.value)
    assert "Pod Security Admission" in err.value.hint and "drop_removed: true" in err.value.hint
    outcome = apiconvert.Converter(_served(), drop_removed=True).convert(obj)
    assert (outcome.action, outcome.obj) == ("drop", None)
    assert "PodSecurityPolicy/restricted" in outcome.note and "dropped from the release (drop_removed)" in outcome.note


def test_replacement_not_served():
    with pytest.raises(InputError) as err:
        apiconvert.Converter(_served()).convert(_obj("batch/v1beta1", "CronJob"))
    assert "does not serve the replacement batch/v1 CronJob either" in str(err.value)


def test_unknown_kind_not_served():
    with pytest.raises(InputError) as err:
        apiconvert.Converter(_served()).convert(_obj("example.com/v1", "Widget"))
    assert err.value.subject == "Widget/shop/web"
    assert "example.com/v1" in str(err.value) and "knows no replacement" in str(err.value)
    assert "api_mappings" in err.value.hint


def test_convert_all_drops_converts_and_lists_every_refusal():
    converter = apiconvert.Converter(lambda a, k: _removed_on_1_34(a, k) and not a.startswith("example.com/"),
                                     drop_removed=True)
    ing = _obj("extensions/v1beta1", "Ingress", backend={"serviceName": "web", "servicePort": 80})
    psp = _obj("policy/v1beta1", "PodSecurityPolicy", name="p", namespace=None)
    cm = _obj("v1", "ConfigMap")
    objects, notes, dropped = converter.convert_all([ing, psp, cm])
    assert [o["apiVersion"] for o in objects] == ["networking.k8s.io/v1", "v1"]
    assert dropped == ["PodSecurityPolicy/p"] and len(notes) == 2
    bad = [_obj("apps/v1beta1", "Deployment", name="a"), _obj("example.com/v1", "Widget", name="b")]
    with pytest.raises(InputError) as err:
        converter.convert_all(bad + [cm])
    assert str(err.value).startswith("2 stored objects cannot be used on this cluster: Deployment/shop/a: ")
    assert "Widget/shop/b" in str(err.value)


# ---- the user mapping file

def test_mapping_adds_and_overrides_renames(tmp_path):
    path = tmp_path / "maps.yml"
    path.write_text("mappings:\n"
                    "  - {from: example.com/v1alpha1, to: example.com/v1}\n"
                    "  - {from: extensions/v1beta1, to: networking.k8s.io/v1, kind: Ingress}\n"
                    "  - {from: example.com/v1alpha1, to: example.com/v2, kinds: [Gadget]}\n")
    mappings = apimappings.load_mappings(str(path))
    served = _served(("example.com/v1", "Widget"), ("example.com/v2", "Gadget"), ("networking.k8s.io/v1", "Ingress"))
    converter = apiconvert.Converter(served, mappings=mappings)
    widget = converter.convert(_obj("example.com/v1alpha1", "Widget"))
    assert (widget.action, widget.obj["apiVersion"]) == ("rename", "example.com/v1")
    assert "(mapping %s: mappings[0])" % path in widget.note
    assert converter.convert(_obj("example.com/v1alpha1", "Gadget")).obj["apiVersion"] == "example.com/v2"
    ing = _obj("extensions/v1beta1", "Ingress", backend={"serviceName": "web", "servicePort": 80})
    outcome = converter.convert(ing)  # the user's rename overrides manent's conversion
    assert outcome.obj == dict(ing, apiVersion="networking.k8s.io/v1")
    assert apimappings.load_mappings("") == () and apimappings.load_mappings(None) == ()


def test_mapping_whose_target_is_not_served():
    mappings = apimappings.parse_mappings({"mappings": [{"from": "a.io/v1", "to": "a.io/v2"}]}, "m.yml")
    with pytest.raises(InputError) as err:
        apiconvert.Converter(_served(), mappings=mappings).convert(_obj("a.io/v1", "Thing"))
    assert "the mapping m.yml: mappings[0] names a.io/v2 Thing, which it does not serve either" in str(err.value)


@pytest.mark.parametrize("data,text", [
    ([], "expected a mapping with one key, mappings"),
    ({"maps": []}, "expected a mapping with one key, mappings"),
    ({"mappings": {"from": "a/v1"}}, "mappings: expected a list"),
    ({"mappings": ["a/v1"]}, "m.yml: mappings[0]: expected a mapping with from, to and kind"),
    ({"mappings": [{"from": "a/v1", "to": "a/v2", "knd": "X"}]}, "mappings[0]: unknown key(s) knd"),
    ({"mappings": [{"from": "a/v1"}]}, "mappings[0]: to: expected an apiVersion"),
    ({"mappings": [{"from": "a/b/v1", "to": "a/v2"}]}, "from: expected an apiVersion"),
    ({"mappings": [{"from": "a/v1", "to": "a/v1"}]}, "from and to are the same apiVersion a/v1"),
    ({"mappings": [{"from": "a/v1", "to": "a/v2", "kind": "X", "kinds": ["Y"]}]}, "give kind or kinds, not both"),
    ({"mappings": [{"from": "a/v1", "to": "a/v2", "kinds": [1]}]}, "kind/kinds: expected a kind name"),
    ({"mappings": [{"from": "a/v1", "to": "a/v2"}, {"from": "a/v1", "to": "a/v3"}]},
     "mappings[1]: a/v1 is already mapped by m.yml: mappings[0]"),
])
def test_mapping_file_errors_name_the_entry(data, text):
    with pytest.raises(InputError) as err:
        apimappings.parse_mappings(data, "m.yml")
    assert text in str(err.value)


def test_mapping_file_missing_or_unreadable(tmp_path):
    with pytest.raises(InputError) as err:
        apimappings.load_mappings(str(tmp_path / "nope.yml"))
    assert "does not exist" in str(err.value) and "api_mappings" in err.value.hint
    bad = tmp_path / "bad.yml"
    bad.write_text("mappings: [\n")
    with pytest.raises(InputError) as err:
        apimappings.load_mappings(str(bad))
    assert str(err.value).startswith("%s: cannot read the API mapping file" % bad)


# ---- delete_api_version()

@pytest.mark.parametrize("group,kind,served,expected", [
    ("apps", "Deployment", ["apps/v1"], "apps/v1"),
    ("apps", "Deployment", ["apps/v1beta2", "apps/v1", "apps/v1beta1"], "apps/v1"),
    ("extensions", "Deployment", ["apps/v1"], "apps/v1"),
    ("extensions", "Ingress", ["networking.k8s.io/v1"], "networking.k8s.io/v1"),
    ("extensions", "Ingress", ["networking.k8s.io/v1beta1"], "networking.k8s.io/v1beta1"),
    ("extensions", "NetworkPolicy", ["networking.k8s.io/v1"], "networking.k8s.io/v1"),
    ("extensions", "Ingress", ["extensions/v1beta1", "networking.k8s.io/v1"], "extensions/v1beta1"),
    ("policy", "PodDisruptionBudget", ["policy/v1"], "policy/v1"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema",
     ["flowcontrol.apiserver.k8s.io/v1beta3", "flowcontrol.apiserver.k8s.io/v1"], "flowcontrol.apiserver.k8s.io/v1"),
    ("", "Endpoints", ["v1"], "v1"),
    ("", "Endpoints", ["discovery.k8s.io/v1"], None),  # a different kind cannot delete it
    ("extensions", "PodSecurityPolicy", [], None),
    ("apps", "Deployment", [], None),
    ("apps", "Deployment", None, None),
])
def test_delete_api_version(group, kind, served, expected):
    assert apiversions.delete_api_version(group, kind, served) == expected


@pytest.mark.parametrize("group,kind,expected", [
    ("extensions", "Deployment", ["apps"]),
    ("extensions", "Ingress", ["networking.k8s.io"]),
    ("apps", "Deployment", []),  # apps/v1beta1 -> apps/v1: the same group
    ("", "Endpoints", []),  # replaced by another kind (EndpointSlice): not moved
    ("example.com", "Widget", []),
])
def test_moved_groups(group, kind, expected):
    assert apiversions.moved_groups(group, kind) == expected
