# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waits that observe (engine/wait.py, cluster/watch.py) on the real local clusters: hook Jobs that their TTL
deletes as soon as they finished count with their real outcome, every time; a failed one fails the deploy with the
Job's reason; a WATCH from a resourceVersion the server no longer holds (410) re-lists and goes on; a dropped WATCH
connection resumes from the last resourceVersion; a WATCH refused because its exec credential stopped working (401)
resumes with a fresh one; credentials that may LIST but not WATCH are polled. The API server
restarted during a wait is in test_faults.py, the public ingress-nginx chart with TTL'd hooks in
test_public_charts.py.

The hook Jobs come from the chart tests/data/charts/ttl-hooks (README there), rendered by the pinned helm with
``helm_hooks: apply``; kwok makes a Job's pod Ready about 1 to 2.5 s after it was scheduled and then Succeeded."""

from __future__ import annotations

import os
import threading

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import ConnectionOptions, Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import LiveReader
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import watch
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.watch import Collection, Observer
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import wait_for
from tests.helpers import chart_path, helm_binary
from tests.integration.deploy_helpers import deployer, dump, locator, record_status, render_bundle, render_chart_bundle
from tests.integration.exec_helpers import Plugin, exec_user, grant, kubeconfig
from tests.objects import NEVER_READY, configmap, deployment
from tests.reliability import record

import tcpproxy  # noqa: E402  pylint: disable=wrong-import-order,import-error  # hack/, put on the path by tests.helpers

pytestmark = pytest.mark.integration

RUNS = 8  # deploys in a row per case: one that misses the outcome by chance would show


def _ttl_hooks(cluster, namespace, revision, **values):
    """The ttl-hooks chart rendered for ``namespace`` at version 0.1.<revision>, its hooks applied."""
    return render_chart_bundle(cluster, chart_path("ttl-hooks-0.1.0.tgz"), namespace, helm_binary(),
                               version="0.1.%d" % revision, helm_release="ttl", helm_hooks="apply",
                               helm_value=dict(values, revision=str(revision)))


@pytest.mark.parametrize("policy", ["before-hook-creation,hook-succeeded", "before-hook-creation"])
def test_a_hook_job_its_ttl_deletes_as_it_finishes_counts_as_completed_every_time(cluster, namespace, policy):
    hook = "Job/%s/ttl-hook" % namespace
    for revision in range(1, RUNS + 1):
        bundle = _ttl_hooks(cluster, namespace, revision, deletePolicy=policy)
        result = deployer(cluster, wait_timeout=60).deploy(bundle)
        assert result.status == "deployed", dump(result)
        phase = "install" if revision == 1 else "upgrade"
        assert result.stages == [{"stage": "pre-" + phase, "objects": 1, "status": "done"},
                                 {"stage": phase, "objects": 1, "status": "done"}], result.stages
        waited = [w for w in result.waited if w["ref"] == hook]
        assert [w["status"] for w in waited] == ["Current"], result.waited
        assert waited[0]["message"].startswith("Job Completed. succeeded: 1/1"), waited
        assert cluster.get("v1", "ConfigMap", namespace, "ttl-settings")["data"] == {"revision": str(revision)}
        # its TTL deletes it (hook-succeeded has nothing left to delete, or deletes it first): gone either way
        cluster.assert_deleted("batch/v1", "Job", namespace, "ttl-hook", timeout=60)
    assert locator(cluster, namespace)["version"] == "0.1.%d" % RUNS


def test_a_failed_hook_job_its_ttl_deletes_fails_the_deploy_with_the_jobs_reason(cluster, namespace):
    with pytest.raises(WaitError) as err:
        deployer(cluster, wait_timeout=120).deploy(_ttl_hooks(cluster, namespace, 1, fail=True))
    message = str(err.value)
    assert err.value.permanent
    assert message.startswith("Job/%s/ttl-hook: pre-install stage failed, the main objects were not applied: "
                              "rollout failed: Job Failed" % namespace), message
    assert "DeadlineExceeded" in message and "ImagePullBackOff: container hook" in message, message
    assert "not visible yet" not in message and "Pending" not in message, message
    assert cluster.get("v1", "ConfigMap", namespace, "ttl-settings") is None
    assert record_status(cluster, namespace, "0.1.1") == "failed"
    # once its pods are gone (FailureTarget, seen first, then Failed) its TTL deletes it
    cluster.wait(lambda: cluster.get("batch/v1", "Job", namespace, "ttl-hook") is None, timeout=60,
                 what="the failed Job deleted by its TTL")


def test_a_watch_from_a_resource_version_the_server_no_longer_holds_relists_and_goes_on(cluster, namespace):
    path = "/api/v1/namespaces/%s/configmaps" % namespace
    collection = Collection(cluster.kube, path, "ConfigMap/" + namespace, "v1", "ConfigMap", names={"late"})
    collection.relist()
    assert collection.seen("late").listed and collection.seen("late").live is None
    collection.version = "1"  # long compacted away: the server answers 410 (as the answer or as an ERROR event)
    collection.watch_once()
    assert collection.version is None and collection.counts["relisted"] == 0
    collection.start()  # lists again, then watches from that LIST's resourceVersion
    try:
        cluster.wait(lambda: collection.counts["watches"] >= 2, what="the watch after the re-list")
        cluster.apply(dict(configmap("late", v="1"), metadata={"name": "late", "namespace": namespace}))
        cluster.wait(lambda: collection.seen("late").live is not None, what="the ConfigMap seen through the watch")
    finally:
        collection.stop()
        collection.join(5)
    assert collection.counts["relisted"] == 1 and collection.counts["lists"] == 2, collection.counts
    assert collection.error is None


def _never_ready(cluster, tmp_path, namespace):
    """A Deployment applied (no wait) whose pods never become ready: the bundle's object."""
    bundle = render_bundle(cluster, tmp_path, [deployment("web", template_annotations=NEVER_READY)], namespace)
    assert deployer(cluster, wait=False).deploy(bundle).status == "deployed"
    return [obj for obj in bundle.objects if obj["kind"] == "Deployment"]


def _make_ready(cluster, namespace):
    cluster.kube.request("PATCH", "/apis/apps/v1/namespaces/%s/deployments/web" % namespace,
                         body={"spec": {"template": {"metadata": {"annotations": {"manent.test/never-ready": None}}}}},
                         content_type="application/merge-patch+json")


def _waiting(objects, observer, timeout):
    """wait_for(objects) running in a thread, started: (the thread, {"entries": ...} or {"error": ...} once done)."""
    outcome = {}

    def run():
        try:
            outcome["entries"] = wait_for(objects, None, timeout=timeout, watch=observer)
        except Exception as exc:  # pylint: disable=broad-except  # the tests assert it
            outcome["error"] = exc

    waiter = threading.Thread(target=run, daemon=True)
    waiter.start()
    return waiter, outcome


def test_a_dropped_watch_connection_resumes_from_the_last_resource_version(cluster, namespace, tmp_path):
    objects = _never_ready(cluster, tmp_path, namespace)
    proxy = tcpproxy.Proxy(("127.0.0.1", int(cluster.url.rsplit(":", 1)[1])), tls_dir=cluster.dir)
    proxy.start()
    kube = Kube(cluster.connection(server="https://127.0.0.1:%d" % proxy.port))
    observer = Observer(LiveReader(kube, Discovery(kube)))
    waiter, outcome = _waiting(objects, observer, 120)
    try:
        cluster.wait(lambda: observer.counts().get("watches", 0) >= 1, what="the first watch")
        proxy.drop_connections()  # every open connection reset, the watch's too
        cluster.wait(lambda: observer.counts()["watches"] >= 2, what="the watch resumed")
        _make_ready(cluster, namespace)
        waiter.join(120)
    finally:
        proxy.stop()
        kube.close()
    assert "error" not in outcome, outcome.get("error")
    assert [e["status"] for e in outcome["entries"]] == ["Current"]
    counts = observer.counts()
    assert counts["resumed"] >= 1 and counts["relisted"] == 0 and counts["lists"] == 1, counts


def test_a_watch_refused_for_an_expired_credential_resumes_with_a_fresh_one(cluster, namespace, tmp_path,
                                                                            monkeypatch):
    """A wait through a kubeconfig exec credential (tests/integration/exec_plugin.py) watches a Deployment that is
    not ready; the ServiceAccount of the token the plugin handed out is deleted, so the server refuses the token (401)
    when the WATCH it ended is resumed. Once the wait's WATCH is open it is the wait's only request, so the plugin's
    run for the new ServiceAccount is that WATCH's 401 renewing the credential. The Deployment becomes ready only
    after that run; the wait sees it through the WATCH resumed with the new token (no polling, no re-list)."""
    grant(cluster, namespace, ["deployer-1", "deployer-2"])
    plugin = Plugin(cluster, namespace, tmp_path / "plugin", lifetime=600)  # only a 401 renews it
    objects = _never_ready(cluster, tmp_path, namespace)
    monkeypatch.setattr(watch, "WATCH_SECONDS", 4)  # the server ends each WATCH after 4 s: it is resumed often
    config = kubeconfig(cluster, tmp_path / "kubeconfig", exec_user(plugin))
    kube = Kube(ConnectionOptions(server="", kubeconfig=config, cache_dir=str(tmp_path / "credentials")))
    observer = Observer(LiveReader(kube, Discovery(kube)))

    def accounts():
        return [entry["sa"] for entry in plugin.runs()]

    waiter, outcome = _waiting(objects, observer, 150)
    try:
        cluster.wait(lambda: observer.counts().get("watches", 0) >= 1, what="the first watch")
        assert accounts() == ["deployer-1"], accounts()
        plugin.use("deployer-2")
        cluster.delete("v1", "ServiceAccount", namespace, "deployer-1")
        cluster.wait(lambda: "deployer-2" in accounts() or not waiter.is_alive(), timeout=90,
                     what="the plugin run again after the WATCH's 401")
        assert waiter.is_alive(), outcome  # still waiting: the Deployment is not ready yet
        watches = observer.counts()["watches"]
        cluster.wait(lambda: observer.counts()["watches"] > watches, what="a WATCH opened with the new token")
        _make_ready(cluster, namespace)
        waiter.join(120)
    finally:
        kube.close()
    case = "exec credential refused mid-WATCH (ServiceAccount deleted): plugin run again, the WATCH resumed"
    counts = observer.counts()
    try:
        assert "error" not in outcome, outcome.get("error")
        assert [e["status"] for e in outcome["entries"]] == ["Current"], outcome
        assert accounts() == ["deployer-1", "deployer-2"], accounts()  # once at the start, once after the 401
        assert counts["resumed"] >= 2 and counts["polls"] == 0 and counts["relisted"] == 0, counts
    except BaseException:
        record("fault", case, False, source=__name__)
        raise
    record("fault", case, True, detail="plugin runs %s; watch counts %s" % (accounts(), counts), source=__name__)


def test_credentials_that_may_list_but_not_watch_are_polled(cluster, namespace, tmp_path):
    objects = _never_ready(cluster, tmp_path, namespace)
    with open(os.path.join(cluster.dir, "deployer.token"), encoding="utf-8") as handle:
        token = handle.read().strip()
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "no-watch", "namespace": namespace},
                   "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}]})
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "no-watch", "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "no-watch"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "manent-deployer"}]})
    with Kube(cluster.connection(token=token)) as kube:
        reader = LiveReader(kube, Discovery(kube))
        cluster.wait(lambda: reader.read_many(objects), what="RBAC for manent-deployer")
        observer = Observer(reader)
        waiter, outcome = _waiting(objects, observer, 120)
        cluster.wait(lambda: observer.counts().get("polls", 0) >= 1, what="the WATCH refused, LISTs instead")
        _make_ready(cluster, namespace)
        waiter.join(120)
    assert "error" not in outcome, outcome.get("error")
    assert [e["status"] for e in outcome["entries"]] == ["Current"], outcome
    counts = observer.counts()
    assert counts["watches"] == 1 and counts["polls"] >= 1 and counts["resumed"] == 0, counts
