# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one progress mechanism of the deploy and the rollback: the action plugins of manent_apply and
manent_history run the task in the controller process when the connection is local (inventory hosts are API
servers, the work happens on the controller anyway) and print what the workloads of a rollout are waiting for
and since when, once per change (module_utils/engine/progress.py). Otherwise (another connection, async, or no
kubernetes package in the controller's Python) the module runs as usual."""

from __future__ import annotations

import gc
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.loader import connection_loader, filter_loader, lookup_loader, test_loader
from ansible.utils.display import Display

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.option_names import (
    error_message, names_of, validation_message)
from ansible_collections.manent.kubernetes.plugins.module_utils.engine import progress
from ansible_collections.manent.kubernetes.plugins.module_utils.base import exec_credentials
from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import HAS_KUBERNETES
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import Interrupted, ManentError
from ansible_collections.manent.kubernetes.plugins.plugin_utils import stopping
from ansible_collections.manent.kubernetes.plugins.plugin_utils.plain_data import plain

display = Display()

# The plugins that the workers of the role's tasks load: one name per file of Jinja plugins that its templates use
# (ansible-core's filters and tests: the first name looked up loads every file of its kind; this collection's filter
# files), the lookup that every manent task's connection calls, and the connection plugin of its hosts.
WARM = ((filter_loader, "ansible.builtin.bool"), (test_loader, "ansible.builtin.match"),
        (filter_loader, "manent.kubernetes.manent_table"), (filter_loader, "manent.kubernetes.manent_preflight"),
        (lookup_loader, "manent.kubernetes.manent_connection"), (connection_loader, "local"))


def warm():
    """Load the plugins of ``WARM`` into this process. Ansible loads the classes of the action plugins in the
    controller's parent process, before it forks a worker for each task and host, so this runs there once, when the
    first manent task is queued: every later worker finds these plugins loaded instead of importing them again (and
    parsing the documentation of a lookup or connection plugin for its options) for each task and cluster. Measured
    in one worker: 8 to 12 ms of CPU for the lookup, about 2.5 ms for the connection (docs/performance.md). A plugin
    that fails to load here is left to the worker, which reports it where it is used."""
    for loader, name in WARM:
        try:
            loader.get(name, class_only=True)
        except Exception:  # pylint: disable=broad-except
            continue


warm()
# What the parent holds by now (ansible-core, the inventory and its variables, the plugins just warmed) is put out of
# the garbage collector's reach (Python's gc.freeze, made for processes that fork): the worker forked for each task
# and cluster otherwise walks all of it in its first full collection, writing into every object's header and so
# copying the parent's memory page by page. Measured on 30 clusters, nothing changed, 3 alternating pairs on a loaded
# machine: 7 to 10 % less controller CPU in every pair (docs/performance.md). Objects the parent frees later by
# reference count are still freed; only cycles created before this point are never collected.
gc.freeze()
# The parent process: the key with which the workers of this run share exec credentials (exec_credentials.py).
exec_credentials.share_across_workers()


def in_process(action):
    """Whether the task of ``action`` (an ActionBase) can run in the controller process."""
    return action._connection.transport == "local" and not action._task.async_val and HAS_KUBERNETES


def run_module(action, module_name, task_vars):
    """The module's result, run the usual way (async included)."""
    return action._execute_module(module_name=module_name, task_vars=task_vars, wrap_async=action._task.async_val)


def run(action, task_vars, name, argument_spec, task):
    """Validate the task's arguments against ``argument_spec`` and return ``task(params, check_mode, diff,
    on_progress)``, a result dict; a ManentError becomes a failed result with the partial result it carries, and
    so does a stop of the run (SIGTERM, SIGINT: Interrupted), after which the worker ends (stopping.py).
    An error about an option names it as the task's ``option_names`` say (tasks/option_names.py).
    Progress lines name the module (``name``) and the host. With ``insecure_skip_tls_verify`` the result warns,
    whether the task succeeded or failed, as the module would."""
    result = {}
    # As plain data: the validator deep-copies what it is given, and for the tagged values of ansible-core 2.19 and later
    # that copy took 7 to 8 ms of CPU in every manent_render or manent_apply task and cluster, against 0.3 ms for the
    # conversion (docs/performance.md, "Arguments as plain data").
    validation = ArgumentSpecValidator(argument_spec).validate(plain(action._task.args))
    if validation.error_messages:
        result.update(failed=True, msg=validation_message(validation.error_messages, names_of(action._task.args)))
        return result
    host = task_vars.get("inventory_hostname", "") if task_vars else ""

    reporter = progress.Reporter()

    def on_progress(workloads):
        for line in reporter.lines(workloads):
            display.display("%s [%s]: %s" % (name, host, line))

    warnings = common.connection_warnings(validation.validated_parameters)
    with stopping.stopping():  # a stopped run: the task cleans up, then the worker ends (plugin_utils/stopping.py)
        try:
            out = task(validation.validated_parameters, bool(action._play_context.check_mode),
                       bool(action._play_context.diff), on_progress)
        except (ManentError, Interrupted) as exc:
            partial = getattr(exc, "partial", None)
            if partial is not None and hasattr(partial, "to_dict"):
                out = partial.to_dict()
                warnings.extend(out.pop("warnings", None) or [])
                result.update(out)
                result["changed"] = partial.changed
            result.update(failed=True, msg=error_message(exc, names_of(validation.validated_parameters)))
        else:
            warnings.extend(out.pop("warnings", None) or [])
            result.update(out)
    if warnings:
        result["warnings"] = warnings
    return result
