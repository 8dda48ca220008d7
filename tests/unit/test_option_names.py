# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An error about a module option names it as the caller sets it (option_names; the deploy role: its variables),
once, on the controller path and on the module path; and the role's mapping names a variable for every option it
feeds from one."""

from __future__ import annotations

import os
import re
import types

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import digest_problem
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, ManentError, RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.render import artifact
from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import HelmOptions, verify_binary
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import (
    apply_task, common, history_task, render_task, traffic_task)
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.analysis_task import ANALYSIS_SPEC
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.option_names import (
    error_message, subject_name, validation_message)
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
ROLE = os.path.join(ROOT, "roles", "deploy")
NAMES = {"helm_command": "deploy_helm_command", "provider": "deploy_analysis_provider",
         "strategy": "deploy_strategy", "helm_hooks": "deploy_helm_hooks"}


def _role_vars():
    with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("subject, expected", [
    ("helm_command", "deploy_helm_command"),
    ("provider.url", "deploy_analysis_provider.url"),
    ("provider[0]", "deploy_analysis_provider[0]"),
    ("helm_sha256", "helm_sha256"),  # not in the mapping
    ("Deployment/shop/web", "Deployment/shop/web"),  # an object, not an option
    ("history lock", "history lock"),
    ("", ""),
    (None, None),
])
def test_subject_named_as_the_caller_names_the_option(subject, expected):
    assert subject_name(subject, NAMES) == expected


def test_error_message_names_the_variable_once():
    exc = RenderError("helm binary 'helm' not found on PATH (/usr/bin)", subject="helm_command", hint="install helm")
    message = error_message(exc, NAMES)
    assert message == "deploy_helm_command: helm binary 'helm' not found on PATH (/usr/bin) (install helm)"
    assert message.count("helm_command") == 1
    assert error_message(RenderError("x", subject="helm_command"), {}) == "helm_command: x"


def test_validation_message_names_the_options_but_not_the_values():
    messages = ["value of strategy must be one of: rolling, traffic, got: helm_hooks",
                "argument 'helm_hooks' is of type <class 'dict'> and we were unable to convert to str: strategy"]
    assert validation_message(messages, NAMES) == (
        "value of deploy_strategy must be one of: rolling, traffic, got: helm_hooks; "
        "argument 'deploy_helm_hooks' is of type <class 'dict'> and we were unable to convert to str: strategy")
    assert validation_message(messages, {}) == "; ".join(messages)


def _action(**args):
    return types.SimpleNamespace(_task=types.SimpleNamespace(args=args),
                                 _play_context=types.SimpleNamespace(check_mode=False, diff=False))


SPEC = {"helm_command": {"type": "str", "default": "helm"}, "strategy": {"type": "str", "choices": ["rolling"]},
        "option_names": {"type": "dict", "default": {}}}


def _missing_helm(params, _check_mode, _diff, _on_progress):
    return {"binary": verify_binary(HelmOptions(command=params["helm_command"]))}


def test_controller_path_names_the_role_variable_once(tmp_path):
    missing = str(tmp_path / "no-helm")
    result = controller_task.run(_action(helm_command=missing, option_names=NAMES), {}, "manent_render", SPEC,
                                 _missing_helm)
    assert result["failed"] is True
    assert result["msg"].startswith("deploy_helm_command: helm binary %s not found (" % missing), result["msg"]
    assert result["msg"].count("helm_command") == 1
    bad = controller_task.run(_action(strategy="blue", option_names=NAMES), {}, "manent_render", SPEC, _missing_helm)
    assert bad["msg"].startswith("value of deploy_strategy must be one of: rolling, got: blue"), bad["msg"]
    plain = controller_task.run(_action(helm_command=missing), {}, "manent_render", SPEC, _missing_helm)
    assert plain["msg"].startswith("helm_command: helm binary %s not found" % missing)


class _Module:
    def __init__(self, params):
        self.params = params
        self.failed = None

    def fail_json(self, **result):
        self.failed = result
        raise SystemExit(1)

    def warn(self, _text):
        pass


def test_module_path_names_the_role_variable_once():
    module = _Module({"option_names": NAMES})
    with pytest.raises(SystemExit):
        common.fail(module, RenderError("not found", subject="helm_command"))
    assert module.failed["msg"] == "deploy_helm_command: not found"


# --- the role's mapping -----------------------------------------------------------------------------

GROUP_SPECS = [render_task.argument_spec(), apply_task.argument_spec(), history_task.argument_spec(),
               traffic_task.argument_spec()]
# options the role sets from no variable of its own (fixed, or a result of an earlier task)
FIXED = {"bundle", "option_names", "mode", "artifact_name"}


def _role_variables():
    with open(os.path.join(ROLE, "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = set(yaml.safe_load(handle))
    with open(os.path.join(ROLE, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    for entry in specs.values():
        defaults.update(entry.get("options") or {})
    return defaults


def test_the_role_names_a_real_variable_for_each_module_option():
    variables = _role_variables()
    role_vars = _role_vars()
    options = set().union(*GROUP_SPECS)
    for mapping, spec in ((role_vars["_deploy_option_names"], options),
                          (role_vars["_deploy_option_names_wave_analysis"], set(ANALYSIS_SPEC)),
                          (role_vars["_deploy_option_names_traffic_analysis"], set(ANALYSIS_SPEC))):
        for option, name in mapping.items():
            assert option in spec, option
            for word in re.findall(r"\b(?:deploy|manent)_[a-z0-9_]+", name):
                assert word in variables or word.startswith("manent_"), (option, name)


def _module_tasks(node):
    """(module, args) of every manent_render/apply/history/traffic task in a task file's YAML, blocks included."""
    if isinstance(node, list):
        for item in node:
            yield from _module_tasks(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in GROUP_MODULES and isinstance(value, dict):
                yield key, value
            elif key in ("block", "rescue", "always"):
                yield from _module_tasks(value)


GROUP_MODULES = {"manent.kubernetes.manent_%s" % name for name in ("render", "apply", "history", "traffic")}


def test_every_option_the_role_feeds_from_a_variable_is_named():
    """Each manent_render/apply/history/traffic task of the role: an option whose value reads a role variable
    has its name in _deploy_option_names (given with the connection, module_defaults)."""
    mapping = _role_vars()["_deploy_option_names"]
    seen = set()
    for dirpath, _dirs, files in os.walk(os.path.join(ROLE, "tasks")):
        for name in files:
            with open(os.path.join(dirpath, name), encoding="utf-8") as handle:
                tasks = yaml.safe_load(handle)
            for module, args in _module_tasks(tasks):
                for option, value in args.items():
                    if "deploy_" in str(value) and option not in FIXED:
                        seen.add(option)
                        assert option in mapping, "%s: %s of %s has no name in _deploy_option_names" % (
                            name, option, module)
    assert {"helm_command", "wait_timeout", "namespace", "keep_releases", "percent"} <= seen
    connection = _role_vars()["_deploy_connection"]
    assert "option_names=_deploy_option_names" in connection


# --- sha256 read as a number ------------------------------------------------------------------------

def test_a_digest_that_yaml_read_as_a_number_says_so():
    assert "was read by YAML as the number 83" in digest_problem(0o123)
    assert "quote it" in digest_problem(123)
    assert digest_problem(int("7" * 64)) == ""  # 64 digits: the digest as written
    assert digest_problem("a" * 64) == ""
    assert digest_problem("abc") == "must be the 64 hex digits of the artifact's SHA-256 (sha256sum FILE)"
    assert digest_problem("sha256:" + "a" * 64) == "" and digest_problem("sha256:" + "a" * 64, prefix=False)
    with pytest.raises(InputError, match="sha256: was read by YAML as the number 12345, not as text"):
        artifact.normalize_sha256(12345)
    assert artifact.normalize_sha256(int("7" * 64)) == "7" * 64
    with pytest.raises(InputError, match="helm_sha256: was read by YAML as the number 12, not as text"):
        verify_binary(HelmOptions(command="/bin/sh", sha256=12))


def test_interrupted_and_unnamed_errors_keep_their_message():
    assert error_message(ManentError("plain"), NAMES) == "plain"
    assert error_message(ValueError("odd"), NAMES) == "odd"
