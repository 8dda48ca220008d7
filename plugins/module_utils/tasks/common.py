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
from ansible_collections.manent.kubernetes.plugins.module_utils.base import k8s_auth_env
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
        env = environment_connection(params)
        if env is not None:
            return _env_options(params, env)
        raise InputError("no API server given: set api_server, or kubeconfig (and context)", subject="api_server",
                         hint="give the cluster's https:// URL, or a kubeconfig whose context reaches it (or, for a "
                              "job of one cluster, AWX's Kubernetes credential: K8S_AUTH_HOST and K8S_AUTH_API_KEY)")
    return ConnectionOptions(
        server=params["api_server"], port=params["port"], token=params.get("token") or "",
        client_cert=params.get("client_cert") or "", client_key=params.get("client_key") or "",
        ca=params.get("ca") or "", ca_file=params.get("ca_file") or "",
        insecure_skip_tls_verify=params["insecure_skip_tls_verify"], timeout=params["request_timeout"],
        retry_time=retry_time(params),
        # a connection kept for each request a task may send at once (manent_apply's concurrency)
        pool_size=max(ConnectionOptions.pool_size, params.get("concurrency") or 0))


def environment_connection(params):
    """The API server of the environment (AWX's Kubernetes credential: base/k8s_auth_env.py) when the task is given
    no connection of its own (no kubeconfig, none of ``STATIC_CONNECTION``), else None."""
    if params.get("kubeconfig") or static_connection(params):
        return None
    return k8s_auth_env.read()


def _env_options(params, env):
    if not env.token:
        raise InputError("%s is set (%s) but %s is not: no credential for it" % (
            k8s_auth_env.HOST, env.host, k8s_auth_env.API_KEY), subject="connection",
            hint="give AWX's OpenShift or Kubernetes API Bearer Token credential its token, or the task its own "
                 "connection (api_server and token, or kubeconfig)")
    return ConnectionOptions(
        server=env.host, port=443, token=env.token, ca_file=env.ca_file,
        insecure_skip_tls_verify=params["insecure_skip_tls_verify"] or not env.verify,
        timeout=params["request_timeout"], retry_time=retry_time(params),
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


INSECURE_TEXT = ("TLS verification of the API server %s is turned off (%s): anyone on the network path can read the "
                 "credentials and change what is deployed; %s instead, and keep this for development clusters only")
INSECURE_WARNING = INSECURE_TEXT % ("%s", "insecure_skip_tls_verify", "give the cluster CA (ca / ca_file)")


def insecure_warning(params):
    """The warning every run that does not verify the API server's certificate gets, or None: the module path
    (exit_result and fail) and the controller path (plugins/plugin_utils/controller_task.py) both send it, on
    success and on failure. Turned off by ``insecure_skip_tls_verify``, by ``insecure-skip-tls-verify`` in the
    cluster of the kubeconfig's context, or by K8S_AUTH_VERIFY_SSL (AWX's Kubernetes credential)."""
    params = params or {}
    if params.get("insecure_skip_tls_verify"):
        return INSECURE_WARNING % (params.get("api_server") or "of context %r" % (params.get("context") or "(current)"))
    if params.get("kubeconfig") and not static_connection(params):
        return _kubeconfig_insecure(params)
    env = environment_connection(params)
    if env is not None and not env.verify:
        return INSECURE_TEXT % (env.host, "%s is false" % env.verify_name,
                                "give AWX's Kubernetes credential the cluster's CA (Certificate Authority data) with "
                                "Verify SSL on (without a CA, AWX sets %s to False)" % k8s_auth_env.VERIFY[1])
    return None


def _kubeconfig_insecure(params):
    """The warning for a kubeconfig context whose cluster sets insecure-skip-tls-verify, or None (also when the
    kubeconfig cannot be read: the task reports that itself)."""
    from ansible_collections.manent.kubernetes.plugins.module_utils.base import kubeconfig
    try:
        target = kubeconfig.load(params["kubeconfig"], params.get("context") or "")
    except (ManentError, OSError):
        return None
    if not target.insecure_skip_tls_verify:
        return None
    cause = "insecure-skip-tls-verify of cluster %r, %s" % (target.cluster_name, target.where())
    return INSECURE_TEXT % (target.server or "of %s" % target.where(), cause,
                            "give the cluster's certificate-authority-data (or certificate-authority) in the "
                            "kubeconfig")


BOTH_WARNING = ("%s and %s are both set: %s used, %s ignored (set one or the other for a host)")
ENV_NAME = "%s (AWX's Kubernetes credential)" % k8s_auth_env.HOST


def connection_warnings(params):
    """The warnings about how a task reaches its cluster (TLS not verified; a kubeconfig given with the static
    options, which win; AWX's Kubernetes credential in the environment of a task given its own connection, which
    wins), named as the task's ``option_names`` say; sent on success and on failure, like insecure_warning."""
    params = params or {}
    warnings = []
    insecure = insecure_warning(params)
    if insecure:
        warnings.append(insecure)
    names = names_of(params)
    static = static_connection(params)
    if static and params.get("kubeconfig"):
        given = ", ".join(names.get(name, name) for name in static)
        kubeconfig = names.get("kubeconfig", "kubeconfig")
        warnings.append(BOTH_WARNING % (kubeconfig, given, given + (" are" if len(static) > 1 else " is"), kubeconfig))
    own = static or (["kubeconfig"] if params.get("kubeconfig") else [])
    if own and k8s_auth_env.read() is not None:
        given = ", ".join(names.get(name, name) for name in own)
        warnings.append(BOTH_WARNING % (ENV_NAME, given, given + (" are" if len(own) > 1 else " is"),
                                        k8s_auth_env.HOST))
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
