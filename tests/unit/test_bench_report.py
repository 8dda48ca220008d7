# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench/ (make bench, issue 13): a command's peak memory and run time as bench.py records them, and the
targets table report.py computes from the medians."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import bench  # noqa: E402  pylint: disable=wrong-import-position,import-error
import report  # noqa: E402  pylint: disable=wrong-import-position,import-error
import fleet  # noqa: E402  pylint: disable=wrong-import-position,import-error


def test_peak_memory_is_that_of_the_largest_process_the_command_waited_for():
    if not os.access(bench.GNU_TIME, os.X_OK):
        pytest.fail("%s (Debian package time) is missing: .ci/run installs it" % bench.GNU_TIME)
    # the command itself stays small; a child it waits for holds 150 MiB
    code = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'x = bytearray(150 << 20); print(len(x))'])"
    returncode, out, peak, _cpu = bench._run_one([sys.executable, "-c", code], None, 60)
    assert (returncode, out.strip()) == (0, str(150 << 20))
    assert peak >= 150
    # this test process is large (it holds 200 MiB now): a small command must not be charged with it
    ballast = bytearray(200 << 20)
    returncode, _out, small, _cpu = bench._run_one([sys.executable, "-c", "raise SystemExit(3)"], None, 60)
    assert len(ballast) and returncode == 3 and small < 60


def test_cpu_seconds_count_the_processes_the_command_waited_for():
    if not os.access(bench.GNU_TIME, os.X_OK):
        pytest.fail("%s (Debian package time) is missing: .ci/run installs it" % bench.GNU_TIME)
    # a child busy for 0.5 s of CPU while the command itself only waits for it
    spin = "import time; end = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
    code = "import subprocess, sys; subprocess.run([sys.executable, '-c', %r])" % spin
    returncode, _out, _peak, cpu = bench._run_one([sys.executable, "-c", code], None, 60)
    assert returncode == 0 and cpu >= 0.45
    assert bench.process_cpu([os.getpid()]) > 0 and bench.process_cpu([2 ** 22 + 7]) == 0  # no such pid: nothing


def test_a_command_over_its_cap_is_stopped_with_its_process_group():
    start = time.monotonic()
    with pytest.raises(bench.Capped):
        bench._run_one(["sh", "-c", "sleep 30 & sleep 30; wait"], None, 1)
    assert time.monotonic() - start < 20


def _result(tool, size, scenario, seconds, run=1, section="local", **kw):
    return dict(section=section, tool=tool, size=size, scenario=scenario, run=run, ok=True, seconds=seconds, **kw)


def _rows(lines):
    return {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in lines if line.startswith("| ")}


def test_targets_are_computed_from_the_medians_and_marked_met_or_not():
    results = [
        _result("manent-role", 300, "install", 5.0), _result("k8s", 300, "install", 11.0),
        _result("manent-role", 300, "noop", 3.0), _result("k8s", 300, "noop", 10.0),
        _result("manent-modules", 300, "noop", 1.5, task_seconds=0.3),
        _result("manent-modules", 300, "install", 4.0, task_seconds=2.0),
        _result("manent-role", 3000, "install", 40.0, peak_rss_mib=120.0),
        _result("manent-role", 3000, "noop", 6.0, peak_rss_mib=310.5),
        _result("manent-role", 3000, "noop", 6.0, run=2, peak_mib=900.0),  # the old, flawed measure: ignored
    ]
    med, _failures = report.medians(results)
    peaks = report.peaks_of(results)
    rows = _rows(report.targets_section({"remote_size": None}, med, peaks))
    assert rows["role, 300 objects, first install / kubernetes.core's"][:3] == ["0.45×", "≤ 0.5×", "met |"]
    assert rows["role, 300 objects, nothing changed / kubernetes.core's"][:3] == ["0.30×", "≤ 0.5×", "met |"]
    assert rows["apply task alone, 300 objects, nothing changed / first install"][:2] == ["0.15×", "≤ 0.2×"]
    assert rows["apply task alone, 3,000 objects, nothing changed / first install"][0] == "not measured"
    assert rows["role overhead, 300 objects, nothing changed: role − modules playbook (one cluster)"][:3] == \
        ["1.50 s", "≤ 2 s", "met |"]
    assert rows["manent-role, first install: time(3,000) / time(300)"][:3] == ["8.00×", "≤ 10×", "met |"]
    assert rows["role, 3,000 objects: peak memory of the controller's largest process"][:3] == \
        ["310 MiB", "≤ 300 MiB", "**not met** |"]
    assert not any(name.startswith("remote") for name in rows)


def test_a_capped_peer_gives_no_ratio():
    results = [_result("manent-role", 300, "install", 5.0),
               dict(section="local", tool="k8s", size=300, scenario="install", run=1, ok=False, capped=120)]
    med, _failures = report.medians(results)
    rows = _rows(report.targets_section({}, med, {}))
    assert rows["role, 300 objects, first install / kubernetes.core's"][0] == "not measured"


def test_remote_cpu_table_gives_each_case_its_cpu_floor_on_the_machines_cores():
    def cell(case, scenario, seconds, command, clusters, proxies, run=1):
        return _result(case, 300, scenario, seconds, run=run, section="remote",
                       cpu_seconds={"command": command, "clusters": clusters, "bench": proxies})
    results = [cell("manent-role x1", "install", 4.0, 2.0, 3.0, 0.2),
               cell("manent-role x1", "install", 6.0, 2.0, 5.0, 0.2, run=2),
               cell("manent-role x3", "install", 7.0, 5.0, 9.0, 0.4),
               cell("manent-role x1", "noop", 2.0, 1.0, 0.5, 0.1),
               _result("kubectl x1", 300, "install", 19.0, section="remote"),  # recorded before CPU was: no row
               cell("manent-role x3", "noop", 3.0, 1.0, None, 0.1)]  # without the control planes' pids: no row
    med, _failures = report.medians(results)
    meta = {"remote_size": 300, "delay_ms": 50, "runs": 2, "machine": {"cores": 2}}
    lines = report.remote_section(meta, med, None, report.cpu_of(results))
    rows = [line for line in lines if line.split(" | ")[1:2] in (["first install"], ["nothing changed"])
            and not line.startswith("| case ")]
    assert rows == ["| manent-role x1 | first install | 5.00 s | 2.0 s | 4.0 s | 0.2 s | 6.2 s | 3.10 s |",
                    "| manent-role x1 | nothing changed | 2.00 s | 1.0 s | 0.5 s | 0.1 s | 1.6 s | 0.80 s |",
                    "| manent-role x3 | first install | 7.00 s | 5.0 s | 9.0 s | 0.4 s | 14.4 s | 7.20 s |"]
    floor = [line for line in lines if line.startswith("- manent-role x3, first install")]
    assert floor == ["- manent-role x3, first install: its CPU floor is 7.20 s, 1.44× one cluster's wall time (5.00 s): a "
                     "ratio to one cluster below that cannot be measured on 2 cores (the ≤ 1.3× target is out of this "
                     "machine's reach)."]
    assert report.cpu_lines(dict(meta, machine={}), med, report.cpu_of(results), 300) == []


def test_memory_table_shows_the_largest_run_per_size_and_scenario():
    results = [_result("kubectl", 300, "install", 3.0, run=r, peak_rss_mib=m) for r, m in ((1, 40.0), (2, 55.4))]
    results.append(_result("kubectl", 3000, "noop", 30.0, peak_rss_mib=134.0))
    results.append(_result("kubectl", 300, "noop", 2.0))  # recorded before peaks were measured
    lines = report.memory_section(report.peaks_of(results), ["kubectl"])
    assert lines[-2] == "| %s | 55 / – | – / 134 |" % bench.TOOL_TITLES["kubectl"]


def test_chart_table_sets_manent_deploying_the_chart_against_helm_and_the_plain_role():
    results = [_result("manent-chart", 300, "install", 6.0, run=r) for r in (1, 2, 3)]
    results += [_result("helm3", 300, "install", 4.0), _result("helm4", 300, "install", 8.0),
                _result("manent-role", 300, "install", 5.5),
                _result("manent-chart", 300, "noop", 3.0), _result("helm3", 300, "noop", 9.0),
                _result("helm3", 3000, "noop", 80.0)]  # no manent-chart at 3,000: no row
    med, _failures = report.medians(results)
    lines = report.chart_section(med, [300, 3000])
    rows = [line for line in lines if line.startswith("| 300") or line.startswith("| 3,000")]
    assert rows == ["| 300 | first install | 6.00 s | 4.00 s | 8.00 s | 1.50× | 0.75× | +0.50 s |",
                    "| 300 | nothing changed | 3.00 s | 9.00 s |  | 0.33× |  |  |"]
    assert report.chart_section(report.medians([_result("helm3", 300, "install", 4.0)])[0], [300]) == []


def test_manent_chart_deploys_the_helm_package_with_the_values_helm_gets(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "cache_dir", lambda: str(tmp_path / "cache"))
    chart = tmp_path / "manent-bench-0.1.0.tgz"
    chart.write_bytes(b"not really a chart: only its sha256 matters here")
    args = argparse.Namespace(
        out=str(tmp_path / "out"), scenarios=",".join(bench.SCENARIOS), cap="300=60", size_scenarios=[],
        budget_minutes=0)
    runner = bench.Bench(args)
    assert "manent-chart" in runner.missing  # no helm 3 in this cache: it could neither package nor render
    rel = bench.Release(str(tmp_path / "work"), 30, str(chart))
    ctx = {"release": rel, "namespace": "bench-x", "inventory": "inv.yml", "limit": "eu1a", "kubeconfig": "k"}
    for scenario, values in (("install", {"count": 30}),
                             ("prune", {"count": 30, "keep": 27, "imageOfFirst": bench.IMAGE_CHANGED})):
        step, = runner.steps("manent-chart", scenario, ctx)
        with open(step.argv[step.argv.index("-e") + 1][1:], encoding="utf-8") as handle:
            extra = json.load(handle)
        assert step.argv[3].endswith("playbooks/deploy.yml") and step.timer_task == "Deploy | Apply"
        assert extra["deploy_artifact"] == {"type": "kubernetes", "source": str(chart), "name": "bench",
                                            "version": bench.PLAN[scenario][1], "sha256": bench.sha256(str(chart))}
        assert extra["deploy_helm_value"] == values
        assert extra["deploy_helm_command"] == runner.helm["helm3"] and extra["deploy_helm_release"] == bench.RELEASE
        # the same values as helm upgrade --set, item for item
        helm, = runner.steps("helm3", scenario, ctx)
        sets = [helm.argv[i + 1] for i, arg in enumerate(helm.argv) if arg == "--set"]
        assert sets == ["%s=%s" % kv for kv in values.items()]
    step, = runner.steps("manent-chart", "rollback", ctx)
    assert step.argv[3].endswith("playbooks/rollback.yml")


def test_the_kept_raw_results_make_the_same_report_again(tmp_path):
    meta = {"started": "2026-12-01 21:00 UTC", "finished": "2026-12-01 22:00 UTC", "command": "make bench",
            "machine": {"cpu": "x", "cores": 2, "memory": "1 GiB", "os": "linux"}, "load_before": [1.0, 1.0, 1.0],
            "load_after": [2.0, 2.0, 2.0], "runs": 1, "sizes": [300], "cluster": "eu1a", "versions": {"kubectl": "v1"}}
    results = [_result("manent-role", 300, "install", 5.0, peak_rss_mib=70.0), _result("kubectl", 300, "install", 4.0),
               _result("manent-chart", 300, "install", 5.5), _result("helm3", 300, "install", 4.5)]
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}))
    first, again, kept = tmp_path / "first.md", tmp_path / "again.md", tmp_path / "kept.json"
    report.main(["--out", str(out), "--md", str(first), "--png", "", "--keep", str(kept)])
    report.main(["--results", str(kept), "--md", str(again), "--png", ""])
    text = first.read_text()
    assert text == again.read_text()
    assert "| 300 | first install | 5.50 s | 4.50 s |  | 1.22× |  | +0.50 s |" in text


def test_append_on_a_fresh_clone_adds_to_the_kept_results_of_benchmarks_md(tmp_path, monkeypatch):
    kept = tmp_path / "kept.json"
    monkeypatch.setattr(bench, "KEPT", str(kept))
    fresh = str(tmp_path / "out" / "results.json")  # a fresh clone: no results of a previous run in --out
    main_md = os.path.join(bench.ROOT, "BENCHMARKS.md")
    args = argparse.Namespace(append=True, md=main_md)
    assert bench.appended_results(args, fresh) is None  # nothing kept either: start afresh
    kept.write_text("{}")
    assert bench.appended_results(args, fresh) == str(kept)
    # another report (--md elsewhere) never adds to BENCHMARKS.md's results; without --append nothing is added
    assert bench.appended_results(argparse.Namespace(append=True, md=str(tmp_path / "x.md")), fresh) is None
    assert bench.appended_results(argparse.Namespace(append=False, md=main_md), fresh) is None
    # the previous run's results in --out come first
    os.makedirs(os.path.dirname(fresh))
    with open(fresh, "w", encoding="utf-8") as handle:
        handle.write("{}")
    assert bench.appended_results(args, fresh) == fresh


def _meta(started, sizes, remote_size=None, controller_qps=None):
    return {"started": started, "command": "make bench # %s" % started, "sizes": sizes, "runs": 3, "cap": 60,
            "caps": {}, "size_scenarios": {}, "budget_minutes": None, "remote_size": remote_size,
            "controller_qps": controller_qps, "settle_timeout": 300, "delay_ms": 50 if remote_size else None,
            "notes": []}


def test_append_with_replace_drops_the_earlier_cells_of_the_sizes_measured_again():
    first = dict(_meta("first", [30, 300], remote_size=300), invocations=[_meta("first", [30, 300], remote_size=300)])
    second = _meta("second", [3000])
    first.update(caps={"300": 150, "3000": 240}, size_scenarios={"3000": ["install", "noop"]})
    previous = {"meta": first, "results": [
        _result("kubectl", 300, "install", 2.0), _result("kubectl", 3000, "install", 20.0),
        dict(_result("kubectl", 300, "install", 3.0), section="remote"), {"section": "meta"}]}
    results, meta = bench.joined(json.loads(json.dumps(previous)), second, [3000])
    assert [r["size"] for r in results] == [300, 3000, 300]  # plain --append keeps every earlier cell
    assert [i["started"] for i in meta["invocations"]] == ["first", "second"]

    previous["meta"]["invocations"].append(second)
    third = _meta("third", [300, 3000], controller_qps=200)
    results, meta = bench.joined(previous, third, [300, 3000], replace=True)
    # the local cells of 300 and 3,000 go; the remote section of the first invocation stays, and so does it
    assert [(r["section"], r["size"]) for r in results] == [("remote", 300)]
    assert [(i["started"], i["sizes"], i.get("replaced")) for i in meta["invocations"]] == [
        ("first", [30], [300]), ("third", [300, 3000], None)]
    assert meta["caps"] == {} and meta["size_scenarios"] == {}  # the dropped cells' limits went with them
    assert report.controller_clients(meta) == (
        "sizes 30: controller-manager and scheduler at their default client rates (controller-manager 20 requests/s, "
        "burst 30); sizes 300,3000: controller-manager and scheduler at 200 requests/s (burst 400, "
        "`hack/clusters.py up --controller-qps 200`)")
    assert report.controller_clients(third).startswith("controller-manager and scheduler at 200 requests/s")


def test_the_controller_rate_is_passed_to_the_controller_manager_and_scheduler_only_when_asked():
    sys.path.insert(0, os.path.join(ROOT, "hack"))
    import clusters  # pylint: disable=import-outside-toplevel,import-error

    binaries = {name: name for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")}
    ports = {"etcd": 1, "etcd_peer": 2, "api": 3, "kcm": 4, "sched": 5}
    default = dict(clusters.cluster_processes(binaries, "/d", ports, "https://x"))
    fast = dict(clusters.cluster_processes(binaries, "/d", ports, "https://x", controller_qps=200))
    assert all("--kube-api-qps" not in argv for argv in default.values())
    for name in ("kube-controller-manager", "kube-scheduler"):
        assert fast[name][-4:] == ["--kube-api-qps", "200", "--kube-api-burst", "400"]
        assert fast[name][:-4] == default[name]
    assert fast["kube-apiserver"] == default["kube-apiserver"] and fast["kwok"] == default["kwok"]


def test_a_joined_report_names_the_code_each_invocation_measured_and_groups_the_cells_left_out():
    meta = dict(_meta("first", [300]), versions={"manent.kubernetes": "0.1.0 (commit aaa)"})
    meta["invocations"] = [dict(_meta("first", [300])), dict(_meta("second", [3000]), manent_version="0.1.0 (commit bbb)")]
    # the first invocation predates manent_version: it ran the code of meta["versions"]
    assert report.manent_versions(meta) == "0.1.0 (commit aaa) (sizes 300); 0.1.0 (commit bbb) (sizes 3000)"
    meta["invocations"][1]["manent_version"] = "0.1.0 (commit aaa)"
    assert report.manent_versions(meta) == "0.1.0 (commit aaa)"
    assert report.late_cells({("k8s", "rollback", 1), ("k8s", "install", 2), ("k8s", "noop", 2),
                              ("helm3", "check", 0)}) == (
        "helm3 (check mode (dry run): no run measured), "
        "k8s (first install, nothing changed: 2 runs measured; rollback: 1 run measured)")


def test_a_capped_step_after_others_says_the_cap_is_the_cells(tmp_path):
    steps = [bench.Step(argv=["true"]), bench.Step(argv=["sleep", "30"])]
    with pytest.raises(bench.Capped, match=r"this step's share of the cell's 2 s cap"):
        bench.run_steps(steps, str(tmp_path), cap=2)


def test_a_size_measured_in_every_scenario_by_one_invocation_is_not_reported_as_narrowed_by_another():
    every = _meta("every", [3000])
    some = dict(_meta("some", [3000]), size_scenarios={"3000": ["install", "noop"]})
    previous = {"meta": dict(every, invocations=[every]), "results": []}
    _results, meta = bench.joined(json.loads(json.dumps(previous)), some, [3000])
    assert meta["size_scenarios"] == {}
    previous = {"meta": dict(some, invocations=[some]), "results": []}
    other = dict(_meta("other", [3000]), size_scenarios={"3000": ["check", "noop"]})
    _results, meta = bench.joined(previous, other, [3000])
    assert meta["size_scenarios"] == {"3000": ["install", "noop", "check"]}


def test_each_invocation_has_its_own_floor_and_a_replaced_one_takes_its_floor_with_it():
    first, dropped, third = _meta("first", [30, 300]), _meta("dropped", [3000]), _meta("third", [3000])
    floor = dict(section="floor", tool="ansible-playbook", size=0, scenario="floor")
    previous = {"meta": dict(first, invocations=[first, dropped]), "results": [
        dict(floor, run=1, ok=True, seconds=0.4, invocation="first"),
        dict(floor, run=2, ok=True, seconds=0.5, invocation="first"),
        _result("k8s", 300, "noop", 4.0, invocation="first"),
        dict(floor, run=1, ok=True, seconds=0.7, invocation="dropped"),
        _result("k8s", 3000, "noop", 30.0, invocation="dropped"),
        dict(floor, run=1, ok=True, seconds=0.6)]}  # recorded before results named their invocation: kept
    results, meta = bench.joined(json.loads(json.dumps(previous)), third, [3000], replace=True)
    assert [(r["section"], r.get("invocation"), r["seconds"]) for r in results] == [
        ("floor", "first", 0.4), ("floor", "first", 0.5), ("local", "first", 4.0), ("floor", None, 0.6)]
    assert [i["started"] for i in meta["invocations"]] == ["first", "third"]
    results += [dict(floor, run=1, ok=True, seconds=1.0, invocation="third"),
                dict(floor, run=2, ok=True, seconds=1.2, invocation="third"),
                _result("k8s", 3000, "noop", 40.0, invocation="third")]
    assert report.floors(results, meta) == [("first", 0.45, 2), ("third", 1.1, 2), (None, 0.6, 1)]
    assert report.floor_at(results, meta, 300) == 0.45 and report.floor_at(results, meta, 3000) == 1.1
    assert report.floor_at(results, meta, 30) is None
    med, _failures = report.medians(results)
    text = "\n".join(report.floor_section(med, ["k8s"], results, meta))
    assert "**0.45 s** (median of 2, the invocation of first that measured sizes 30,300)" in text
    assert "**1.10 s** (median of 2, the invocation of third that measured sizes 3000)" in text
    assert "300 objects (against the floor of 0.45 s): k8s nothing changed 4.00 s (8.9× the floor)" in text


def test_invocations_with_the_same_controller_rate_or_code_are_named_once():
    meta = dict(_meta("a", [30, 300]), versions={"manent.kubernetes": "0.1.0 (commit aaa)"})
    meta["invocations"] = [_meta("a", [30, 300]), dict(_meta("b", [3000], controller_qps=200), manent_version="x"),
                           dict(_meta("c", [3000], controller_qps=200), manent_version="x")]
    assert report.controller_clients(meta).count("200 requests/s") == 1
    assert report.controller_clients(meta).endswith("; sizes 3000: controller-manager and scheduler at 200 requests/s "
                                                    "(burst 400, `hack/clusters.py up --controller-qps 200`)")
    assert report.manent_versions(meta) == "0.1.0 (commit aaa) (sizes 30,300); x (sizes 3000)"


def _fleet(size, scenario, cpu, pss, requests, run=1, rc=0):
    return {"size": size, "scenario": scenario, "run": run, "rc": rc, "wall": cpu / 2.0, "cpu": cpu, "pss_mib": pss,
            "parent_rss_mib": 70.0, "bench_cpu": 1.0, "load_before": 1.0, "load_after": 1.0,
            "requests": {"min": requests, "median": requests, "max": requests}, "deploy_seconds": [0.5, 1.5]}


def test_fleet_targets_are_slopes_between_30_and_100_clusters_and_ratios_of_medians():
    results = [_fleet(1, "noop", 4.0, 100.0, 16), _fleet(10, "noop", 8.0, 150.0, 16),
               _fleet(30, "noop", 20.0, 350.0, 16), _fleet(30, "noop", 22.0, 360.0, 16, run=2),
               _fleet(30, "noop", 99.0, 999.0, 16, run=3, rc=2),  # a failed run does not count
               _fleet(100, "noop", 41.0, 1000.0, 17)]
    med = fleet.medians(results)
    assert med[(30, "noop")]["cpu"] == 21.0 and med[(30, "noop")]["failed"] == 1
    rows = _rows(fleet.targets(results))
    # columns: median, run 1, run 2, run 3, limit, verdict; runs 2 and 3 measured no 100-cluster cell
    assert rows["marginal controller CPU per cluster, nothing changed (slope 30 → 100 clusters)"][:6] == \
        ["0.29 CPU-s", "0.30 CPU-s", "–", "–", "0.3", "met on every run |"]
    assert rows["marginal memory per cluster, nothing changed (slope of the tree's peak PSS, 30 → 100)"][:2] == \
        ["9.2 MiB", "9.3 MiB"]
    assert rows["100 clusters, nothing changed, forks 50: wall"][:6] == ["20.5 s", "20.5 s", "–", "–", "25",
                                                                         "met on every run |"]
    assert rows["wall(100) / wall(10), nothing changed"][5] == "**not met** (run 1) |"
    assert rows["API requests of each cluster, nothing changed: most of any cluster at 100 − one cluster alone"][5] \
        == "**not met** (run 1) |"


def test_a_fleet_target_met_on_the_median_but_not_on_one_run_is_not_met():
    results = []
    for run, cpu100 in ((1, 40.0), (2, 47.0), (3, 41.0)):  # run 2's slope is (47 - 20) / 70 = 0.39
        results += [_fleet(1, "noop", 4.0, 100.0, 16, run=run), _fleet(10, "noop", 8.0, 150.0, 16, run=run),
                    _fleet(30, "noop", 20.0, 350.0, 16, run=run), _fleet(100, "noop", cpu100, 900.0, 16, run=run)]
    rows = _rows(fleet.targets(results))
    cpu = rows["marginal controller CPU per cluster, nothing changed (slope 30 → 100 clusters)"]
    assert cpu[0] == "0.30 CPU-s"  # the median run (41) meets the limit
    assert cpu[1:4] == ["0.29 CPU-s", "0.39 CPU-s", "0.30 CPU-s"] and cpu[5] == "**not met** (run 2) |"
    assert rows["marginal memory per cluster, nothing changed (slope of the tree's peak PSS, 30 → 100)"][5] == \
        "met on every run |"


def test_the_fleet_section_is_kept_when_report_py_writes_benchmarks_md():
    section = fleet.section({"commit": "abc", "runs": 3, "forks": 50}, [_fleet(10, "noop", 8.0, 1, 16)])
    old = fleet.splice("# Benchmarks\n\nold tables\n", section)
    assert old.count(fleet.BEGIN) == 1 and "| 10 | nothing changed |" in old
    new = "# Benchmarks\n\nnew tables\n"
    assert fleet.keep_section(old, new) == fleet.splice(new, section)
    assert fleet.splice(old, section) == old  # replaced in place, not appended again


def test_fleet_requests_target_compares_each_run_with_itself():
    """A discovery refresh in one run's one-cluster cell (20 requests there, and at 100 clusters in the same run) is
    not the fleet's cost: the median column takes the median of each run's most, like every other field."""
    results = [_fleet(1, "noop", 4.0, 100.0, 16), _fleet(100, "noop", 41.0, 1000.0, 16),
               _fleet(1, "noop", 4.0, 100.0, 16, run=2), _fleet(100, "noop", 41.0, 1000.0, 16, run=2),
               _fleet(1, "noop", 4.0, 100.0, 20, run=3), _fleet(100, "noop", 41.0, 1000.0, 20, run=3)]
    row = _rows(fleet.targets(results))[
        "API requests of each cluster, nothing changed: most of any cluster at 100 − one cluster alone"]
    assert row[:6] == ["+0", "+0", "+0", "+0", "0", "met on every run |"]
    results[1]["requests"]["max"] = 21  # one cluster of run 1's fleet sent more than run 1's cluster alone
    row = _rows(fleet.targets(results))[
        "API requests of each cluster, nothing changed: most of any cluster at 100 − one cluster alone"]
    assert row[:6] == ["+4", "+5", "+0", "+0", "0", "**not met** (run 1) |"]


def test_fleet_targets_in_the_reference_machine_state_scale_each_nothing_changed_cell_by_its_own_reference():
    """The reference commit redeployed right after this code in each run: each nothing-changed cell is scaled by
    the reference's recorded figure over its figure in the same run, run by run; memory and requests are not."""
    recorded = fleet.medians([_fleet(10, "noop", 6.0, 1.0, 16), _fleet(30, "noop", 12.0, 1.0, 16),
                              _fleet(100, "noop", 30.0, 1.0, 16)])  # walls: half the CPU, 3, 6 and 15 s
    results = []
    for run, slower in ((1, 2.0), (2, 2.5)):  # the machine: twice, then 2.5 times as slow as when recorded
        for size, cpu in ((10, 10.0), (30, 22.0), (100, 56.0)):
            results += [_fleet(size, "noop", cpu * slower / 2.0, 100.0 + size, 16, run=run),
                        _fleet(size, fleet.REF_SCENARIO, {10: 6.0, 30: 12.0, 100: 30.0}[size] * slower, 1.0, 16,
                               run=run)]
    med = fleet.normalized(fleet.medians([r for r in results if r["run"] == 2]), recorded)
    assert med[(100, "noop")]["cpu"] == 28.0 and med[(100, "noop")]["wall"] == 14.0  # 70 * 30 / 75
    assert med[(100, "noop")]["pss_mib"] == 200.0 and med[(100, fleet.REF_SCENARIO)]["cpu"] == 75.0
    rows = _rows(fleet.targets(results, lambda m: fleet.normalized(m, recorded)))
    assert rows["marginal controller CPU per cluster, nothing changed (slope 30 → 100 clusters)"][1:3] == \
        ["0.24 CPU-s", "0.24 CPU-s"]  # (28 - 11) / 70 in both runs
    assert rows["100 clusters, nothing changed, forks 50: wall"][1:3] == ["14.0 s", "14.0 s"]
    assert rows["wall(100) / wall(10), nothing changed"][1:3] == ["5.60×", "5.60×"]
    assert rows["wall(100) / wall(10), nothing changed"][4] == "**not met** (run 1, run 2) |"  # 2 runs: 5 columns
    # as measured, run 2 is slower than run 1 and over the limits
    measured = _rows(fleet.targets(results))
    assert measured["100 clusters, nothing changed, forks 50: wall"][1:3] == ["28.0 s", "35.0 s"]
    # a cell whose reference is missing in that run gives no scaled figure (the target is not measured there)
    results = [r for r in results if not (r["run"] == 2 and r["size"] == 100 and r["scenario"] == fleet.REF_SCENARIO)]
    rows = _rows(fleet.targets(results, lambda m: fleet.normalized(m, recorded)))
    assert rows["100 clusters, nothing changed, forks 50: wall"][1:3] == ["14.0 s", "–"]


def test_a_reference_without_recorded_fleet_results_is_refused_by_name():
    with pytest.raises(SystemExit) as refused:
        fleet.recorded_results("0000000")
    assert "--reference 0000000: bench/runs/ holds no fleet results of that commit" in str(refused.value)
    assert fleet.recorded_results("eacb34c") == os.path.join("bench", "runs", "2026-12-05-fleet-eacb34c.json")
