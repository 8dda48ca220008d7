# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of manent_apply: with a local connection (inventory hosts are API servers, the work happens
on the controller) it runs the deploy in the controller process and prints, every 10 seconds of a rollout,
which workloads are still rolling out. Otherwise (another connection, async, or no kubernetes package in the
controller's Python) it runs the module as usual."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.manent.kubernetes.plugins.module_utils import apply_task
from ansible_collections.manent.kubernetes.plugins.module_utils.client import HAS_KUBERNETES
from ansible_collections.manent.kubernetes.plugins.module_utils.errors import ManentError

display = Display()


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(apply_task.argument_spec())

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if self._connection.transport != "local" or self._task.async_val or not HAS_KUBERNETES:
            result.update(self._execute_module(module_name="manent.kubernetes.manent_apply", task_vars=task_vars,
                                               wrap_async=self._task.async_val))
            return result
        validation = ArgumentSpecValidator(apply_task.argument_spec()).validate(self._task.args)
        if validation.error_messages:
            result.update(failed=True, msg="; ".join(validation.error_messages))
            return result
        params = validation.validated_parameters
        host = task_vars.get("inventory_hostname", "") if task_vars else ""
        check_mode, diff = bool(self._play_context.check_mode), bool(self._play_context.diff)

        def progress(refs):
            display.display("manent_apply [%s]: still rolling out: %s" % (host, ", ".join(refs)))

        warnings = []
        try:
            deployed = apply_task.run(params, check_mode, diff, on_progress=progress)
        except ManentError as exc:
            partial = getattr(exc, "partial", None)
            if partial is not None and hasattr(partial, "to_dict"):
                out = partial.to_dict()
                warnings.extend(out.pop("warnings", None) or [])
                result.update(out)
                result["changed"] = partial.changed
            result.update(failed=True, msg=str(exc))
        else:
            out = apply_task.result_dict(deployed, diff)
            warnings.extend(out.pop("warnings", None) or [])
            result.update(out)
        if warnings:
            result["warnings"] = warnings
        return result
