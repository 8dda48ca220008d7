# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's own cost (docs/performance.md, "Through ansible-playbook and the role"; docs/role.md, "Many
clusters"): the tasks each cluster runs and those that run once for all of them; the artifact is checked on
the controller by a filter, so a controller path is used in place (no stat, file or copy task runs, nothing is
copied) and a URL starts get_url once, then never again while its cached download matches its sha256 (a damaged
download is fetched again); the plan play numbers the waves and keeps their sizes in one task. Against the real local
clusters (one namespace on each) and a loopback HTTP server for the URL."""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading

import pytest

from tests.integration.playbook_helpers import SHOP, artifact, run_playbook, sha256, shop_vars

FETCH_TASKS = ("Artifact | Create the cache directory", "Artifact | Download the artifact and verify its sha256",
               "Artifact | Check the controller file")


# The tasks each cluster runs in a nothing-changed redeploy of playbooks/deploy.yml, in order: the plan play's
# preflight and rendering; in its wave, the apply (the results of a wave are recorded by one task, RECORD). The argument
# spec is checked once for all clusters (playbooks/deploy.yml's ARGUMENTS task), not by ansible-playbook's validation
# task in each cluster's worker.
PER_CLUSTER = [
    "Preflight | Check the role and host variables", "Deploy | Render the release for this cluster",
    "Deploy | Apply the release, wait for its rollout, prune, record history"]
# Once per wave, one loop item per cluster whose apply succeeded: their results (phases/apply.yml).
RECORD = "Deploy | Record the results of this batch's clusters"
ARGUMENTS = "Check the variables of every targeted cluster against the deploy role's argument spec"
# The tasks that look at every cluster at once and run once per run, on one host: the start of every cluster's result,
# and the include that stops the run when a rendering failed or runs the analysis preflight (skipped without either,
# run_once then).
ONCE_PER_RUN = ["Preflight | One inventory host per cluster and namespace", "Plan | Start the result of every cluster afresh",
                "Render | Stop before the first wave when a rendering failed, or the analysis preflight",
                "Checkpoint | Releases in service", "Waves | Number the waves of the clusters by region", "Waves | Plan"]
# Once per wave: the summary (its reading of the results, then four tasks skipped at the first wave), the wave
# analysis' include (skipped without deploy_wave_analysis) and the outcome (skipped when no cluster of the wave
# failed), each run_once.
ONCE_PER_WAVE = ["Summary | Read the results of every cluster, once for the report",
                 "Summary | Export the results of this operation (set_stats)",
                 "Summary | Add this operation to the run's list (set_stats)", "Summary | Per-cluster summary",
                 "Summary | Write the summary file", "Analysis", "Outcome | Fail when this cluster failed"]


@pytest.fixture
def served(tmp_path):
    """SHOP served over HTTP on loopback; yields (url, list of request paths)."""
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # pylint: disable=arguments-differ
            requests.append(self.path)

    handler = functools.partial(Handler, directory=os.path.dirname(SHOP))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d/%s" % (server.server_address[1], os.path.basename(SHOP)), requests
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.integration
def test_controller_path_is_used_in_place_without_module_processes(clusters, inventory_path, namespaces, tmp_path):
    extra = shop_vars(tmp_path, namespaces, "1.0.0", "hello")

    first = run_playbook("deploy", inventory_path, extra, tmp_path)
    assert first.rc == 0, first.explain()
    tasks = first.tasks
    for name in FETCH_TASKS:
        assert name not in tasks, (name, first.explain())
    assert not os.path.exists(extra["deploy_cache_dir"])  # nothing copied

    again = run_playbook("deploy", inventory_path, extra, tmp_path)
    assert again.rc == 0, again.explain()
    assert all(r["changed"] == 0 for r in again.recap.values()), again.explain()
    tasks = again.tasks
    for name in FETCH_TASKS:
        assert name not in tasks, (name, again.explain())
    # The artifact include was evaluated and skipped: nothing under it was even listed.
    assert tasks.count("Waves | Number the waves of the clusters by region") == 1  # the plan and the sizes at once
    assert "2 wave(s) by region: eu-1: eu1a, eu1b -> us-1: us1a" in again.output
    assert "Preflight | Check the role and host variables" not in tasks[11:], tasks  # only in the plan play
    # What a nothing-changed redeploy costs each cluster: each task a cluster runs, even a skipped one, costs the
    # controller a worker process and its templating for that cluster (about 0.03 to 0.3 CPU-seconds), so these
    # counts are the controller's cost per cluster: a new per-cluster task should be worth it.
    per_host = again.task_hosts()
    assert [task for task, hosts in per_host.items() if "eu1b" in hosts] == PER_CLUSTER, per_host
    arguments = again.output.split("TASK [%s]" % ARGUMENTS)
    assert len(arguments) == 2 and re.findall(r"^\w+: \[(\w+)\]", arguments[1].split("TASK [")[0], re.M) == ["eu1a"], \
        again.explain()  # a task of the playbook (not the role), run once
    for task in ONCE_PER_RUN:  # on the controller for every cluster at once: one cluster runs it
        assert len(per_host[task]) == 1, (task, per_host)
    for task in ONCE_PER_WAVE:  # once in each of the 2 waves
        assert len(per_host[task]) == 2, (task, per_host)
    # The results: one item for each cluster, run by one cluster of each wave (eu1a, then us1a) for the others.
    records = again.output.split("TASK [manent.kubernetes.deploy : %s]" % RECORD)
    assert len(records) == 3, again.explain()
    items = [re.findall(r"^ok: \[(\w+)(?: -> \w+)?\] => \(item=(\w+)\)", part.split("TASK [")[0], re.M)
             for part in records[1:]]
    assert items == [[("eu1a", "eu1a"), ("eu1a", "eu1b")], [("us1a", "us1a")]], again.explain()


@pytest.mark.integration
def test_url_is_downloaded_once_and_a_damaged_download_again(clusters, inventory_path, namespaces, tmp_path, served):
    url, requests = served
    extra = shop_vars(tmp_path, namespaces, "1.0.0", "hello")
    extra["deploy_artifact"] = artifact("shop", "1.0.0", SHOP, source=url)
    cached = os.path.join(extra["deploy_cache_dir"], sha256(SHOP), os.path.basename(SHOP))

    first = run_playbook("deploy", inventory_path, extra, tmp_path)
    assert first.rc == 0, first.explain()
    assert first.tasks.count("Artifact | Download the artifact and verify its sha256") == 1, first.explain()
    assert len(requests) == 1, requests  # once for the run, not per cluster or per play
    assert sha256(cached) == sha256(SHOP)

    again = run_playbook("deploy", inventory_path, extra, tmp_path)
    assert again.rc == 0, again.explain()
    assert not set(FETCH_TASKS) & set(again.tasks), again.explain()
    assert len(requests) == 1, requests

    with open(cached, "a", encoding="utf-8") as handle:
        handle.write("# damaged\n")
    repaired = run_playbook("deploy", inventory_path, extra, tmp_path)
    assert repaired.rc == 0, repaired.explain()
    assert repaired.tasks.count("Artifact | Download the artifact and verify its sha256") == 1, repaired.explain()
    assert len(requests) == 2, requests
    assert sha256(cached) == sha256(SHOP)
