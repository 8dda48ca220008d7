# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the deploy role that read many variables or many hosts, in Python rather than Jinja: a check costs
one filter call on the controller instead of a template compiled and rendered per rule and per cluster.

``values | manent_preflight``: the broken preflight rules, as "variable: what to do" lines (the analysis
settings included).
``hosts | manent_shared_targets(hostvars, namespace)``: one line per group of hosts that reach the same cluster
(API server URL and port) for the same release namespace.
``hosts | manent_argument_errors(hostvars, entry_point)``: every host's variables checked against an entry point of the
deploy role's argument spec, in one task for the whole run; one line per error, naming its hosts.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from jinja2 import Undefined

from ansible_collections.manent.kubernetes.plugins.filter.manent import as_int, as_text, host_ranges
from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import digest_problem
from ansible_collections.manent.kubernetes.plugins.plugin_utils.plain_data import plain

NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
DURATION = re.compile(r"^([0-9]+([.][0-9]+)?(ms|s|m|h)?)+$")
DEFAULT_PORT = 6443


def _common(v):
    host = v.get("host", "")
    has_cert, has_key = bool(as_text(v.get("client_cert"))), bool(as_text(v.get("client_key")))
    namespace = as_text(v.get("namespace"))
    return [
        ("deploy_environment", bool(as_text(v.get("environment"))),
         "is empty; set the environment of the release key, e.g. prod"),
        ("deploy_application", bool(as_text(v.get("application"))),
         "is empty and the artifact has no name; set the application of the release key"),
        ("deploy_namespace", bool(NAMESPACE.match(namespace)),
         "'%s' is not a namespace name (lowercase letters, digits and '-', at most 63)" % namespace),
        ("deploy_keep_releases", as_int(v.get("keep_releases")) >= 2,
         "must be at least 2 (history needs the release in service and the one before it)"),
        ("deploy_parallel", as_int(v.get("parallel")) >= 1, "must be at least 1"),
        ("deploy_wait_timeout", bool(DURATION.match(as_text(v.get("wait_timeout")))),
         "'%s' is not a duration; use seconds or e.g. 90s, 5m, 1m30s" % as_text(v.get("wait_timeout"))),
        ("deploy_wave_by", v.get("wave_by") in ("region", "az"), "must be region or az"),
        ("manent_api_server", not as_text(v.get("api_server")).startswith("http://"),
         "host %s uses plain http; use the host name or an https:// URL" % host),
        ("manent_client_key", has_cert == has_key,
         "host %s sets only one of manent_client_cert and manent_client_key; set both or neither" % host),
        ("manent_token", bool(as_text(v.get("token"))) or has_cert or v.get("kubeconfig") is True
         or v.get("env_connection") is True,
         "host %s has neither a token nor a client certificate; set manent_token (vault string, file:/path or "
         "env:NAME), manent_client_cert and manent_client_key, or manent_kubeconfig" % host),
        ("K8S_AUTH_HOST", v.get("env_connection") is not True or as_int(v.get("play_hosts")) <= 1,
         "AWX's Kubernetes credential reaches one cluster, and host %s, which has no connection variables of its "
         "own, would use it in a play of %d hosts; give each host manent_kubeconfig (and manent_context) or "
         "manent_api_server and manent_token (a custom credential type per cluster: docs/role.md, AWX), or run the "
         "job on one host" % (host, as_int(v.get("play_hosts")))),
    ]


def _artifact(v):
    artifact = v.get("artifact")
    kind = artifact.get("type", "kubernetes") if isinstance(artifact, Mapping) else "kubernetes"
    shown = artifact.get("type", "") if isinstance(artifact, Mapping) else ""
    # the digest as YAML read it (a number, when it was digits only and unquoted), else as the role wrote it
    written = artifact.get("sha256") if isinstance(artifact, Mapping) else None
    sha256_problem = digest_problem(written if isinstance(written, (int, float)) else as_text(v.get("sha256")),
                                    prefix=False)
    return [
        ("deploy_artifact", isinstance(artifact, Mapping) and len(artifact) > 0,
         "is not set; give {type: kubernetes, name, version, source, sha256}"),
        ("deploy_artifact.type", kind in list(v.get("artifact_types") or []),
         "'%s' is not one of deploy_artifact_types" % as_text(shown)),
        ("deploy_artifact.name", bool(as_text(v.get("artifact_name", v.get("name")))), "is empty"),
        ("deploy_artifact.version", bool(as_text(v.get("version"))), "is empty"),
        ("deploy_artifact.source", bool(as_text(v.get("source"))), "is empty; give a URL or a path on the controller"),
        ("deploy_artifact.sha256", not sha256_problem, sha256_problem),
    ]


def _apply(v):
    return [("deploy_concurrency", as_int(v.get("concurrency")) >= 0,
             "must be at least 1, or 0 for manent_apply's default")]


ANALYSIS_OPTIONS = ("checks", "interval", "count", "min_window")
ON_VERDICT = ("on_failure", "on_error", "on_inconclusive")  # what a Failed, Error or Inconclusive verdict does
ANALYSIS_KEYS = {"traffic": ANALYSIS_OPTIONS + ON_VERDICT,
                 "wave": ANALYSIS_OPTIONS + ON_VERDICT + ("bake", "quorum")}
ON_FAILURE = {"traffic": ("abort", "pause"), "wave": ("stop", "rollback")}
QUORUM = re.compile(r"^(all|[1-9][0-9]*|0?[.][0-9]*[1-9][0-9]*|1([.]0*)?|[0-9]+([.][0-9]+)?%)$")


def _analysis_setting(name, value, kind, inherited=None):
    """The broken rules of one analysis setting (deploy_traffic_analysis, a step's analysis, deploy_wave_analysis)."""
    if not isinstance(value, Mapping):
        return [(name, False, "must be a dict with checks (and on_failure: %s); see docs/analysis.md"
                 % " | ".join(ON_FAILURE[kind]))]
    rules = [("%s.%s" % (name, key), False, "is not a setting; use %s" % ", ".join(ANALYSIS_KEYS[kind]))
             for key in value if key not in ANALYSIS_KEYS[kind]]
    checks = value.get("checks", (inherited or {}).get("checks"))
    ok = isinstance(checks, list) and len(checks) > 0 and all(
        isinstance(check, Mapping) and as_text(check.get("name")) and as_text(check.get("query")) for check in checks)
    rules.append(("%s.checks" % name, ok, "must be a list of checks, each with a name and a query"))
    for key in ON_VERDICT:
        action = value.get(key, ON_FAILURE[kind][0])
        rules.append(("%s.%s" % (name, key), action in ON_FAILURE[kind],
                      "'%s' is not one of %s" % (as_text(action), ", ".join(ON_FAILURE[kind]))))
    if kind == "wave":
        bake = as_text(value.get("bake", "0s"))
        rules.append(("%s.bake" % name, bool(DURATION.match(bake)),
                      "'%s' is not a duration; use e.g. 5m, 90s" % bake))
        quorum = as_text(value.get("quorum", "all")).strip()
        rules.append(("%s.quorum" % name, bool(QUORUM.match(quorum)) and quorum not in ("0%", "0.0%"),
                      "'%s' is not a number of clusters (2), a fraction (0.5) or a percentage (50%%) above 0"
                      % quorum))
    return rules


def _analysis(v):
    """deploy_traffic_analysis, the steps' analysis, deploy_wave_analysis, deploy_analysis_context and
    deploy_analysis_provider (its url: required when an analysis is set)."""
    rules, used = [], False
    traffic, wave = v.get("traffic_analysis") or {}, v.get("wave_analysis") or {}
    if traffic:
        used = True
        rules += _analysis_setting("deploy_traffic_analysis", traffic, "traffic")
    steps = v.get("traffic_steps") or []
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        own = step.get("analysis") if isinstance(step, Mapping) else None
        if own in (None, False):
            continue
        used = True
        rules += _analysis_setting("deploy_traffic_steps[%d].analysis" % index, own, "traffic",
                                   traffic if isinstance(traffic, Mapping) else {})
    if wave:
        used = True
        rules += _analysis_setting("deploy_wave_analysis", wave, "wave")
    rules.append(("deploy_analysis_context", isinstance(v.get("analysis_context") or {}, Mapping),
                  "must be a dict of placeholder values (namespace, candidate_slot, ...)"))
    if used:
        url = as_text(v.get("analysis_provider_url"))
        rules.append(("deploy_analysis_provider.url", url.startswith(("https://", "http://")),
                      "is not set; give the Prometheus URL (https://...) and its credentials in "
                      "deploy_analysis_provider, or remove the analysis settings"))
    return rules


PARTS = {"artifact": _artifact, "apply": _apply, "analysis": _analysis}


def manent_preflight(values, parts=None):
    """The rules of the role's preflight that ``values`` break, as "variable: what to do" lines; the common rules
    always, the rules of ``parts`` ("artifact", "apply") too, by default the parts whose values are given.
    ``values``: environment, application, namespace, keep_releases, parallel, wait_timeout, wave_by, host,
    api_server, client_cert, client_key, token, kubeconfig (whether one is set), env_connection (whether the host is
    reached through AWX's Kubernetes credential, K8S_AUTH_HOST), play_hosts (how many hosts the play targets);
    artifact (the descriptor), artifact_types, and name (or artifact_name), version, source, sha256 as
    manent_artifact reads them from the descriptor (artifact); concurrency (apply); analysis_context,
    analysis_provider_url, traffic_analysis, traffic_steps, wave_analysis (analysis)."""
    values = values if isinstance(values, Mapping) else {}
    if parts is None:
        parts = [part for part, key in (("artifact", "artifact"), ("apply", "concurrency"),
                                        ("analysis", "analysis_context")) if key in values]
    rules = _common(values)
    for part in parts:
        rules += PARTS[part](values)
    return ["%s: %s" % (var, msg) for var, ok, msg in rules if not ok]


def cluster_url(server, port=DEFAULT_PORT):
    """The API server URL a host's connection variables name, as the modules build it: https, the port added
    when the server has none; host names compared in lower case."""
    server = as_text(server).strip().rstrip("/")
    rest = server[len("https://"):] if server.lower().startswith("https://") else server
    authority, _sep, path = rest.partition("/")
    if ":" not in authority and not authority.startswith("["):
        authority = "%s:%s" % (authority, as_int(port) or DEFAULT_PORT)
    return "https://%s%s" % (authority.lower(), "/" + path if path else "")


def _kubeconfig_file(value):
    """Whether a manent_kubeconfig value names a file (not the kubeconfig itself, not env:NAME)."""
    if not isinstance(value, str) or not value.strip():
        return False
    value = value.strip()
    return "\n" not in value and not value.startswith(("{", "env:", "apiVersion"))


def manent_shared_targets(hosts, hostvars, namespace=""):
    """The hosts of ``hosts`` that reach the same cluster for the same release namespace, one line per group
    (empty when every host has a cluster and namespace of its own). A host's cluster is its manent_api_server
    (else its name) and manent_api_port, or the context of its manent_kubeconfig when that is a file (named by its
    path: the kubeconfig's content is never shown); its namespace deploy_namespace, else ``namespace`` (the
    role's)."""
    groups = {}
    for host in hosts or []:
        host_vars = hostvars.get(host) or {}
        cluster = cluster_url(host_vars.get("manent_api_server") or host, host_vars.get("manent_api_port"))
        config = host_vars.get("manent_kubeconfig")
        if not host_vars.get("manent_api_server") and _kubeconfig_file(config):
            cluster = "context %s of kubeconfig %s" % (as_text(host_vars.get("manent_context")) or "(current)",
                                                       os.path.normpath(os.path.expanduser(str(config))))
        key = (cluster, as_text(host_vars.get("deploy_namespace") or namespace))
        groups.setdefault(key, []).append(str(host))
    return ["hosts %s reach the same cluster (%s) for the same namespace (%s): each would deploy the release "
            "there, one over the other; give each host its own deploy_namespace, or target one of them (-l)"
            % (", ".join(names), url, ns) for (url, ns), names in groups.items() if len(names) > 1]


# roles/<role>/meta/argument_specs.yml of this collection (plugins/filter/ is two levels below its root)
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
_SPECS = {}


def _argument_spec(role, entry_point):
    """The options of ``entry_point`` in the argument spec of this collection's ``role`` (read once)."""
    path = os.path.join(ROLES, role, "meta", "argument_specs.yml")
    if path not in _SPECS:
        with open(path, encoding="utf-8") as handle:
            _SPECS[path] = (yaml.safe_load(handle) or {}).get("argument_specs") or {}
    if entry_point not in _SPECS[path]:
        raise ValueError("%s has no entry point %r" % (path, entry_point))
    return (_SPECS[path][entry_point] or {}).get("options") or {}


def _refuse_undefined(value):
    """Raise on a value that is undefined: ansible-core 2.19 and later template it to such a marker, earlier versions
    leave the template in place (so a template left in a string is taken as undefined too)."""
    if isinstance(value, Undefined) or (isinstance(value, str) and ("{{" in value or "{%" in value)):
        raise ValueError("undefined")


def _plain(value):
    """A templated variable as plain data, for the validator and for comparing the hosts' variables; an undefined
    value anywhere in it raises. Keys as text: the hosts' variables are compared by their JSON, sorted by key."""
    return plain(value, _refuse_undefined, str)


def manent_argument_errors(hosts, hostvars, entry_point="plan"):
    """What ansible-playbook checks for each host when a role's entry point is imported with argument validation,
    done once for all ``hosts``: each host's variables (inventory, extra vars, facts: its ``hostvars``) that the
    entry point's argument spec names, validated against it. The role's defaults are not among them; they are the
    role's own and match the spec (tests/integration/test_playbooks.py). A variable that cannot be templated here
    (its template names one of the role's variables, which hostvars does not hold) is left to the tasks that use
    it, which template it with the role's variables. Hosts whose variables are the same are validated once.
    Returns one line per distinct error, naming the hosts that have it; empty when all pass."""
    options = _argument_spec("deploy", entry_point)
    validator = ArgumentSpecValidator(options)
    checked, errors = {}, {}
    for host in hosts or []:
        host_vars = hostvars[host]
        values = {}
        for name in options:
            if name not in host_vars:
                continue
            try:
                values[name] = _plain(host_vars[name])
            except Exception:  # pylint: disable=broad-except  # any templating error: see the docstring
                continue
        key = json.dumps(values, sort_keys=True, default=repr)
        if key not in checked:
            messages = validator.validate(values, validate_role_argument_spec=True).error_messages
            checked[key] = [_redact(message, values) for message in messages]
        for message in checked[key]:
            errors.setdefault(message, []).append(str(host))
    return ["%s: %s" % (host_ranges(names), message) for message, names in errors.items()]


SECRET = re.compile(r"password|token|secret|_key$")


def _redact(message, values):
    """``message`` without the values of the options that hold credentials (a validator's message may quote the
    value it could not convert)."""
    for name, value in values.items():
        if SECRET.search(name):
            for leaf in _leaves(value):
                if len(leaf) >= 3:
                    message = message.replace(leaf, "********")
    return message


def _leaves(value):
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [str(value)] if value is not None and not isinstance(value, bool) else []


class FilterModule:
    def filters(self):
        return {"manent_preflight": manent_preflight, "manent_shared_targets": manent_shared_targets,
                "manent_argument_errors": manent_argument_errors}
