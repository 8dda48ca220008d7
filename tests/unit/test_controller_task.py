# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/plugin_utils/controller_task.py, the path every manent task takes on the controller (local connection):
argument validation, failures carrying their partial result, and the insecure-TLS warning, which a task gets once,
whether it succeeded or failed, and whether or not its failure carries a partial result. The role relies on it: it
has no warning task of its own."""

from __future__ import annotations

import subprocess
import sys
import types

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ManentError
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task, plain_data

SPEC = {"api_server": {"type": "str", "required": True},
        "insecure_skip_tls_verify": {"type": "bool", "default": False},
        "fail": {"type": "bool", "default": False}}
SERVER = "https://api.example:6443"


def _action(**args):
    return types.SimpleNamespace(_task=types.SimpleNamespace(args=args),
                                 _play_context=types.SimpleNamespace(check_mode=False, diff=False))


class Partial:
    changed = True

    @staticmethod
    def to_dict():
        return {"applied": 1, "warnings": ["an engine warning"]}


def _task(params, _check_mode, _diff, _on_progress):
    if params["fail"]:
        exc = ManentError("the apply failed")
        exc.partial = Partial()
        raise exc
    return {"changed": False, "warnings": ["an engine warning"]}


def _plain_task(params, _check_mode, _diff, _on_progress):
    """A task whose failure carries no partial result (a history read)."""
    if params["fail"]:
        raise ManentError("the history read failed")
    return {"changed": False, "warnings": ["a task warning"]}


def _insecure(result):
    return [w for w in result.get("warnings", []) if "insecure_skip_tls_verify" in w]


def test_a_task_with_tls_verification_off_warns_once_on_success_and_on_failure():
    expected = common.INSECURE_WARNING % SERVER
    for fail in (False, True):
        result = controller_task.run(_action(api_server=SERVER, insecure_skip_tls_verify=True, fail=fail), {},
                                     "manent_apply", SPEC, _task)
        assert bool(result.get("failed")) is fail, result
        assert _insecure(result) == [expected], result
        assert "an engine warning" in result["warnings"]
    # the last one failed: its partial result is kept
    assert result["applied"] == 1 and result["changed"] is True and result["msg"] == "the apply failed"


def test_a_task_without_partial_result_warns_once_too():
    for fail in (False, True):
        result = controller_task.run(_action(api_server=SERVER, insecure_skip_tls_verify=True, fail=fail), {},
                                     "manent_history", SPEC, _plain_task)
        assert bool(result.get("failed")) is fail, result
        assert _insecure(result) == [common.INSECURE_WARNING % SERVER], result
        assert ("a task warning" in result["warnings"]) is not fail


def test_no_warning_when_tls_is_verified():
    for task in (_task, _plain_task):
        for fail in (False, True):
            result = controller_task.run(_action(api_server=SERVER, fail=fail), {}, "manent_apply", SPEC, task)
            assert not _insecure(result), result


def test_invalid_arguments_fail_before_the_task_runs():
    ran = []
    result = controller_task.run(_action(insecure_skip_tls_verify=True), {}, "manent_apply", SPEC,
                                 lambda *args: ran.append(args))
    assert result["failed"] and "api_server" in result["msg"] and not ran


def test_arguments_reach_the_task_as_plain_python_values():
    """Templated arguments carry tags in ansible-core 2.19 and later (subclasses of str, int, ...); the task and the
    validator get Python's own types, with the same values, keys that are not strings kept, and other values (a date
    read by YAML) as they are."""
    import datetime  # pylint: disable=import-outside-toplevel

    class Tagged(str):
        pass

    class TaggedInt(int):
        pass

    day = datetime.date(2026, 12, 7)
    args = {Tagged("values"): {1: [Tagged("a"), TaggedInt(2), 2.5, True, None, day], "k": (Tagged("b"),)}}
    plain = plain_data.plain(args)
    assert plain == {"values": {1: ["a", 2, 2.5, True, None, day], "k": ["b"]}}
    assert [type(v) for v in plain["values"][1]] == [str, int, float, bool, type(None), datetime.date]
    assert type(next(iter(plain))) is str and type(plain["values"]["k"][0]) is str  # pylint: disable=unidiomatic-typecheck

    seen = {}

    def task(params, *_rest):
        seen.update(params)
        return {"changed": False}

    spec = {"api_server": {"type": "str", "required": True}, "values": {"type": "dict"}}
    result = controller_task.run(_action(api_server=Tagged(SERVER), values={TaggedInt(1): Tagged("x")}), {},
                                 "manent_apply", spec, task)
    assert not result.get("failed"), result
    assert seen == {"api_server": SERVER, "values": {1: "x"}}
    assert type(seen["api_server"]) is str  # pylint: disable=unidiomatic-typecheck


WARMED = """
from ansible.plugins.loader import init_plugin_loader
init_plugin_loader()
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task
missing = [name for loader, name in controller_task.WARM if loader.get(name, class_only=True) is None]
print(len(controller_task.WARM), missing)
"""


def test_every_plugin_warmed_in_the_parent_loads():
    """warm() passes over a plugin that fails to load (the worker reports it where it is used), so a misspelled or
    removed name in WARM would only make every worker load its plugin again, unnoticed: each one must load. In a
    process of its own, with ansible-core's plugin loader as ansible-playbook sets it up."""
    out = subprocess.run([sys.executable, "-c", WARMED], capture_output=True, text=True, check=True)  # conftest.py
    # exposes the checkout as the collection, in ANSIBLE_COLLECTIONS_PATH
    count, missing = out.stdout.strip().split(" ", 1)
    assert int(count) == len(controller_task.WARM) >= 6 and missing == "[]", out.stdout + out.stderr
    names = [entry[1] for entry in controller_task.WARM]
    assert "manent.kubernetes.manent_connection" in names and "local" in names  # what every manent task's worker loads
