# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks run by AWX's executor: ansible-runner (``ansible_runner.run``, the library AWX's workers call) on a
private data directory per job, laid out as AWX writes it: ``project/`` a project repository whose deploy.yml,
traffic.yml and rollback.yml import the collection's playbooks (the collection found through
ANSIBLE_COLLECTIONS_PATH in ``env/envvars``),
``inventory/hosts`` one host per local cluster, ``env/extravars`` the job template's variables, ``env/envvars``.

What AWX reads back is checked: status and rc, the ``manent_result`` set_stats data as the ``artifact_data`` of
the ``playbook_on_stats`` event, and that no token, client key or Secret value reaches a job event or stdout. A job
cancelled mid-apply (ansible-runner SIGKILLs the playbook's process group; ansible-core's workers are in sessions of
their own and survive it) stops its deploy, marks the release failed and releases the history lock, so that the
next job converges without ``deploy_break_lock``."""

from __future__ import annotations

import base64
import json
import os
import secrets

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import locator_name, record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    STATUS_DEPLOYED, STATUS_FAILED, STATUS_SUPERSEDED)
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import routes
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from tests.integration.deploy_helpers import labelled_history, locator, mid_rollout, record_status
from tests.integration.playbook_helpers import app_objects, sha256, write_inventory, write_manifest
from tests.integration.process_helpers import kill_all, marked, new_marker, wait_gone
from tests.integration.route_helpers import AutoController, create, httproute, read, rule, weights
from tests.integration.runner_helpers import run_job, write_project

pytestmark = pytest.mark.integration

KEY = ReleaseKey(application="shop", artifact="shop", environment="test")
CANCEL_CLEANUP = 120  # seconds the cancelled job's processes get to release the lock and end


class Awx:
    """One test's AWX: the project checkout, an artifact store, the inventory, the extra
    variables of the job template, and every value that must never appear in a job's events or stdout."""

    def __init__(self, tmp_path, clusters, inventory_path, namespace):
        self.tmp = tmp_path
        self.namespace = namespace
        self.secret = secrets.token_hex(16)
        self.project = write_project(str(tmp_path / "project"))
        # The credentials reach the job in each way AWX hands them over, one per cluster: the first cluster's token
        # in an environment variable (a credential type's env injector) that its host names (docs/role.md), the
        # second's client certificate and key in the inventory's host variables, the others' tokens as files.
        first, second = clusters[0], clusters[1]
        self.envvars = {"MANENT_TOKEN_EU1A": first.token}
        with open(os.path.join(second.dir, "admin.crt"), encoding="utf-8") as handle:
            cert = handle.read()
        with open(os.path.join(second.dir, "admin.key"), encoding="utf-8") as handle:
            self.client_key = handle.read()
        host_vars = {first.name: {"manent_token": "env:MANENT_TOKEN_EU1A"},
                     second.name: {"manent_token": "", "manent_client_cert": cert,
                                   "manent_client_key": self.client_key}}
        self.inventory = write_inventory(inventory_path, str(tmp_path / "hosts.yml"), host_vars=host_vars)
        self.tokens = []
        for cluster in clusters:  # the token files of the inventory
            with open(os.path.join(cluster.dir, "admin.token"), encoding="utf-8") as handle:
                self.tokens.append(handle.read().strip())

    def artifact(self, version, **options):
        """shop ``version`` (playbook_helpers.app_objects) written into the artifact store; its descriptor. An
        absolute path, as docs/role.md asks for AWX: ansible-runner starts ansible-playbook in the project directory
        but leaves $PWD, where the role starts relative paths, as it was."""
        path = str(self.tmp / "store" / ("shop-%s.yaml" % version))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_manifest(path, app_objects(version, self.secret, **options))
        return {"type": "kubernetes", "name": "shop", "version": version, "source": path, "sha256": sha256(path)}

    def extravars(self, **overrides):
        out = {"deploy_application": "shop", "deploy_environment": "test", "deploy_namespace": self.namespace,
               "deploy_wait_timeout": "60s", "deploy_parallel": 3, "deploy_cache_dir": str(self.tmp / "cache"),
               "deploy_work_dir": str(self.tmp / "work"), "deploy_summary_file": str(self.tmp / "summary.json")}
        out.update(overrides)
        return out

    def job(self, playbook, extravars, **options):
        summary = extravars.get("deploy_summary_file")
        if summary and os.path.exists(summary):
            os.unlink(summary)
        envvars = dict(self.envvars, **options.pop("envvars", {}))
        return run_job(self.tmp / "jobs", self.project, self.inventory, playbook, extravars, envvars=envvars,
                       **options)

    def summary(self):
        with open(str(self.tmp / "summary.json"), encoding="utf-8") as handle:
            return json.load(handle)

    def forbidden(self):
        """Every value no job event or stdout may hold: tokens, the client key (whole and line by line), the
        Secret's value (plain and base64)."""
        values = list(self.tokens) + [self.secret, base64.b64encode(self.secret.encode()).decode()]
        values.append(self.client_key.strip())
        return values + [line for line in self.client_key.splitlines() if line and not line.startswith("-----")]

    def assert_no_secret(self, job):
        for text, where in ((job.events_text, "a job event"), (job.stdout, "stdout")):
            for value in self.forbidden():
                assert value not in text, "%s of job %s holds a secret value (%s...)" % (where, job.ident, value[:6])
            assert "PRIVATE KEY" not in text, "%s of job %s holds a private key" % (where, job.ident)


def succeeded(job):
    assert (job.status, job.rc) == ("successful", 0), job.explain()
    return job


def test_deploy_and_rollback_jobs_report_their_results_to_awx_and_never_a_secret(
        clusters, inventory_path, namespaces, tmp_path):
    awx = Awx(tmp_path, clusters, inventory_path, namespaces)
    hosts = sorted(c.name for c in clusters)

    first = succeeded(awx.job("deploy", awx.extravars(deploy_artifact=awx.artifact("1.0.0")), cmdline="--diff",
                              verbosity=3))
    data = first.artifact_data
    assert data["manent_result"] == awx.summary(), data
    assert data["manent_result"]["operation"] == "deploy"
    assert sorted(t["host"] for t in data["manent_result"]["targets"]) == hosts
    assert all(t["status"] == "deployed" and t["version"] == "1.0.0" for t in data["manent_result"]["targets"])
    assert [r["operation"] for r in data["manent_results"]] == ["deploy"]
    assert sorted(data["manent_deploy_summary"]) == hosts
    assert len(first.events) > 50 and "shop-credentials" in first.events_text, "the events hold the -vvv --diff run"
    awx.assert_no_secret(first)

    second = succeeded(awx.job("deploy", awx.extravars(deploy_artifact=awx.artifact("2.0.0")), cmdline="--diff"))
    targets = second.artifact_data["manent_result"]["targets"]
    assert all((t["status"], t["version"], t["previous"]) == ("deployed", "2.0.0", "1.0.0") for t in targets), targets
    awx.assert_no_secret(second)

    back = succeeded(awx.job("rollback", awx.extravars()))
    data = back.artifact_data
    assert data["manent_result"] == awx.summary() and data["manent_result"]["operation"] == "rollback"
    assert all((t["status"], t["version"]) == ("rolled-back", "1.0.0") for t in data["manent_result"]["targets"])
    awx.assert_no_secret(back)
    for cluster in clusters:
        assert cluster.get("v1", "ConfigMap", namespaces, "shop-config")["data"] == {"version": "1.0.0"}
        assert locator(cluster, namespaces, KEY)["version"] == "1.0.0"


def test_traffic_job_moves_the_weights_and_reports_them(clusters, inventory_path, namespace, tmp_path):
    cluster = clusters[0]
    awx = Awx(tmp_path, clusters, inventory_path, namespace)
    ref = routes.RouteRef("HTTPRoute", namespace, "shop")
    traffic = {"deploy_strategy": "traffic", "deploy_traffic_route": "shop", "deploy_traffic_service": "shop",
               "deploy_traffic_replicas": "proportional", "deploy_traffic_settle_delay": "0s",
               "deploy_traffic_scale_down_delay": "0s", "deploy_traffic_accept_timeout": "60s",
               "deploy_traffic_testers_header": {"name": "x-canary", "value": "always"}}
    create(cluster, httproute(namespace))
    with AutoController(cluster, ref):
        for playbook, version, extra in (("deploy", "1.0.0", {}),
                                         ("traffic", "1.0.0", {"deploy_traffic_operation": "promote"}),
                                         ("deploy", "2.0.0", {})):
            variables = awx.extravars(deploy_artifact=awx.artifact(version, replicas=2), **traffic, **extra)
            awx.assert_no_secret(succeeded(awx.job(playbook, variables, limit=cluster.name)))
        step = succeeded(awx.job("traffic", awx.extravars(deploy_artifact=awx.artifact("2.0.0", replicas=2),
                                                          deploy_traffic_operation="step", deploy_traffic_percent=50,
                                                          **traffic), limit=cluster.name))
    assert weights(rule(read(cluster, ref), "app")) == {"a": 50, "b": 50}
    data = step.artifact_data
    assert data["manent_result"] == awx.summary(), data
    assert [t["host"] for t in data["manent_result"]["targets"]] == [cluster.name]
    assert sorted(data["manent_traffic_summary"]) == [cluster.name]
    assert data["manent_traffic_summary"][cluster.name]["status"] == "done", data
    awx.assert_no_secret(step)


def test_a_job_cancelled_mid_apply_releases_the_lock_and_the_next_job_converges(
        clusters, inventory_path, namespace, tmp_path):
    cluster = clusters[0]
    awx = Awx(tmp_path, clusters, inventory_path, namespace)
    succeeded(awx.job("deploy", awx.extravars(deploy_artifact=awx.artifact("1.0.0")), limit=cluster.name))

    started = []

    def note_apply(event):
        if event.get("event") == "runner_on_start" and \
                (event.get("event_data") or {}).get("task_action", "").endswith("manent_apply"):
            started.append(event)
        return True

    cancel = []

    def cancel_flag():
        """AWX's cancel flag, set once the apply task runs, holds the lock and waits for a rollout that cannot end;
        it stays set (ansible-runner asks again until ansible-playbook is gone)."""
        if not cancel and started and mid_rollout(cluster, namespace, "shop", "2.0.0", KEY):
            cancel.append(True)
        return bool(cancel)

    marker = new_marker()
    try:
        cancelled = awx.job("deploy", awx.extravars(deploy_artifact=awx.artifact("2.0.0", never_ready=True),
                                                    deploy_wait_timeout="10m"),
                            limit=cluster.name, cancel=cancel_flag, event_handler=note_apply, envvars=marker)
        assert cancelled.status == "canceled", cancelled.explain()
        assert started, "the apply task had started"
        left = wait_gone(marker, CANCEL_CLEANUP)
        assert not left, ("processes of the cancelled job still run %ds after the cancel (pids %s): its deploy goes on"
                          % (CANCEL_CLEANUP, left))
    finally:
        kill_all(marker)
    awx.assert_no_secret(cancelled)
    loc = locator(cluster, namespace, KEY)
    assert (loc["version"], loc["lockHolder"]) == ("1.0.0", ""), "1.0.0 still in service, the lock released: %r" % loc
    assert record_status(cluster, namespace, "2.0.0", KEY) == STATUS_FAILED

    # the next job, without deploy_break_lock, converges
    again = succeeded(awx.job("deploy", awx.extravars(deploy_artifact=awx.artifact("2.0.0")), limit=cluster.name))
    target = again.artifact_data["manent_result"]["targets"][0]
    assert (target["status"], target["version"], target["previous"]) == ("deployed", "2.0.0", "1.0.0"), target
    assert "broke the release lock" not in again.stdout
    loc = locator(cluster, namespace, KEY)
    assert (loc["version"], loc["lockHolder"]) == ("2.0.0", ""), loc
    assert record_status(cluster, namespace, "1.0.0", KEY) == STATUS_SUPERSEDED
    assert record_status(cluster, namespace, "2.0.0", KEY) == STATUS_DEPLOYED
    assert sorted(labelled_history(cluster, namespace, KEY)) == sorted(
        [locator_name(KEY), record_name(KEY, "1.0.0"), record_name(KEY, "2.0.0")])
    assert not marked(marker)
