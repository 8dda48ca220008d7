# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Objects of another manent release are never taken over silently (issue 10 part 2), on real clusters.

Release A (shop/shop-api) deploys objects; release B (billing) later contains some of them. B stops before any
write, naming each object and A, in check mode too; with ``adopt`` B takes them over, lists them and warns, and
A's prune then leaves them alone. Ownership ``anyone`` objects are shared without adoption and outlive either
release dropping them; objects of other tools are taken over as before; the role stops the cluster the same way
and ``deploy_adopt`` takes over. Nothing is mocked: ``Recording`` only records the real requests.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from tests.integration.deploy_helpers import (
    KEY, Recording, actions, deploy, deployer, labelled_history, locator, versions)
from tests.objects import configmap, service
from tests.integration.playbook_helpers import artifact, base_vars, run_playbook, write_manifest

pytestmark = pytest.mark.integration

A = KEY  # untenanted/shop/shop-api/test
B = ReleaseKey(application="billing", artifact="billing", environment="test", tenant="acme")
A_NAME = "untenanted/shop/shop-api/test"
B_NAME = "acme/billing/billing/test"
A_DICT = {"tenant": "untenanted", "application": "shop", "artifact": "shop-api", "environment": "test"}
ANYONE = {"werf.io/ownership": "anyone"}
SELECTOR = "app.kubernetes.io/managed-by=manent"


def _labels(cluster, kind, namespace, name):
    return cluster.get("v1", kind, namespace, name)["metadata"]["labels"]


def _release_labels(key):
    return {"app.kubernetes.io/managed-by": "manent", "manent.io/tenant": key.tenant,
            "manent.io/application": key.application, "manent.io/artifact": key.artifact,
            "manent.io/environment": key.environment}


def _deploy_a(cluster, tmp_path, namespace):
    """Release A: x and y (both later in B), plus its own ConfigMap and a Service that B also lists."""
    result = deploy(cluster, tmp_path, [configmap("x", owner="a"), configmap("y", owner="a"),
                                        configmap("a-only", a="1"), service("web")], namespace, key=A)
    assert result.status == "deployed"
    # the endpoint controllers add the Service's Endpoints and EndpointSlice a moment later: wait for them, so that
    # the tests' before/after snapshots differ only by what the deploys under test write
    cluster.wait(lambda: cluster.get("v1", "Endpoints", namespace, "web") is not None and cluster.list(
        "discovery.k8s.io/v1", "EndpointSlice", namespace, selector="kubernetes.io/service-name=web"),
        what="the Endpoints and EndpointSlice of Service web")
    return result


def _b_objects(extra_namespace=None):
    """Release B: x and y (A's, five ConfigMaps: one LIST reads them), the Service web (A's, one GET), its own."""
    objects = [configmap("x", owner="b"), configmap("y", owner="b"), configmap("b1", b="1"), configmap("b2", b="2"),
               configmap("b3", b="3"), service("web", port=8080)]
    if extra_namespace:
        objects.insert(0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": extra_namespace}})
    return objects


def _assert_names_both_releases(err, namespace):
    text = str(err)
    assert text.startswith("release %s: 3 object(s) belong to another manent release "
                           "(tenant/application/artifact/environment):" % B_NAME), text
    for subject in ("ConfigMap/%s/x" % namespace, "ConfigMap/%s/y" % namespace, "Service/%s/web" % namespace):
        assert "- %s belongs to release %s" % (subject, A_NAME) in text
    assert "ConfigMap/%s/b1" % namespace not in text
    assert "set adopt: true (role variable deploy_adopt: true) to take them over" in text
    assert "remove them from one of the releases" in text and "nothing was written" in text
    assert isinstance(err, InputError) and err.subject == "release " + B_NAME
    assert err.partial.status == "failed"


# --------------------------------------------------------------------------- 1. refused before any write


def test_objects_of_another_release_stop_the_deploy_before_any_write(cluster, namespace, tmp_path):
    extra = namespace + "-b"
    _deploy_a(cluster, tmp_path, namespace)
    x_before = cluster.get("v1", "ConfigMap", namespace, "x")
    before = versions(cluster, namespace)

    kube = Recording(cluster.kube)
    with pytest.raises(InputError) as caught:
        deploy(cluster, tmp_path, _b_objects(extra), namespace, key=B, kube=kube, version="7.0.0")
    _assert_names_both_releases(caught.value, namespace)

    assert kube.writes() == []  # no namespace, no history lock or record, no object
    assert versions(cluster, namespace) == before  # every object and A's history as A left them
    x = cluster.get("v1", "ConfigMap", namespace, "x")
    assert x["metadata"]["labels"] == x_before["metadata"]["labels"] == _release_labels(A)
    assert x["data"] == {"owner": "a"}
    assert labelled_history(cluster, namespace, B) == {}
    assert cluster.get("v1", "Namespace", None, extra) is None
    # efficient: the five ConfigMaps were read with one metadata LIST, the Service with one GET
    gets = [(p, q) for m, p, q in kube.calls if m == "GET"]
    assert ("/api/v1/namespaces/%s/configmaps" % namespace, {"limit": "500", "labelSelector": SELECTOR}) in gets
    assert not [p for p, q in gets if p.rsplit("/", 1)[-1] in ("x", "y", "b1", "b2", "b3")]
    assert ("/api/v1/namespaces/%s/services/web" % namespace, {}) in gets


# --------------------------------------------------------------------------- 2. check mode


def test_check_mode_fails_the_same_way_in_another_namespace(cluster, namespace, tmp_path):
    other = namespace + "-o"
    cluster.create_namespace(other)
    try:
        _deploy_a(cluster, tmp_path, namespace)
        before = versions(cluster, namespace), versions(cluster, other)
        objects = _b_objects()
        for obj in objects:
            obj["metadata"]["namespace"] = namespace  # B's release namespace is another one; these live in A's
        kube = Recording(cluster.kube)
        with pytest.raises(InputError) as caught:
            deploy(cluster, tmp_path, objects, other, key=B, kube=kube, apply={"dry_run": True})
        _assert_names_both_releases(caught.value, namespace)
        # not even a dry-run apply: only reads (GETs, and the access reviews sent with the owner check)
        assert not [c for c in kube.calls if c[0] != "GET" and not c[1].startswith("/apis/authorization.k8s.io/")]
        assert (versions(cluster, namespace), versions(cluster, other)) == before
    finally:
        cluster.delete_namespace(other)


# --------------------------------------------------------------------------- 3. adopt


def test_adopt_takes_them_over_and_says_so(cluster, namespace, tmp_path):
    _deploy_a(cluster, tmp_path, namespace)
    expected = [{"subject": "ConfigMap/%s/x" % namespace, "from": A_DICT},
                {"subject": "ConfigMap/%s/y" % namespace, "from": A_DICT},
                {"subject": "Service/%s/web" % namespace, "from": A_DICT}]

    before = versions(cluster, namespace)
    checked = deploy(cluster, tmp_path, _b_objects(), namespace, key=B, adopt=True, apply={"dry_run": True})
    assert checked.status == "checked"
    assert sorted(checked.adopted, key=lambda a: a["subject"]) == expected
    assert "ConfigMap/%s/x: would be adopted from release %s by release %s" % (namespace, A_NAME, B_NAME) \
        in checked.warnings
    assert versions(cluster, namespace) == before

    result = deploy(cluster, tmp_path, _b_objects(), namespace, key=B, adopt=True)
    assert result.status == "deployed"
    assert sorted(result.adopted, key=lambda a: a["subject"]) == expected
    assert sorted(result.to_dict()["adopted"], key=lambda a: a["subject"]) == expected
    for subject in ("ConfigMap/%s/x" % namespace, "ConfigMap/%s/y" % namespace, "Service/%s/web" % namespace):
        assert "%s: adopted from release %s by release %s" % (subject, A_NAME, B_NAME) in result.warnings
    assert actions(result)["ConfigMap/%s/x" % namespace] == "configured"
    x = cluster.get("v1", "ConfigMap", namespace, "x")
    assert dict(x["metadata"]["labels"]) == _release_labels(B)
    assert x["data"] == {"owner": "b"}
    assert _labels(cluster, "Service", namespace, "web") == _release_labels(B)
    assert locator(cluster, namespace, B)["version"] == "1.0.0"

    # a redeploy of B, a new version of B and a rollback of B to its older version: same key, no check trips
    assert deploy(cluster, tmp_path, _b_objects(), namespace, key=B).adopted == []
    v2 = deploy(cluster, tmp_path, _b_objects() + [configmap("b4", b="4")], namespace, key=B, version="2.0.0")
    assert v2.status == "deployed" and v2.adopted == []
    back = deployer(cluster, prune=True).rollback(namespace, B)
    assert back.status == "rolled-back" and back.release == "1.0.0" and back.adopted == []
    assert back.pruned == ["ConfigMap/%s/b4" % namespace]


# --------------------------------------------------------------------------- 4. prune after adoption


def test_prune_of_the_first_release_keeps_what_the_second_adopted(cluster, namespace, tmp_path):
    _deploy_a(cluster, tmp_path, namespace)
    assert deploy(cluster, tmp_path, _b_objects(), namespace, key=B, adopt=True).status == "deployed"

    # A drops x, y, web and a-only: only a-only is still A's to delete
    result = deploy(cluster, tmp_path, [configmap("a-new", a="2")], namespace, key=A, version="2.0.0", prune=True)
    assert result.status == "deployed"
    assert result.pruned == ["ConfigMap/%s/a-only" % namespace]
    reasons = {c.subject: c.reason for c in result.changes if c.action == "skipped"}
    assert reasons == {s % namespace: "not pruned: now belongs to %s" % B_NAME
                       for s in ("ConfigMap/%s/x", "ConfigMap/%s/y", "Service/%s/web")}
    assert cluster.get("v1", "ConfigMap", namespace, "x")["data"] == {"owner": "b"}
    cluster.assert_deleted("v1", "ConfigMap", namespace, "a-only")

    # rolling A back to 1.0.0 would take x, y and web back from B: refused before any write
    before = versions(cluster, namespace)
    with pytest.raises(InputError) as caught:
        deployer(cluster, prune=True).rollback(namespace, A)
    text = str(caught.value)
    assert "ConfigMap/%s/x belongs to release %s" % (namespace, B_NAME) in text
    assert "a rollback does not take objects over" in text and "nothing was written" in text
    assert versions(cluster, namespace) == before
    assert locator(cluster, namespace, A)["version"] == "2.0.0"


# --------------------------------------------------------------------------- 5. ownership anyone


def test_ownership_anyone_is_shared_and_outlives_either_release_dropping_it(cluster, namespace, tmp_path):
    shared = configmap("shared", annotations=ANYONE, v="1")
    a = deploy(cluster, tmp_path, [shared, configmap("a-only", a="1")], namespace, key=A)
    b = deploy(cluster, tmp_path, [shared, configmap("b-only", b="1")], namespace, key=B)
    assert a.status == b.status == "deployed" and b.adopted == [] and not any("adopt" in w for w in b.warnings)

    anyone = "not pruned: ownership anyone (annotation werf.io/ownership): not the release's alone"
    a2 = deploy(cluster, tmp_path, [configmap("a-only", a="1")], namespace, key=A, version="2.0.0", prune=True)
    assert a2.pruned == [] and {c.subject: c.reason for c in a2.changes if c.action == "skipped"} == {
        "ConfigMap/%s/shared" % namespace: anyone}
    assert cluster.get("v1", "ConfigMap", namespace, "shared") is not None

    b2 = deploy(cluster, tmp_path, [configmap("b-only", b="1")], namespace, key=B, version="2.0.0", prune=True)
    assert b2.pruned == [] and {c.subject: c.reason for c in b2.changes if c.action == "skipped"} == {
        "ConfigMap/%s/shared" % namespace: anyone}
    assert cluster.get("v1", "ConfigMap", namespace, "shared")["data"] == {"v": "1"}

    # an object shared by design only in the old release is still refused when the new one claims it alone
    with pytest.raises(InputError) as caught:
        deploy(cluster, tmp_path, [configmap("shared", v="2")], namespace, key=A, version="3.0.0")
    assert "ConfigMap/%s/shared belongs to release %s" % (namespace, B_NAME) in str(caught.value)


# --------------------------------------------------------------------------- 6. other tools


def test_objects_of_other_tools_are_taken_over_without_error(cluster, namespace, tmp_path):
    cluster.apply(configmap("by-kubectl", namespace=namespace, mode="kubectl"), manager="kubectl-client-side-apply")
    helm_labels = {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "other"}
    by_helm = configmap("by-helm", namespace=namespace, mode="helm")
    by_helm["metadata"]["labels"] = helm_labels
    cluster.apply(by_helm, manager="helm")
    # manent's own label without a release (the namespace create_namespace makes carries only this one)
    half = configmap("half", namespace=namespace, mode="x")
    half["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "manent"}
    cluster.apply(half, manager="manent")

    result = deploy(cluster, tmp_path, [configmap("by-kubectl", mode="manent"), configmap("by-helm", mode="manent"),
                                        configmap("half", mode="manent")], namespace, key=B)
    assert result.status == "deployed" and result.adopted == []
    by_subject = {c.subject: c for c in result.changes}
    assert by_subject["ConfigMap/%s/by-kubectl" % namespace].takeovers == [
        {"field": ".data.mode", "manager": "kubectl-client-side-apply"}]
    assert {"field": ".data.mode", "manager": "helm"} in by_subject["ConfigMap/%s/by-helm" % namespace].takeovers
    for name in ("by-kubectl", "by-helm", "half"):
        labels = _labels(cluster, "ConfigMap", namespace, name)
        assert {k: labels[k] for k in _release_labels(B)} == _release_labels(B)
        assert cluster.get("v1", "ConfigMap", namespace, name)["data"] == {"mode": "manent"}


# --------------------------------------------------------------------------- RBAC: a LIST it may not do


def test_a_token_that_may_not_list_still_finds_the_owner_with_gets(cluster, namespace, tmp_path):
    """A namespace-scoped Role with get, create and patch on Services but no list: the LIST is refused (403) and each
    Service is read with a GET instead; the release namespace it may not read does not matter either."""
    with open(os.path.join(cluster.dir, "deployer.token")) as f:
        token = f.read().strip()
    deploy(cluster, tmp_path, [service("s0")], namespace, key=A)
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "deployer", "namespace": namespace},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]},
                             {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "create", "patch"]}]})
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "deployer", "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "deployer"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "manent-deployer"}]})
    kube = Kube(cluster.connection(token=token))
    try:
        cluster.wait(lambda: kube.get_json("/api/v1/namespaces/%s/services/s0" % namespace) is not None,
                     what="RBAC for manent-deployer")
        recording = Recording(kube)
        services = [service("s%d" % i) for i in range(5)]
        with pytest.raises(InputError) as caught:
            deploy(cluster, tmp_path, services, namespace, key=B, kube=recording)
        assert "- Service/%s/s0 belongs to release %s" % (namespace, A_NAME) in str(caught.value)
        assert recording.writes() == []
        # the owner check's LIST (release label selector) tried once, then one GET each
        statuses = [p for m, p, q in recording.calls if m == "GET" and p.endswith("/services") and "labelSelector" in q]
        assert statuses == ["/api/v1/namespaces/%s/services" % namespace]
        assert len([p for m, p, q in recording.calls if m == "GET" and "/services/" in p]) == 5

        # the same token deploys B's own Services (no owner found) although it may not list them
        mine = deploy(cluster, tmp_path, [service("s%d" % i) for i in range(1, 5)], namespace, key=B, kube=kube)
        assert mine.status == "deployed"
    finally:
        kube.close()
    assert locator(cluster, namespace, B)["version"] == "1.0.0"


# --------------------------------------------------------------------------- the role: deploy_adopt


def test_role_stops_the_cluster_and_deploy_adopt_takes_over(clusters, inventory_path, namespaces, tmp_path):
    ns = namespaces
    eu1a = clusters[0]

    def release(app):
        objects = [configmap("shared", owner=app), configmap(app + "-own", a="1")]
        manifest = write_manifest(str(tmp_path / ("%s.yaml" % app)), objects)
        return base_vars(tmp_path, ns, deploy_application=app, deploy_artifact=artifact(app, "1.0.0", manifest))

    first = run_playbook("deploy", inventory_path, release("first"), tmp_path, limit=eu1a.name)
    assert first.rc == 0, first.explain()

    refused = run_playbook("deploy", inventory_path, release("second"), tmp_path, limit=eu1a.name)
    assert refused.rc != 0, refused.explain()
    entry = refused.summary[eu1a.name]
    assert entry["status"] == "failed", refused.explain()
    assert ("release untenanted/second/second/test: 1 object(s) belong to another manent release "
            "(tenant/application/artifact/environment):\n- ConfigMap/%s/shared belongs to release "
            "untenanted/first/first/test" % ns) in entry["message"], entry
    assert "deploy_adopt: true" in entry["message"] and "nothing was written" in entry["message"]
    assert eu1a.get("v1", "ConfigMap", ns, "shared")["data"] == {"owner": "first"}
    assert eu1a.get("v1", "ConfigMap", ns, "second-own") is None
    assert labelled_history(eu1a, ns, ReleaseKey("second", "second", "test")) == {}

    adopted = run_playbook("deploy", inventory_path, dict(release("second"), deploy_adopt=True), tmp_path,
                           limit=eu1a.name)
    assert adopted.rc == 0, adopted.explain()
    assert ("ConfigMap/%s/shared: adopted from release untenanted/first/first/test by release "
            "untenanted/second/second/test" % ns) in " ".join(adopted.output.split()), adopted.explain()
    live = eu1a.get("v1", "ConfigMap", ns, "shared")
    assert live["data"] == {"owner": "second"} and live["metadata"]["labels"]["manent.io/application"] == "second"
