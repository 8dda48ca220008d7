# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write BENCHMARKS.md and the plot (docs/bench.png) from the results.json of bench/bench.py run.

    python bench/report.py [--out .build/bench] [--md BENCHMARKS.md] [--png docs/bench.png]
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
from bench import SCENARIOS, SCENARIO_TITLES, TOOL_TITLES  # noqa: E402  pylint: disable=wrong-import-position

REFERENCE = "manent-role"
ROW_ORDER = ("manent-role", "manent-modules", "manent-apply", "kubectl", "helm3", "helm4", "k8s")

# Why a peer can be faster than manent in a scenario: what each tool does (or skips) there.
WHY = {
    "kubectl": "one Go process sending one server-side apply per object (ApplySet: plus one LIST per kind to "
               "prune) and nothing else; manent pays ansible-playbook and module start-up (about 1 s for the "
               "modules playbook, more for the role's preflight/checkpoint/summary tasks), renders and validates "
               "against discovery, checks ownership and writes the release history; the role also waits for the "
               "rollout in every scenario",
    "helm3": "one Go process with no Ansible start-up; its rollback re-sends a release it already stores, and "
             "an unchanged object costs a GET and no write",
    "helm4": "one Go process with no Ansible start-up (server-side apply), same release storage as Helm 3",
    "k8s": "one module process for the whole file; its check mode is a server dry run of each object",
}


def load(out):
    with open(os.path.join(out, "results.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    return data["meta"], data["results"]


def medians(results):
    """{(section, tool, size, scenario): (median seconds, runs)}; manent-modules' apply task as manent-apply."""
    groups = collections.defaultdict(list)
    failures = collections.defaultdict(list)
    for r in results:
        if r.get("section") == "meta":
            continue
        key = (r["section"], r["tool"], r["size"], r["scenario"])
        if not r["ok"]:
            failures[key].append(r.get("error", ""))
            continue
        groups[key].append(r["seconds"])
        if r["tool"] == "manent-modules" and r.get("task_seconds") is not None:
            groups[(r["section"], "manent-apply", r["size"], r["scenario"])].append(r["task_seconds"])
    return {k: (statistics.median(v), len(v)) for k, v in groups.items()}, failures


def fmt(seconds):
    return "%.2f s" % seconds if seconds < 10 else "%.1f s" % seconds


def local_table(med, failures, size, tools, runs):
    head = ["tool"] + [SCENARIO_TITLES[s] for s in SCENARIOS] + ["rollout wait alone"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for tool in tools:
        cells = [TOOL_TITLES.get(tool, tool)]
        found = False
        for scenario in SCENARIOS:
            got = med.get(("local", tool, size, scenario))
            ref = med.get(("local", REFERENCE, size, scenario))
            if got is None:
                cells.append("failed" if ("local", tool, size, scenario) in failures else "")
                continue
            found = True
            cell = fmt(got[0])
            if got[1] < runs:
                cell += " n=%d" % got[1]
            if ref and tool != REFERENCE:
                cell += " (%.2f×)" % (got[0] / ref[0])
            cells.append(cell)
        install = med.get(("local", tool, size, "install"))
        waited = med.get(("local", tool, size, "install+wait"))
        if tool == "manent-role":
            cells.append("included (the role always waits)")
        elif install and waited:
            cells.append(fmt(max(0.0, waited[0] - install[0])))
        else:
            cells.append("")
        if found:
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def peer_wins(med, sizes):
    """Cells where a peer's median beats manent (role and modules alike)."""
    wins = []
    for size in sizes:
        for scenario in SCENARIOS:
            mine = [med.get(("local", t, size, scenario)) for t in ("manent-role", "manent-modules")]
            mine = [m[0] for m in mine if m]
            if not mine:
                continue
            best = min(mine)
            for tool in ("kubectl", "helm3", "helm4", "k8s"):
                got = med.get(("local", tool, size, scenario))
                if got and got[0] < best:
                    wins.append((size, scenario, tool, got[0], best))
    return wins


def plot(med, sizes, tools, path):
    import matplotlib  # pylint: disable=import-outside-toplevel
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
    panels = ("install", "noop", "image", "install+wait")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), sharey=True)
    for ax, scenario in zip(axes, panels):
        for tool in tools:
            xs, ys = [], []
            for size in sizes:
                got = med.get(("local", tool, size, scenario))
                if got:
                    xs.append(size)
                    ys.append(got[0])
            if xs:
                ax.plot(xs, ys, marker="o", linestyle="--" if tool == "manent-apply" else "-", label=tool)
        ax.set_title(SCENARIO_TITLES[scenario])
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


def remote_section(meta, med):
    size = meta.get("remote_size")
    if not size:
        return []
    cases = sorted({k[1] for k in med if k[0] == "remote"})
    if not cases:
        return ["## Remote clusters", "", "Not measured in this run (every case failed, see the failures below).", ""]
    lines = ["## Remote clusters: %d ms per round trip, %d objects" % (meta["delay_ms"], size), "",
             "Each local API server behind its own loopback delay proxy (hack/tcpproxy.py, %d ms added per round "
             "trip, half each way; TLS passes through). `xN`: N clusters in one run (the role deploys them in "
             "parallel: one wave, deploy_parallel N). manent rows of the role include the rollout wait." %
             meta["delay_ms"], "",
             "| case | first install | nothing changed |", "|---|---|---|"]
    for case in cases:
        cells = [case]
        for scenario in ("install", "noop"):
            got = med.get(("remote", case, size, scenario))
            cells.append(fmt(got[0]) if got else "failed")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")

    def ratio(a, b, scenario):
        x, y = med.get(("remote", a, size, scenario)), med.get(("remote", b, size, scenario))
        return "%.2f×" % (x[0] / y[0]) if x and y else "n/a"
    many = [c for c in cases if c.startswith("manent-role x") and not c.endswith("x1")]
    for case in many:
        lines.append("- %s / one cluster: install %s, nothing changed %s (target ≤ 1.3×)." % (
            case, ratio(case, "manent-role x1", "install"), ratio(case, "manent-role x1", "noop")))
    lines.append("- manent modules / kubectl, one cluster: install %s, nothing changed %s (target ≤ 0.2×)." % (
        ratio("manent-modules x1", "kubectl x1", "install"), ratio("manent-modules x1", "kubectl x1", "noop")))
    lines.append("- manent role / kubectl, one cluster: install %s, nothing changed %s (the role's figure includes "
                 "its rollout wait)." % (ratio("manent-role x1", "kubectl x1", "install"),
                                         ratio("manent-role x1", "kubectl x1", "noop")))
    lines.append("")
    return lines


def write(meta, results, md_path, png_path):
    med, failures = medians(results)
    sizes = sorted({k[2] for k in med if k[0] == "local"})
    tools = [t for t in ROW_ORDER if any(k[1] == t for k in med)]
    v = meta["versions"]
    m = meta["machine"]
    lines = ["# Benchmarks", "",
             "Generated by `make bench` (bench/bench.py, bench/report.py) from one run, %s to %s: do not edit, rerun. "
             "Every figure is the median of %d runs (`n=2`: of the runs that finished), measured side by side in the same run on the same cluster." % (
                 meta["started"], meta.get("finished", "(unfinished)"), meta["runs"]), "",
             "Reproduce: `%s` (needs Go and Python 3.11 like `make test`; builds kubectl and Helm 4 once into the "
             "cache, creates the bench virtualenv from bench/requirements.txt, uses the running local clusters or "
             "starts them)." % meta["command"], "",
             "## Machine", "",
             "- %s, %s cores, %s, %s" % (m["cpu"], m["cores"], m["memory"], m["os"]),
             "- Load average (1, 5, 15 min) before: %s, after: %s. The machine is shared (other engineers' tests ran "
             "at the same time): absolute times are noisy, compare ratios within a table." % (
                 ", ".join("%.1f" % x for x in meta["load_before"]),
                 ", ".join("%.1f" % x for x in meta.get("load_after", [])) or "n/a"),
             "- Cluster: local `%s` (hack/clusters.py: real kube-apiserver, etcd, controller-manager, scheduler; "
             "kwok nodes make pods Ready), loopback." % meta["cluster"], "",
             "## Versions", "", "| tool | version |", "|---|---|"]
    lines += ["| %s | %s |" % (k, str(val).replace("\n", " ")) for k, val in v.items()]
    lines += ["", "Pinned in hack/versions.env (kubectl = K8S_VERSION, HELM_VERSION, HELM4_VERSION) and "
              "bench/requirements.txt (ansible, kubernetes.core inside it).", ""]
    if meta.get("missing"):
        lines += ["Not measured: " + "; ".join("%s: %s" % kv for kv in meta["missing"].items()), ""]
    lines += ["## What is measured", "",
              "Objects from bench/gen.py (kinds in every 10: 3 ConfigMaps, 1 Secret, 1 ServiceAccount, 2 Services, "
              "3 Deployments of 1 pod); Helm deploys the same objects from the chart bench/chart/manent-bench, "
              "packaged with the pinned Helm 3 at bench time. Each tool gets a fresh namespace and runs, in order:",
              "",
              "1. **first install**, waits off where the tool allows it (the role always waits for the rollout);",
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
              "`manent_apply` task's own time inside the modules playbook (from a timing callback).", ""]
    for size in sizes:
        lines += ["## Local cluster, %d objects" % size, ""]
        lines += local_table(med, failures, size, tools, meta["runs"])
        lines.append("")
    if png_path:
        rel = os.path.relpath(png_path, os.path.dirname(os.path.abspath(md_path)))
        lines += ["## Time against object count", "", "![time against object count per tool](%s)" % rel, ""]
        scaling = []
        for tool in tools:
            for scenario in ("install", "noop"):
                lo, hi = med.get(("local", tool, 300, scenario)), med.get(("local", tool, 3000, scenario))
                if lo and hi:
                    scaling.append("%s %s %.1f×" % (tool, SCENARIO_TITLES[scenario], hi[0] / lo[0]))
        if scaling:
            lines += ["time(3,000) / time(300): " + "; ".join(scaling) + ".", ""]
    lines += remote_section(meta, med)
    lines += ["## Where a peer wins, and why", ""]
    wins = peer_wins(med, sizes)
    if not wins:
        lines += ["Nowhere in this run: in every column manent (role or modules) was at least as fast as every "
                  "peer.", ""]
    for size, scenario, tool, got, best in wins:
        alone = med.get(("local", "manent-apply", size, scenario))
        lines.append("- %d objects, %s: **%s** %s vs manent's best %s (%.2f×; manent's apply task alone: %s)." % (
            size, SCENARIO_TITLES[scenario], tool, fmt(got), fmt(best), got / best, fmt(alone[0]) if alone else "n/a"))
    if wins:
        lines += ["", "Why the peers win there:", ""]
        for tool in sorted({w[2] for w in wins}):
            lines.append("- **%s**: %s." % (tool, WHY.get(tool, "")))
    lines.append("")
    extra = meta.get("notes") or []
    if extra:
        lines += ["## Notes", ""] + ["- " + n for n in extra] + [""]
    if failures:
        lines += ["## Failures", ""]
        for (section, tool, size, scenario), errors in sorted(failures.items()):
            first = errors[0].strip().splitlines()
            lines.append("- %s %s %d %s: %d run(s) failed: `%s`" % (section, tool, size, scenario, len(errors),
                                                                    (first[-1] if first else "")[:200]))
        lines.append("")
    with open(md_path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))
    if png_path:
        plot(med, sizes, tools, png_path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, ".build", "bench"))
    parser.add_argument("--md", default=os.path.join(ROOT, "BENCHMARKS.md"))
    parser.add_argument("--png", default=os.path.join(ROOT, "docs", "bench.png"))
    args = parser.parse_args(argv)
    meta, results = load(args.out)
    write(meta, results, args.md, args.png)
    print("wrote %s and %s" % (args.md, args.png), file=sys.stderr)


if __name__ == "__main__":
    main()
