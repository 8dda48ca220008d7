# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""helm.render_chart with the real, pinned helm binary and the packaged charts of tests/data/charts.

Fake "helm" shell scripts are used only where the real binary cannot show the behaviour: the exact
environment and arguments it receives, a binary that changes between two renders, one that hangs, and
one that fails with a long message.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import time

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import (
    HelmOptions, isolated_environment, render_chart, run_helm, set_values_tree, split_output,
)
from ansible_collections.manent.kubernetes.tests.helpers import CHARTS, chart_path, helm_binary

SAMPLE = "manent-sample-0.1.0.tgz"
HTTPROUTE = "gateway.networking.k8s.io/v1/HTTPRoute"
KUBE = "v1.34.4"
RELEASE = "shop"
NAMESPACE = "prod"
FULLNAME = "shop-manent-sample"


@pytest.fixture(name="helm")
def helm_fixture():
    return HelmOptions(command=helm_binary(), timeout=60.0)


def render(helm, chart=SAMPLE, **kwargs):
    kwargs.setdefault("release", RELEASE)
    kwargs.setdefault("namespace", NAMESPACE)
    kwargs.setdefault("kube_version", KUBE)
    kwargs.setdefault("api_versions", [])
    return render_chart(chart_path(chart), options=helm, **kwargs)


def objects(rendered, kind):
    return [obj for obj, _source in rendered.docs if obj["kind"] == kind]


def one(rendered, kind):
    found = objects(rendered, kind)
    assert len(found) == 1, [obj["kind"] for obj, _source in rendered.docs]
    return found[0]


def refs(rendered):
    return ["%s/%s" % (obj["kind"], obj["metadata"]["name"]) for obj, _source in rendered.docs]


def fake_helm(tmp_path, body, name="helm"):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


# --- values -------------------------------------------------------------------------------------

BASE_CONFIG = {"CACHE_TTL": "60s", "GREETING": "hello", "LOG_LEVEL": "info", "MODE": "default"}
RENDER_FACTS = {"slot": "", "kubeVersion": KUBE, "previousConfig": "none"}


@pytest.mark.parametrize("layers, config", [
    ({}, BASE_CONFIG),
    ({"values_files": ["values-prod.yaml"]},
     {"CACHE_TTL": "60s", "GREETING": "hello from prod", "LOG_LEVEL": "warn", "MODE": "prod"}),
    ({"values_files": ["values-prod.yaml"], "values_yaml": "config:\n  GREETING: from yaml\n  MODE: yaml\n"},
     {"CACHE_TTL": "60s", "GREETING": "from yaml", "LOG_LEVEL": "warn", "MODE": "yaml"}),
    ({"values_files": ["values-prod.yaml"], "values_yaml": "config:\n  GREETING: from yaml\n  MODE: yaml\n",
      "set_values": {"config.MODE": "from set"}},
     {"CACHE_TTL": "60s", "GREETING": "from yaml", "LOG_LEVEL": "warn", "MODE": "from set"}),
    ({"values_files": ["values-prod.yaml"], "set_values": {"config.MODE": "from set"}},
     {"CACHE_TTL": "60s", "GREETING": "hello from prod", "LOG_LEVEL": "warn", "MODE": "from set"}),
    ({"values_yaml": "config: {LOG_LEVEL: debug}", "set_values": {"config.NEW": "added"}},
     dict(BASE_CONFIG, LOG_LEVEL="debug", NEW="added")),
], ids=["chart", "file", "file+yaml", "file+yaml+set", "file+set", "yaml+set"])
def test_values_precedence(helm, layers, config):
    rendered = render(helm, **layers)
    assert one(rendered, "ConfigMap")["data"] == dict(config, **RENDER_FACTS)


@pytest.mark.parametrize("files, replicas, hook_job", [
    ([], 2, True),
    (["values-prod.yaml"], 3, True),
    (["values-small.yaml"], 1, False),
    (["values-prod.yaml", "values-small.yaml"], 1, False),
    (["values-small.yaml", "values-prod.yaml"], 3, False),
    (["./values-prod.yaml"], 3, True),
    ("values-small.yaml,values-prod.yaml", 3, False),
])
def test_values_files_in_order(helm, files, replicas, hook_job):
    rendered = render(helm, values_files=files, hooks="apply")
    assert one(rendered, "Deployment")["spec"]["replicas"] == replicas
    assert bool(objects(rendered, "Job")) is hook_job


def test_set_values_are_parsed_as_yaml(helm):
    rendered = render(helm, set_values={"replicaCount": "5", "image.tag": "1.4.0", "service.port": "8080",
                                        "config.FLAG": "true", "config.EMPTY": ""})
    deployment = one(rendered, "Deployment")
    assert deployment["spec"]["replicas"] == 5
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:1.4.0"
    assert one(rendered, "Service")["spec"]["ports"][0]["port"] == 8080
    data = one(rendered, "ConfigMap")["data"]
    assert data["FLAG"] == "true" and data["EMPTY"] == ""


@pytest.mark.parametrize("set_values, tree", [
    ({"image.tag": "1.4.0"}, {"image": {"tag": "1.4.0"}}),
    ({"replicaCount": "3"}, {"replicaCount": 3}),
    ({"a.b": "[1, two]", "a.c": "{x: y}"}, {"a": {"b": [1, "two"], "c": {"x": "y"}}}),
    ({"flag": "yes", "text": "'3'", "none": "null", "empty": ""},
     {"flag": True, "text": "3", "none": None, "empty": ""}),
    ({"n": 7, "date": "2024-01-02"}, {"n": 7, "date": "2024-01-02"}),  # helm gets the same text either way
])
def test_set_values_tree(set_values, tree):
    assert set_values_tree(set_values) == tree


@pytest.mark.parametrize("set_values, message", [
    ({"a..b": "1"}, "invalid value path"),
    ({"": "1"}, "invalid value path"),
    ({"image": "x", "image.tag": "y"}, "conflicts"),
    ({"image.tag": "x", "image.tag.major": "y"}, "conflicts"),
    ({"a": "{unclosed"}, "not valid YAML"),
])
def test_set_values_rejected(set_values, message):
    with pytest.raises(InputError, match=message) as err:
        set_values_tree(set_values)
    assert err.value.subject.startswith("helm_value.")


@pytest.mark.parametrize("values_yaml, message", [
    ("- a\n- b\n", "must be a YAML mapping, got list"),
    ("just text", "must be a YAML mapping, got str"),
    ("a: [unclosed", "not valid YAML"),
])
def test_values_yaml_rejected(helm, values_yaml, message):
    with pytest.raises(InputError, match=message) as err:
        render(helm, values_yaml=values_yaml)
    assert err.value.subject == "helm_values"


@pytest.mark.parametrize("values_yaml", ["", "   \n", "# only a comment\n", None, {}])
def test_values_yaml_empty_is_ignored(helm, values_yaml):
    assert one(render(helm, values_yaml=values_yaml), "ConfigMap")["data"] == dict(BASE_CONFIG, **RENDER_FACTS)


def test_values_yaml_as_mapping(helm):
    rendered = render(helm, values_yaml={"config": {"MODE": "mapping"}})
    assert one(rendered, "ConfigMap")["data"]["MODE"] == "mapping"


@pytest.mark.parametrize("name, message", [
    ("/etc/passwd", "not absolute"),
    ("../values.yaml", "no '..'"),
    ("templates/../../values.yaml", "no '..'"),
    ("..\\values.yaml", "no '..'"),
    ("missing.yaml", "not found in chart manent-sample-0.1.0.tgz"),
    ("templates", "not found in chart"),
    ("", "empty values file name"),
])
def test_bad_values_files(helm, name, message):
    with pytest.raises(InputError, match=message) as err:
        render(helm, values_files=["values-prod.yaml", name])
    assert err.value.subject == "helm_values_files"
    if name:
        assert name in str(err.value)


def test_missing_values_file_lists_the_chart_files(helm):
    with pytest.raises(InputError) as err:
        render(helm, values_files=["values-production.yaml"])
    assert err.value.hint == "files at the chart root: values-prod.yaml, values-small.yaml, values.yaml"


def test_chart_directory_and_symlink_escape(helm, tmp_path):
    source = os.path.join(CHARTS, "src", "manent-sample")
    rendered = render_chart(source, RELEASE, NAMESPACE, KUBE, [], values_files=["values-prod.yaml"], options=helm)
    assert one(rendered, "Deployment")["spec"]["replicas"] == 3
    assert rendered.docs[0][1] == "manent-sample: manent-sample/crds/widgets.sample.manent.io.yaml #1"
    chart = tmp_path / "manent-sample"
    shutil.copytree(source, chart)
    outside = tmp_path / "outside.yaml"
    outside.write_text("replicaCount: 9\n")
    (chart / "escape.yaml").symlink_to(outside)
    with pytest.raises(InputError, match="values file escape.yaml not found"):
        render_chart(str(chart), RELEASE, NAMESPACE, KUBE, [], values_files=["escape.yaml"], options=helm)


@pytest.mark.parametrize("upgrade, data, seeded", [
    (False, {"isInstall": "true", "isUpgrade": "false"}, True),
    (True, {"isInstall": "false", "isUpgrade": "true"}, False),
])
def test_upgrade_renders_as_helm_upgrade(helm, tmp_path, upgrade, data, seeded):
    chart = tmp_path / "phases"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: phases\nversion: 0.1.0\n")
    (chart / "templates" / "phase.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: phase\ndata:\n"
        "  isInstall: {{ .Release.IsInstall | quote }}\n  isUpgrade: {{ .Release.IsUpgrade | quote }}\n")
    (chart / "templates" / "seed.yaml").write_text(
        "{{- if .Release.IsInstall }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\n{{- end }}\n")
    rendered = render_chart(str(chart), RELEASE, NAMESPACE, KUBE, [], options=helm, upgrade=upgrade)
    phase = [obj for obj in objects(rendered, "ConfigMap") if obj["metadata"]["name"] == "phase"]
    assert phase and phase[0]["data"] == data
    assert ("ConfigMap/seed" in refs(rendered)) is seeded


@pytest.mark.parametrize("slot", ["a", "b"])
def test_slot_is_visible_to_the_chart(helm, slot):
    rendered = render(helm, slot=slot, values_yaml="manent: {slot: from-values}",
                      set_values={"manent.slot": "from-set"})
    assert one(rendered, "ConfigMap")["data"]["slot"] == slot
    env = one(rendered, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "MANENT_SLOT", "value": slot}]


@pytest.mark.parametrize("layers, seen", [
    ({}, ""),
    ({"values_yaml": "manent: {slot: from-values}"}, "from-values"),
    ({"values_yaml": "manent: {slot: from-values}", "set_values": {"manent.slot": "from-set"}}, "from-set"),
], ids=["chart-default", "values", "set"])
def test_without_slot_the_chart_gets_only_its_values(helm, layers, seen):
    """No slot (not a traffic rollout): manent adds no values at all, the chart sees what helm template sees."""
    rendered = render(helm, slot="", **layers)
    assert one(rendered, "ConfigMap")["data"]["slot"] == seen
    env = one(rendered, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "MANENT_SLOT", "value": seen}]


# --- the traffic slot and strict values schemas -------------------------------------------------

STRICT = "strict-schema-0.1.0.tgz"
STRICT_SLOT = "strict-schema-slot-0.1.0.tgz"
HELM_REJECTS_MANENT = ("values don't meet the specifications of the schema(s) in the following chart(s):\n"
                       "strict-schema:\n- at '': additional properties 'manent' not allowed")


def test_strict_schema_renders_without_slot(helm):
    rendered = render(helm, chart=STRICT, values_yaml="config: {MODE: prod}",
                      set_values={"replicaCount": "3", "image.tag": "v3.9"})
    assert refs(rendered) == ["ConfigMap/shop-strict-schema", "Service/shop-strict-schema",
                              "Deployment/shop-strict-schema"]
    assert one(rendered, "ConfigMap")["data"] == {"LOG_LEVEL": "info", "MODE": "prod"}
    deploy = one(rendered, "Deployment")
    assert deploy["spec"]["replicas"] == 3
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:v3.9"
    assert rendered.warnings == []


def test_strict_schema_still_checks_the_users_values(helm):
    """Without a slot a schema failure is helm's own, about the user's values: no word about manent."""
    with pytest.raises(RenderError) as err:
        render(helm, chart=STRICT, set_values={"replicas": "3", "replicaCount": "many"})
    assert err.value.subject == STRICT
    assert "at '': additional properties 'replicas' not allowed" in err.value.message
    assert "at '/replicaCount': got string, want integer" in err.value.message
    assert "manent" not in str(err.value)
    assert err.value.hint == "fix the chart, its values or the release name; the message is helm's"


@pytest.mark.parametrize("slot", ["a", "b"])
def test_strict_schema_with_slot_is_a_clear_error(helm, slot):
    with pytest.raises(RenderError) as err:
        render(helm, chart=STRICT, slot=slot)
    assert err.value.subject == STRICT
    message = err.value.message
    assert message.startswith("the values.schema.json of chart %s rejects the key manent (manent.slot=%s, "
                              "which manent passes only in traffic rollouts); the chart must allow it: "
                              'a "manent" property of type object in the root "properties" of its '
                              "values.schema.json. helm template failed: Error: " % (STRICT, slot))
    assert HELM_REJECTS_MANENT in message  # helm 3.19's own words, kept
    assert '"manent": {"type": "object"}' in err.value.hint
    assert "deploy without a slot" in err.value.hint and "traffic_rename" in err.value.hint


def test_strict_schema_with_slot_and_other_errors_keeps_all_of_helms(helm):
    with pytest.raises(RenderError) as err:
        render(helm, chart=STRICT, slot="a", set_values={"unknown": "1"})
    assert "rejects the key manent" in err.value.message
    # helm lists the keys in map order, which varies from run to run.
    assert re.search(r"at '': additional properties ('manent', 'unknown'|'unknown', 'manent') not allowed$",
                     err.value.message)


def test_schema_that_allows_manent_renders_with_slot(helm):
    rendered = render(helm, chart=STRICT_SLOT, slot="b")
    deploy = one(rendered, "Deployment")
    assert deploy["metadata"]["name"] == "shop-strict-schema-slot-b"
    assert deploy["spec"]["selector"]["matchLabels"]["manent.io/track"] == "b"
    assert deploy["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "MANENT_SLOT", "value": "b"}]
    plain = one(render(helm, chart=STRICT_SLOT), "Deployment")  # (.Values.manent).slot: empty without a slot
    assert plain["metadata"]["name"] == "shop-strict-schema-slot"
    assert "manent.io/track" not in plain["spec"]["selector"]["matchLabels"]
    assert plain["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "MANENT_SLOT", "value": ""}]


def test_schema_that_restricts_the_slot_is_a_clear_error(helm):
    with pytest.raises(RenderError) as err:
        render(helm, chart=STRICT_SLOT, slot="c")
    assert "rejects the key manent (manent.slot=c" in err.value.message
    assert "- at '/manent/slot': value must be one of '', 'a', 'b'" in err.value.message


def nil_slot_chart(tmp_path, values=""):
    chart = tmp_path / "reads-slot"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: reads-slot\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text(values)
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n"
        "  slot: {{ .Values.manent.slot | quote }}\n"
        "  safe: {{ (.Values.manent).slot | default \"none\" | quote }}\n")
    return str(chart)


def test_chart_reading_manent_slot_without_slot_fails_as_helm_does(helm, tmp_path):
    chart = nil_slot_chart(tmp_path)
    with pytest.raises(RenderError) as err:
        render_chart(chart, RELEASE, NAMESPACE, KUBE, [], options=helm)
    assert err.value.subject == "reads-slot"
    assert err.value.message == (
        'helm template failed: Error: template: reads-slot/templates/cm.yaml:6:18: executing '
        '"reads-slot/templates/cm.yaml" at <.Values.manent.slot>: nil pointer evaluating interface {}.slot\n\n'
        "Use --debug flag to render out invalid YAML")
    assert "(.Values.manent).slot" in err.value.hint and "only in traffic rollouts" in err.value.hint
    # With a slot, or with a default in values.yaml, the same chart renders.
    data = one(render_chart(chart, RELEASE, NAMESPACE, KUBE, [], slot="a", options=helm), "ConfigMap")["data"]
    assert data == {"slot": "a", "safe": "a"}
    chart = nil_slot_chart(tmp_path / "defaulted", values='manent: {slot: ""}\n')
    data = one(render_chart(chart, RELEASE, NAMESPACE, KUBE, [], options=helm), "ConfigMap")["data"]
    assert data == {"slot": "", "safe": "none"}


@pytest.mark.parametrize("err, rejected", [
    ("Error: values don't meet the specifications of the schema(s) in the following chart(s):\nx:\n"
     "- at '': additional properties 'manent' not allowed\n", True),
    ("Error: values don't meet the specifications of the schema(s) in the following chart(s):\nx:\n"
     "- at '': additional properties 'foo', 'manent' not allowed\n", True),
    ("Error: values don't meet the specifications of the schema(s) in the following chart(s):\nx:\n"
     "- at '/manent': got string, want object\n", True),
    ("Error: values don't meet the specifications of the schema(s) in the following chart(s):\nx:\n"
     "- (root): Additional property manent is not allowed\n", True),  # helm <= 3.17 (gojsonschema)
    ("Error: values don't meet the specifications of the schema(s) in the following chart(s):\nx:\n"
     "- manent.slot: manent.slot must be one of the following: \"a\", \"b\"\n", True),
    ("Error: values don't meet the specifications of the schema(s) in the following chart(s):\nx:\n"
     "- at '': additional properties 'manentx' not allowed\n", False),
    ("Error: values don't meet the specifications of the schema(s) in the following chart(s):\nx:\n"
     "- at '/replicaCount': got string, want integer\n", False),
    ("Error: template: x/templates/a.yaml:1:2: additional properties 'manent' not allowed\n", False),
])
def test_schema_rejection_of_manent_is_recognised(tmp_path, err, rejected):
    fake = fake_helm(tmp_path, "cat >&2 <<'EOF'\n%sEOF\nexit 1" % err)
    with pytest.raises(RenderError) as caught:
        render_chart(chart_path(STRICT), "r", "ns", KUBE, [], slot="a", options=HelmOptions(command=fake))
    assert ("rejects the key manent" in caught.value.message) is rejected
    assert caught.value.message.endswith("helm template failed: " + err.strip())


# --- hooks --------------------------------------------------------------------------------------

SAMPLE_HOOK = "Job/%s-migrate (hook: pre-install,pre-upgrade)" % FULLNAME
SAMPLE_TEST = "Pod/%s-test-connection (hook: test)" % FULLNAME


def test_hooks_skipped_by_default(helm):
    rendered = render(helm)
    assert refs(rendered) == ["CustomResourceDefinition/widgets.sample.manent.io", "ConfigMap/%s-config" % FULLNAME,
                              "Service/" + FULLNAME, "Deployment/" + FULLNAME]
    assert rendered.hooks_skipped == [SAMPLE_TEST, SAMPLE_HOOK]
    assert rendered.warnings == []


def test_hooks_applied_but_never_tests(helm):
    rendered = render(helm, hooks="apply")
    assert refs(rendered) == ["CustomResourceDefinition/widgets.sample.manent.io", "ConfigMap/%s-config" % FULLNAME,
                              "Service/" + FULLNAME, "Deployment/" + FULLNAME, "Job/%s-migrate" % FULLNAME]
    job = one(rendered, "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert rendered.hooks_skipped == [SAMPLE_TEST]


@pytest.mark.parametrize("hooks, docs, skipped", [
    ("skip", ["ServiceAccount/subchart-sa", "Role/subchart-role", "RoleBinding/subchart-binding",
              "Service/subcharta", "Service/subchartb", "Service/subchart"],
     ["ConfigMap/rel-testconfig (hook: test)", "Pod/rel-test (hook: test)"]),
    ("apply", ["ServiceAccount/subchart-sa", "Role/subchart-role", "RoleBinding/subchart-binding",
               "Service/subcharta", "Service/subchartb", "Service/subchart"],
     ["ConfigMap/rel-testconfig (hook: test)", "Pod/rel-test (hook: test)"]),
])
def test_subchart_test_hooks_never_apply(helm, hooks, docs, skipped):
    rendered = render(helm, "subchart-0.1.0.tgz", release="rel", hooks=hooks, include_crds=False)
    assert refs(rendered) == docs
    assert rendered.hooks_skipped == skipped


@pytest.mark.parametrize("hooks, has_sixth, skipped", [
    ("skip", False, ["NetworkPolicy/sixth (hook: pre-install)"]),
    ("apply", True, []),
])
def test_object_order_hook(helm, hooks, has_sixth, skipped):
    rendered = render(helm, "object-order-0.1.0.tgz", hooks=hooks)
    names = [obj["metadata"]["name"] for obj, _source in rendered.docs]
    assert ("sixth" in names) is has_sixth
    assert len(names) == 14 + has_sixth
    assert rendered.hooks_skipped == skipped


def test_invalid_hooks_mode(helm):
    with pytest.raises(InputError, match="invalid hooks mode 'run'") as err:
        render(helm, hooks="run")
    assert err.value.subject == "helm_hooks"


HOOK_DOC = """---
# Source: c/templates/hook.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: h
  annotations:
    helm.sh/hook: "%s"
"""


@pytest.mark.parametrize("hook, skip_kept, apply_kept", [
    ("pre-install", False, True),
    ("post-upgrade, pre-rollback", False, True),
    ("test", False, False),
    ("test-success", False, False),
    ("pre-install,test", False, False),
    ("Test", False, False),
    ("", True, True),
])
def test_split_output_hooks(hook, skip_kept, apply_kept):
    text = HOOK_DOC % hook
    for mode, kept in (("skip", skip_kept), ("apply", apply_kept)):
        rendered = split_output(text, "c.tgz", hooks=mode)
        assert [obj["metadata"]["name"] for obj, _source in rendered.docs] == (["h"] if kept else [])
        assert rendered.hooks_skipped == ([] if kept or not hook else ["ConfigMap/h (hook: %s)" % hook.strip()])


# --- output parsing -----------------------------------------------------------------------------

def test_split_output_sources_crds_and_empty_docs():
    text = """---
# Source: c/crds/two.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: as.x.io}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: bs.x.io, annotations: {keep: me}}

---
# Source: c/templates/many.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: one}
---
# Source: c/templates/many.yaml
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: two}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: three}}
---
# Source: c/templates/empty.yaml
---
--- # a comment after the marker
# Source: c/charts/sub/crds/late.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: cs.x.io}
"""
    rendered = split_output(text, "c-1.0.0.tgz")
    assert [(obj["metadata"]["name"], source) for obj, source in rendered.docs] == [
        ("as.x.io", "c-1.0.0.tgz: c/crds/two.yaml #1"),
        ("bs.x.io", "c-1.0.0.tgz: c/crds/two.yaml #2"),
        ("cs.x.io", "c-1.0.0.tgz: c/charts/sub/crds/late.yaml #1"),
        ("one", "c-1.0.0.tgz: c/templates/many.yaml #1"),
        ("two", "c-1.0.0.tgz: c/templates/many.yaml #2"),
        ("three", "c-1.0.0.tgz: c/templates/many.yaml #3"),
    ]
    annotations = [obj["metadata"].get("annotations") for obj, _source in rendered.docs]
    assert annotations == [{"manent.io/source": "crds"}, {"keep": "me", "manent.io/source": "crds"},
                           {"manent.io/source": "crds"}, None, None, None]


def test_split_output_invalid_yaml_names_the_template():
    with pytest.raises(RenderError) as err:
        split_output("---\n# Source: c/templates/bad.yaml\na: [\n", "c.tgz")
    assert err.value.subject.startswith("c.tgz: c/templates/bad.yaml")


# --- CRDs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("chart, crds, rest", [
    (SAMPLE, ["widgets.sample.manent.io"], 3),
    ("subchart-0.1.0.tgz", ["testcrds.testcrdgroups.example.com"], 6),
    ("crd-test-0.1.0.tgz", ["tests.test.io"], 0),
])
def test_crds_first_and_marked(helm, chart, crds, rest):
    rendered = render(helm, chart)
    marked = [obj["metadata"]["name"] for obj, _source in rendered.docs
              if obj["metadata"].get("annotations", {}).get("manent.io/source") == "crds"]
    assert marked == crds
    assert [obj["kind"] for obj, _source in rendered.docs] == ["CustomResourceDefinition"] * len(crds) + [
        obj["kind"] for obj, _source in rendered.docs[len(crds):]]
    assert all("/crds/" in source for _obj, source in rendered.docs[:len(crds)])
    assert len(rendered.docs) == len(crds) + rest
    without = render(helm, chart, include_crds=False)
    assert len(without.docs) == rest
    assert not any(obj["kind"] == "CustomResourceDefinition" for obj, _source in without.docs)
    assert not any("manent.io/source" in obj["metadata"].get("annotations", {}) for obj, _source in without.docs)


# --- capabilities and lookup --------------------------------------------------------------------

@pytest.mark.parametrize("api_versions, values, has_route", [
    ([HTTPROUTE], {}, True),
    (["gateway.networking.k8s.io/v1", HTTPROUTE], {}, True),
    ([], {}, False),
    (["gateway.networking.k8s.io/v1"], {}, False),
    (["gateway.networking.k8s.io/v1beta1/HTTPRoute"], {}, False),
    ([HTTPROUTE], {"route.enabled": "false"}, False),
])
def test_api_versions_capability(helm, api_versions, values, has_route):
    rendered = render(helm, api_versions=api_versions, set_values=values)
    routes = objects(rendered, "HTTPRoute")
    assert len(routes) == (1 if has_route else 0)
    if has_route:
        assert routes[0]["spec"]["rules"][0]["backendRefs"] == [{"name": FULLNAME, "port": 80}]


@pytest.mark.parametrize("kube_version, minor", [("v1.34.4", "34"), ("v1.29.0", "29"), ("1.31.2", "31")])
def test_kube_version_capability(helm, kube_version, minor):
    sample = render(helm, kube_version=kube_version)
    assert one(sample, "ConfigMap")["data"]["kubeVersion"] == "v" + kube_version.lstrip("v")
    subchart = render(helm, "subchart-0.1.0.tgz", kube_version=kube_version, api_versions=["helm.k8s.io/test"])
    labels = [obj for obj, _source in subchart.docs if obj["metadata"]["name"] == "subchart"][0]["metadata"]["labels"]
    assert labels["kube-version/minor"] == minor
    assert labels["kube-api-version/test"] == "v1"


def test_kube_version_below_chart_requirement(helm):
    with pytest.raises(RenderError) as err:
        render(helm, kube_version="v1.26.3")
    assert err.value.subject == SAMPLE
    assert str(err.value).startswith("%s: helm template failed: Error: chart requires kubeVersion: >=1.27.0-0 "
                                     "which is incompatible with Kubernetes v1.26.3" % SAMPLE)


@pytest.mark.parametrize("api_versions", [["a,b"], ["--set=x"], ["x y"], ['"q"'], [""]])
def test_invalid_api_versions(helm, api_versions):
    with pytest.raises(InputError, match="invalid API version") as err:
        render(helm, api_versions=api_versions)
    assert err.value.subject == "api_versions"


def test_api_versions_are_trimmed(helm):
    rendered = render(helm, api_versions=[" %s " % HTTPROUTE])
    assert len(objects(rendered, "HTTPRoute")) == 1


def test_lookup_is_empty_even_with_a_kubeconfig(helm, tmp_path, monkeypatch):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users: [{name: u, user: {token: secret}}]
""")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert one(render(helm), "ConfigMap")["data"]["previousConfig"] == "none"


# --- isolation ----------------------------------------------------------------------------------

BOGUS = {
    "KUBECONFIG": "/bogus/kubeconfig",
    "HELM_REPOSITORY_CONFIG": "/bogus/repositories.yaml",
    "HELM_REGISTRY_CONFIG": "/bogus/registry.json",
    "HELM_KUBECONTEXT": "bogus-context",
    "HELM_NAMESPACE": "bogus-namespace",
    "HELM_PLUGINS": "/bogus/plugins",
    "AWS_ACCESS_KEY_ID": "bogus-key",
}


def test_helm_sees_no_worker_environment(tmp_path, monkeypatch):
    for key, value in BOGUS.items():
        monkeypatch.setenv(key, value)
    home = str(tmp_path)
    code, out, err = run_helm(helm_binary(), ["env"], home, 30)
    assert (code, err) == (0, "")
    seen = dict(line.split("=", 1) for line in out.splitlines())
    seen = {key: value.strip('"') for key, value in seen.items()}
    assert seen["HELM_REPOSITORY_CONFIG"] == os.path.join(home, ".config", "helm", "repositories.yaml")
    assert seen["HELM_REGISTRY_CONFIG"] == os.path.join(home, ".config", "helm", "registry", "config.json")
    assert seen["HELM_PLUGINS"] == os.path.join(home, ".local", "share", "helm", "plugins")
    assert seen["HELM_KUBECONTEXT"] == ""
    assert seen["HELM_NAMESPACE"] == "default"
    assert not [key for key, value in seen.items() if "bogus" in value]
    # /usr/bin/env prints exactly what it was given: the isolated environment, no KUBECONFIG.
    code, out, err = run_helm("/usr/bin/env", [], home, 30)
    assert code == 0
    assert dict(line.split("=", 1) for line in out.splitlines()) == isolated_environment(home)


def test_render_runs_helm_isolated_with_these_arguments(helm, tmp_path, monkeypatch):
    for key, value in BOGUS.items():
        monkeypatch.setenv(key, value)
    seen = tmp_path / "seen"
    seen.mkdir()
    fake = fake_helm(tmp_path, """/usr/bin/env > %(seen)s/env
for arg in "$@"; do echo "$arg"; done > %(seen)s/args
for arg in "$@"; do case "$arg" in --values=*) cat "${arg#--values=}"; echo; echo "#";; esac; done > %(seen)s/values
echo '# Source: x/templates/a.yaml'
echo 'kind: ConfigMap'
echo 'metadata: {name: a}'""" % {"seen": seen})
    chart = chart_path(SAMPLE)
    rendered = render_chart(chart, "shop", "prod", "v1.30.1", ["a/v1", HTTPROUTE], values_files=["values-small.yaml"],
                            values_yaml="x: 1", set_values={"image.tag": "1.4.0"}, slot="a",
                            options=HelmOptions(command=fake))
    assert rendered.docs == [({"kind": "ConfigMap", "metadata": {"name": "a"}}, "%s: x/templates/a.yaml #1" % SAMPLE)]
    env = dict(line.split("=", 1) for line in (seen / "env").read_text().splitlines())
    home = env["PWD"]  # dash exports its working directory: helm runs inside its private home
    assert env == dict(isolated_environment(home), PWD=home)
    assert home != str(tmp_path) and not os.path.exists(home), "the temporary home is removed after rendering"
    args = (seen / "args").read_text().splitlines()
    values = [arg for arg in args if arg.startswith("--values=")]
    assert [os.path.basename(arg) for arg in values] == [
        "01-file-1-values-small.yaml", "02-helm-values.yaml", "03-helm-value.json", "04-manent.json"]
    assert all(arg.startswith("--values=%s/values/" % home) for arg in values)
    assert [arg for arg in args if not arg.startswith("--values=")] == [
        "template", "--namespace=prod", "--kube-version=v1.30.1", "--api-versions=a/v1",
        "--api-versions=" + HTTPROUTE, "--include-crds", "--", "shop", chart]
    assert (seen / "values").read_text() == (
        "# Smallest footprint, e.g. for review environments.\nreplicaCount: 1\nmigration:\n  enabled: false\n\n#\n"
        "x: 1\n#\n"
        '{"image": {"tag": "1.4.0"}}\n#\n'
        '{"manent": {"slot": "a"}}\n#\n')


def test_without_slot_no_manent_values_layer(tmp_path):
    seen = tmp_path / "args"
    fake = fake_helm(tmp_path, """for arg in "$@"; do echo "$arg"; done > %s
echo 'kind: Namespace'; echo 'metadata: {name: n}'""" % seen)
    render_chart(chart_path(SAMPLE), "shop", "prod", KUBE, [], values_yaml="x: 1", options=HelmOptions(command=fake))
    values = [os.path.basename(arg) for arg in seen.read_text().splitlines() if arg.startswith("--values=")]
    assert values == ["01-helm-values.yaml"]
    render_chart(chart_path(SAMPLE), "shop", "prod", KUBE, [], options=HelmOptions(command=fake))
    assert not [arg for arg in seen.read_text().splitlines() if arg.startswith("--values=")]


def test_helm_stderr_becomes_warnings(tmp_path):
    fake = fake_helm(tmp_path, "echo 'WARNING: This chart is deprecated' >&2\necho 'kind: Namespace' ; "
                               "echo 'metadata: {name: n}'")
    rendered = render_chart(chart_path(SAMPLE), "r", "ns", KUBE, [], options=HelmOptions(command=fake))
    assert rendered.warnings == ["helm: WARNING: This chart is deprecated"]
    assert [obj["kind"] for obj, _source in rendered.docs] == ["Namespace"]


def test_helm_failure_is_trimmed_and_names_the_chart(tmp_path):
    fake = fake_helm(tmp_path, "i=0; while [ $i -lt 400 ]; do echo \"noise line $i\" >&2; i=$((i+1)); done\n"
                               "echo 'Error: the real problem' >&2\nexit 3")
    with pytest.raises(RenderError) as err:
        render_chart(chart_path(SAMPLE), "r", "ns", KUBE, [], options=HelmOptions(command=fake))
    assert err.value.subject == SAMPLE
    assert err.value.message.startswith("helm template failed: ...")
    assert err.value.message.endswith("noise line 399\nError: the real problem")
    assert len(err.value.message) <= len("helm template failed: ...") + 2048


# --- the binary: checksum, missing, timeout -----------------------------------------------------

def sha256_of(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def test_sha256_verified_before_every_render(tmp_path):
    fake = fake_helm(tmp_path, "echo 'kind: Namespace'; echo 'metadata: {name: first}'")
    options = HelmOptions(command=fake, sha256="sha256:" + sha256_of(fake).upper())
    assert render_chart(chart_path(SAMPLE), "r", "ns", KUBE, [], options=options).docs[0][0]["metadata"] == {
        "name": "first"}
    expected = sha256_of(fake)
    fake_helm(tmp_path, "echo 'kind: Namespace'; echo 'metadata: {name: swapped}'")
    with pytest.raises(RenderError) as err:
        render_chart(chart_path(SAMPLE), "r", "ns", KUBE, [], options=options)
    assert err.value.subject == "helm_sha256"
    assert err.value.message == "helm binary %s has sha256 %s, expected %s" % (fake, sha256_of(fake), expected)
    assert "nothing was rendered" in err.value.hint


def test_sha256_of_the_real_helm(helm):
    good = HelmOptions(command=helm.command, sha256=sha256_of(helm.command))
    assert render(good).docs
    bad = HelmOptions(command=helm.command, sha256="0" * 64)
    with pytest.raises(RenderError, match="expected 0{64}"):
        render(bad)


@pytest.mark.parametrize("sha256", ["abc", "g" * 64, "sha512:" + "0" * 64])
def test_sha256_setting_must_be_hex(helm, sha256):
    with pytest.raises(InputError, match="must be the 64 hex digits of the helm binary's SHA-256, got"):
        render(HelmOptions(command=helm.command, sha256=sha256))


def test_missing_binary_path(tmp_path):
    missing = str(tmp_path / "bin" / "helm")
    with pytest.raises(RenderError) as err:
        render_chart(chart_path(SAMPLE), "r", "ns", KUBE, [], options=HelmOptions(command=missing))
    assert err.value.message == "helm binary %s not found" % missing
    assert err.value.subject == "helm_command"
    assert "helm is needed only to render Helm charts" in err.value.hint
    assert "set this option to the path of a helm binary" in err.value.hint


def test_missing_binary_on_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RenderError, match="helm binary 'helm' not found on PATH") as err:
        render_chart(chart_path(SAMPLE), "r", "ns", KUBE, [], options=HelmOptions())
    assert "https://helm.sh/docs/intro/install/" in err.value.hint


def test_binary_found_on_path(helm, monkeypatch, tmp_path):
    link = tmp_path / "helm"
    link.symlink_to(helm.command)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert render(HelmOptions()).hooks_skipped == [SAMPLE_TEST, SAMPLE_HOOK]


def test_binary_not_executable(tmp_path):
    fake = fake_helm(tmp_path, "exit 0")
    os.chmod(fake, stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(RenderError, match="is not executable"):
        render_chart(chart_path(SAMPLE), "r", "ns", KUBE, [], options=HelmOptions(command=fake))


def _process_gone(pid):
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_timeout_kills_helm(tmp_path):
    pidfile = tmp_path / "pid"
    fake = fake_helm(tmp_path, "sleep 30 &\necho $! > %s\nwait" % pidfile)
    started = time.monotonic()
    with pytest.raises(RenderError) as err:
        render_chart(chart_path(SAMPLE), "r", "ns", KUBE, [], options=HelmOptions(command=fake, timeout=1.5))
    assert time.monotonic() - started < 10
    assert err.value.message == "helm template did not finish within 1.5s"
    assert err.value.subject == "helm_timeout"
    assert "raise this option" in err.value.hint
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while not _process_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _process_gone(pid), "the child of helm was not killed"


@pytest.mark.parametrize("timeout", [0, -1, "soon"])
def test_invalid_timeout(helm, timeout):
    with pytest.raises(InputError) as err:
        render(HelmOptions(command=helm.command, timeout=timeout))
    assert err.value.subject == "helm_timeout"


def test_chart_not_found(helm, tmp_path):
    with pytest.raises(InputError, match="not found") as err:
        render_chart(str(tmp_path / "nope-1.0.0.tgz"), "r", "ns", KUBE, [], options=helm)
    assert err.value.subject == "nope-1.0.0.tgz"


def test_not_a_chart_archive(helm, tmp_path):
    bogus = tmp_path / "bogus-1.0.0.tgz"
    bogus.write_bytes(b"not a tarball")
    with pytest.raises(RenderError, match="cannot read packaged chart"):
        render_chart(str(bogus), "r", "ns", KUBE, [], values_files=["values.yaml"], options=helm)
    with pytest.raises(RenderError, match="helm template failed") as err:
        render_chart(str(bogus), "r", "ns", KUBE, [], options=helm)
    assert err.value.subject == "bogus-1.0.0.tgz"
