# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a module's ``run(module)`` in the controller's worker process (action plugins of manent_render and
manent_history): :class:`ModuleShim` is what ``run`` needs of an AnsibleModule (parameters, check and diff mode,
warnings), and :func:`task` turns ``run`` into the task callable of plugin_utils/controller_task.py."""

from __future__ import annotations


class ModuleShim:
    """The parameters, check and diff mode of a task, and the warnings ``run`` emits."""

    def __init__(self, params, check_mode=False, diff=False):
        self.params = params
        self.check_mode = check_mode
        self._diff = diff
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


def task(run):
    """``run(module)`` as a controller_task task: (params, check_mode, diff, on_progress) -> result dict whose
    ``warnings`` are those the module would have sent (controller_task adds the insecure-TLS one, as it does for
    every task it runs)."""

    def call(params, check_mode, diff, _on_progress):
        shim = ModuleShim(params, check_mode, diff)
        out = run(shim)
        out["warnings"] = shim.warnings + list(out.pop("warnings", None) or [])
        return out
    return call
