# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The manent_analysis task: its argument spec, its parameters mapped to the engine (params.py,
prometheus.py) in one place, and its result. Shared by the module (plugins/modules/manent_analysis.py) and its
action plugin (the controller process, with progress lines).

:func:`run` returns the result dict, or raises: InputError before any query (invalid parameters);
PreflightFailed (``mode: preflight``) when a query is refused or Prometheus cannot be reached; AnalysisFailed
(``mode: analyze``) when the verdict is not Successful, except in check mode, where the verdict is reported with
a warning. Both carry the result as ``partial``. Every credential value, as given and as resolved from
``file:``/``env:``, is masked in the result and messages.
"""

from __future__ import annotations

import time

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import params as from_params
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import report
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.evaluate import SUCCESSFUL
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.prometheus import PrometheusClient
from ansible_collections.manent.kubernetes.plugins.module_utils.base.masking import MIN_LENGTH, Mask
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.provider import (
    CREDENTIAL_HEADERS, provider_from_params)
from ansible_collections.manent.kubernetes.plugins.module_utils.analysis.run import analyze, preflight
from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import HAS_KUBERNETES, Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.events import Recorder
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.option_names import (
    OPTION_NAMES_SPEC, error_message, names_of)

PROVIDER_SPEC = {
    "url": {"type": "str", "required": True},
    "bearer_token": {"type": "str", "no_log": True},
    "username": {"type": "str"},
    "password": {"type": "str", "no_log": True},
    # no_log keeps the values out of ansible's own logs; module_main leaves the values that are not secret shown
    "headers": {"type": "dict", "no_log": True},
    "secret_headers": {"type": "list", "elements": "str", "default": [], "no_log": False},  # names, not values
    "ca_file": {"type": "path"},
    "insecure_skip_tls_verify": {"type": "bool", "default": False},
    "timeout": {"type": "str", "default": "30s"},
}
BASELINE_SPEC = {
    "query": {"type": "str"},
    "max_factor": {"type": "float"},
    "max_offset": {"type": "float", "default": 0.0},
    "min_factor": {"type": "float"},
    "min_offset": {"type": "float", "default": 0.0},
    "reducer": {"type": "str", "choices": ["max", "min", "avg", "sum"]},
}
TRAFFIC_FLOOR_SPEC = {
    "query": {"type": "str", "required": True},
    "min": {"type": "float", "required": True},
}
CHECK_SPEC = {
    "name": {"type": "str", "required": True},
    "query": {"type": "str", "required": True},
    "min": {"type": "float"},
    "max": {"type": "float"},
    "baseline": {"type": "dict", "options": BASELINE_SPEC},
    "reducer": {"type": "str", "choices": ["all", "any", "max", "min", "avg", "sum"], "default": "all"},
    "interval": {"type": "str"},
    "count": {"type": "int"},
    "initial_delay": {"type": "str", "default": "0s"},
    "failure_limit": {"type": "int", "default": 0},
    "inconclusive_limit": {"type": "int", "default": 0},
    "consecutive_error_limit": {"type": "int", "default": 4},
    "max_measurements": {"type": "int"},
    "on_no_data": {"type": "str", "choices": ["fail", "inconclusive", "pass", "retry"], "default": "inconclusive"},
    "traffic_floor": {"type": "dict", "options": TRAFFIC_FLOOR_SPEC},
    "allow_warnings": {"type": "bool", "default": False},
    "enforce": {"type": "bool", "default": True},
}
CONTEXT_SPEC = {
    "namespace": {"type": "str"},
    "candidate_slot": {"type": "str"},
    "stable_slot": {"type": "str"},
    "candidate_service": {"type": "str"},
    "stable_service": {"type": "str"},
    "start": {"type": "raw"},
}
REGARDING_SPEC = {
    "api_version": {"type": "str", "default": "v1"},
    "kind": {"type": "str", "default": "ConfigMap"},
    "name": {"type": "str", "required": True},
}
EVENTS_SPEC = {
    "namespace": {"type": "str", "required": True},
    "regarding": {"type": "dict", "required": True, "options": REGARDING_SPEC},
}
ANALYSIS_SPEC = {
    "provider": {"type": "dict", "required": True, "options": PROVIDER_SPEC},
    "checks": {"type": "list", "elements": "dict", "required": True, "options": CHECK_SPEC},
    "context": {"type": "dict", "options": CONTEXT_SPEC},
    "mode": {"type": "str", "choices": ["analyze", "preflight"], "default": "analyze"},
    "interval": {"type": "str", "default": "1m"},
    "count": {"type": "int", "default": 5},
    "min_window": {"type": "str", "default": "1m"},
    "events": {"type": "dict", "options": EVENTS_SPEC},
    **OPTION_NAMES_SPEC,
}
# The cluster connection (the collection's action group), used only to record the verdict's Event (``events``).
CLUSTER_SPEC = dict(common.CONNECTION_SPEC, api_server={"type": "str"})

REFERENCES = ("file:", "env:")  # base/credentials.py
INSECURE_WARNING = ("TLS verification of Prometheus %s is turned off (provider.insecure_skip_tls_verify): anyone on "
                    "the network path can read the credentials and answer in Prometheus' place, deciding the "
                    "analysis; give the CA as provider.ca_file instead, and keep this for development only")
PLAIN_HTTP_WARNING = ("provider.url %s is plain http: the credentials cross the network unencrypted and anyone on "
                      "the path can answer in Prometheus' place; use https")


class PreflightFailed(ManentError):
    """A query of the preflight was refused, or Prometheus could not be reached; ``partial``: the result."""


class AnalysisFailed(ManentError):
    """The analysis' verdict is not Successful; ``partial``: the result (verdict, reason, checks)."""


class Outcome:
    """A result dict as the ``partial`` of an error (what module and action plugin read from it)."""

    changed = False

    def __init__(self, out):
        self._out = out

    def to_dict(self):
        return dict(self._out)


def argument_spec():
    return dict(CLUSTER_SPEC, **ANALYSIS_SPEC)


def warnings(provider):
    """The warnings every run with ``provider`` gets, on success and on failure."""
    out = []
    if provider.insecure_skip_tls_verify and provider.url.startswith("https://"):
        out.append(INSECURE_WARNING % provider.url)
    has_credentials = provider.bearer_token or provider.password or provider.headers
    if provider.url.startswith("http://") and has_credentials:
        out.append(PLAIN_HTTP_WARNING % provider.url)
    return out


def given_secrets(params):
    """The credential values as the task gives them: the token, the password and the values of the secret headers
    (provider.py). ``env:NAME`` and ``file:`` references are no secrets (the values they resolve to are, which the
    client masks): a message may name the file."""
    provider = (params or {}).get("provider") or {}
    values = [provider.get("bearer_token"), provider.get("password")]
    secret = set(CREDENTIAL_HEADERS) | {str(name).lower() for name in provider.get("secret_headers") or []}
    values.extend(value for name, value in (provider.get("headers") or {}).items() if str(name).lower() in secret)
    return {str(value) for value in values if value is not None and len(str(value)) >= MIN_LENGTH
            and not str(value).startswith(REFERENCES)}


def plain_header_values(params):
    """The values of the headers that are not secret (a tenant), as given: shown, not masked."""
    provider = (params or {}).get("provider") or {}
    secret = set(CREDENTIAL_HEADERS) | {str(name).lower() for name in provider.get("secret_headers") or []}
    return {str(value) for name, value in (provider.get("headers") or {}).items()
            if str(name).lower() not in secret and value is not None}


def run(params, check_mode=False, clock=time.time, sleep=time.sleep, on_measurement=None, transport=None):
    """The result dict of the task with ``params`` (validated module parameters); see the module docstring for
    what it raises. ``transport`` replaces the HTTP transport (unit tests)."""
    secrets = given_secrets(params)
    settings = from_params.settings_from_params(params)
    context = from_params.context_from_params(params.get("context"), clock())
    checks = from_params.checks_from_params(params.get("checks"), settings, context)
    provider = provider_from_params(params.get("provider"))
    client = PrometheusClient(provider, transport)
    secrets = Mask(secrets | client.secrets)
    try:
        if params.get("mode") == "preflight":
            return _preflight(checks, context, client, settings, clock, provider, secrets)
        return _analyze(checks, context, client, settings, clock, sleep, on_measurement, check_mode, provider,
                        secrets, lambda out: tell(params, out, check_mode, secrets))
    except ManentError:
        raise
    except Exception as exc:
        raise ManentError("unexpected error (%s): %s" % (type(exc).__name__, mask(str(exc), secrets))) from None


def mask(value, secrets):
    """``value`` (a string, or a result: its strings, keys included) with every one of ``secrets`` (values, or a
    masking.Mask) masked in every form, and every piece of one (masking.Mask)."""
    masker = secrets if isinstance(secrets, Mask) else Mask(secrets)
    return _masked(value, masker) if masker else value


def _masked(value, masker):
    if isinstance(value, str):
        return masker(value)
    if isinstance(value, dict):
        return {_masked(key, masker): _masked(item, masker) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(item, masker) for item in value]
    return value


def _preflight(checks, context, client, settings, clock, provider, secrets):
    result = preflight(checks, context, client, settings, clock=clock)
    out = mask(report.preflight_dict(result), secrets)
    out["warnings"] = warnings(provider)
    if result.refused:
        raise PreflightFailed(out["reason"], partial=Outcome(out))
    return out


def _analyze(checks, context, client, settings, clock, sleep, on_measurement, check_mode, provider, secrets, told):
    def progress(check_run, measurement):
        if on_measurement is not None:
            on_measurement(mask(report.progress_line(check_run, measurement), secrets))

    analysis = analyze(checks, context, client, settings, clock=clock, sleep=sleep, on_measurement=progress)
    out = mask(report.analysis_dict(analysis), secrets)
    out["warnings"] = warnings(provider)
    told(out)
    if out["verdict"] != SUCCESSFUL:
        if check_mode:
            out["warnings"].append("check mode: the analysis is %s; a run without --check fails here: %s"
                                   % (out["verdict"], out["reason"]))
            return out
        raise AnalysisFailed("analysis %s: %s" % (out["verdict"], out["reason"]), partial=Outcome(out))
    return out


def tell(params, out, check_mode, secrets):
    """Record the verdict of ``out`` (masked) as an Event (cluster/events.py) about ``events.regarding`` in
    ``events.namespace`` of the cluster of the connection options, when both are given and not in check mode.
    Best-effort: a failure is one warning in ``out``."""
    events = params.get("events")
    if check_mode or not events or not params.get("api_server") or not events["regarding"].get("name"):
        return
    reason, note = report.story(out)
    regarding = {"apiVersion": events["regarding"]["api_version"], "kind": events["regarding"]["kind"],
                 "namespace": events["namespace"], "name": events["regarding"]["name"]}
    if not HAS_KUBERNETES:
        out["warnings"].append("the Kubernetes Event %s was not recorded: the kubernetes Python package is missing"
                               % reason)
        return
    kube = None
    try:
        kube = Kube(common.connection(params))
        Recorder(kube, secrets=secrets).record(regarding, reason, note, out["warnings"])
    except Exception as exc:  # pylint: disable=broad-except  # best-effort: the verdict stands
        out["warnings"].append("the Kubernetes Event %s was not recorded: %s" % (reason, mask(str(exc), secrets)))
    finally:
        if kube is not None:
            kube.close()


def module_main(module):
    """exit_json / fail_json of a module run (plugins/modules/manent_analysis.py); warnings sent as warnings. The
    values of the headers that are not secret are taken off ansible's no_log values (``headers`` is no_log as a
    whole), so that a tenant ``prod`` does not mask every ``prod`` of the result."""
    module.no_log_values.difference_update(plain_header_values(module.params) - given_secrets(module.params))
    try:
        out = run(module.params, module.check_mode)
    except ManentError as exc:
        partial = exc.partial.to_dict() if exc.partial is not None else {}
        for warning in partial.pop("warnings", None) or []:
            module.warn(warning)
        partial["changed"] = False
        module.fail_json(msg=error_message(exc, names_of(module.params)), **partial)
        return
    for warning in out.pop("warnings", None) or []:
        module.warn(warning)
    module.exit_json(**out)
