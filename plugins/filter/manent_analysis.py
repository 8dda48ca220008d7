# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the deploy role's metric analysis (docs/analysis.md, "In the role"), in Python rather than Jinja.

``result | manent_analysis_short(settings)``: a manent_analysis result as the cluster's ``analysis`` entry: verdict,
reason, the checks in short and, when a check decided a verdict other than Successful, its name and rendered query;
with a traffic step's ``settings``, what each verdict does and the ``action`` this one takes (abort or pause).
``step | manent_step_analysis(all_steps)``: the analysis settings of one traffic step (``all_steps`` merged with
the step's own ``analysis``), ``{}`` when the step has none.
``steps | manent_traffic_steps(all_steps)``: the steps of a rollout as operations, each with its analysis.
``analyses | manent_preflight_checks``: the checks of several analyses, each once, for one preflight.
``history | manent_analysis_slots(service)``: the slots and Services of a traffic release as query placeholders.
``hosts | manent_quorum(hostvars, quorum, settings)``: whether enough clusters of a wave passed their analysis, and
what a wave that did not pass does (rollback or stop).
``analysis | manent_step_failure(traffic, host)``: the message of a traffic step whose analysis did not pass.
``result | manent_wave_failure(analysis, quorum)``: a cluster's result once its wave did not pass.
``results | manent_analysis_lines``: one summary note per cluster result with an analysis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError


# What a verdict other than Successful does: (the setting that says it, its default). The wave's on_error and
# on_inconclusive default to its on_failure (None here): a wave that did not pass is handled alike, whatever the
# verdict, unless told otherwise. Traffic: an Error aborts (the candidate was not judged, so it goes back to zero),
# an Inconclusive pauses (the data said nothing against it).
POLICIES = {"traffic": {"Failed": ("on_failure", "abort"), "Error": ("on_error", "abort"),
                        "Inconclusive": ("on_inconclusive", "pause")},
            "wave": {"Failed": ("on_failure", "stop"), "Error": ("on_error", None),
                     "Inconclusive": ("on_inconclusive", None)}}
SEVERITY = ("Failed", "Error", "Inconclusive")  # verdict.overall's order
# What to check before the next operation, after a verdict that left the traffic or the release as it was
LOOK_AT = {"Failed": "after looking at the failed check", "Error": "after checking Prometheus",
           "Inconclusive": "after looking at the checks' data"}


def _mapping(value):
    return value if isinstance(value, Mapping) else {}


def policy(settings, verdict, kind):
    """(setting, action): what ``verdict`` (Failed, Error, Inconclusive; any other is Failed) does under the
    analysis ``settings`` of ``kind`` (traffic: abort or pause; wave: rollback or stop)."""
    settings, table = _mapping(settings), POLICIES[kind]
    setting, default = table.get(verdict, table["Failed"])
    if default is None:
        default = settings.get(table["Failed"][0]) or table["Failed"][1]
    return setting, settings.get(setting) or default


def manent_analysis_short(result, settings=None, kind="traffic"):
    """``{verdict, reason, checks: [{name, verdict, reason}]}`` of a manent_analysis result (registered with
    failed_when false), plus ``check`` and ``query`` of the enforced check that decided a verdict other than
    Successful. A result without a verdict (input refused, Prometheus unreachable) is an Error with its message.
    With the analysis ``settings``: ``on_failure``, ``on_error`` and ``on_inconclusive`` as they apply, and
    ``action``, what this verdict does ("" for Successful)."""
    result = _mapping(result)
    verdict = str(result.get("verdict") or "Error")
    reason = str(result.get("reason") or result.get("msg") or ("no verdict" if verdict == "Error" else ""))
    checks = [_mapping(check) for check in result.get("checks") or []]
    out = {"verdict": verdict, "reason": reason,
           "checks": [{"name": str(c.get("name", "")), "verdict": str(c.get("verdict", "")),
                       "reason": str(c.get("reason", ""))} for c in checks]}
    if verdict != "Successful":
        deciding = [c for c in checks if c.get("enforce", True) and c.get("verdict") == verdict
                    and not c.get("stopped")]
        if deciding:
            out["check"] = str(deciding[0].get("name", ""))
            out["query"] = str(deciding[0].get("rendered_query") or deciding[0].get("query") or "")
    if settings is not None:
        for each in SEVERITY:
            setting, action = policy(settings, each, kind)
            out[setting] = action
        out["action"] = policy(settings, verdict, kind)[1] if verdict != "Successful" else ""
    return out


def manent_step_analysis(step, all_steps=None):
    """The analysis of one traffic step: ``all_steps`` (deploy_traffic_analysis) with the step's ``analysis`` dict
    merged over it; ``{}`` when the step says ``analysis: false`` or neither gives checks."""
    step = _mapping(step)
    own = step.get("analysis", {})
    if own is False or own is None:
        return {}
    merged = dict(_mapping(all_steps))
    merged.update(_mapping(own))
    return merged if merged.get("checks") else {}


def manent_traffic_steps(steps, all_steps=None):
    """The steps of a traffic rollout as operations: each step with ``operation: step`` and its ``analysis``
    (manent_step_analysis, ``{}`` for none)."""
    out = []
    for step in steps or []:
        item = dict(_mapping(step))
        item.update({"operation": "step", "analysis": manent_step_analysis(step, all_steps)})
        out.append(item)
    return out


def manent_preflight_checks(analyses):
    """The checks of every analysis in ``analyses`` (the steps' settings), each once: a check repeated alike in
    several steps is sent once; one whose name another, different check has already gets a suffix (" #2")."""
    out, seen = [], []
    for analysis in analyses or []:
        for check in _mapping(analysis).get("checks") or []:
            check = dict(_mapping(check))
            if check in seen:
                continue
            seen.append(dict(check))
            names = {c.get("name") for c in out}
            base, number = check.get("name", ""), 2
            while check.get("name") in names:
                check["name"] = "%s #%d" % (base, number)
                number += 1
            out.append(check)
    return out


def manent_analysis_slots(history, service):
    """The placeholders of a traffic release's queries from manent_traffic's ``history``: ``candidate_slot`` and
    ``stable_slot`` (the slot in service, else the other slot), ``candidate_service`` and ``stable_service``
    (``<service>-<slot>``); ``{}`` without a candidate. Slot naming is rules/slots.py's."""
    # Imported here, not at module level: every worker that templates a filter of this collection loads this file
    # (compiled from source), while only the traffic analysis needs the slot rules.
    from ansible_collections.manent.kubernetes.plugins.module_utils.rules.slots import other_slot, slot_name  # pylint: disable=import-outside-toplevel
    history = _mapping(history)
    candidate = _mapping(history.get("candidate")).get("slot") or ""
    if not candidate:
        return {}
    try:
        stable = _mapping(history.get("in_service")).get("slot") or other_slot(candidate)
        return {"candidate_slot": candidate, "stable_slot": stable,
                "candidate_service": slot_name(service, candidate), "stable_service": slot_name(service, stable)}
    except InputError as err:
        raise AnsibleFilterError("traffic history: %s" % err) from err


def quorum_needed(quorum, total):
    """How many of ``total`` clusters must pass: all by default; a whole number (at most ``total``), a fraction
    (0 < q <= 1, rounded up) or a percentage ("50%", rounded up)."""
    if quorum in (None, "", "all"):
        return total
    text = str(quorum).strip()
    try:
        if text.endswith("%"):
            share = float(text[:-1]) / 100.0
        elif "." in text:
            share = float(text)
        else:
            return max(1, min(int(text), total)) if total else 0
    except ValueError as err:
        raise AnsibleFilterError("quorum %r is not a number, a fraction or a percentage" % (quorum,)) from err
    if not 0 < share <= 1:
        raise AnsibleFilterError("quorum %r must be above 0 and at most 1 (or 100%%)" % (quorum,))
    return min(total, max(1, int(math.ceil(share * total - 1e-9)))) if total else 0


def manent_quorum(hosts, hostvars, quorum=None, settings=None):
    """Whether enough clusters of ``hosts`` (a wave) passed: a cluster passed when its ``_deploy_result`` is not
    failed and its analysis is Successful. ``{ok, passed, failed, needed, total, message}``, and what a wave that
    did not pass does under the wave analysis ``settings``: ``verdict`` (the most severe of the clusters that did
    not pass: Failed, Error, Inconclusive; a failed deploy counts as Failed), ``action`` (rollback when the
    verdict of any cluster that did not pass says rollback, else stop) and ``policy`` (the setting that decided it,
    e.g. "on_error rollback")."""
    hosts = [str(host) for host in hosts or []]
    passed, failed, verdicts = [], [], set()
    for host in hosts:
        result = _mapping(_mapping(hostvars.get(host)).get("_deploy_result"))
        verdict = _mapping(result.get("analysis")).get("verdict")
        if result.get("status") != "failed" and verdict == "Successful":
            passed.append(host)
            continue
        failed.append(host)
        verdicts.add(verdict if result.get("status") != "failed" and verdict in SEVERITY else "Failed")
    needed = quorum_needed(quorum, len(hosts))
    ok = len(passed) >= needed
    message = "%d of %d cluster(s) of the wave passed the analysis, %d needed%s" % (
        len(passed), len(hosts), needed, "" if not failed else " (not passed: %s)" % ", ".join(failed))
    out = {"ok": ok, "passed": passed, "failed": failed, "needed": needed, "total": len(hosts), "message": message,
           "verdict": "", "action": "", "policy": ""}
    if not ok:
        ordered = [verdict for verdict in SEVERITY if verdict in verdicts] or ["Failed"]
        decided = [policy(settings, verdict, "wave") for verdict in ordered]
        setting, action = next((item for item in decided if item[1] == "rollback"), decided[0])
        out.update(verdict=ordered[0], action=action, policy="%s %s" % (setting, action))
    return out


def _weights(traffic):
    weights = _mapping(_mapping(traffic).get("weights"))
    return ", ".join("%s %s" % (slot, weights[slot]) for slot in sorted(weights)) or "unknown"


def manent_step_failure(analysis, traffic=None, host="this cluster"):
    """The message of a traffic step whose analysis did not pass: the verdict and reason (the check, its values and
    condition), the deciding check's rendered query, then what became of the traffic on ``host`` as the verdict's
    setting said (``action``, from manent_analysis_short with the step's settings). ``traffic``: the last
    manent_traffic result (the automatic abort's after an abort; it failed when it has a message, as the role
    tolerates its failure to report it here)."""
    analysis, traffic = _mapping(analysis), _mapping(traffic)
    verdict = analysis.get("verdict", "Error")
    setting, action = policy(analysis, verdict, "traffic")
    action = analysis.get("action") or action
    text = "analysis of the step to %s %% %s: %s" % (analysis.get("step", "?"), verdict, analysis.get("reason", ""))
    if analysis.get("query"):
        text += "; query: %s" % analysis["query"]
    if action == "abort":
        if traffic.get("msg") or traffic.get("failed"):
            return text + "; the automatic abort (%s abort) FAILED, run operation abort: %s" % (
                setting, traffic.get("msg", ""))
        return text + ("; aborted (%s abort): all traffic back to the stable slot (weights %s), the candidate scaled "
                       "to zero" % (setting, _weights(traffic)))
    return text + "; weights left at %s on %s (%s pause): run operation abort, or step again, %s" % (
        _weights(traffic), host or "this cluster", setting, LOOK_AT.get(verdict, LOOK_AT["Error"]))


def manent_wave_failure(result, analysis, quorum):
    """A cluster's result once its wave did not pass: status failed, its analysis, ``rolled_back`` and a message
    with the wave's count, this cluster's verdict, reason and query, and what became of it as the wave's
    ``quorum`` (manent_quorum with the settings) says: its ``action`` and ``policy``. ``result``: the cluster's
    result, the rollback's when the action is rollback (failed when it failed, or when the deploy had)."""
    out, analysis, quorum = dict(_mapping(result)), _mapping(analysis), _mapping(quorum)
    action, setting = quorum.get("action") or "stop", quorum.get("policy") or "on_failure stop"
    rolled_back = action == "rollback" and out.get("status") != "failed"
    parts = ["wave analysis failed: %s" % quorum.get("message", "")]
    if analysis.get("verdict"):
        parts.append("this cluster: analysis %s: %s" % (analysis["verdict"], analysis.get("reason", "")))
    if analysis.get("query"):
        parts.append("query: %s" % analysis["query"])
    if rolled_back:
        parts.append("rolled back to %s (%s)" % (out.get("version") or "the release before", setting))
    elif action == "rollback":
        parts.append("NOT rolled back: %s" % (out.get("message") or "its deploy failed"))
    elif out.get("status") != "failed":
        parts.append("%s stays on %s (%s): run playbooks/rollback.yml, or deploy again, %s" % (
            out.get("host") or "this cluster", out.get("version") or "the new release", setting,
            LOOK_AT.get(quorum.get("verdict"), LOOK_AT["Failed"])))
    out.update({"status": "failed", "analysis": analysis, "rolled_back": rolled_back, "message": "; ".join(parts)})
    return out


def analysis_note(result):
    """The one line of a cluster result's analysis, ``analysis <verdict>: <reason>``, or "" without one; the deploy
    summary (manent.py) and the traffic summary (manent_analysis_lines) both write it."""
    analysis = _mapping(_mapping(result).get("analysis"))
    return "analysis %s: %s" % (analysis["verdict"], analysis.get("reason", "")) if analysis.get("verdict") else ""


def manent_analysis_lines(results):
    """``host: analysis <verdict>: <reason>`` for each result (dicts with host and analysis) that has an analysis
    and no message of its own (a failure's message already says why)."""
    return ["%s: %s" % (_mapping(result).get("host", "?"), analysis_note(result)) for result in results or []
            if analysis_note(result) and not _mapping(result).get("message")]


class FilterModule:
    def filters(self):
        return {"manent_analysis_short": manent_analysis_short, "manent_step_analysis": manent_step_analysis,
                "manent_traffic_steps": manent_traffic_steps, "manent_preflight_checks": manent_preflight_checks,
                "manent_quorum": manent_quorum, "manent_analysis_slots": manent_analysis_slots,
                "manent_analysis_lines": manent_analysis_lines,
                "manent_step_failure": manent_step_failure, "manent_wave_failure": manent_wave_failure}
