# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""render_chart gives the objects ``helm template`` gives, for every packaged test chart.

The reference is the pinned helm run directly (its own flags: ``-f`` with the extracted values file,
``--set`` for single values, ``--set manent.slot=<slot>`` only when the case has a slot, as manent passes
it only in traffic rollouts), parsed with yaml.safe_load_all. manent's only differences are by design:
the ``manent.io/source: crds`` annotation (removed before comparing), hooks (skipped, or kept with
hooks="apply") and test hooks (never kept).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tarfile

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import HelmOptions, render_chart
from ansible_collections.manent.kubernetes.tests.helpers import CHARTS, chart_path, helm_binary

KUBE = "v1.34.4"
HTTPROUTE = "gateway.networking.k8s.io/v1/HTTPRoute"

# chart -> value combinations; keys as render_chart's, set_values chosen so that helm's --set types agree.
CASES = {
    "manent-sample-0.1.0.tgz": [
        {},
        {"api_versions": [HTTPROUTE], "slot": "a"},
        {"values_files": ["values-prod.yaml", "values-small.yaml"], "values_yaml": "config: {GREETING: hi}",
         "set_values": {"image.tag": "1.4.0", "service.port": "8080"}, "slot": "b", "api_versions": [HTTPROUTE]},
        {"values_files": ["values-prod.yaml"], "set_values": {"route.enabled": "false"}, "include_crds": False,
         "kube_version": "v1.27.0", "release": "manent-sample", "namespace": "staging"},
    ],
    "kwok-0.1.2.tgz": [
        {},
        {"values_yaml": "hostNetwork: true\nresources: {limits: {cpu: 500m}}",
         "set_values": {"replicas": "3", "image.tag": "v0.7.0"}, "namespace": "kube-system"},
        {"set_values": {"enableDeployment": "false", "fullnameOverride": "kwok"}, "release": "other"},
    ],
    "stage-fast-0.1.1.tgz": [
        {},
        {"release": "kwok-stages", "kube_version": "v1.30.0"},
    ],
    "subchart-0.1.0.tgz": [
        {},
        {"values_files": ["extra_values.yaml"], "api_versions": ["helm.k8s.io/test"], "kube_version": "v1.30.2"},
        {"set_values": {"service.externalPort": "8080", "subcharta.enabled": "false", "configmap.enabled": "true"},
         "include_crds": False},
        {"values_yaml": "subchartb:\n  service:\n    name: renamed\n", "release": "sub"},
    ],
    "object-order-0.1.0.tgz": [
        {},
        {"namespace": "elsewhere"},
    ],
    "crd-test-0.1.0.tgz": [
        {},
        {"include_crds": False},
    ],
    # values.schema.json with "additionalProperties": false at the root: renders only without a slot.
    "strict-schema-0.1.0.tgz": [
        {},
        {"values_yaml": "replicaCount: 3\nconfig: {MODE: prod}\n",
         "set_values": {"image.tag": "v3.9", "service.enabled": "false"}, "namespace": "shop"},
    ],
    # A strict root schema that declares manent: renders with and without a slot.
    "strict-schema-slot-0.1.0.tgz": [
        {},
        {"slot": "a"},
        {"slot": "b", "set_values": {"replicaCount": "2"}, "release": "shop"},
    ],
    # Helm hooks of many kinds with every delete policy, cluster-scoped ones named after the namespace.
    "hook-parity-0.1.0.tgz": [
        {},
        {"set_values": {"revision": "2", "first": "false"}, "release": "parity", "namespace": "t-1"},
    ],
    # A hook Job that its TTL deletes as soon as it finished.
    "ttl-hooks-0.1.0.tgz": [
        {},
        {"values_yaml": "deletePolicy: \"\"\nfail: true\n", "set_values": {"revision": "7"}, "release": "ttl"},
    ],
}

CHART_FILES = sorted(name for name in os.listdir(CHARTS) if name.endswith(".tgz"))


def test_every_packaged_chart_has_cases():
    assert sorted(CASES) == CHART_FILES


def direct_helm_run(chart, case, workdir):
    """``helm template`` run by hand with the same inputs: the finished process."""
    workdir.mkdir()
    with tarfile.open(chart) as archive:
        archive.extractall(workdir / "chart", filter="data")
    top = next((workdir / "chart").iterdir())
    args = [helm_binary(), "template", case.get("release", "rel"), chart,
            "--namespace", case.get("namespace", "default"), "--kube-version", case.get("kube_version", KUBE)]
    for api_version in case.get("api_versions", []):
        args += ["--api-versions", api_version]
    if case.get("include_crds", True):
        args.append("--include-crds")
    for name in case.get("values_files", []):
        args += ["-f", str(top / name)]
    if case.get("values_yaml"):
        (workdir / "values.yaml").write_text(case["values_yaml"])
        args += ["-f", str(workdir / "values.yaml")]
    for key, value in case.get("set_values", {}).items():
        args += ["--set", "%s=%s" % (key, value)]
    if case.get("slot"):
        args += ["--set", "manent.slot=%s" % case["slot"]]
    env = {"HOME": str(workdir), "PATH": "/usr/bin:/bin"}
    return subprocess.run(args, env=env, cwd=workdir, capture_output=True, text=True, timeout=60, check=False)


def direct_helm(chart, case, workdir):
    """Objects of ``helm template`` run by hand with the same inputs, in helm's order."""
    done = direct_helm_run(chart, case, workdir)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]


def via_manent(chart, case, hooks):
    kwargs = dict(case)
    release = kwargs.pop("release", "rel")
    namespace = kwargs.pop("namespace", "default")
    kube_version = kwargs.pop("kube_version", KUBE)
    api_versions = kwargs.pop("api_versions", [])
    return render_chart(chart, release, namespace, kube_version, api_versions, hooks=hooks,
                        options=HelmOptions(command=helm_binary()), **kwargs)


def without_source_annotation(obj):
    obj = copy.deepcopy(obj)
    annotations = obj["metadata"].get("annotations", {})
    if annotations.pop("manent.io/source", None) is not None and not annotations:
        del obj["metadata"]["annotations"]
    return obj


def hook_of(obj):
    return str((obj.get("metadata", {}).get("annotations") or {}).get("helm.sh/hook") or "")


def is_test_hook(obj):
    return any(event.strip() in ("test", "test-success") for event in hook_of(obj).split(","))


def describe(obj):
    return "%s/%s (hook: %s)" % (obj["kind"], obj["metadata"]["name"], hook_of(obj))


def canonical(objs):
    return sorted(json.dumps(obj, sort_keys=True) for obj in objs)


@pytest.mark.parametrize("chart, case", [(name, case) for name in sorted(CASES) for case in CASES[name]],
                         ids=["%s-%d" % (name, number) for name in sorted(CASES) for number in range(len(CASES[name]))])
def test_render_chart_equals_helm_template(chart, case, tmp_path):
    path = chart_path(chart)
    reference = direct_helm(path, case, tmp_path / "direct")
    assert reference or chart == "crd-test-0.1.0.tgz", "the case renders nothing: it would prove nothing"
    hooks = [obj for obj in reference if hook_of(obj)]
    plain = [obj for obj in reference if not hook_of(obj)]

    skipped = via_manent(path, case, hooks="skip")
    ours = [without_source_annotation(obj) for obj, _source in skipped.docs]
    assert canonical(ours) == canonical(plain)
    assert ours == plain, "same objects, but not in helm's order"
    assert sorted(skipped.hooks_skipped) == sorted(describe(obj) for obj in hooks)

    applied = via_manent(path, case, hooks="apply")
    ours = [without_source_annotation(obj) for obj, _source in applied.docs]
    assert canonical(ours) == canonical([obj for obj in reference if not is_test_hook(obj)])
    assert sorted(applied.hooks_skipped) == sorted(describe(obj) for obj in hooks if is_test_hook(obj))

    crds = [obj for obj, source in skipped.docs if "/crds/" in source]
    assert all(obj["metadata"]["annotations"]["manent.io/source"] == "crds" for obj in crds)
    assert skipped.docs[:len(crds)] == [(obj, source) for obj, source in skipped.docs if "/crds/" in source]
    assert len(crds) == (chart in ("manent-sample-0.1.0.tgz", "subchart-0.1.0.tgz", "crd-test-0.1.0.tgz")
                         and case.get("include_crds", True))


@pytest.mark.parametrize("case", [{"slot": "a"}, {"slot": "b", "set_values": {"replicaCount": "2"}}])
def test_strict_schema_with_slot_fails_as_helm_template_does(case, tmp_path):
    """helm template with manent.slot set fails on the strict schema too: manent keeps helm's message whole."""
    path = chart_path("strict-schema-0.1.0.tgz")
    done = direct_helm_run(path, case, tmp_path / "direct")
    assert done.returncode == 1
    assert "- at '': additional properties 'manent' not allowed" in done.stderr
    with pytest.raises(RenderError) as err:
        via_manent(path, case, hooks="skip")
    assert err.value.message.endswith("helm template failed: " + done.stderr.strip())
    assert "values.schema.json of chart strict-schema-0.1.0.tgz rejects the key manent" in err.value.message
