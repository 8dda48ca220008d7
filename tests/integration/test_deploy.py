# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""manent_apply's engine against real API servers (docs/requirements.md §7 steps 3-6, §10, §11; issue 4's proof list).

Every test renders (or builds) a bundle, deploys it with deploy.Deployer and asserts what the cluster holds
afterwards: actions, resourceVersions, history ConfigMaps, errors. Nothing is mocked; ``Recording`` only
records the real requests (and holds PATCHes open a little to make concurrency observable).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApplyError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import locator_name, record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    STATUS_DEPLOYED, STATUS_FAILED)
from tests.helpers import chart_path, helm_binary
from tests.integration.deploy_helpers import (
    KEY, Recording, actions, deploy, deployer, dump, labelled_history, locator, make_bundle, reads_object,
    record_status, render_chart_bundle, versions)
from tests.objects import NEVER_READY, PAUSE, configmap, crd, deployment, secret, service
from tests.integration.module_helpers import kubeconfig

pytestmark = pytest.mark.integration


def index_of(calls, predicate):
    for i, (method, path, query) in enumerate(calls):
        if predicate(method, path, query):
            return i
    raise AssertionError("no such call")


# --------------------------------------------------------------------------- CRD + CR


def test_crd_and_its_custom_resource_in_one_bundle(cluster, namespace):
    group = "%s.manent.io" % namespace
    gizmo = {"apiVersion": group + "/v1", "kind": "Gizmo", "metadata": {"name": "g1"}, "spec": {"size": 3}}
    objects = [crd(group, "Gizmo", "gizmos"), gizmo, configmap("settings", a="1")]
    crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos." + group
    cr_path = "/apis/%s/v1/namespaces/%s/gizmos/g1" % (group, namespace)
    try:
        # check mode first: the CR cannot be verified (its kind does not exist yet) and is counted skipped
        checked = deployer(cluster, apply={"dry_run": True}).deploy(make_bundle(objects, namespace))
        assert checked.status == "checked"
        assert actions(checked) == {"CustomResourceDefinition/gizmos." + group: "created",
                                    "Gizmo/%s/g1" % namespace: "skipped",
                                    "ConfigMap/%s/settings" % namespace: "created"}
        assert checked.objects_skipped == 1
        assert cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "gizmos." + group) is None

        kube = Recording(cluster.kube)
        result = deployer(cluster, kube=kube).deploy(make_bundle(objects, namespace))
        assert result.status == "deployed"
        assert actions(result) == {"CustomResourceDefinition/gizmos." + group: "created",
                                   "Gizmo/%s/g1" % namespace: "created", "ConfigMap/%s/settings" % namespace: "created"}
        live = cluster.get(group + "/v1", "Gizmo", namespace, "g1")
        assert live["spec"] == {"size": 3}
        assert live["metadata"]["labels"]["manent.io/artifact"] == "shop-api"
        # the CRD was read (Established) after it was applied and before the first request for the CR
        crd_patch = index_of(kube.calls, lambda m, p, q: m == "PATCH" and p == crd_path)
        cr_first = index_of(kube.calls, lambda m, p, q: p == cr_path)
        assert any(reads_object(m, p, q, crd_path) for m, p, q in kube.calls[crd_patch + 1:cr_first])
        established = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "gizmos." + group)
        assert {c["type"]: c["status"] for c in established["status"]["conditions"]}["Established"] == "True"
    finally:
        cluster.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "gizmos." + group)


# --------------------------------------------------------------------------- changed is exact


def test_redeploy_changes_one_image_then_a_rerun_writes_nothing(cluster, namespace, tmp_path):
    def objects(web_image):
        return [deployment("web", image=web_image), deployment("api"), configmap("settings", mode="a"),
                service("web")]

    first = deploy(cluster, tmp_path, objects("registry.k8s.io/pause:3.9"), namespace, version="1.0.0")
    assert first.changed is True
    assert first.to_dict()["counts"] == {"created": 4}
    assert first.phase == "install" and first.previous == ""
    assert set(first.timings) == {"apply", "wait", "prune", "total"}
    assert all(c.seconds > 0 for c in first.changes)

    second = deploy(cluster, tmp_path, objects(PAUSE), namespace, version="1.1.0")
    assert actions(second) == {"Deployment/%s/web" % namespace: "configured",
                               "Deployment/%s/api" % namespace: "unchanged",
                               "ConfigMap/%s/settings" % namespace: "unchanged",
                               "Service/%s/web" % namespace: "unchanged"}
    assert second.changed is True and second.previous == "1.0.0" and second.phase == "upgrade"
    web = cluster.get("apps/v1", "Deployment", namespace, "web")
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == PAUSE
    assert web["metadata"]["annotations"]["manent.io/version"] == "1.1.0"
    # unchanged objects still name the release that last changed them
    api = cluster.get("apps/v1", "Deployment", namespace, "api")
    assert api["metadata"]["annotations"]["manent.io/version"] == "1.0.0"
    assert [w["ref"] for w in second.waited] == ["Deployment/%s/api" % namespace, "Deployment/%s/web" % namespace]
    assert {w["status"] for w in second.waited} == {"Current"}

    time.sleep(1.0)  # let the controllers finish writing status
    before = versions(cluster, namespace)
    kube = Recording(cluster.kube)
    rerun = deploy(cluster, tmp_path, objects(PAUSE), namespace, version="1.1.0", kube=kube)
    assert rerun.changed is False
    assert rerun.to_dict()["counts"] == {"unchanged": 4}
    assert rerun.history == {}
    assert kube.writes() == []  # nothing changed: no apply sent (unchanged.py, issue 13) ...
    assert versions(cluster, namespace) == before  # ... and the server stored nothing, history included
    assert {"ConfigMap/" + locator_name(KEY), "ConfigMap/" + record_name(KEY, "1.1.0"),
            "Deployment.apps/web", "Deployment.apps/api", "Service/web"} <= set(before)
    assert any(k.startswith("Pod/web-") for k in before) and any(k.startswith("EndpointSlice.") for k in before)


# --------------------------------------------------------------------------- tiers


def test_namespaces_first_then_history_then_tiers_concurrently(cluster, namespace):
    extra = namespace + "-x"
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": extra}},
               deployment("web")] + [configmap("c%d" % i, n=str(i)) for i in range(6)] + [
        configmap("remote", namespace=extra, n="x")]
    try:
        kube = Recording(cluster.kube, patch_delay=0.1)
        result = deployer(cluster, kube=kube, apply={"concurrency": 3}).deploy(make_bundle(objects, namespace))
        assert result.status == "deployed"
        patches = [p for m, p, q in kube.calls if m == "PATCH"]
        assert patches[0] == "/api/v1/namespaces/" + extra
        record_post = index_of(kube.calls, lambda m, p, q: m == "POST" and p.endswith("/configmaps"))
        ns_patch = index_of(kube.calls, lambda m, p, q: m == "PATCH" and p.endswith("/namespaces/" + extra))
        first_cm = index_of(kube.calls, lambda m, p, q: m == "PATCH" and "/configmaps/" in p)
        web = index_of(kube.calls, lambda m, p, q: m == "PATCH" and p.endswith("/deployments/web"))
        last_cm = max(i for i, (m, p, q) in enumerate(kube.calls) if m == "PATCH" and "/configmaps/" in p)
        assert ns_patch < record_post < first_cm and last_cm < web
        assert kube.peak == 3  # seven ConfigMaps in one tier, three at a time

        record = cluster.get("v1", "ConfigMap", namespace, record_name(KEY, "1.0.0"))
        ns_obj = cluster.get("v1", "Namespace", None, extra)
        assert ns_obj["metadata"]["creationTimestamp"] <= record["metadata"]["creationTimestamp"]
        for i in range(6):
            cm = cluster.get("v1", "ConfigMap", namespace, "c%d" % i)
            assert record["metadata"]["creationTimestamp"] <= cm["metadata"]["creationTimestamp"]
        assert cluster.get("v1", "ConfigMap", extra, "remote")["data"] == {"n": "x"}

        serial = Recording(cluster.kube, patch_delay=0.05)
        changed = objects[:2] + [configmap("c%d" % i, n="%d-b" % i) for i in range(6)] + objects[-1:]
        again = deployer(cluster, kube=serial, apply={"concurrency": 1}).deploy(  # changed: applied (issue 13)
            make_bundle(changed, namespace, version="1.0.1", deployment="d-2"))
        assert again.status == "deployed" and serial.peak == 1
    finally:
        cluster.delete_namespace(extra)


# --------------------------------------------------------------------------- prune


def test_prune_keeps_keep_anyone_and_namespaces(cluster, namespace, tmp_path):
    extra = namespace + "-p"
    v1 = [configmap("stays", a="1"), configmap("legacy", a="1"), service("old"),
          configmap("kept", annotations={"helm.sh/resource-policy": "keep"}, a="1"),
          configmap("shared-werf", annotations={"werf.io/ownership": "anyone"}, a="1"),
          configmap("shared-manent", annotations={"manent.io/ownership": "anyone"}, a="1"),
          configmap("gone", a="1"),
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": extra}}]
    try:
        assert deploy(cluster, tmp_path, v1, namespace, version="1").status == "deployed"
        cluster.delete("v1", "ConfigMap", namespace, "gone")  # already gone before the prune: not an error

        result = deploy(cluster, tmp_path, [configmap("stays", a="1")], namespace, version="2", prune=True)
        assert result.status == "deployed"
        assert sorted(result.pruned) == ["ConfigMap/%s/legacy" % namespace, "Service/%s/old" % namespace]
        assert result.to_dict()["details"]["pruned"] == result.pruned
        reasons = {c.subject: c.reason for c in result.changes if c.action == "skipped"}
        assert reasons == {
            "ConfigMap/%s/kept" % namespace: "not pruned: helm.sh/resource-policy: keep",
            "ConfigMap/%s/shared-werf" % namespace:
                "not pruned: ownership anyone (annotation werf.io/ownership): not the release's alone",
            "ConfigMap/%s/shared-manent" % namespace:
                "not pruned: ownership anyone (annotation manent.io/ownership): not the release's alone",
            "Namespace/" + extra: "not pruned: Namespaces are never deleted"}
        for kind, name in (("ConfigMap", "legacy"), ("ConfigMap", "gone"), ("Service", "old")):
            cluster.assert_deleted("v1", kind, namespace, name)
        for name in ("stays", "kept", "shared-werf", "shared-manent"):
            assert cluster.get("v1", "ConfigMap", namespace, name) is not None
        assert cluster.get("v1", "Namespace", None, extra)["status"]["phase"] == "Active"

        # version 3 prunes from version 2's objects: the survivors are no longer the release's to delete
        third = deploy(cluster, tmp_path, [configmap("stays", a="2")], namespace, version="3", prune=True)
        assert third.pruned == [] and actions(third) == {"ConfigMap/%s/stays" % namespace: "configured"}
    finally:
        cluster.delete_namespace(extra)


# --------------------------------------------------------------------------- check mode


def test_check_mode_writes_nothing_and_reports_exactly(cluster, namespace, tmp_path):
    extra = namespace + "-c"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"}, "stringData": {"k": "v"}}
    v1 = [configmap("a", x="1"), configmap("old", x="1"), deployment("web"), secret]
    assert deploy(cluster, tmp_path, v1, namespace, version="1").status == "deployed"
    time.sleep(1.0)

    def snapshot():  # (other tests create namespaces meanwhile: only ours and the one the bundle would create)
        return versions(cluster, namespace), cluster.get("v1", "Namespace", None, extra)

    before = snapshot()
    assert before[1] is None
    assert {"ConfigMap/" + locator_name(KEY), "ConfigMap/" + record_name(KEY, "1")} <= set(before[0])

    kube = Recording(cluster.kube)
    v2 = [configmap("a", x="2"), configmap("new", x="1"), deployment("web"), secret,
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": extra}},
          configmap("inside", namespace=extra, x="1"), service("inside-svc")]
    v2[-1]["metadata"]["namespace"] = extra
    result = deploy(cluster, tmp_path, v2, namespace, version="2", kube=kube, prune=True,
                    apply={"dry_run": True})
    assert result.status == "checked"
    assert actions(result) == {
        "ConfigMap/%s/a" % namespace: "configured", "ConfigMap/%s/new" % namespace: "created",
        "Deployment/%s/web" % namespace: "unchanged", "Secret/%s/creds" % namespace: "unchanged",
        "Namespace/" + extra: "created", "ConfigMap/%s/inside" % extra: "skipped",
        "Service/%s/inside-svc" % extra: "skipped", "ConfigMap/%s/old" % namespace: "deleted"}
    assert result.objects_skipped == 2 and result.to_dict()["details"]["objects_skipped"] == 2
    assert result.pruned == ["ConfigMap/%s/old" % namespace]
    assert result.changed is True and result.history == {}
    assert kube.writes() == []  # every write carried dryRun=All ...
    assert snapshot() == before  # ... and nothing changed: objects, history ConfigMaps, namespaces

    # check mode of what is deployed: nothing would change
    same = deploy(cluster, tmp_path, v1, namespace, version="1", apply={"dry_run": True})
    assert same.changed is False and same.to_dict()["counts"] == {"unchanged": 4}
    assert snapshot() == before


# --------------------------------------------------------------------------- diff mode

SECRET_OLD = "old-s3cr3t-Value-7f1d"
SECRET_NEW = "new-s3cr3t-Value-c2e9"


def db(password):
    return secret("db", string_data={"password": password, "user": "app"})


def test_diff_mode_without_noise_and_with_secrets_redacted(cluster, namespace, tmp_path):
    deploy(cluster, tmp_path, [configmap("cfg", mode="a", keep="k"), db(SECRET_OLD)], namespace, version="1")

    for dry_run in (True, False):
        result = deploy(cluster, tmp_path, [configmap("cfg", mode="b", keep="k"), db(SECRET_NEW)], namespace,
                        version="2", apply={"dry_run": dry_run, "diff": True})
        text = dump(result)
        for value in (SECRET_OLD, SECRET_NEW):
            assert value not in text
            assert base64.b64encode(value.encode()).decode() not in text
        diffs = {c.subject: c.diff for c in result.changes if c.diff}
        assert sorted(diffs) == ["ConfigMap/%s/cfg" % namespace, "Secret/%s/db" % namespace]
        cfg = diffs["ConfigMap/%s/cfg" % namespace]
        assert "mode: a" in cfg["before"] and "mode: b" in cfg["after"]
        assert cfg["before_header"] == "ConfigMap/%s/cfg (live)" % namespace
        for side in (cfg["before"], cfg["after"]):
            for noise in ("managedFields", "resourceVersion", "uid:", "creationTimestamp", "status:"):
                assert noise not in side
        sec = diffs["Secret/%s/db" % namespace]
        assert "<redacted>" in sec["before"] and "<redacted>" in sec["after"]
        before_lines = {line.strip().split(":")[0]: line for line in sec["before"].splitlines() if "<redacted>" in line}
        after_lines = {line.strip().split(":")[0]: line for line in sec["after"].splitlines() if "<redacted>" in line}
        assert before_lines["user"] == after_lines["user"]  # same value, same marker within one run
        assert before_lines["password"] != after_lines["password"]  # changed value, different marker
    assert cluster.get("v1", "ConfigMap", namespace, "cfg")["data"]["mode"] == "b"


# --------------------------------------------------------------------------- wait


def test_progress_deadline_fails_at_once_and_keeps_the_release_in_service(cluster, namespace, tmp_path):
    assert deploy(cluster, tmp_path, [deployment("web", deadline=5)], namespace, version="1").status == "deployed"

    started = time.monotonic()
    with pytest.raises(WaitError) as caught:
        deploy(cluster, tmp_path, [deployment("web", deadline=5, template_annotations=NEVER_READY)],
               namespace, version="2", wait_timeout=300)
    elapsed = time.monotonic() - started
    err = caught.value
    assert elapsed < 30  # the deadline is 5 s; wait_timeout (300 s) is not waited for
    assert err.permanent is True
    assert err.subject == "Deployment/%s/web" % namespace
    assert "ImagePullBackOff" in str(err) and "timed out progressing" in str(err)
    assert err.partial.status == "failed"
    assert actions(err.partial) == {"Deployment/%s/web" % namespace: "configured"}
    assert record_status(cluster, namespace, "2") == STATUS_FAILED
    assert locator(cluster, namespace)["version"] == "1"
    assert record_status(cluster, namespace, "1") == STATUS_DEPLOYED

    fixed = deploy(cluster, tmp_path, [deployment("web", deadline=5, image="registry.k8s.io/pause:3.9")],
                   namespace, version="2", wait_timeout=60)
    assert fixed.status == "deployed" and fixed.previous == "1"
    assert record_status(cluster, namespace, "2") == STATUS_DEPLOYED
    assert locator(cluster, namespace)["version"] == "2"


def test_wait_timeout_names_the_workload_and_why(cluster, namespace, tmp_path):
    started = time.monotonic()
    with pytest.raises(WaitError) as caught:
        deploy(cluster, tmp_path, [deployment("slow", deadline=600, template_annotations=NEVER_READY),
                                   deployment("fine")], namespace, version="1", wait_timeout=6)
    elapsed = time.monotonic() - started
    err = caught.value
    assert 6 <= elapsed < 20
    assert err.permanent is False
    text = str(err)
    assert "1 of 2 workloads not ready after 6s" in text
    assert "Deployment/%s/slow" % namespace in text and "Deployment/%s/fine" % namespace not in text
    assert "ImagePullBackOff" in text
    statuses = {s["ref"]: s["status"] for s in err.statuses}
    assert statuses == {"Deployment/%s/slow" % namespace: "InProgress", "Deployment/%s/fine" % namespace: "Current"}
    assert record_status(cluster, namespace, "1") == STATUS_FAILED
    assert locator(cluster, namespace)["version"] == ""


# --------------------------------------------------------------------------- conflicts


def test_conflicting_field_manager_is_taken_over_and_reported(cluster, namespace, tmp_path):
    cluster.apply(dict(configmap("shared", mode="kubectl", other="x"), metadata={"name": "shared",
                                                                                 "namespace": namespace}),
                  manager="kubectl-client-side-apply")
    result = deploy(cluster, tmp_path, [configmap("shared", mode="manent"), configmap("mine", a="1")], namespace)
    assert result.status == "deployed"
    change = {c.subject: c for c in result.changes}["ConfigMap/%s/shared" % namespace]
    assert change.action == "configured"
    assert change.takeovers == [{"field": ".data.mode", "manager": "kubectl-client-side-apply"}]
    assert change.to_dict()["takeovers"] == change.takeovers
    assert ("ConfigMap/%s/shared: took over fields from other field managers: .data.mode (from "
            "kubectl-client-side-apply)" % namespace) in result.warnings
    live = cluster.get("v1", "ConfigMap", namespace, "shared")
    assert live["data"] == {"mode": "manent", "other": "x"}
    owners = {m["manager"]: m for m in live["metadata"]["managedFields"]}
    assert "f:mode" in json.dumps(owners["manent"]["fieldsV1"])
    assert "f:mode" not in json.dumps(owners["kubectl-client-side-apply"]["fieldsV1"])


def test_conflict_without_force_fails_before_anything_is_written(cluster, namespace, tmp_path):
    cluster.apply(dict(configmap("shared", mode="kubectl"), metadata={"name": "shared", "namespace": namespace}),
                  manager="kubectl-client-side-apply")
    before = cluster.get("v1", "ConfigMap", namespace, "shared")["metadata"]["resourceVersion"]
    with pytest.raises(ApplyError) as caught:
        deploy(cluster, tmp_path, [configmap("shared", mode="manent"), configmap("sibling", a="1"),
                                   service("later")], namespace, apply={"force": False})
    text = str(caught.value)
    assert ("ConfigMap/%s/shared: server-side apply conflict: field .data.mode is owned by field manager "
            "kubectl-client-side-apply" % namespace) in text
    assert "1 object(s) refused by the API server's dry run; nothing was written" in text
    assert cluster.get("v1", "ConfigMap", namespace, "sibling") is None
    assert cluster.get("v1", "Service", namespace, "later") is None
    assert cluster.get("v1", "ConfigMap", namespace, "shared")["metadata"]["resourceVersion"] == before
    assert caught.value.partial.status == "failed"
    assert labelled_history(cluster, namespace) == {}  # refused before the release was saved in history


def test_objects_of_a_helm_install_are_adopted_and_helm_state_removed(cluster, namespace, tmp_path):
    helm = helm_binary()
    chart = chart_path("manent-sample-0.1.0.tgz")
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": str(home / "cache"),
           "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data")}
    values = {"route.enabled": "false", "migration.enabled": "false", "replicaCount": "1"}
    subprocess.run([helm, "install", "sample", chart, "--namespace", namespace, "--skip-crds",
                    "--kubeconfig", kubeconfig(cluster, tmp_path / "kubeconfig")]
                   + [a for k, v in values.items() for a in ("--set", "%s=%s" % (k, v))],
                   env=env, check=True, capture_output=True, text=True, timeout=120)
    assert cluster.get("v1", "Secret", namespace, "sh.helm.release.v1.sample.v1") is not None

    bundle = render_chart_bundle(cluster, chart, namespace, helm, helm_release="sample", helm_skip_crds=True,
                                 helm_value={"route": {"enabled": False}, "migration": {"enabled": False},
                                             "replicaCount": 2})
    result = deployer(cluster, helm_migrate_release="sample").deploy(bundle)
    assert result.status == "deployed"
    by_subject = {c.subject: c for c in result.changes}
    # helm stamps app.kubernetes.io/managed-by: Helm on what it installs; manent's label takes it over
    managed_by = {"field": ".metadata.labels.app.kubernetes.io/managed-by", "manager": "helm"}
    assert by_subject["Deployment/%s/sample-manent-sample" % namespace].takeovers == [
        managed_by, {"field": ".spec.replicas", "manager": "helm"}]
    for subject in ("Service/%s/sample-manent-sample" % namespace, "ConfigMap/%s/sample-manent-sample-config"
                    % namespace):
        assert by_subject[subject].takeovers == [managed_by]
    assert {s: c.action for s, c in by_subject.items()} == {
        "Deployment/%s/sample-manent-sample" % namespace: "configured",
        "Service/%s/sample-manent-sample" % namespace: "configured",
        "ConfigMap/%s/sample-manent-sample-config" % namespace: "configured"}
    assert result.history["helm_secrets_deleted"] == ["sh.helm.release.v1.sample.v1"]
    assert cluster.get("v1", "Secret", namespace, "sh.helm.release.v1.sample.v1") is None
    live = cluster.get("apps/v1", "Deployment", namespace, "sample-manent-sample")
    assert live["spec"]["replicas"] == 2 and live["status"]["readyReplicas"] == 2
    assert live["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "manent"


# --------------------------------------------------------------------------- RBAC


def test_rbac_denial_names_verb_resource_namespace_and_user(cluster, namespace, tmp_path):
    with open(os.path.join(cluster.dir, "deployer.token")) as f:
        token = f.read().strip()
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "deployer", "namespace": namespace},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]},
                             {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}]})
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "deployer", "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "manent-deployer"}]})
    kube = Kube(cluster.connection(token=token))
    try:
        cluster.wait(lambda: kube.get_json("/api/v1/namespaces/%s/configmaps" % namespace) is not None,
                     what="RBAC for manent-deployer")
        with pytest.raises(ApplyError) as caught:
            deploy(cluster, tmp_path, [configmap("cfg", a="1"), deployment("web")], namespace, kube=kube)
    finally:
        kube.close()
    text = str(caught.value)
    # refused before any write (access.py): the missing permission, its objects and the user are named
    assert ('forbidden: user "manent-deployer" may not write 1 resource(s) of this release: cannot patch '
            'deployments.apps in namespace %s (Deployment/%s/web)' % (namespace, namespace)) in text, text
    assert 'grant them in a Role/ClusterRole bound to user "manent-deployer"' in text
    assert caught.value.partial.status == "failed" and actions(caught.value.partial) == {}
    assert cluster.get("v1", "ConfigMap", namespace, "cfg") is None
    assert labelled_history(cluster, namespace) == {}


# --------------------------------------------------------------------------- server warnings and errors


def test_server_warnings_become_warnings_naming_the_object(cluster, namespace, tmp_path):
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "legacy"},
                 "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}
    result = deploy(cluster, tmp_path, [endpoints, configmap("cfg", a="1")], namespace)
    change = {c.subject: c for c in result.changes}["Endpoints/%s/legacy" % namespace]
    assert change.warnings == ["v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"]
    assert ("Endpoints/%s/legacy: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
            % namespace) in result.warnings
    assert not any(w.startswith("ConfigMap/") for w in result.warnings)


def test_unknown_field_is_refused_naming_object_and_field(cluster, namespace, tmp_path):
    bad = deployment("web")
    bad["spec"]["replica"] = 2
    with pytest.raises(ApplyError) as caught:
        deployer(cluster).deploy(make_bundle([bad], namespace))
    text = str(caught.value)
    assert "Deployment/%s/web" % namespace in text
    assert ".spec.replica: field not declared in schema" in text
    assert "fix its name or indentation" in text
    assert cluster.get("apps/v1", "Deployment", namespace, "web") is None


# --------------------------------------------------------------------------- through render (docs/requirements.md §7 step 1)


def test_crd_and_custom_resource_render_and_deploy_from_one_artifact(cluster, namespace, tmp_path):
    group = "%s.render.manent.io" % namespace
    gizmo = {"apiVersion": group + "/v1", "kind": "Gizmo", "metadata": {"name": "g1"}, "spec": {"size": 1}}
    objects = [crd(group, "Gizmo", "gizmos"), gizmo]
    try:
        result = deploy(cluster, tmp_path, objects, namespace)
        assert actions(result) == {"CustomResourceDefinition/gizmos." + group: "created",
                                   "Gizmo/%s/g1" % namespace: "created"}
    finally:
        cluster.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "gizmos." + group)
