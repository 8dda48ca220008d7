# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lifecycle annotations: every function, for every fixture case, with both werf.io/ and manent.io/ spellings."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "lifecycle")

with open(os.path.join(FIXTURES, "cases.yaml"), encoding="utf-8") as _handle:
    _CASES = yaml.safe_load(_handle)


def _respell(obj, prefix):
    """A copy of obj with werf.io/ annotation keys spelled with ``prefix``."""
    obj = copy.deepcopy(obj)
    annos = obj.get("metadata", {}).get("annotations")
    if annos:
        obj["metadata"]["annotations"] = {
            (prefix + key[len("werf.io/"):] if key.startswith("werf.io/") else key): value
            for key, value in annos.items()
        }
    return obj


def _respell_text(value, prefix):
    """Expected texts follow the spelling: 'werf.io/' in an expectation becomes ``prefix``."""
    if isinstance(value, str):
        return value.replace("werf.io/", prefix)
    if isinstance(value, list):
        return [_respell_text(item, prefix) for item in value]
    if isinstance(value, dict):
        return {key: _respell_text(item, prefix) for key, item in value.items()}
    return value


def _variants():
    for case in _CASES:
        yield pytest.param(case["object"], case, id="%s [as written]" % case["name"])
        if case.get("spellings") != "as-is" and any(
                key.startswith("werf.io/") for key in case["object"]["metadata"].get("annotations", {})):
            yield pytest.param(_respell(case["object"], "manent.io/"), _respell_text(case, "manent.io/"),
                               id="%s [manent.io]" % case["name"])


VARIANTS = list(_variants())

_FUNCTIONS = {
    "keep": lifecycle.resource_policy_keep,
    "ownership": lifecycle.ownership,
    "deploy_on": lambda obj: sorted(lifecycle.deploy_on(obj)),
    "delete_policies": lambda obj: sorted(lifecycle.delete_policies(obj)),
    "delete_propagation": lifecycle.delete_propagation,
}


def test_manent_spelling_is_really_exercised():
    respelled = [p for p in VARIANTS if p.id.endswith("[manent.io]")]
    assert len(respelled) >= 15
    for param in respelled:
        assert not any(key.startswith("werf.io/") for key in param.values[0]["metadata"].get("annotations", {}))


@pytest.mark.parametrize("obj,case", VARIANTS)
def test_case(obj, case):
    expect = case.get("expect", {})
    original = copy.deepcopy(obj)
    for name, read in _FUNCTIONS.items():
        if name in expect:
            assert read(obj) == (sorted(expect[name]) if isinstance(expect[name], list) else expect[name]), name
    if "prunable" in expect:
        allowed, reason = lifecycle.prunable(obj)
        assert allowed is expect["prunable"][0]
        if expect["prunable"][1] is None:
            assert reason is None
        else:
            assert expect["prunable"][1] in reason
    if "lint" in expect:
        warnings = lifecycle.lint(obj)
        assert len(warnings) == len(expect["lint"]), warnings
        for warning, wanted in zip(warnings, expect["lint"]):
            for text in wanted if isinstance(wanted, list) else [wanted]:
                assert text in warning
    if "error" in case:
        with pytest.raises(InputError) as err:
            getattr(lifecycle, case["error"]["function"])(obj)
        for text in case["error"]["contains"]:
            assert text in str(err.value)
        assert err.value.subject == ref(obj)
    assert obj == original  # read-only


@pytest.mark.parametrize("prefix", ["werf.io/", "manent.io/"])
def test_applies_in(prefix):
    obj = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "n", "annotations": {prefix + "deploy-on": "post-install"}}}
    assert lifecycle.applies_in(obj, "install") is True
    assert lifecycle.applies_in(obj, "upgrade") is False
    assert lifecycle.applies_in(obj, "rollback") is False
    plain = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert all(lifecycle.applies_in(plain, phase) for phase in lifecycle.PHASES)
    with pytest.raises(ValueError):
        lifecycle.applies_in(plain, "uninstall")


@pytest.mark.parametrize("prefix", ["werf.io/", "manent.io/"])
def test_ownership_default_argument(prefix):
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "w"}}
    assert lifecycle.ownership(crd) == "release"
    assert lifecycle.ownership(crd, default="anyone") == "anyone"
    hook = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"helm.sh/hook": "test"}}}
    assert lifecycle.ownership(hook, default="release") == "release"
    explicit = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "annotations": {prefix + "ownership": "release"}}}
    assert lifecycle.ownership(explicit, default="anyone") == "release"
    with pytest.raises(ValueError):
        lifecycle.ownership(crd, default="nobody")


def test_hook_helpers():
    test_hook = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "p", "annotations": {"helm.sh/hook": " Test "}}}
    assert lifecycle.is_hook(test_hook) and lifecycle.is_test_hook(test_hook)
    assert lifecycle.hook_events(test_hook) == frozenset(["test"])
    install_hook = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "p", "annotations": {"helm.sh/hook": "pre-install"}}}
    assert lifecycle.is_hook(install_hook) and not lifecycle.is_test_hook(install_hook)
    for events in ("pre-install,test", "test-success", "post-upgrade, Test-Failure"):
        mixed = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"helm.sh/hook": events}}}
        assert lifecycle.is_test_hook(mixed), "one test event makes a test hook, as the renderer skips it: " + events
    blank = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"helm.sh/hook": " "}}}
    assert not lifecycle.is_hook(blank) and not lifecycle.is_test_hook(blank)
    assert lifecycle.CRDS_SOURCE_ANNOTATION == "manent.io/source"


@pytest.mark.parametrize("message,expected", [
    ('Job.batch "migrate" is invalid: spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable',
     True),
    ('Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{...}: field is immutable',
     True),
    ('ConfigMap "c" is invalid: data: Forbidden: field is immutable when `immutable` is set', True),
    ('StatefulSet.apps "db" is invalid: spec: Forbidden: updates to statefulset spec for fields other than '
     "'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
     "'minReadySeconds' are forbidden", True),
    ('PersistentVolumeClaim "data" is invalid: spec: Forbidden: spec is immutable after creation except '
     'resources.requests and volumeAttributesClassName for bound claims', True),
    ('Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.0.0.2"}: may not change once set',
     True),
    ('Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: Required value', False),
    ('the server could not find the requested resource', False),
    ("", False),
    (None, False),
])
def test_is_immutable_error(message, expected):
    assert lifecycle.is_immutable_error(message) is expected
