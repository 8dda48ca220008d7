"""Release history through whole deploys on a real cluster (docs/requirements.md §8, issue "manent_history")."""

import base64
import os
import re
import threading

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import (
    LABEL_HISTORY, locator_name, record_name)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError, LockedError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from tests.integration.deploy_helpers import (
    KEY, deploy, deployer, labelled_history, locator, record_status, render_bundle, versions)
from tests.objects import NEVER_READY, configmap, deployment

pytestmark = pytest.mark.integration
OTHER = ReleaseKey(application="billing", artifact="billing", environment="test")


def release(version):
    """v1: web + a; v2: web (new image) + b; v3: web (newer image) + b + c."""
    objs = {
        "1": [deployment("web", image="registry.k8s.io/pause:3.9"), configmap("a", v="1")],
        "2": [deployment("web", image="registry.k8s.io/pause:3.10"), configmap("b", v="2")],
        "3": [deployment("web", image="registry.k8s.io/pause:3.10", replicas=2), configmap("b", v="3"),
              configmap("c", v="3")],
    }[version]
    return objs


def live_specs(cluster, ns):
    d = cluster.get("apps/v1", "Deployment", ns, "web")
    cms = {cm["metadata"]["name"]: cm.get("data") for cm in cluster.list("v1", "ConfigMap", ns)
           if cm["metadata"]["name"] in ("a", "b", "c")}
    return d["spec"]["replicas"], d["spec"]["template"]["spec"]["containers"][0]["image"], cms


def test_keep_releases_rollback_and_prune(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [configmap("billing-cfg", v="x")], namespace, version="9.9.9", key=OTHER,
           keep_releases=2)
    other_before = labelled_history(cluster, namespace, OTHER)
    for v in ("1", "2", "3"):
        r = deploy(cluster, tmp_path, release(v), namespace, version=v + ".0.0", prune=True, keep_releases=2,
                   wait_timeout=60)
        assert r.status == "deployed"
    names = set(labelled_history(cluster, namespace))
    assert record_name(KEY, "1.0.0") not in names, "v1's record is beyond keep_releases=2"
    assert {record_name(KEY, "2.0.0"), record_name(KEY, "3.0.0"), locator_name(KEY)} <= names
    assert labelled_history(cluster, namespace, OTHER) == other_before, "another application's history untouched"
    assert record_status(cluster, namespace, "2.0.0") == "superseded"
    assert live_specs(cluster, namespace) == (2, "registry.k8s.io/pause:3.10", {"b": {"v": "3"}, "c": {"v": "3"}})

    result = deployer(cluster, prune=True, wait_timeout=60).rollback(namespace, KEY)

    assert result.status == "rolled-back" and result.release == "2.0.0" and result.previous == "3.0.0"
    assert result.pruned == ["ConfigMap/%s/c" % namespace]
    assert live_specs(cluster, namespace) == (1, "registry.k8s.io/pause:3.10", {"b": {"v": "2"}})
    loc = locator(cluster, namespace)
    assert loc["version"] == "2.0.0"
    assert record_status(cluster, namespace, "3.0.0") == "rolled-back"
    assert record_status(cluster, namespace, "2.0.0") == "deployed"


def test_a_deploy_whose_predecessor_changed_before_it_held_the_lock_stops_and_a_rerun_converges(
        cluster, namespace, tmp_path):
    """Two deploys of one release key planned at the same time (two CI jobs): 2.0.0 read 1.0.0 in service, then
    3.0.0 was deployed before 2.0.0 took the lock. 2.0.0 would record 1.0.0 as what it replaced and prune from
    1.0.0's objects, leaving 3.0.0's configmap c behind. It stops once it holds the lock, before its record or
    any object is written; run again, it replaces 3.0.0 and prunes c."""
    deploy(cluster, tmp_path, release("1"), namespace, "1.0.0", prune=True, wait_timeout=60)
    second = render_bundle(cluster, tmp_path, release("2"), namespace, version="2.0.0")
    third = render_bundle(cluster, tmp_path, release("3"), namespace, version="3.0.0")
    late = deployer(cluster, holder="job-2", prune=True, wait_timeout=60)
    verify = late.context.applier.verify

    def other_job_first(*args, **kwargs):  # the last read before the lock: the other job deploys meanwhile
        assert deployer(cluster, holder="job-3", prune=True, wait_timeout=60).deploy(third).status == "deployed"
        return verify(*args, **kwargs)

    late.context.applier.verify = other_job_first
    with pytest.raises(HistoryError) as stopped:
        late.deploy(second)
    assert "another deploy changed the release in service while this one prepared (version 1.0.0 -> 3.0.0" in \
        str(stopped.value), str(stopped.value)
    assert "run it again" in stopped.value.hint
    assert locator(cluster, namespace)["version"] == "3.0.0" and not locator(cluster, namespace)["lockHolder"]
    assert record_status(cluster, namespace, "2.0.0") is None
    assert live_specs(cluster, namespace) == (2, "registry.k8s.io/pause:3.10", {"b": {"v": "3"}, "c": {"v": "3"}})

    again = deployer(cluster, holder="job-2", prune=True, wait_timeout=60).deploy(second)
    assert (again.status, again.previous) == ("deployed", "3.0.0"), again.to_dict()
    assert locator(cluster, namespace)["replaced"] == "3.0.0"
    assert live_specs(cluster, namespace) == (1, "registry.k8s.io/pause:3.10", {"b": {"v": "2"}})


def test_redeploying_the_version_in_service_keeps_what_it_replaced(cluster, namespace, tmp_path):
    """The version in service deployed again with other parameters (a new deploy id) replaces its record but
    not what it replaced: a rollback still returns to the version before it, not to itself."""
    deploy(cluster, tmp_path, release("1"), namespace, version="1.0.0", prune=True, wait_timeout=60)
    deploy(cluster, tmp_path, release("2"), namespace, version="2.0.0", prune=True, wait_timeout=60)
    bundle = render_bundle(cluster, tmp_path, release("2") + [configmap("d", v="2")], namespace, version="2.0.0",
                           variables={"tier": "hotfix"})
    again = deployer(cluster, prune=True, wait_timeout=60).deploy(bundle)
    assert again.status == "deployed" and again.history.get("written") is True
    assert any("is redeployed" in w for w in again.warnings), again.warnings
    loc = locator(cluster, namespace)
    assert (loc["version"], loc["deployment"], loc["replaced"]) == ("2.0.0", bundle.release.deployment, "1.0.0")
    assert record_status(cluster, namespace, "2.0.0") == "deployed"
    assert record_status(cluster, namespace, "1.0.0") == "superseded"

    result = deployer(cluster, prune=True, wait_timeout=60).rollback(namespace, KEY)

    assert result.status == "rolled-back" and result.release == "1.0.0" and result.previous == "2.0.0"
    assert live_specs(cluster, namespace) == (1, "registry.k8s.io/pause:3.9", {"a": {"v": "1"}})
    assert record_status(cluster, namespace, "2.0.0") == "rolled-back"


def test_a_failed_redeploy_of_the_version_in_service_keeps_its_record_and_leaves_its_objects_prunable(
        cluster, namespace, tmp_path):
    """The version in service deployed again (another deploy id) whose rollout fails: that version stays in service
    with its record unchanged (objects, deploy id, status deployed), so that a rollback to it later restores what
    was in service, not the failed attempt; the objects the attempt added are listed in that record and pruned by
    the next deploy, as are the objects of a failed new version. It used to overwrite the record in service with
    the attempt and mark it failed while the locator still pointed at it."""
    first = deploy(cluster, tmp_path, release("1"), namespace, version="1.0.0", prune=True, wait_timeout=60)
    deploy(cluster, tmp_path, release("2") + [configmap("kept", v="2")], namespace, version="2.0.0", prune=True,
           wait_timeout=60)
    in_service = locator(cluster, namespace)
    bad = [deployment("web", image="registry.k8s.io/pause:3.10", template_annotations=NEVER_READY, deadline=3),
           configmap("b", v="bad"), configmap("added", v="bad")]
    bundle = render_bundle(cluster, tmp_path, bad, namespace, version="2.0.0")
    assert bundle.release.deployment != in_service["deployment"]
    with pytest.raises(WaitError) as failed:
        deployer(cluster, prune=True, wait_timeout=60).deploy(bundle)
    partial = failed.value.partial
    assert partial.status == "failed" and partial.history.get("written") is True, partial.to_dict()
    assert any(w.startswith("version 2.0.0 stays in service as deploy %s" % in_service["deployment"]) and
               w.endswith("the objects it added are listed there, for the next deploy to prune")
               for w in partial.warnings), partial.warnings
    assert cluster.get("v1", "ConfigMap", namespace, "added") is not None, "the attempt created it"

    after = locator(cluster, namespace)
    assert (after["version"], after["deployment"], after["replaced"]) == \
        ("2.0.0", in_service["deployment"], "1.0.0"), after
    assert record_status(cluster, namespace, "2.0.0") == "deployed"
    store = HistoryStore(cluster.kube, namespace, KEY)
    meta, objects = store.load("2.0.0")
    assert meta["deployment"] == in_service["deployment"]
    assert sorted(o["metadata"]["name"] for o in objects) == ["b", "kept", "web"]
    assert [o for o in objects if o["metadata"]["name"] == "b"][0]["data"] == {"v": "2"}
    strays = store.load("2.0.0", strays=True)[1][len(objects):]
    assert [(o["kind"], o["metadata"]["name"]) for o in strays] == [("ConfigMap", "added")], strays
    assert "data" not in strays[0], "only what prune needs is kept"

    # The next version prunes what the failed attempt added and what it no longer has.
    third = deploy(cluster, tmp_path, release("3"), namespace, version="3.0.0", prune=True, wait_timeout=60)
    assert sorted(third.pruned) == ["ConfigMap/%s/added" % namespace, "ConfigMap/%s/kept" % namespace], \
        third.pruned
    # A rollback returns to 2.0.0 as it was in service, not to the failed attempt.
    back = deployer(cluster, prune=True, wait_timeout=60).rollback(namespace, KEY)
    assert (back.status, back.release) == ("rolled-back", "2.0.0"), back.to_dict()
    assert live_specs(cluster, namespace) == (1, "registry.k8s.io/pause:3.10", {"b": {"v": "2"}})
    assert cluster.get("v1", "ConfigMap", namespace, "kept")["data"] == {"v": "2"}
    assert first.status == "deployed"


def test_retention_decides_from_the_listing_taken_under_the_lock(cluster, namespace, tmp_path):
    """Under its lock a deploy lists this key's history once, while it writes its record; keep_releases trims from
    that listing plus the records it wrote itself (no LIST after the applies) and deletes exactly the oldest."""
    from tests.integration.deploy_helpers import Recording
    for v in ("1", "2", "3"):
        deploy(cluster, tmp_path, release(v), namespace, version=v + ".0.0", keep_releases=2, wait=False)
    kube = Recording(cluster.kube)
    result = deploy(cluster, tmp_path, [configmap("b", v="4")], namespace, version="4.0.0", keep_releases=2,
                    wait=False, kube=kube)
    assert result.status == "deployed" and result.history["deleted"] == [record_name(KEY, "2.0.0")]
    listed = [i for i, (m, p, q) in enumerate(kube.calls) if m == "GET" and p.endswith("/configmaps")
              and LABEL_HISTORY in q.get("labelSelector", "")]
    first_patch = min(i for i, (m, _p, q) in enumerate(kube.calls) if m == "PATCH" and q.get("dryRun") != "All")
    assert listed and max(listed) < first_patch, kube.calls  # no LIST of the history after the applies
    records = {name for name in labelled_history(cluster, namespace) if name != locator_name(KEY)}
    assert records == {record_name(KEY, "3.0.0"), record_name(KEY, "4.0.0")}
    assert (record_status(cluster, namespace, "3.0.0"), record_status(cluster, namespace, "4.0.0")) == (
        "superseded", "deployed")


def test_concurrent_deploys_of_one_release_key_exactly_one_wins(cluster, namespace, tmp_path):
    # Each release has a Deployment, so the winner holds the lock for its whole rollout (seconds), long after
    # the other has asked for it.
    bundles = [render_bundle(cluster, tmp_path, [configmap("race", v=str(i)), deployment("race-web")], namespace,
                             version="1.%d.0" % i) for i in range(2)]
    outcomes = [None, None]
    barrier = threading.Barrier(2)

    def run(i):
        d = deployer(cluster, holder="deploy-%d" % i, wait_timeout=30)
        barrier.wait()
        try:
            outcomes[i] = d.deploy(bundles[i]).status
        except LockedError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wins = [o for o in outcomes if o == "deployed"]
    losses = [o for o in outcomes if isinstance(o, LockedError)]
    # Both may succeed one after the other only if the first finished before the second asked; with the
    # barrier they overlap, so exactly one holds the lock and the other is refused at once.
    assert len(wins) == 1 and len(losses) == 1, outcomes
    assert "deploy-" in str(losses[0]) and "break_lock" in str(losses[0])


def test_killed_deploy_leaves_history_consistent_and_a_rerun_converges(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [configmap("app", v="1")], namespace, version="1.0.0")
    # A deploy of 2.0.0 killed after it saved its record: lock held by a holder that no longer exists.
    bundle = render_bundle(cluster, tmp_path, [configmap("app", v="2")], namespace, version="2.0.0")
    store = HistoryStore(cluster.kube, namespace, KEY, holder="killed-run@ci:4242")
    store.acquire()
    store.save_record(bundle.release, bundle.objects, {})
    assert locator(cluster, namespace)["version"] == "1.0.0", "in service until a rollout succeeds"
    assert record_status(cluster, namespace, "2.0.0") == "pending"

    with pytest.raises(LockedError) as err:
        deployer(cluster, holder="rerun").deploy(bundle)
    assert "killed-run@ci:4242" in str(err.value)
    assert cluster.get("v1", "ConfigMap", namespace, "app")["data"] == {"v": "1"}, "refused before any change"

    result = deployer(cluster, holder="rerun", break_lock=True).deploy(bundle)
    assert result.status == "deployed"
    assert locator(cluster, namespace)["version"] == "2.0.0" and locator(cluster, namespace)["lockHolder"] == ""
    assert record_status(cluster, namespace, "2.0.0") == "deployed"
    assert cluster.get("v1", "ConfigMap", namespace, "app")["data"] == {"v": "2"}


def test_oversize_release_is_refused_with_no_change(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [configmap("small", v="1")], namespace, version="1.0.0")
    before = versions(cluster, namespace)
    # ~1.2 MiB of incompressible data spread over several ConfigMaps (each under the 1 MiB object limit).
    big = [configmap("big-%d" % i, blob=base64.b64encode(os.urandom(300 * 1024)).decode()) for i in range(3)]
    bundle = render_bundle(cluster, tmp_path, big + [configmap("small", v="2")], namespace, version="2.0.0")
    with pytest.raises(HistoryError) as err:
        deployer(cluster).deploy(bundle)
    message = str(err.value)
    # 4 ConfigMaps (3 big, 1 small), ~1.2 MiB of base64 that gzip cannot shrink below the 900 KiB limit
    assert re.search(r"the 4 objects take \d+ bytes compressed \((\d+) KiB\), above the history limit of "
                     r"921600 bytes \(900 KiB\)", message), message
    assert int(re.search(r"\((\d+) KiB\), above", message).group(1)) > 900, message
    assert versions(cluster, namespace) == before


def test_rollback_after_a_failed_deploy_restores_the_release_in_service(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [deployment("web"), configmap("a", v="1")], namespace, version="1.0.0")
    deploy(cluster, tmp_path, [deployment("web"), configmap("a", v="2")], namespace, version="2.0.0")
    bad = [deployment("web", template_annotations=NEVER_READY, deadline=3), configmap("a", v="3"),
           configmap("only-in-3", v="3")]
    with pytest.raises(WaitError):
        deploy(cluster, tmp_path, bad, namespace, version="3.0.0", wait_timeout=60)
    assert locator(cluster, namespace)["version"] == "2.0.0"
    assert record_status(cluster, namespace, "3.0.0") == "failed"

    result = deployer(cluster, prune=True, wait_timeout=60).rollback(namespace, KEY)

    assert result.release == "2.0.0" and result.previous == "3.0.0", "back to the release in service, not v1"
    assert result.pruned == ["ConfigMap/%s/only-in-3" % namespace]
    assert cluster.get("v1", "ConfigMap", namespace, "a")["data"] == {"v": "2"}
    web = cluster.get("apps/v1", "Deployment", namespace, "web")
    assert "annotations" not in web["spec"]["template"]["metadata"] or \
        "manent.test/never-ready" not in web["spec"]["template"]["metadata"]["annotations"]
    loc = locator(cluster, namespace)
    assert loc["version"] == "2.0.0" and loc["replaced"] == "1.0.0"
    assert record_status(cluster, namespace, "3.0.0") == "rolled-back"
    assert record_status(cluster, namespace, "2.0.0") == "deployed"


def test_a_failed_release_objects_are_pruned_by_the_next_deploy(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [deployment("web"), configmap("a", v="1")], namespace, version="1.0.0")
    with pytest.raises(WaitError):
        deploy(cluster, tmp_path, [deployment("web", template_annotations=NEVER_READY, deadline=3),
                                   configmap("stray", v="2")], namespace, version="2.0.0", wait_timeout=60)
    result = deploy(cluster, tmp_path, [deployment("web"), configmap("a", v="3")], namespace, version="3.0.0",
                    prune=True, wait_timeout=60)
    assert result.pruned == ["ConfigMap/%s/stray" % namespace]


def test_prune_leaves_objects_that_another_release_took_over(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [configmap("shared", v="shop"), configmap("mine", v="1")], namespace, version="1.0.0")
    took = deploy(cluster, tmp_path, [configmap("shared", v="billing")], namespace, version="9.0.0", key=OTHER,
                  adopt=True)  # without adopt the other release stops before any write (test_ownership.py)
    assert [a["subject"] for a in took.adopted] == ["ConfigMap/%s/shared" % namespace]
    result = deploy(cluster, tmp_path, [configmap("mine", v="2")], namespace, version="2.0.0", prune=True)
    assert result.pruned == []
    assert [c.reason for c in result.changes if c.subject.endswith("/shared")] == [
        "not pruned: now belongs to untenanted/billing/billing/test"]
    assert cluster.get("v1", "ConfigMap", namespace, "shared")["data"] == {"v": "billing"}
