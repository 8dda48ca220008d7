# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write BENCHMARKS.md and the plot (docs/bench.png) from the results.json of bench/bench.py run.

    python bench/report.py [--out .build/bench] [--md BENCHMARKS.md] [--png docs/bench.png]
                           [--results FILE] [--keep bench/results.json]

bench/results.json holds the raw results of the committed BENCHMARKS.md (bench.py run keeps them there when it
writes BENCHMARKS.md): `python bench/report.py --results bench/results.json` makes the same report again.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench import ANSIBLE_TOOLS, SCENARIOS, SCENARIO_TITLES, TOOL_TITLES, write_results  # noqa: E402  pylint: disable=wrong-import-position
import fleet  # noqa: E402  pylint: disable=wrong-import-position

REFERENCE = "manent-role"
# the rollout wait measured by hand (hack/perf.py wait), kept as it is when the tables are written again
WAIT_SECTION = ("<!-- bench-wait: begin -->", "<!-- bench-wait: end -->")
ROW_ORDER = ("manent-role", "manent-modules", "manent-apply", "manent-chart", "kubectl", "helm3", "helm4", "k8s")

# Why a peer can be faster than manent in a scenario: what each tool does (or skips) there.
WHY = {
    "kubectl": "one Go process sending one server-side apply per object (ApplySet: plus one LIST per kind to "
               "prune) and nothing else; manent pays ansible-playbook and module start-up (see the figures "
               "below; more for the role's preflight/checkpoint/summary tasks), renders and validates against "
               "discovery, checks ownership and writes the release history; the role also runs its preflight, "
               "checkpoint and summary tasks",
    "helm3": "one Go process with no Ansible start-up; its rollback re-sends a release it already stores, and "
             "an unchanged object costs a GET and no write",
    "helm4": "one Go process with no Ansible start-up (server-side apply), same release storage as Helm 3",
    "k8s": "one module process for the whole file; its check mode is a server dry run of each object",
}


def load(path):
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return data["meta"], data["results"]


def keep(meta, results, path):
    """Write the raw results a report was made from, so that it can be made again from them alone."""
    write_results(meta, results, path, indent=0)


INF = float("inf")


def medians(results, cap=None):
    """({(section, tool, size, scenario): (median seconds, runs measured)}, {key: [deviation, ...]}).
    manent-modules' apply task is the row manent-apply. A run stopped at the cap counts as longer than any
    measured run (so a median over capped runs is infinite: shown as "> cap"); a cell not run because it was
    capped before counts as capped too."""
    groups = collections.defaultdict(list)
    bounds = {}
    deviations = collections.defaultdict(list)
    late = {(r["section"], r["tool"], r["size"], r["run"]) for r in results
            if r.get("scenario") == "install" and r.get("skipped") == "deadline"}
    for r in results:
        if r.get("section") == "meta":
            continue
        key = (r["section"], r["tool"], r["size"], r["scenario"])
        if r.get("skipped") == "first install did not finish" and (key[0], key[1], key[2], r["run"]) in late:
            r = dict(r, skipped="deadline")  # its install was not run for lack of time, so neither was it
        if r["ok"]:
            groups[key].append(r["seconds"])
            if r["tool"] == "manent-modules" and r.get("task_seconds") is not None:
                groups[(r["section"], "manent-apply", r["size"], r["scenario"])].append(r["task_seconds"])
            continue
        if r.get("capped"):
            groups[key].append(INF)
            bounds[key] = min(bounds.get(key, r["capped"]), r["capped"])
            deviations[key].append("run %d: %s" % (r["run"], r.get("skipped") or "stopped at the cap (> %s s)"
                                                   % r.get("capped", cap)))
        elif r.get("skipped"):
            deviations[key].append("run %d: not run (%s)" % (r["run"], r["skipped"]))
        else:
            first = (r.get("error") or "").strip().splitlines()
            deviations[key].append("run %d: failed (`%s`)" % (r["run"], (first[-1] if first else "")[:160]))
    out = {}
    for key, values in groups.items():
        values.sort()
        measured = len([x for x in values if x != INF])
        mid = len(values) // 2
        median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
        out[key] = (median, measured, len(values), bounds.get(key))
    return out, deviations


def fmt(seconds, cap=None):
    if seconds == INF:
        return "> %s s (capped)" % cap if cap else "capped"
    return "%.2f s" % seconds if seconds < 10 else "%.1f s" % seconds


def ratio(a, b):
    if a == INF or b == INF:
        return None
    return a / b


def local_table(med, failures, size, tools, runs, cap=None):
    head = ["tool"] + [SCENARIO_TITLES[s] for s in SCENARIOS] + ["rollout wait alone"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for tool in tools:
        cells = [TOOL_TITLES.get(tool, tool)]
        found = False
        for scenario in SCENARIOS:
            got = med.get(("local", tool, size, scenario))
            ref = med.get(("local", REFERENCE, size, scenario))
            if got is None:
                cells.append("not run" if ("local", tool, size, scenario) in failures else "")
                continue
            found = True
            cell = fmt(got[0], got[3])
            if got[0] != INF and got[2] < runs:
                cell += " n=%d" % got[2]
            if got[0] != INF and got[1] < got[2]:
                cell += " (%d of %d capped)" % (got[2] - got[1], got[2])
            if ref and tool != REFERENCE and ratio(got[0], ref[0]) is not None:
                cell += " (%.2f×)" % ratio(got[0], ref[0])
            cells.append(cell)
        install = med.get(("local", tool, size, "install"))
        waited = med.get(("local", tool, size, "install+wait"))
        if install and waited and waited[0] == INF and install[0] != INF and waited[3]:
            cells.append("> %.0f s (capped)" % max(0.0, waited[3] - install[0]))
        elif install and waited and install[0] != INF:
            cells.append(fmt(max(0.0, waited[0] - install[0])))
        else:
            cells.append("")
        if found or any(k[0] == "local" and k[1] == tool and k[2] == size for k in failures):
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def peer_wins(med, sizes):
    """Cells where a peer's median beats manent (role and modules alike)."""
    wins = []
    for size in sizes:
        for scenario in SCENARIOS:
            mine = [med.get(("local", t, size, scenario)) for t in ("manent-role", "manent-modules")]
            mine = [m for m in mine if m]
            if not mine:
                continue
            best = min(mine)
            best, bound = best[0], best[3]
            for tool in ("kubectl", "helm3", "helm4", "k8s"):
                got = med.get(("local", tool, size, scenario))
                if got and got[0] < best and got[0] != INF:
                    wins.append((size, scenario, tool, got[0], best, bound))
    return wins


def plot(med, sizes, tools, path):
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    panels = ("install", "noop", "image", "install+wait")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), sharex=True, sharey=True)
    for ax, scenario in zip(axes, panels):
        for tool in tools:
            xs, ys, capped = [], [], []
            for size in sizes:
                got = med.get(("local", tool, size, scenario))
                if got and got[0] != INF:
                    xs.append(size)
                    ys.append(got[0])
                elif got and got[3]:
                    capped.append((size, got[3]))
            line = None
            if xs:
                line = ax.plot(xs, ys, marker="o", linestyle="--" if tool == "manent-apply" else "-", label=tool)[0]
            if capped:  # a capped median: an upward triangle at the cap (the time is above it)
                ax.plot([c[0] for c in capped], [c[1] for c in capped], marker="^", linestyle="none",
                        color=line.get_color() if line else None, label=None if line else tool + " (capped)")
        ax.set_title(SCENARIO_TITLES[scenario] + "\n(triangle: capped, time above it)"
                     if any(v[0] == INF for k, v in med.items() if k[0] == "local" and k[3] == scenario)
                     else SCENARIO_TITLES[scenario])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("objects")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("seconds (median)")
    axes[-1].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def floors(results, meta):
    """[(invocation, median seconds, runs)] of Ansible's floor (bench/playbooks/floor.yml), one per invocation that
    measured it, in the order of the invocations (results recorded before bench.py named their invocation: one
    entry, invocation None)."""
    times = collections.OrderedDict((inv.get("started"), []) for inv in meta.get("invocations") or [meta])
    for r in results:
        if r.get("section") == "floor" and r.get("ok"):
            times.setdefault(r.get("invocation"), []).append(r["seconds"])
    return [(started, statistics.median(got), len(got)) for started, got in times.items() if got]


def floor_at(results, meta, size):
    """Ansible's floor as measured by the invocation that measured the local cells of this size (None: unknown)."""
    measured = dict((started, seconds) for started, seconds, _count in floors(results, meta or {}))
    at = collections.Counter(r.get("invocation") for r in results
                             if r.get("section") == "local" and r.get("size") == size)
    return measured.get(at.most_common(1)[0][0]) if at else None


def floor_section(med, tools, results=(), meta=None):
    """Ansible's floor (bench/playbooks/floor.yml) and what it means for the Ansible rows at 300 objects. Measured by
    several invocations, the floor of each is given (the machine's speed may have changed between them), and the
    rows at 300 objects are compared with the floor of the invocation that measured them."""
    got = med.get(("floor", "ansible-playbook", 0, "floor"))
    if not got or got[0] == INF:
        return []
    measured = floors(results, meta or {})
    invocations = {inv.get("started"): inv for inv in (meta or {}).get("invocations") or [meta or {}]}
    floor = got[0]
    if len(measured) > 1:
        said = "; ".join("**%s** (median of %d, the invocation of %s that measured sizes %s)" % (
            fmt(seconds), count, started, ",".join(str(x) for x in invocations.get(started, {}).get("sizes") or [])
            or "remote") for started, seconds, count in measured)
        floor = floor_at(results, meta, 300) or floor
        said += (". The same command took different times in different invocations: the machine's speed changed "
                 "between them (a shared machine), so compare a cell with the floor of its own invocation")
    else:
        said = "**%s** (median of %d)" % (fmt(floor), got[2])
    lines = ["## Ansible's floor", "",
             "`ansible-playbook` running one `debug` task on the same inventory and cluster (bench/playbooks/floor.yml): "
             "%s. Every Ansible row above (manent's role and modules, kubernetes.core) pays it, "
             "and then about 0.03–0.1 s of the controller's CPU for every further task, even a skipped one; "
             "kubectl and Helm pay a Go binary's start-up instead." % said, ""]
    rows = []
    for tool in ANSIBLE_TOOLS:
        if tool not in tools:
            continue
        for scenario in ("install", "noop"):
            cell = med.get(("local", tool, 300, scenario))
            if cell and cell[0] != INF:
                rows.append("%s %s %s (%.1f× the floor)" % (
                    tool, SCENARIO_TITLES[scenario], fmt(cell[0]), cell[0] / floor))
    if rows:
        lines += ["300 objects (against the floor of %s): " % fmt(floor) + "; ".join(rows) + ".", ""]
    return lines


def remote_section(meta, med, cap=None, cpu=None):
    size = meta.get("remote_size")
    if not size:
        return []
    cases = sorted({k[1] for k in med if k[0] == "remote"})
    if not cases:
        return ["## Remote clusters", "", "Not measured in this run (see the Notes).", ""]
    lines = ["## Remote clusters: %d ms per round trip, %d objects" % (meta["delay_ms"], size), "",
             "Each local API server behind its own loopback delay proxy (hack/tcpproxy.py, %d ms added per round "
             "trip, half each way; TLS passes through). `xN`: N clusters in one run (the role deploys them in "
             "parallel: one wave, deploy_parallel N). Waits off, as in the local tables (deploy_wait: false)." %
             meta["delay_ms"], "",
             "| case | first install | nothing changed |", "|---|---|---|"]
    for case in cases:
        cells = [case]
        for scenario in ("install", "noop"):
            got = med.get(("remote", case, size, scenario))
            cell = fmt(got[0], got[3]) if got else "not run"
            if got and got[0] != INF and got[2] < meta["runs"]:
                cell += " n=%d" % got[2]
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")

    def rratio(a, b, scenario):
        x, y = med.get(("remote", a, size, scenario)), med.get(("remote", b, size, scenario))
        value = ratio(x[0], y[0]) if x and y else None
        return "%.2f×" % value if value is not None else "n/a"
    many = [c for c in cases if c.startswith("manent-role x") and not c.endswith("x1")]
    for case in many:
        lines.append("- %s / one cluster: install %s, nothing changed %s (target ≤ 1.3×)." % (
            case, rratio(case, "manent-role x1", "install"), rratio(case, "manent-role x1", "noop")))
    lines.append("- manent modules / kubectl, one cluster: install %s, nothing changed %s (target ≤ 0.2×)." % (
        rratio("manent-modules x1", "kubectl x1", "install"), rratio("manent-modules x1", "kubectl x1", "noop")))
    lines.append("- manent role / kubectl, one cluster: install %s, nothing changed %s." % (
        rratio("manent-role x1", "kubectl x1", "install"), rratio("manent-role x1", "kubectl x1", "noop")))
    lines.append("")
    return lines + cpu_lines(meta, med, cpu or {}, size)


def chart_section(med, sizes):
    """manent's role deploying the packaged chart against helm upgrade --install of the same chart."""
    lines = []
    for size in sizes:
        for scenario in SCENARIOS:
            got = {t: med.get(("local", t, size, scenario)) for t in ("manent-chart", "helm3", "helm4", "manent-role")}
            if not got["manent-chart"]:
                continue
            mine = got["manent-chart"]
            cells = ["{:,}".format(size), SCENARIO_TITLES[scenario], fmt(mine[0], mine[3])]
            for tool in ("helm3", "helm4"):
                cells.append(fmt(got[tool][0], got[tool][3]) if got[tool] else "")
            for tool in ("helm3", "helm4"):
                value = ratio(mine[0], got[tool][0]) if got[tool] else None
                cells.append("%.2f×" % value if value is not None else "")
            role = got["manent-role"]
            extra = mine[0] - role[0] if role and ratio(mine[0], role[0]) is not None else None
            cells.append("%+.2f s" % extra if extra is not None else "")
            lines.append("| " + " | ".join(cells) + " |")
    if not lines:
        return []
    return ["## The same packaged chart: manent against Helm", "",
            "manent's role deploying bench/chart/manent-bench, the package `helm upgrade --install` deploys, with "
            "the same values (the package as `deploy_artifact.source`, `deploy_helm_value`; the pinned Helm 3 renders it with "
            "`helm template` against the cluster's discovery, manent applies, prunes and records history). Ratio: "
            "manent's median over Helm's (below 1: manent is faster). *rendering the chart* = this row minus the "
            "role deploying the same objects as plain manifests (manent-role).", "",
            "| objects | scenario | manent, chart | helm 3 | helm 4 | manent / helm 3 | manent / helm 4 "
            "| rendering the chart |", "|---|---|---|---|---|---|---|---|"] + lines + [""]


def cpu_of(results, section="remote"):
    """{(tool, size, scenario): (median CPU seconds of the command, of the clusters' control planes, of the bench
    process (the delay proxies), of their sum)} over the ``section``'s runs that recorded all three."""
    groups = collections.defaultdict(list)
    for r in results:
        cpu = r.get("cpu_seconds") or {}
        if r.get("section") == section and r.get("ok") and None not in (
                cpu.get("command"), cpu.get("clusters"), cpu.get("bench")):
            parts = (cpu["command"], cpu["clusters"], cpu["bench"])
            groups[(r["tool"], r["size"], r["scenario"])].append(parts + (sum(parts),))
    return {key: tuple(statistics.median(run[i] for run in runs) for i in range(4)) for key, runs in groups.items()}


def cpu_lines(meta, med, cpu, size):
    """The remote section's CPU table: what each case cost the machine, and the least wall time that CPU allows
    on this machine's cores (a case needing more CPU than the cores give in its wall time is bound by them)."""
    cores = (meta.get("machine") or {}).get("cores") or 0
    cases = sorted({k[0] for k in cpu if k[1] == size})
    if not cases or not cores:
        return []
    lines = ["CPU used by each case (medians, seconds of user + system time): the command with its workers, the "
             "control planes of its clusters (kube-apiserver, etcd, controller manager, scheduler, kwok: whatever they "
             "did during the command, including the controllers' work on the objects it created) and the bench "
             "process, where the delay proxies run. *CPU floor*: that total divided by the machine's %d cores, the "
             "least wall time the case can take here however its requests are sent." % cores, "",
             "| case | scenario | wall | command | control planes | proxies | total | CPU floor |",
             "|---|---|---|---|---|---|---|---|"]
    for case in cases:
        for scenario in ("install", "noop"):
            got, wall = cpu.get((case, size, scenario)), med.get(("remote", case, size, scenario))
            if not got:
                continue
            lines.append("| %s | %s | %s | %.1f s | %.1f s | %.1f s | %.1f s | %.2f s |" % (
                case, SCENARIO_TITLES[scenario], fmt(wall[0], wall[3]) if wall else "n/a", got[0], got[1], got[2],
                got[3], got[3] / cores))
    one = cpu.get(("manent-role x1", size, "install"))
    for case in cases:
        many = cpu.get((case, size, "install"))
        wall = med.get(("remote", "manent-role x1", size, "install"))
        if case.startswith("manent-role x") and case != "manent-role x1" and many and one and wall:
            lines.append("")
            lines.append("- %s, first install: its CPU floor is %.2f s, %.2f× one cluster's wall time (%s): a ratio "
                         "to one cluster below that cannot be measured on %d cores%s." % (
                             case, many[3] / cores, many[3] / cores / wall[0], fmt(wall[0]), cores,
                             " (the ≤ 1.3× target is out of this machine's reach)"
                             if many[3] / cores / wall[0] > 1.3 else ""))
    return lines + [""]


def peaks_of(results):
    """{(tool, size, scenario): largest peak resident memory (MiB) of any run}, local section, runs that
    recorded it. ``peak_rss_mib`` only: the ``peak_mib`` of earlier runs was read from a direct child of the bench
    process, which carries the bench's own high-water mark through exec, so it is not the command's."""
    out = {}
    for r in results:
        if r.get("section") == "local" and r.get("ok") and r.get("peak_rss_mib"):
            key = (r["tool"], r["size"], r["scenario"])
            out[key] = max(out.get(key, 0.0), r["peak_rss_mib"])
    return out


def memory_section(peaks, tools):
    """Peak memory per tool and size, first install and nothing changed."""
    sizes = sorted({k[1] for k in peaks})
    if not sizes:
        return []
    head = ["tool"] + ["%s objects: first install / nothing changed" % "{:,}".format(size) for size in sizes]
    lines = ["## Peak memory", "",
             "Resident memory of the largest process of each command (the command and the processes it waited "
             "for: ansible-playbook's workers, which run manent's render and apply in the controller; GNU time's "
             "%M), the largest of the runs, MiB. Runs recorded before bench.py measured it show as blank.", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for tool in tools:
        if tool == "manent-apply":
            continue
        cells = [TOOL_TITLES.get(tool, tool)]
        for size in sizes:
            got = [peaks.get((tool, size, s)) for s in ("install", "noop")]
            cells.append(" / ".join("%.0f" % x if x else "–" for x in got) if any(got) else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def targets_section(meta, med, peaks=None):
    """Issue 13's targets, each checked against this run's medians: met, not met, or not measured."""
    rows = []

    def cell(section, tool, size, scenario):
        got = med.get((section, tool, size, scenario))
        return got[0] if got and got[0] != INF else None

    def check(what, value, limit, unit="×", shown=None):
        if value is None:
            rows.append("| %s | not measured | %s |  |" % (what, limit_text(limit, unit)))
            return
        verdict = "met" if value <= limit else "**not met**"
        rows.append("| %s | %s | %s | %s |" % (what, shown or ("%.2f%s" % (value, unit)), limit_text(limit, unit), verdict))

    def limit_text(limit, unit):
        return "≤ %g%s" % (limit, unit)

    def div(a, b):
        return a / b if a is not None and b else None

    role, k8s = ("local", "manent-role", 300), ("local", "k8s", 300)
    check("role, 300 objects, first install / kubernetes.core's", div(cell(*role, "install"), cell(*k8s, "install")),
          0.5)
    check("role, 300 objects, nothing changed / kubernetes.core's", div(cell(*role, "noop"), cell(*k8s, "noop")),
          0.5)
    for size, limit in ((300, 0.2), (3000, 0.1)):
        check("apply task alone, %s objects, nothing changed / first install" % "{:,}".format(size),
              div(cell("local", "manent-apply", size, "noop"), cell("local", "manent-apply", size, "install")),
              limit)
    whole, modules = cell(*role, "noop"), cell("local", "manent-modules", 300, "noop")
    check("role overhead, 300 objects, nothing changed: role − modules playbook (one cluster)",
          whole - modules if whole is not None and modules is not None else None, 2.0, " s")
    for tool in ("manent-role", "manent-modules"):
        for scenario in ("install", "noop"):
            check("%s, %s: time(3,000) / time(300)" % (tool, SCENARIO_TITLES[scenario]),
                  div(cell("local", tool, 3000, scenario), cell("local", tool, 300, scenario)), 10)
    size = meta.get("remote_size")
    if size:
        for scenario in ("install", "noop"):
            check("remote, modules / kubectl, one cluster, %s" % SCENARIO_TITLES[scenario],
                  div(cell("remote", "manent-modules x1", size, scenario), cell("remote", "kubectl x1", size, scenario)),
                  0.2)
    peak = max((v for k, v in (peaks or {}).items() if k[0] == "manent-role" and k[1] == 3000), default=None)
    check("role, 3,000 objects: peak memory of the controller's largest process", peak, 300, " MiB",
          "%.0f MiB" % peak if peak else None)
    if not rows:
        return []
    return ["## Issue 13's targets", "",
            "Each computed from the medians above (the role overhead approximated as the role's time minus the "
            "modules playbook's: the role's own tasks, its checkpoint read included), peak memory from the \"Peak "
            "memory\" table when the run measured it. The role is held at 0.5× kubernetes.core's time on one "
            "cluster: one `ansible-playbook` run costs its floor (see Ansible's floor) before any work, so lower "
            "ratios on one cluster are out of reach. What grows with a fleet, the controller's cost per cluster, has "
            "its targets in the fleet section below (they replace \"3 remote clusters ≤ 1.3× one\").", "",
            "| target | this run | limit | |", "|---|---|---|---|"] + rows + [""]


def notes(meta, med, deviations, sizes, tools):
    """Every way this run differs from "every cell, median of --runs runs", written from the results."""
    runs = meta["runs"]
    out = list(meta.get("notes") or [])
    if meta.get("cap"):
        out.append("Per-command cap (seconds, by size below). A command still running then was stopped (with its "
                   "process group) and its cell counts as longer than the cap; a median over such runs shows as "
                   "`> N s (capped)`. A cell capped once is not run again in later runs or at larger sizes (it would "
                   "only spend the cap again): those runs count as capped too.")
    for size, chosen in sorted((meta.get("size_scenarios") or {}).items(), key=lambda kv: int(kv[0])):
        left = [SCENARIO_TITLES[x] for x in SCENARIOS if x not in chosen]
        if left:
            out.append("%s objects: only %s measured (to fit the run in its time); not measured: %s." % (
                "{:,}".format(int(size)), ", ".join(SCENARIO_TITLES[x] for x in SCENARIOS if x in chosen),
                ", ".join(left)))
    caps = meta.get("caps") or {}
    if caps:
        out.append("Per-command caps by size: %s." % ", ".join(
            "%s objects %s s" % ("{:,}".format(int(k)), v) for k, v in sorted(caps.items(), key=lambda kv: int(kv[0]))))
    if meta.get("budget_minutes"):
        out.append("Time budget of the first invocation: %s minutes; cells due after it were not run." %
                   meta["budget_minutes"])
    invocations = meta.get("invocations") or []
    if len(invocations) > 1:
        out.append("This report joins %d invocations of bench/bench.py (`--append`), one after the other on the same "
                   "machine: %s." % (len(invocations), "; ".join(
                       "%s: sizes %s, %s run(s)%s%s" % (
                           inv.get("started"), ",".join(str(x) for x in inv.get("sizes") or []) or "none",
                           inv.get("runs"), ", remote section planned" if inv.get("remote_size") else ", no remote section",
                           (", budget %s min" % inv["budget_minutes"]) if inv.get("budget_minutes") else "")
                       + ("; its %s-object cells were measured again by a later invocation (`--replace`)" % ",".join(
                           str(x) for x in inv["replaced"]) if inv.get("replaced") else "")
                       for inv in invocations)))
    if meta.get("remote_size") and not any(k[0] == "remote" for k in med):
        out.append("Remote section (%d objects, %d ms): not measured in this run." % (
            meta["remote_size"], meta.get("delay_ms") or 0))
    planned = list(meta.get("sizes", sizes))
    for size in planned:
        if size not in sizes:
            out.append("%d objects: no cell finished." % size)
    late = collections.defaultdict(set)  # cells the time budget left out, by section and size

    def order(k):
        return k[0], k[2], str(k[1]), SCENARIOS.index(k[3]) if k[3] in SCENARIOS else 0

    for key in sorted(deviations, key=order):
        section, tool, size, scenario = key
        reasons = [d for d in deviations[key] if not d.endswith("not run (deadline)")]
        if len(reasons) < len(deviations[key]):
            got = med.get(key)
            late[(section, size)].add((tool, scenario, got[1] if got else 0))
        if not reasons:
            continue
        got = med.get(key)
        what = "median of %d measured run(s)" % got[1] if got and got[0] != INF else (
            "shown as capped" if got else "no figure")
        title = SCENARIO_TITLES.get(scenario, scenario)
        out.append("%s, %s, %d objects, %s: %s; %s." % (section, tool, size, title, "; ".join(reasons), what))
    for (section, size), cells in sorted(late.items()):
        out.append("%s, %d objects: not run in some or all runs because the time budget was spent: %s." % (
            section, size, late_cells(cells)))
    short = collections.defaultdict(set)
    for key, value in med.items():
        if value[2] < runs and key not in deviations and key[1] != "manent-apply":
            short[(key[0], key[2], value[2])].add(key[1])
    asked = {}  # size -> --runs of the last invocation that measured it
    for inv in invocations or [meta]:
        for size in inv.get("sizes") or []:
            asked[size] = inv.get("runs")
    for (section, size, count), names in sorted(short.items()):
        why = ("its invocation asked for %d (`--runs %d`)" % (count, count) if section == "local" and
               asked.get(size) == count else "its invocation ended, stopped or out of time, before the others")
        out.append("%s, %d objects: %d run(s) instead of %d (%s) for %s." % (
            section, size, count, runs, why, ", ".join(sorted(names))))
    if not out:
        return []
    return ["## Notes", ""] + ["- " + n for n in out] + [""]


def late_cells(cells):
    """The cells the time budget left out ((tool, scenario, runs measured)), by tool: "helm3 (first install,
    rollback: 2 runs measured), k8s (first install, prune: 1 run measured; rollback: no run measured)"."""
    def runs(n):
        return "%d run%s measured" % (n, "" if n == 1 else "s") if n else "no run measured"
    by_tool = collections.defaultdict(list)
    for tool, scenario, count in cells:
        by_tool[tool].append((SCENARIOS.index(scenario) if scenario in SCENARIOS else len(SCENARIOS), scenario, count))
    said = []
    for tool in sorted(by_tool):
        groups = collections.OrderedDict()  # runs measured -> scenarios, in the order of the scenarios
        for _order, scenario, count in sorted(by_tool[tool]):
            groups.setdefault(count, []).append(SCENARIO_TITLES.get(scenario, scenario))
        said.append("%s (%s)" % (tool, "; ".join("%s: %s" % (", ".join(titles), runs(count))
                                                 for count, titles in groups.items())))
    return ", ".join(said)


def by_value(invocations, values):
    """[(sizes, value)] of each distinct value, in the order of first appearance, with the sizes ("30,300") of every
    invocation that had it (an invocation of the remote section alone: "remote")."""
    grouped = collections.OrderedDict()
    for inv, value in zip(invocations, values):
        sizes = grouped.setdefault(value, [])
        for size in [str(x) for x in inv.get("sizes") or []] or ["remote"]:
            if size not in sizes:
                sizes.append(size)
    return [(",".join(sizes), value) for value, sizes in grouped.items()]


def controller_clients(meta):
    """How fast the cluster's controllers could write (hack/clusters.py --controller-qps), per invocation when
    they differ: it sets how long a rollout takes, not what the deploy commands cost."""
    def said(qps):
        return ("controller-manager and scheduler at %d requests/s (burst %d, `hack/clusters.py up --controller-qps "
                "%d`)" % (qps, 2 * qps, qps) if qps else
                "controller-manager and scheduler at their default client rates (controller-manager 20 requests/s, "
                "burst 30)")
    invocations = meta.get("invocations") or [meta]
    rates = [said(inv.get("controller_qps")) for inv in invocations]
    if len(set(rates)) == 1:
        return rates[0]
    return "; ".join("sizes %s: %s" % pair for pair in by_value(invocations, rates))


def manent_versions(meta):
    """The collection's version and commit, per invocation when a joined report's invocations ran different code
    (invocations recorded before bench.py kept it per invocation: the first one's, from meta["versions"])."""
    invocations = meta.get("invocations") or [meta]
    first = meta["versions"].get("manent.kubernetes")
    said = [inv.get("manent_version") or (first if i == 0 else None) for i, inv in enumerate(invocations)]
    if len(set(said)) == 1 or None in said:
        return first
    return "; ".join("%s (sizes %s)" % (version, sizes) for sizes, version in by_value(invocations, said))


def write(meta, results, md_path, png_path):
    cap = meta.get("cap")
    med, failures = medians(results, cap)
    sizes = sorted({k[2] for k in med if k[0] == "local"})
    tools = [t for t in ROW_ORDER if any(k[1] == t for k in med)]
    v = meta["versions"]
    m = meta["machine"]
    joined = len(meta.get("invocations") or []) > 1
    lines = ["# Benchmarks", "",
             "Generated by `make bench` (bench/bench.py, bench/report.py) from %s, %s to %s: do not edit, rerun. "
             "Every figure is the median of %s runs (`n=2`: of the runs that finished), measured side by side in the "
             "same run on the same cluster." % (
                 "%d invocations, one after the other (see the Notes)" % len(meta["invocations"]) if joined
                 else "one run",
                 meta["started"], meta.get("finished", "(unfinished)"),
                 ("at least %d" if joined else "%d") % meta["runs"]), "",
             "Reproduce: `%s` (needs Go and Python 3.11 like `make test`; builds kubectl and Helm 4 once into the "
             "cache, creates the bench virtualenv from bench/requirements.txt, uses the running local clusters or "
             "starts them)." % " && ".join(inv["command"] for inv in meta.get("invocations") or [meta]), "",
             "## Machine", "",
             "- %s, %s cores, %s, %s" % (m["cpu"], m["cores"], m["memory"], m["os"]),
             "- Load average (1, 5, 15 min) before: %s, after: %s. Absolute times follow the machine's load (the "
             "same command took up to 2x longer on this kind of machine while other jobs shared it): compare ratios "
             "within a table." % (
                 ", ".join("%.1f" % x for x in meta["load_before"]),
                 ", ".join("%.1f" % x for x in meta.get("load_after", [])) or "n/a"),
             "- Cluster: local `%s` (hack/clusters.py: real kube-apiserver, etcd, controller-manager, scheduler; "
             "kwok nodes make pods Ready), loopback; %s." % (meta["cluster"], controller_clients(meta)), "",
             "## Versions", "", "| tool | version |", "|---|---|"]
    lines += ["| %s | %s |" % (k, str(manent_versions(meta) if k == "manent.kubernetes" else val).replace("\n", " "))
              for k, val in v.items()]
    lines += ["", "Pinned in hack/versions.env (kubectl = K8S_VERSION, HELM_VERSION, HELM4_VERSION) and "
              "bench/requirements.txt (ansible, kubernetes.core inside it).", ""]
    if meta.get("missing"):
        lines += ["Not measured: " + "; ".join("%s: %s" % kv for kv in meta["missing"].items()), ""]
    lines += ["## What is measured", "",
              "Objects from bench/gen.py (kinds in every 10: 3 ConfigMaps, 1 Secret, 1 ServiceAccount, 2 Services, "
              "3 Deployments of 1 pod); Helm deploys the same objects from the chart bench/chart/manent-bench, "
              "packaged with the pinned Helm 3 at bench time; manent-chart is manent's role deploying that same package. "
              "The tools take turns (the order rotates with each run); "
              "each gets a fresh namespace and runs, in order:",
              "",
              "1. **first install**, waits off where the tool allows it (the role: `deploy_wait: false`);",
              "2. **nothing changed**: the same release again;",
              "3. **one image changed** (the first Deployment);",
              "4. **10 % removed (prune)**: the last tenth of the objects (every kind). kubectl: ApplySet "
              "(`--prune --applyset`); kubernetes.core: a second `k8s` task with `state: absent` on the removed "
              "objects (it has no prune); Helm and manent: their own prune;",
              "5. **rollback** to the release before the prune: `helm rollback`, manent's history rollback "
              "(modules: `manent_history`; role: playbooks/rollback.yml); kubectl and kubernetes.core have no "
              "release history: they re-apply the previous file;",
              "6. **check mode**: a dry run of another image change (`--dry-run=server`, `ansible-playbook --check`);",
              "",
              "then, in a second fresh namespace, **first install + rollout wait** with the tool's own wait "
              "(`kubectl wait --for=condition=Available`, `helm --wait` (Helm 4: `--wait=watcher`), `k8s wait: true`, "
              "manent `wait: true`). *rollout wait alone* = that minus the first install. Times are wall-clock "
              "seconds of the whole command (ansible-playbook start-up included). Ratios in brackets: × the manent "
              "role's time in the same column (below 1: faster than the role). *manent apply task alone* is the "
              "`manent_apply` task's own time inside the modules playbook (from a timing callback)."
              + (" Before each command the bench waits, untimed, until the cluster has settled (every Deployment "
                 "of the namespace rolled out, no pod terminating; at most %s s): each command starts where a real "
                 "deploy starts, rather than sharing the 2 cores with controllers still creating the previous "
                 "command's pods." % meta["settle_timeout"] if meta.get("settle_timeout") else ""), ""]
    for size in sizes:
        lines += ["## Local cluster, %d objects" % size, ""]
        lines += local_table(med, failures, size, tools, meta["runs"], cap)
        lines.append("")
    if png_path:
        rel = os.path.relpath(png_path, os.path.dirname(os.path.abspath(md_path)))
        lines += ["## Time against object count", "", "![time against object count per tool](%s)" % rel, ""]
        scaling = []
        for tool in tools:
            for scenario in ("install", "noop"):
                lo, hi = med.get(("local", tool, 300, scenario)), med.get(("local", tool, 3000, scenario))
                if lo and hi and ratio(hi[0], lo[0]) is not None:
                    scaling.append("%s %s %.1f×" % (tool, SCENARIO_TITLES[scenario], hi[0] / lo[0]))
        if scaling:
            lines += ["time(3,000) / time(300): " + "; ".join(scaling) + ".", ""]
            lo, hi = floor_at(results, meta, 300), floor_at(results, meta, 3000)
            if lo and hi and not 0.8 <= hi / lo <= 1.25:
                lines[-2:-1] = [lines[-2] + (
                    " The two sizes were measured by invocations whose Ansible floor differs (%s at 300 objects, "
                    "%s at 3,000; see Ansible's floor): the same command took %.1f× as long during the larger size, and "
                    "these ratios include that." % (fmt(lo), fmt(hi), hi / lo))]
    lines += floor_section(med, tools, results, meta)
    lines += chart_section(med, sizes)
    lines += remote_section(meta, med, cap, cpu_of(results))
    peaks = peaks_of(results)
    lines += memory_section(peaks, tools)
    lines += targets_section(meta, med, peaks)
    lines += ["## Where a peer wins, and why", ""]
    wins = peer_wins(med, sizes)
    if not wins:
        lines += ["Nowhere in this run: in every column manent (role or modules) was at least as fast as every "
                  "peer.", ""]
    for size, scenario, tool, got, best, bound in wins:
        alone = med.get(("local", "manent-apply", size, scenario))
        lines.append("- %d objects, %s: **%s** %s vs manent's best %s (%s; manent's apply task alone: %s)." % (
            size, SCENARIO_TITLES[scenario], tool, fmt(got), fmt(best, bound),
            "%.2f×" % ratio(got, best) if ratio(got, best) is not None else "manent capped",
            fmt(alone[0], alone[3]) if alone else "n/a"))
    if wins:
        lines += ["", "Why the peers win there:", ""]
        for tool in sorted({w[2] for w in wins}):
            lines.append("- **%s**: %s." % (tool, WHY.get(tool, "")))
        inside = [w for w in wins if (med.get(("local", "manent-apply", w[0], w[1])) or (INF,))[0] < w[3]]
        lines.append("- In %d of these %d cells manent's apply task alone was faster than the peer: the gap there is "
                     "outside the apply (ansible-playbook and module start-up, the render task%s)." % (
                         len(inside), len(wins), ", and for the role its other tasks"))
        overhead = []
        for size in sizes:
            whole, alone = med.get(("local", "manent-modules", size, "noop")), med.get(
                ("local", "manent-apply", size, "noop"))
            if whole and alone and ratio(whole[0], alone[0]) is not None:
                overhead.append("%s s at %s objects" % ("%.2f" % (whole[0] - alone[0]), "{:,}".format(size)))
        if overhead:
            lines.append("- The modules playbook outside its apply task (start-up + render), nothing changed: %s." %
                         ", ".join(overhead))
    lines.append("")
    lines += notes(meta, med, failures, sizes, tools)
    text = "\n".join(lines)
    if os.path.exists(md_path):  # the fleet section (bench/fleet.py report) and those measured by hand are kept
        with open(md_path, encoding="utf-8") as handle:
            old = handle.read()
        text = fleet.keep_section(old, text)
        text = fleet.keep_section(old, text, *WAIT_SECTION)
    with open(md_path, "w", encoding="utf-8") as handle:
        handle.write(text)
    if png_path:
        plot(med, sizes, tools, png_path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, ".build", "bench"))
    parser.add_argument("--md", default=os.path.join(ROOT, "BENCHMARKS.md"))
    parser.add_argument("--png", default=os.path.join(ROOT, "docs", "bench.png"))
    parser.add_argument("--results", default="",
                        help="the raw results to report (default: OUT/results.json); e.g. bench/results.json, those "
                             "of the committed BENCHMARKS.md")
    parser.add_argument("--keep", default="",
                        help="also write the raw results to this file (make bench: bench/results.json, committed "
                             "with BENCHMARKS.md)")
    args = parser.parse_args(argv)
    meta, results = load(args.results or os.path.join(args.out, "results.json"))
    write(meta, results, args.md, args.png)
    if args.keep:
        keep(meta, results, args.keep)
    print("wrote %s and %s%s" % (args.md, args.png, " and " + args.keep if args.keep else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
