# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the deploy role: its tables and durations, in Python rather than Jinja.

``manent_table(rows)``: rows (the first is the header) as lines whose columns are aligned; every table below
is laid out by it.
``manent_seconds(duration)``: whole seconds (rounded up) of a duration such as "90s", "5m", "1m30s".
``manent_summary_lines(summary)``: the deploy/rollback summary ({host: result}) as lines, notes after the table
(a failure's message, else the one line of the wave analysis).
``hosts | manent_checkpoint_lines(hostvars, fields, field, namespace)``: the releases in service, grouped (checkpoint
phase).
``hosts | manent_checkpoint_keys(hostvars, fields, field)``: the distinct releases in service (checkpoint phase).
``hosts | manent_history_lines(hostvars, wave_by)``: the release in service and the records (history phase).
``hosts | manent_audit_lines(hostvars)``: the audit findings per cluster, each finding as a note.
``manent_traffic_rows(results)``: the rows of the traffic summary from the per-cluster results.
``manent_traffic_lines(summary)``: the traffic summary ({host: result}) as lines: its table, the messages, the
analysis lines.
``outcome | manent_cluster_result(base, render, failed, version)``: one cluster's entry of the deploy/rollback
summary from manent_apply's (or rollback's) result: docs/requirements.md §11's ``status`` and ``details`` plus the flat fields
of the printed table (version, counts, seconds, ...). Only this operation's result: nothing is carried over.
``hosts | manent_applied_results(hostvars, outcome, render, check_mode)``: the summary entry of each host whose apply
succeeded, from its registered results: ``[{"host", "result"}]``, for one task that records them all.
``path | manent_file_sha256``: hex sha256 of a controller file (``~`` expanded), "" when it is not a readable regular
file: the role's artifact check, without a module process.
``descriptor | manent_artifact(artifact_name)``: what the role reads from its artifact descriptor: the artifact's
name in the release key, its version, source and sha256.
``artifact | manent_artifact_location(cache_dir, base_dir)``: where the role finds that artifact, and the path
manent_render reads: ``{"is_url", "source_path", "file", "path"}``.
``hosts | manent_waves(values, order)``: the deploy waves: ``{"keys", "waves", "number"}`` (see the function).
``summary | manent_run(operation)``: the whole operation as docs/requirements.md §11's ``{"plugin": "kubernetes", "targets":
[...]}`` (plus ``operation``), one target per cluster of the play, ``not started`` ones included.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from ansible.errors import AnsibleFilterError

from ansible_collections.manent.kubernetes.plugins.module_utils.base.digests import sha256_file
from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

GROUP_OVER = 10  # the summary of more clusters is grouped by outcome
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")  # an artifact source that is downloaded (scheme://...)
NUMBERED = re.compile(r"^(.*?)([0-9]+)(\D*)$")  # a host name's last number (c001, k8s-7.example.com)
SUMMARY_HEADER = ["host", "status", "version", "previous", "objects", "changes", "pruned", "seconds"]
CHECKPOINT_TITLES = {"version": "version in service", "artifact": "artifact sha256", "deployment": "deployment"}
ARTIFACT_SHOWN = 12  # hex digits of an artifact's sha256 the checkpoint table shows
HISTORY_HEADER = ["host", None, "in service", "deployment", "records (newest first)"]
AUDIT_HEADER = ["host", "artifact", "artifact warnings", "history removed", "history deprecated"]
TRAFFIC_HEADER = ["host", "operation", "status", "in service", "candidate", "weights a/b", "changed"]


def manent_table(rows):
    """Aligned lines: each column as wide as its widest cell, two spaces between columns."""
    rows = [[str(cell) for cell in row] for row in rows or []]
    if not rows:
        return []
    widths = [max(len(row[index]) if index < len(row) else 0 for row in rows) for index in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[index]) for index, cell in enumerate(row)).rstrip() for row in rows]


def _analysis_note(result):
    """manent_analysis.analysis_note, imported when first needed: the filter files of this collection are loaded by
    every worker process that templates one of its filters, for each task and cluster, and compiled from source (the
    collection loader keeps no bytecode), so they import only what their module level needs."""
    from ansible_collections.manent.kubernetes.plugins.filter.manent_analysis import analysis_note  # pylint: disable=import-outside-toplevel
    return analysis_note(result)


def _lines(rows, notes=()):
    """The table, then the notes; a note with line breaks becomes several lines."""
    return [part for line in manent_table(rows) + list(notes) for part in line.split("\n")]


def _header(header, wave_by):
    return [wave_by if cell is None else cell for cell in header]


def as_int(value):
    """A whole number as Jinja's ``int`` filter reads it (``"2"``, ``2.7`` and ``"2.5"`` are 2); 0 for what is not a
    number. How the filters here and in manent_checks.py read numbers from variables and results."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return 0


def as_text(value):
    """A value as text as Jinja's ``default('', true) | string`` reads it: "" for a missing (None) or false value.
    How the filters here and in manent_checks.py read text from variables."""
    return "" if value is None or value is False else str(value)


def manent_seconds(duration, name="duration"):
    try:
        return int(math.ceil(parse_duration(duration, name=name)))
    except InputError as err:
        raise AnsibleFilterError(str(err)) from err


def manent_file_sha256(path):
    """Hex sha256 of the regular file ``path`` on the controller (``~`` expanded); "" when it is missing, not a
    regular file or unreadable (the caller then fetches the artifact again and reports what is wrong)."""
    path = os.path.expanduser(str(path or ""))
    if not path or not os.path.isfile(path):
        return ""
    try:
        return sha256_file(path)
    except OSError:
        return ""


def manent_artifact(descriptor, artifact_name=""):
    """What the deploy role reads from its artifact descriptor (deploy_artifact): ``name``, ``artifact_name``
    (deploy_artifact_name) else the descriptor's name (label manent.io/artifact); ``version``, ``source`` and
    ``sha256`` (lower case), the descriptor's, as text ("" when missing). Anything but a mapping reads as an empty
    descriptor."""
    descriptor = descriptor if isinstance(descriptor, Mapping) else {}
    return {"name": as_text(artifact_name) or as_text(descriptor.get("name")),
            "version": as_text(descriptor.get("version")), "source": as_text(descriptor.get("source")),
            "sha256": as_text(descriptor.get("sha256")).lower()}


def manent_artifact_location(artifact, cache_dir="", base_dir=""):
    """Where the deploy role finds ``artifact`` (manent_artifact's result: its source, sha256, name and version):
    ``is_url`` (scheme://..., downloaded into the cache), ``source_path`` (a controller path made absolute: a
    relative one starts in ``base_dir``, else in $PWD, the directory ansible-playbook was started from; a URL as is),
    ``file`` (the last part of the source's path, else <name>-<version>) and ``path``: what manent_render reads, a
    URL's download in the cache (``cache_dir``/<sha256>/<file>) or the controller path in place."""
    artifact = artifact if isinstance(artifact, Mapping) else {}
    source, sha256 = as_text(artifact.get("source")), as_text(artifact.get("sha256"))
    is_url = URL.match(source) is not None
    if is_url or os.path.isabs(source):
        source_path = source
    else:
        source_path = "%s/%s" % (base_dir or os.environ.get("PWD", ""), source)
    file_name = os.path.basename(urlsplit(source).path if is_url else source) or "%s-%s" % (
        as_text(artifact.get("name")), as_text(artifact.get("version")))
    return {"is_url": is_url, "source_path": source_path, "file": file_name,
            "path": "%s/%s/%s" % (cache_dir, sha256, file_name) if is_url else source_path}


def manent_waves(hosts, values, order=()):
    """The waves of ``hosts`` (play order) whose wave values are ``values`` (same order): one wave per distinct
    value, the values of ``order`` first (those no host has are ignored), then in order of first appearance;
    hosts keep their order inside a wave. Returns {"keys": [value...], "waves": [[host...]...],
    "number": {host: wave number from 1}}."""
    hosts, values = list(hosts or []), list(values or [])
    keys = []
    for key in list(order or []) + values:
        if key in values and key not in keys:
            keys.append(key)
    waves = [[host for host, value in zip(hosts, values) if value == key] for key in keys]
    number = {host: index + 1 for index, wave in enumerate(waves) for host in wave}
    return {"keys": keys, "waves": waves, "number": number}


def _summary_row(result):
    """The columns of one cluster's result after the host: status, version, previous, objects, changes, pruned."""
    counts = result.get("counts") or {}
    changes = " ".join("%s:%s" % item for item in sorted(counts.items(), key=lambda kv: str(kv[0]).lower()))
    return [result.get("status", ""), result.get("version") or "-", result.get("previous") or "-",
            result.get("objects", "-"), changes or "-", len(result.get("pruned") or [])]


def manent_summary_lines(summary, group_over=GROUP_OVER):
    """One row per cluster of ``summary`` ({host: result}), then a note per message or unverified objects. Over
    ``group_over`` clusters, one row per outcome instead (manent_summary_groups)."""
    summary = {host: result or {"status": "not started"} for host, result in (summary or {}).items()}
    if len(summary) > as_int(group_over):
        return manent_summary_groups(summary)
    rows, notes = [SUMMARY_HEADER], []
    for host, result in summary.items():
        rows.append([host] + _summary_row(result) + [result.get("seconds", "-")])
        note = result.get("message") or _analysis_note(result)
        if note:
            notes.append("%s: %s" % (host, note))
        if as_int(result.get("objects_skipped", 0)) > 0:
            notes.append("%s: %s objects not verifiable in check mode" % (host, result["objects_skipped"]))
        if _namespace_created(result):
            notes.append("%s: %s" % (host, _namespace_created(result)))
    return _lines(rows, notes)


def _namespace_created(result):
    """The note of a deploy that created its release namespace (create_namespace): that write is in the changes,
    not in the objects, which count the release's own objects on every run."""
    namespace = _mapping(result.get("details")).get("namespace_created")
    return ("namespace %s created (deploy_create_namespace), counted in changes, not in objects" % namespace
            if namespace else "")


def manent_summary_groups(summary):
    """The summary of many clusters: one row per outcome (status, versions, objects, changes, pruned), failures
    first, with how many clusters, their deploy seconds (least to most) and their names (runs of numbered names
    as ranges); then each message once, with the clusters that reported it."""
    groups, messages, skipped = {}, {}, {}
    for host, result in summary.items():
        key = tuple(str(cell) for cell in _summary_row(result))
        groups.setdefault(key, []).append((host, result.get("seconds")))
        note = result.get("message") or _analysis_note(result)
        if note:
            messages.setdefault(str(note), []).append(host)
        if as_int(result.get("objects_skipped", 0)) > 0:
            skipped.setdefault(str(result["objects_skipped"]), []).append(host)
        if _namespace_created(result):
            messages.setdefault(_namespace_created(result), []).append(host)
    order = sorted(groups, key=lambda key: key[0] != "failed")  # stable: otherwise in order of first appearance
    rows = [["clusters"] + SUMMARY_HEADER[1:] + ["hosts"]]
    for key in order:
        seconds = [float(s) for _host, s in groups[key] if isinstance(s, (int, float))]
        shown = "-" if not seconds else ("%g" % seconds[0] if len(seconds) == 1
                                         else "%g-%g" % (min(seconds), max(seconds)))
        rows.append([len(groups[key])] + list(key) + [shown, host_ranges([h for h, _s in groups[key]])])
    notes = ["%s: %s" % (host_ranges(hosts), message) for message, hosts in messages.items()]
    notes += ["%s: %s objects not verifiable in check mode" % (host_ranges(hosts), count)
              for count, hosts in skipped.items()]
    return _lines(rows, notes)


def host_ranges(hosts):
    """Host names joined by ", ", runs of three or more names that differ only in a consecutive number of the same
    width (c001, c002, c003) written as one range (c001..c003)."""
    parts, run = [], []

    def close():
        parts.extend(["%s..%s" % (run[0][0], run[-1][0])] if len(run) > 2 else [name for name, _k, _n in run])

    for host in (str(h) for h in hosts):
        match = NUMBERED.match(host)
        item = (host, (match.group(1), match.group(3), len(match.group(2))), int(match.group(2))) if match \
            else (host, None, None)
        if run and item[1] is not None and item[1] == run[-1][1] and item[2] == run[-1][2] + 1:
            run.append(item)
            continue
        close()
        run = [item]
    if run:
        close()
    return ", ".join(parts)


def _mapping(value):
    return value if isinstance(value, dict) else {}


def _version(outcome, details, fallback):
    """The version of the release a result names: ``version`` where the module gives it, else ``details.release``
    unless that is a history record's name (``manent-...``)."""
    for value in (outcome.get("version"), details.get("version")):
        if value:
            return str(value)
    release = str(details.get("release") or "")
    if release and not release.startswith("manent-"):
        return release
    return str(fallback or "")


def manent_cluster_result(outcome, base, render=None, failed=False, version=""):
    """One cluster's summary entry from the module result ``outcome`` (a failed result when ``failed``)."""
    outcome, render = _mapping(outcome), _mapping(render)
    details = dict(_mapping(outcome.get("details")))
    hooks = details.get("helm_hooks_skipped")
    if hooks is None:
        hooks = render.get("hooks_skipped") or []
    pruned = details.get("pruned") or []
    entry = dict(_mapping(base))
    entry.update({
        "status": "failed" if failed else (outcome.get("status") or "deployed"),
        "changed": bool(outcome.get("changed", False)),
        "version": _version(outcome, details, version if failed else ""),
        "previous": str(details.get("previous") or ""),
        "objects": as_int(details.get("objects", 0)),
        "objects_skipped": as_int(details.get("objects_skipped", 0)),
        "counts": dict(_mapping(outcome.get("counts"))),
        "pruned": list(pruned),
        "hooks_skipped": list(hooks),
        "seconds": round(float(_mapping(outcome.get("timings")).get("total") or 0), 1),
        "message": str(outcome.get("msg") or "failed") if failed else "",
    })
    if outcome.get("host"):
        entry["api_server"] = str(outcome["host"])  # the module's host: the API server it talked to
    details.update({"namespace": details.get("namespace") or entry.get("namespace", ""),
                    "objects": entry["objects"], "previous": entry["previous"], "pruned": entry["pruned"],
                    "helm_hooks_skipped": entry["hooks_skipped"], "objects_skipped": entry["objects_skipped"]})
    details.setdefault("release", "")
    entry["details"] = details
    return entry


def manent_applied_results(hosts, hostvars, outcome, render, check_mode=False):
    """The result of each of ``hosts`` (a batch of the play) whose apply succeeded, as ``[{"host", "result"}]``: its
    entry of the summary (manent_cluster_result) from its hostvars, the registered result of the apply (the variable
    ``outcome``) and of its rendering (``render``). The base of each entry comes from those results and the inventory:
    host, region and az (inventory variables), the release key's application, environment and namespace (the
    apply's details), ``check_mode``. A host whose apply failed, was skipped or did not run is left out: its rescue
    records its failure. One task then sets every host's result (delegate_facts), not one task for each cluster."""
    results = []
    for host in hosts or []:
        host_vars = hostvars[host]
        done = _mapping(host_vars.get(outcome))
        if not done or done.get("failed") or done.get("skipped"):
            continue
        details = _mapping(done.get("details"))
        base = {"host": str(host), "region": host_vars.get("region", ""), "az": host_vars.get("az", ""),
                "application": str(details.get("application") or ""),
                "environment": str(details.get("environment") or ""),
                "namespace": str(details.get("namespace") or ""), "check_mode": bool(check_mode)}
        results.append({"host": str(host), "result": manent_cluster_result(done, base, host_vars.get(render))})
    return results


def manent_run(summary, operation="deploy"):
    """{"plugin": "kubernetes", "operation": ..., "targets": [{"host", "status", "details", ...}]} of ``summary``
    ({host: entry}); a cluster without an entry is ``not started``."""
    targets = []
    for host, result in (summary or {}).items():
        result = _mapping(result) or {"status": "not started"}
        details = result.get("details") or ({"namespace": result["namespace"]} if result.get("namespace") else {})
        target = {"host": host, "status": result.get("status", "not started"), "details": details}
        target.update((key, value) for key, value in result.items() if key not in target)
        targets.append(target)
    return {"plugin": "kubernetes", "operation": operation, "targets": targets}


def _in_service(host_vars, field):
    """The release in service that a host's variable ``field`` holds (a dotted path such as
    ``__deploy_render.in_service``), None when nothing is in service."""
    if not field:
        raise AnsibleFilterError("the checkpoint filters need field: the host variable that holds the release in "
                                 "service, e.g. __deploy_render.in_service")
    value = host_vars
    for part in field.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None  # hostvars' entries are Mappings, not dicts
        if value is None:
            return None
    return dict(value) if isinstance(value, Mapping) and value else None


def _checkpoint_value(release, name, shown=False):
    """A field of a release in service ("" when not recorded); ``shown``: as the table shows it (an artifact's
    sha256 cut to ARTIFACT_SHOWN hex digits)."""
    value = str(release.get(name) or "")
    return value[:ARTIFACT_SHOWN] if shown and name == "artifact" else value


def _checkpoint_compared(releases, fields):
    """The ``fields`` recorded by every release of ``releases``: a field some release does not record (written by a
    collection before it recorded the field) cannot tell releases apart and is left out."""
    return [name for name in fields or [] if all(_checkpoint_value(r, name) for r in releases)]


def manent_checkpoint_lines(hosts, hostvars, fields=None, field=None, namespace=""):
    """The releases in service of ``hosts``, one row per distinct release (its ``fields``; the artifact's digest cut
    to 12 characters), with how many clusters run it and which (host ranges), and their namespace when the hosts'
    ``deploy_namespace`` differ (else ``namespace``); clusters with nothing in service last, as ``(none)``."""
    fields = list(fields or ["version"])
    found = [(host, _in_service(hostvars.get(host) or {}, field)) for host in hosts or []]
    spaces = {host: str((hostvars.get(host) or {}).get("deploy_namespace") or namespace or "") for host, _r in found}
    shown_spaces = len(set(spaces.values())) > 1
    groups = {}
    for host, release in found:
        cells = [_checkpoint_value(release, name, shown=True) or "-" for name in fields] if release else \
            ["(none)"] + ["-"] * (len(fields) - 1)
        key = tuple(cells + ([spaces[host]] if shown_spaces else []))
        groups.setdefault(key, []).append(host)
    order = sorted(groups, key=lambda key: key[0] == "(none)")  # stable: otherwise in order of first appearance
    header = [CHECKPOINT_TITLES.get(name, name) for name in fields] + (["namespace"] if shown_spaces else [])
    rows = [header + ["clusters", "hosts"]]
    rows.extend(list(key) + [len(groups[key]), host_ranges(groups[key])] for key in order)
    return _lines(rows)


def manent_checkpoint_keys(hosts, hostvars, fields, field=None):
    """The distinct keys (the ``fields`` of the release in service, joined by " / ") of the hosts that have a
    release in service, in host order: more than one means that the clusters run different releases. Only the fields
    that every release records are compared (:func:`_checkpoint_compared`)."""
    releases = [r for r in (_in_service(hostvars.get(host) or {}, field) for host in hosts or []) if r]
    compared = _checkpoint_compared(releases, fields)
    keys = []
    for release in releases:
        key = " / ".join(_checkpoint_value(release, name) for name in compared)
        if key not in keys:
            keys.append(key)
    return keys


def manent_history_lines(hosts, hostvars, wave_by="region"):
    """The release in service and the records ("version status", newest first) of each host's ``_deploy_history``."""
    rows = [_header(HISTORY_HEADER, wave_by)]
    for host in hosts or []:
        host_vars = hostvars.get(host) or {}
        history = host_vars.get("_deploy_history") or {}
        release = history.get("in_service") or {}
        rows.append([host, host_vars.get(wave_by, "-"), release.get("version", "") if release else "(none)",
                     release.get("deployment", "") if release else "-",
                     ", ".join(str(r) for r in history.get("records") or []) or "-"])
    return _lines(rows)


def manent_audit_lines(hosts, hostvars):
    """Per host (``_deploy_audit``): the artifact's state and the counts of findings; each finding as a note."""
    rows, notes = [AUDIT_HEADER], []
    for host in hosts or []:
        audit = (hostvars.get(host) or {}).get("_deploy_audit") or {}
        found = audit.get("history") or []
        warnings = audit.get("artifact_warnings") or []
        rows.append([host, audit.get("artifact", "-"), len(warnings),
                     len([f for f in found if f.get("level") == "error"]),
                     len([f for f in found if f.get("level") == "warning"])])
        if audit.get("artifact_error"):
            notes.append("%s: artifact: %s" % (host, audit["artifact_error"]))
        notes.extend("%s: artifact: %s" % (host, warning) for warning in warnings)
        notes.extend("%s: history %s: %s: %s" % (host, f.get("version"), f.get("object"), f.get("message"))
                     for f in found)
    return _lines(rows, notes)


def _slot_text(part):
    part = part or {}
    if not part.get("version"):
        return "-"
    return "%s (%s)" % (part["version"], part.get("slot") or "-")


def manent_traffic_rows(results):
    """Header plus one row per cluster result (dicts with host, operation, status, outcome)."""
    rows = [TRAFFIC_HEADER]
    for result in results or []:
        outcome = result.get("outcome") or {}
        history = outcome.get("history") or {}
        weights = outcome.get("weights") or {}
        rows.append([result.get("host", "?"), result.get("operation", "-"), result.get("status", "-"),
                     _slot_text(history.get("in_service")), _slot_text(history.get("candidate")),
                     "%s/%s" % (weights.get("a", "-"), weights.get("b", "-")) if weights else "-",
                     "yes" if outcome.get("changed") else "no"])
    return rows


def manent_traffic_lines(summary):
    """The traffic summary ({host: result}) as lines: the table of manent_traffic_rows (a host without a result as
    ``not started``), then each cluster's message, then the analysis line of each cluster that has an analysis and
    no message (a failure's message already says why)."""
    results = [dict(_mapping(result) or {"status": "not started"}, host=_mapping(result).get("host") or host)
               for host, result in (summary or {}).items()]
    return (manent_table(manent_traffic_rows(results))
            + [str(result["message"]) for result in results if result.get("message")]
            + ["%s: %s" % (result["host"], _analysis_note(result)) for result in results
               if not result.get("message") and _analysis_note(result)])


class FilterModule:
    def filters(self):
        return {"manent_table": manent_table, "manent_seconds": manent_seconds,
                "manent_summary_lines": manent_summary_lines,
                "manent_summary_groups": manent_summary_groups, "manent_checkpoint_lines": manent_checkpoint_lines,
                "manent_checkpoint_keys": manent_checkpoint_keys,
                "manent_history_lines": manent_history_lines, "manent_audit_lines": manent_audit_lines,
                "manent_traffic_rows": manent_traffic_rows, "manent_cluster_result": manent_cluster_result,
                "manent_traffic_lines": manent_traffic_lines,
                "manent_run": manent_run, "manent_file_sha256": manent_file_sha256, "manent_waves": manent_waves,
                "manent_artifact": manent_artifact,
                "manent_artifact_location": manent_artifact_location,
                "manent_applied_results": manent_applied_results}
