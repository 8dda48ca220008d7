# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render a packaged Helm chart with ``helm template``, isolated from the worker.

helm is used only as a template engine, like Argo CD does: it never talks to a cluster (``lookup``
answers empty), installs nothing and keeps no release state. Each rendering:

- verifies the helm binary (``helm_sha256``) before running it;
- runs helm in a fresh temporary directory with an empty environment (only ``HOME``, the three
  ``HELM_*_HOME`` directories under it and ``PATH=/usr/bin:/bin``): no KUBECONFIG, no repositories,
  no registry credentials and no plugins of the worker are visible to it;
- passes the target cluster's capabilities (``--kube-version``, ``--api-versions``), and ``--is-upgrade``
  when the caller renders an upgrade (``.Release.IsUpgrade`` as ``helm upgrade --install`` sets it; manent_render
  decides);
- layers the values, lowest to highest precedence: the chart's values.yaml, ``values_files`` (files
  inside the chart, in order), ``values_yaml``, ``set_values``, and finally ``manent.slot`` -- the last
  one only when a slot is given (traffic rollouts): without a slot the chart gets exactly the values
  ``helm template`` would get, so charts whose values.schema.json forbids unknown top-level keys render;
- splits helm's output into objects that remember their template (``# Source:``), marks the objects
  of ``crds/`` (they come first), and drops hooks unless ``hooks="apply"``; test hooks never apply.
"""

from __future__ import annotations

import datetime
import json
import os
import posixpath
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field

from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import bare_sha256, digest_problem, sha256_file
from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import format_duration, parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, RenderError
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.lifecycle import (
    CRDS_SOURCE_ANNOTATION, CRDS_SOURCE_VALUE, HOOK_ANNOTATION, is_test_hook,
)
from ansible_collections.manent.kubernetes.plugins.module_utils.render.manifests import load_value, parse

HOOK_MODES = ("skip", "apply")
ISOLATED_PATH = "/usr/bin:/bin"
STDERR_LIMIT = 2048
MAX_VALUES_FILE = 4 * 1024 * 1024
# Errors about the helm options name them as the modules do (helm_command, helm_sha256, helm_timeout; the SPEC's plugin
# settings helm.command, ...), so that a module's caller can name them as it sets them (tasks/option_names.py).
INSTALL_HINT = ("helm is needed only to render Helm charts: install helm 3 on the controller "
                "(https://helm.sh/docs/intro/install/), or set this option to the path of a helm binary")

_API_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_DOC_START = re.compile(r"---(?:[ \t]|\r?\n|$)")
_SOURCE = re.compile(r"#\s*Source:\s*(\S.*?)\s*$")
_CRDS_PATH = re.compile(r"[^/]+(?:/charts/[^/]+)*/crds/")
_SCHEMA_FAILURE = re.compile(r"specifications of the schema|values\.schema\.json|jsonschema", re.I)
# helm 3.18+: "- at '': additional properties 'manent' not allowed", "- at '/manent/slot': value must be one of ...";
# helm up to 3.17 (gojsonschema): "- (root): Additional property manent is not allowed", "- manent.slot: ...".
_MANENT_IN_SCHEMA_LINE = re.compile(
    r"additional propert(?:y|ies) (?:.*'manent'|manent\b)|\bat '/manent[/']|^\s*-\s*manent[.:]", re.I)
_MISSING_MANENT = re.compile(r"<\.Values\.manent\.[^>]*>: nil pointer")


@dataclass(frozen=True)
class HelmOptions:
    """Plugin settings ``helm.*``: the binary (name on PATH or path), its sha256, the timeout in seconds."""

    command: str = "helm"
    sha256: str = ""
    timeout: float = 120.0


@dataclass
class Rendered:
    """A rendered chart: ``docs`` are (object, source) in helm's order with crds/ first."""

    docs: list = field(default_factory=list)
    hooks_skipped: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


# --- the binary ---------------------------------------------------------------------------------

def verify_binary(options):
    """Absolute path of the helm binary; with ``options.sha256`` its hash must match (checked at every call)."""
    path = _resolve_binary(options.command)
    if options.sha256:
        expected = _expected_sha256(options.sha256)
        try:
            actual = sha256_file(path)
        except OSError as err:
            raise RenderError("cannot read helm binary %s: %s" % (path, err.strerror or err), subject="helm_command",
                              hint=INSTALL_HINT) from None
        if actual != expected:
            raise RenderError("helm binary %s has sha256 %s, expected %s" % (path, actual, expected),
                              subject="helm_sha256",
                              hint="install the helm release whose checksum is configured, or correct this option; "
                                   "nothing was rendered")
    return path


def _resolve_binary(command):
    command = str(command or "helm").strip()
    if os.sep in command or "/" in command:
        path = os.path.abspath(os.path.expanduser(command))
        if not os.path.isfile(path):
            raise RenderError("helm binary %s not found" % path, subject="helm_command", hint=INSTALL_HINT)
        if not os.access(path, os.X_OK):
            raise RenderError("helm binary %s is not executable" % path, subject="helm_command",
                              hint="chmod +x it, or set this option to an executable helm")
        return path
    found = shutil.which(command)
    if not found:
        raise RenderError("helm binary %r not found on PATH (%s)" % (command, os.environ.get("PATH", "")),
                          subject="helm_command", hint=INSTALL_HINT)
    return os.path.abspath(found)


def _expected_sha256(value):
    problem = digest_problem(value, "the helm binary's SHA-256")
    if problem:
        raise InputError("%s, got %r" % (problem, value) if isinstance(value, str) else problem, subject="helm_sha256",
                         hint="set it to the sha256 of the helm binary (sha256sum $(command -v helm))")
    return bare_sha256(str(value))


# --- running helm -------------------------------------------------------------------------------

def isolated_environment(home):
    """The whole environment helm runs with: a private home and a minimal PATH, nothing of the worker."""
    return {
        "HOME": home,
        "HELM_CACHE_HOME": os.path.join(home, ".cache", "helm"),
        "HELM_CONFIG_HOME": os.path.join(home, ".config", "helm"),
        "HELM_DATA_HOME": os.path.join(home, ".local", "share", "helm"),
        "PATH": ISOLATED_PATH,
    }


def run_helm(binary, args, home, timeout):
    """Run ``binary args`` in ``home`` with :func:`isolated_environment`; returns (exit code, stdout, stderr).

    On timeout the whole process group is killed and RenderError says which helm command did not finish; when the
    run is stopped (errors.Interrupted) it is killed too.
    """
    args = [str(arg) for arg in args]
    try:
        # Not AnsibleModule.run_command: rendering also runs in the controller process (no module object), and
        # helm needs a whole replaced environment and its process group killed on timeout.
        with subprocess.Popen([binary] + args, cwd=home, env=isolated_environment(home),  # pylint: disable=ansible-bad-function
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True) as proc:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill(proc)
                command = args[0] if args else ""
                raise RenderError("helm %s did not finish within %s" % (command, format_duration(timeout)),
                                  subject="helm_timeout",
                                  hint="raise this option, or look for a template that loops"
                                  ) from None
            except BaseException:  # the run was stopped (errors.Interrupted, KeyboardInterrupt): helm stops with it
                _kill(proc)
                raise
    except OSError as err:
        raise RenderError("cannot run helm %s: %s" % (binary, err.strerror or err), subject="helm_command",
                          hint=INSTALL_HINT) from None
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()
    # A descendant that left the process group may still hold the pipes: do not read them.
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


def _trim(text, limit=STDERR_LIMIT):
    text = text.strip()
    if len(text) <= limit:
        return text
    return "..." + text[-limit:]


# --- rendering ----------------------------------------------------------------------------------

def render_chart(chart_path, release, namespace, kube_version, api_versions, values_files=(), values_yaml="",
                 set_values=None, slot="", options=None, include_crds=True, hooks="skip", upgrade=False):
    """Render a chart (packaged ``.tgz`` or directory) with ``helm template``; returns :class:`Rendered`.

    ``upgrade``: render as ``helm upgrade`` does (``.Release.IsUpgrade`` true, ``.Release.IsInstall`` false).
    Raises InputError for bad parameters (values files, values, hooks mode, api_versions) and RenderError
    when helm is missing, its checksum differs, it fails or it does not finish within ``options.timeout``.
    """
    options = options or HelmOptions()
    if hooks not in HOOK_MODES:
        raise InputError("invalid hooks mode %r" % (hooks,), subject="helm_hooks",
                         hint="use one of: %s" % ", ".join(HOOK_MODES))
    chart = os.path.abspath(str(chart_path))
    label = os.path.basename(chart.rstrip(os.sep)) or chart
    if not os.path.exists(chart):
        raise InputError("chart %s not found" % chart, subject=label, hint="give the path of a packaged chart (.tgz)")
    timeout = parse_duration(options.timeout, name="helm_timeout")
    if timeout <= 0:
        raise InputError("must be positive", subject="helm_timeout", hint='e.g. "2m"')
    flags = ["--namespace=%s" % (namespace or "default")]
    if kube_version:
        flags.append("--kube-version=%s" % kube_version)
    flags.extend("--api-versions=%s" % item for item in _check_api_versions(api_versions))
    if include_crds:
        flags.append("--include-crds")
    if upgrade:  # .Release.IsUpgrade instead of .Release.IsInstall
        flags.append("--is-upgrade")
    binary = verify_binary(options)
    with tempfile.TemporaryDirectory(prefix="manent-helm-") as home:
        value_flags = _values_flags(chart, label, home, values_files, values_yaml, set_values, slot)
        # No --skip-tests: test hooks are dropped below so that they can be listed as skipped.
        args = ["template"] + flags + value_flags + ["--", str(release), chart]
        code, out, err = run_helm(binary, args, home, timeout)
    if code != 0:
        raise _failure(err, code, label, slot)
    rendered = split_output(out, label, hooks=hooks)
    rendered.warnings.extend("helm: %s" % line.strip() for line in err.splitlines() if line.strip())
    return rendered


def _failure(err, code, label, slot):
    """The RenderError for a failed ``helm template``: helm's message, and what to do about ``manent``."""
    failed = "helm template failed: %s" % (_trim(err) or "exit status %d" % code)
    if slot and _schema_rejects_manent(err):
        return RenderError(
            "the values.schema.json of chart %s rejects the key manent (manent.slot=%s, which manent passes "
            "only in traffic rollouts); the chart must allow it: a \"manent\" property of type object in the "
            "root \"properties\" of its values.schema.json. %s" % (label, slot, failed), subject=label,
            hint="add \"manent\": {\"type\": \"object\"} to the root properties of the chart's values.schema.json, "
                 "or deploy without a slot: with traffic_rename (the default) manent names the slot objects "
                 "itself and the chart need not read .Values.manent.slot")
    if not slot and _MISSING_MANENT.search(err):
        return RenderError(failed, subject=label,
                           hint="the chart reads .Values.manent.slot, which manent sets only in traffic rollouts "
                                "(helm template fails the same way without it): read it as (.Values.manent).slot, "
                                "or give it a default in the chart's values.yaml (manent: {slot: \"\"})")
    return RenderError(failed, subject=label,
                       hint="fix the chart, its values or the release name; the message is helm's")


def _schema_rejects_manent(err):
    """Whether helm's values schema validation failed on manent's values layer (see _MANENT_IN_SCHEMA_LINE)."""
    if not _SCHEMA_FAILURE.search(err):
        return False
    return any(_MANENT_IN_SCHEMA_LINE.search(line) for line in err.splitlines())


def _check_api_versions(api_versions):
    if isinstance(api_versions, str):
        api_versions = [api_versions]
    result = []
    for item in api_versions or ():
        text = str(item).strip()
        if not _API_VERSION.fullmatch(text):
            raise InputError("invalid API version %r" % (item,), subject="api_versions",
                             hint='expected entries such as "apps/v1" or "gateway.networking.k8s.io/v1/HTTPRoute"')
        result.append(text)
    return result


# --- values -------------------------------------------------------------------------------------

def _values_flags(chart, label, home, values_files, values_yaml, set_values, slot):
    """Write every values layer as a file in ``home``; returns the ``--values`` flags in precedence order."""
    directory = os.path.join(home, "values")
    os.mkdir(directory, 0o700)
    layers = []
    if isinstance(values_files, str):
        values_files = [item for item in values_files.split(",") if item.strip()]
    for number, name in enumerate(values_files or (), start=1):
        layers.append(("file-%d-%s" % (number, posixpath.basename(name)), read_chart_file(chart, label, name)))
    text = _values_text(values_yaml)
    if text is not None:
        layers.append(("helm-values.yaml", text.encode("utf-8")))
    if set_values:
        layers.append(("helm-value.json", _dump_json(set_values_tree(set_values), "helm_value")))
    if slot:
        # Only in traffic rollouts: a chart whose schema forbids unknown top-level keys renders without one.
        layers.append(("manent.json", _dump_json({"manent": {"slot": str(slot)}}, "slot")))
    flags = []
    for number, (name, content) in enumerate(layers, start=1):
        path = os.path.join(directory, "%02d-%s" % (number, name))
        with open(path, "wb") as handle:
            handle.write(content)
        flags.append("--values=%s" % path)
    return flags


def read_chart_file(chart, label, name):
    """Content of ``name`` (a path relative to the chart root) inside a packaged chart or a chart directory."""
    relative = _chart_relative(name)
    if os.path.isdir(chart):
        return _read_directory_file(chart, label, name, relative)
    try:
        with tarfile.open(chart, "r:*") as archive:
            members = {member.name: member for member in archive.getmembers()}
            top = _chart_top(members, label)
            member = members.get("%s/%s" % (top, relative))
            if member is None or not member.isfile():
                raise _missing_values_file(name, label, sorted(
                    key[len(top) + 1:] for key, item in members.items()
                    if item.isfile() and key.count("/") == 1 and key.endswith((".yaml", ".yml"))
                    and key != top + "/Chart.yaml"))
            if member.size > MAX_VALUES_FILE:
                raise InputError("values file %s is larger than %d bytes" % (name, MAX_VALUES_FILE), subject=label,
                                 hint="values files are small YAML files")
            return archive.extractfile(member).read()
    except (tarfile.TarError, OSError) as err:
        raise RenderError("cannot read packaged chart: %s" % err, subject=label,
                          hint="the artifact must be the .tgz made by helm package") from None


def _chart_relative(name):
    text = str(name or "").strip().replace("\\", "/")
    hint = "name a file relative to the chart root, e.g. values-prod.yaml"
    if not text:
        raise InputError("empty values file name", subject="helm_values_files", hint=hint)
    if text.startswith("/") or re.match(r"[A-Za-z]:/", text):
        raise InputError("values file %s must be a path inside the chart, not absolute" % name,
                         subject="helm_values_files", hint=hint)
    if ".." in text.split("/"):
        raise InputError("values file %s must be a path inside the chart (no '..')" % name,
                         subject="helm_values_files", hint=hint)
    return posixpath.normpath(text)


def _read_directory_file(chart, label, name, relative):
    root = os.path.realpath(chart)
    path = os.path.realpath(os.path.join(root, *relative.split("/")))
    if os.path.commonpath([root, path]) != root or not os.path.isfile(path):
        raise _missing_values_file(name, label, sorted(
            entry for entry in os.listdir(root) if entry.endswith((".yaml", ".yml")) and entry != "Chart.yaml"))
    if os.path.getsize(path) > MAX_VALUES_FILE:
        raise InputError("values file %s is larger than %d bytes" % (name, MAX_VALUES_FILE), subject=label,
                         hint="values files are small YAML files")
    with open(path, "rb") as handle:
        return handle.read()


def _chart_top(members, label):
    for name in members:
        parts = name.split("/")
        if len(parts) == 2 and parts[1] == "Chart.yaml":
            return parts[0]
    raise RenderError("no <name>/Chart.yaml in the package", subject=label,
                      hint="the artifact must be the .tgz made by helm package")


def _missing_values_file(name, label, available):
    return InputError("values file %s not found in chart %s" % (name, label), subject="helm_values_files",
                      hint="files at the chart root: %s" % (", ".join(available) or "none"))


def _values_text(values_yaml):
    """The helm_values layer as text, or None when empty; it must be a YAML mapping."""
    if isinstance(values_yaml, dict):
        return _dump_json(values_yaml, "helm_values").decode("utf-8") if values_yaml else None
    if values_yaml is None or not str(values_yaml).strip():
        return None
    parsed = load_value(str(values_yaml), "helm_values")
    if parsed is None:
        return None
    if not isinstance(parsed, dict):
        raise InputError("helm_values must be a YAML mapping, got %s" % type(parsed).__name__, subject="helm_values",
                         hint="e.g. 'replicaCount: 3'")
    return str(values_yaml)


def set_values_tree(set_values):
    """{"image.tag": "1.4.0", "replicaCount": "3"} -> {"image": {"tag": "1.4.0"}, "replicaCount": 3}.

    String values are parsed as YAML ("3" is a number, "1.4.0" a string, "" stays an empty string);
    other values are taken as they are.
    """
    tree = {}
    for path in sorted(set_values, key=str):
        subject = "helm_value.%s" % path
        parts = str(path).split(".")
        if not all(part.strip() for part in parts):
            raise InputError("invalid value path %r" % (path,), subject=subject,
                             hint="use dot-separated keys such as image.tag")
        value = _parse_value(set_values[path], subject)
        node = tree
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise InputError("conflicts with helm_value.%s" % ".".join(parts[:depth + 1]), subject=subject,
                                 hint="set either the whole value or its keys, not both")
            node = child
        last = parts[-1]
        if last in node:
            raise InputError("conflicts with another helm_value below %s" % path, subject=subject,
                             hint="set either the whole value or its keys, not both")
        node[last] = value
    return tree


def _parse_value(value, subject):
    if not isinstance(value, str):
        return value
    if not value.strip():
        return value
    return load_value(value, subject)


def _dump_json(data, subject):
    """JSON (a YAML subset) so that helm reads exactly the types parsed here."""
    def convert(value):
        if isinstance(value, (datetime.date, datetime.datetime)):
            return value.isoformat()
        raise TypeError(type(value).__name__)
    try:
        return json.dumps(data, default=convert, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as err:
        raise InputError("cannot pass this value to helm: %s" % err, subject=subject,
                         hint="use strings, numbers, booleans, lists and mappings") from None


# --- helm's output ------------------------------------------------------------------------------

def split_output(text, label, hooks="skip"):
    """Split ``helm template`` output into a :class:`Rendered` (see the module docstring)."""
    crds, others, skipped = [], [], []
    counts = {}
    path = ""
    for chunk in _chunks(text):
        path = _source_path(chunk) or path
        for doc in parse(chunk, "%s: %s" % (label, path or "(helm output)")):
            obj = doc.obj
            counts[path] = counts.get(path, 0) + 1
            source = "%s: %s #%d" % (label, path or "(helm output)", counts[path])
            hook = _hook_value(obj)
            if hook:
                if hooks != "apply" or is_test_hook(obj):
                    skipped.append("%s/%s (hook: %s)" % (obj.get("kind") or "?", _name(obj), hook))
                    continue
            if _CRDS_PATH.match(path):
                _mark_crd(obj)
                crds.append((obj, source))
            else:
                others.append((obj, source))
    return Rendered(docs=crds + others, hooks_skipped=skipped)


def _chunks(text):
    chunks = [[]]
    for line in text.splitlines(True):
        if _DOC_START.match(line):
            chunks.append([line[3:]])
        else:
            chunks[-1].append(line)
    return ["".join(lines) for lines in chunks if "".join(lines).strip()]


def _source_path(chunk):
    for line in chunk.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        match = _SOURCE.match(stripped)
        if match:
            return match.group(1)
        if not stripped.startswith("#"):
            return None
    return None


def _metadata(obj):
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _name(obj):
    return str(_metadata(obj).get("name") or "?")


def _hook_value(obj):
    annotations = _metadata(obj).get("annotations")
    if not isinstance(annotations, dict):
        return ""
    return str(annotations.get(HOOK_ANNOTATION) or "").strip()


def _mark_crd(obj):
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    annotations[CRDS_SOURCE_ANNOTATION] = CRDS_SOURCE_VALUE
