# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every module shares: the connection argument spec, building the engine's objects from
module parameters (in one place), and turning engine errors into ``fail_json``."""

from __future__ import annotations

import os
import traceback

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import (
    HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR, ConnectionOptions, Kube)
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.events import Recorder, record_ref
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.option_names import (
    OPTION_NAMES_SPEC, error_message, names_of)

CONNECTION_SPEC = {
    "api_server": {"type": "str"},
    "port": {"type": "int", "default": 6443},
    "token": {"type": "str", "no_log": True},
    "client_cert": {"type": "str"},
    "client_key": {"type": "str", "no_log": True},
    "ca": {"type": "str"},
    "ca_file": {"type": "path"},
    "insecure_skip_tls_verify": {"type": "bool", "default": False},
    "request_timeout": {"type": "float", "default": 30.0},
    "work_dir": {"type": "path"},
    # a path, env:NAME, or the kubeconfig itself (its YAML, or a mapping): no_log, since it may hold credentials
    "kubeconfig": {"type": "raw", "no_log": True},
    "context": {"type": "str"},
}
# The options that reach a cluster without a kubeconfig: given with one, they are used and the kubeconfig is not.
STATIC_CONNECTION = ("api_server", "token", "client_cert", "client_key", "ca", "ca_file")

RELEASE_SPEC = {
    "application": {"type": "str", "required": True},
    "artifact_name": {"type": "str"},
    "environment": {"type": "str", "required": True},
    "tenant": {"type": "str", "default": "untenanted"},
    "namespace": {"type": "str", "default": "default"},
}


def argument_spec(*specs):
    out = {}
    for spec in (CONNECTION_SPEC, OPTION_NAMES_SPEC) + specs:
        out.update(spec)
    return out


def require_kubernetes(module):
    if not HAS_KUBERNETES:
        from ansible.module_utils.basic import missing_required_lib
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=str(KUBERNETES_IMPORT_ERROR))


def work_dir(params):
    path = params.get("work_dir") or os.path.join(os.path.expanduser("~"), ".cache", "manent", "work")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def connection(params):
    kubeconfig = params.get("kubeconfig") or ""
    if kubeconfig and not static_connection(params):
        return ConnectionOptions(
            server="", kubeconfig=kubeconfig, context=params.get("context") or "",
            insecure_skip_tls_verify=params["insecure_skip_tls_verify"], timeout=params["request_timeout"],
            retry_time=retry_time(params), cache_dir=os.path.join(work_dir(params), "credentials"),
            pool_size=max(ConnectionOptions.pool_size, params.get("concurrency") or 0))
    if not params.get("api_server"):
        raise InputError("no API server given: set api_server, or kubeconfig (and context)", subject="api_server",
                         hint="give the cluster's https:// URL, or a kubeconfig whose context reaches it")
    return ConnectionOptions(
        server=params["api_server"], port=params["port"], token=params.get("token") or "",
        client_cert=params.get("client_cert") or "", client_key=params.get("client_key") or "",
        ca=params.get("ca") or "", ca_file=params.get("ca_file") or "",
        insecure_skip_tls_verify=params["insecure_skip_tls_verify"], timeout=params["request_timeout"],
        retry_time=retry_time(params),
        # a connection kept for each request a task may send at once (manent_apply's concurrency)
        pool_size=max(ConnectionOptions.pool_size, params.get("concurrency") or 0))


def static_connection(params):
    """The options of ``STATIC_CONNECTION`` given in ``params``."""
    return [name for name in STATIC_CONNECTION if params.get(name)]


def retry_time(params):
    """How long one request may keep retrying an API server that went away: at most the run's wait_timeout."""
    from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import parse_duration
    default = ConnectionOptions.retry_time
    try:
        return min(default, parse_duration(params["wait_timeout"])) if params.get("wait_timeout") else default
    except ManentError:
        return default  # the module reports the unreadable wait_timeout itself


def open_cluster(params):
    """(Kube, Discovery) for the target; discovery cached in the run's work dir."""
    kube = Kube(connection(params))
    return kube, Discovery(kube, cache_dir=os.path.join(work_dir(params), "discovery"))


def told(kube, dry_run, deploy):
    """``deploy()`` (a deploy or rollback: its DeployResult), told as an Event regarding the release's history record
    (cluster/events.py: best-effort, none in a dry run or when nothing changed): Deployed or RolledBack, or, when it
    fails with its partial result, DeployFailed or RollbackFailed."""
    recorder = Recorder(kube, dry_run=dry_run)
    try:
        result = deploy()
    except ManentError as exc:
        partial = exc.partial
        if partial is not None and hasattr(partial, "story") and partial.record:
            reason, note = partial.story(error=exc)
            recorder.record(record_ref(partial.namespace, partial.record), reason, note, partial.warnings)
        raise
    reason, note = result.story()
    if reason:
        recorder.record(record_ref(result.namespace, result.record), reason, note, result.warnings)
    return result


def release_key(params):
    return ReleaseKey(application=params["application"], artifact=params.get("artifact_name") or "",
                      environment=params["environment"], tenant=params.get("tenant") or "")


def release(params, version, deployment=""):
    return Release(release_key(params), version=version, deployment=deployment or "")


INSECURE_WARNING = ("TLS verification of the API server %s is turned off (insecure_skip_tls_verify): anyone on the "
                    "network path can read the credentials and change what is deployed; give the cluster CA (ca / "
                    "ca_file) instead, and keep this for development clusters only")


def insecure_warning(params):
    """The warning every run with ``insecure_skip_tls_verify`` gets, or None: the module path (exit_result and fail)
    and the controller path (plugins/plugin_utils/controller_task.py) both send it, on success and on failure."""
    params = params or {}
    if params.get("insecure_skip_tls_verify"):
        return INSECURE_WARNING % (params.get("api_server") or "of context %r" % (params.get("context") or "(current)"))
    return None


BOTH_WARNING = ("%s and %s are both set: %s used, %s ignored (set one or the other for a host)")


def connection_warnings(params):
    """The warnings about how a task reaches its cluster (insecure TLS; a kubeconfig given with the static options,
    which win), named as the task's ``option_names`` say; sent on success and on failure, like insecure_warning."""
    params = params or {}
    warnings = []
    insecure = insecure_warning(params)
    if insecure:
        warnings.append(insecure)
    static = static_connection(params) if params.get("kubeconfig") else []
    if static:
        names = names_of(params)
        given = ", ".join(names.get(name, name) for name in static)
        kubeconfig = names.get("kubeconfig", "kubeconfig")
        warnings.append(BOTH_WARNING % (kubeconfig, given, given + (" are" if len(static) > 1 else " is"), kubeconfig))
    return warnings


def warn_insecure(module):
    for warning in connection_warnings(getattr(module, "params", None)):
        module.warn(warning)


def exit_result(module, out):
    """exit_json with the engine's warnings sent as Ansible warnings (not as a result key)."""
    warn_insecure(module)
    for warning in out.pop("warnings", None) or []:
        module.warn(warning)
    module.exit_json(**out)


def run_task(module, task, needs_kubernetes=True):
    """The whole of a module's work: ``task.run`` (a tasks/*_task.py entry point) on the module's parameters, then
    exit_json with its result or fail_json with the error and the partial result it carries."""
    if needs_kubernetes:
        require_kubernetes(module)
    try:
        result = task.run(module.params, module.check_mode, module._diff)  # pylint: disable=protected-access
    except ManentError as exc:
        fail(module, exc)
    exit_result(module, result)


def fail(module, exc, **result):
    """fail_json from an engine error, keeping its partial result."""
    warn_insecure(module)
    partial = getattr(exc, "partial", None)
    if partial is not None and hasattr(partial, "to_dict"):
        result.update(partial.to_dict())
        result["changed"] = partial.changed
        for warning in result.pop("warnings", None) or []:
            module.warn(warning)
    if isinstance(exc, ManentError):
        module.fail_json(msg=error_message(exc, names_of(getattr(module, "params", None))), **result)
    module.fail_json(msg="unexpected error: %s" % exc, exception=traceback.format_exc(), **result)
