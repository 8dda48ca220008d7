# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The redeploy fast path (unchanged.py) against a real cluster: a release that changed nothing is reported
unchanged with no PATCH and one LIST per kind and namespace, and no object is ever wrongly reported
unchanged: edited by another field manager (apply or update), deleted, relabelled, a field removed from the
manifest, a changed image, a changed Secret value. Each case is re-applied, reported and repaired."""

from __future__ import annotations

import base64
import json
import threading

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from tests.integration.deploy_helpers import (
    KEY, Recording, actions, deploy, deployer, dump, locator, make_bundle, reads_object)
from tests.objects import PAUSE, configmap, deployment, secret, service

pytestmark = pytest.mark.integration

SECRET_VALUE = "fastpath-s3cr3t-Value-41ab"


def creds(value=SECRET_VALUE):
    return secret("creds", string_data={"password": value})


def _objects(image=PAUSE, settings=None, secret=SECRET_VALUE):
    return [configmap("settings", **(settings or {"mode": "a", "level": "info"})), configmap("other", x="1"),
            deployment("web", image=image), deployment("api"), service("web"), creds(secret)]


class _Deploys:
    """Successive versions of one release, each deploy recorded."""

    def __init__(self, cluster, namespace, tmp_path):
        self.cluster, self.namespace, self.tmp_path = cluster, namespace, tmp_path
        self.version = 0

    def __call__(self, objects, kube=None):
        self.version += 1
        kube = kube or Recording(self.cluster.kube)
        result = deploy(self.cluster, self.tmp_path, objects, self.namespace, version="1.0.%d" % self.version,
                        kube=kube, wait=False)
        assert result.status == "deployed"
        return result, kube

    def ref(self, kind, name):
        return "%s/%s/%s" % (kind, self.namespace, name)


class _Meddling(Recording):
    """The real Kube, recorded; once a request that ``when(method, path, query)`` selects has been answered,
    ``then()`` runs (once): another client changing the cluster in the middle of a deploy, as a controller
    reacting to manent's write, or someone editing while a stage waits."""

    def __init__(self, kube, when, then):
        super().__init__(kube)
        self._when, self._then, self.meddled = when, then, False
        self._once = threading.Lock()

    def request(self, method, path, **kw):
        response = super().request(method, path, **kw)
        if self._when(method, path, kw.get("query") or {}):
            with self._once:
                if not self.meddled:
                    self.meddled = True
                    self._then()
        return response


def _patches(kube):
    """Names of the objects PATCHed (an apply that conflicts with another manager is sent twice)."""
    return sorted({p.rsplit("/", 1)[-1] for m, p, q in kube.calls if m == "PATCH"})


def _only(result, deploys, **changed):
    """The result's actions are ``changed`` ({ref: action}) and unchanged for every other object."""
    want = {deploys.ref(k, n): "unchanged" for k, n in (
        ("ConfigMap", "settings"), ("ConfigMap", "other"), ("Deployment", "web"), ("Deployment", "api"),
        ("Service", "web"), ("Secret", "creds"))}
    want.update(changed)
    assert actions(result) == want


def test_nothing_changed_is_unchanged_without_a_patch_one_list_per_kind(cluster, namespace, tmp_path):
    deploys = _Deploys(cluster, namespace, tmp_path)
    first, _kube = deploys(_objects())
    assert first.to_dict()["counts"] == {"created": 6}
    again, kube = deploys(_objects())
    _only(again, deploys)
    assert again.changed is True  # a new version: its history record is written
    assert _patches(kube) == []
    lists = [(p, q) for m, p, q in kube.calls if m == "GET" and "limit" in q and "labelSelector" in q
             and "manent.io/application" in q["labelSelector"]]
    assert sorted(p.rsplit("/", 1)[-1] for p, q in lists) == ["configmaps", "deployments", "secrets", "services"]
    assert SECRET_VALUE not in dump(again)


def test_each_object_is_compared_with_its_stored_copy_twice(cluster, namespace, tmp_path, monkeypatch):
    """A nothing-changed redeploy decides which objects may be unchanged once before its first read (handed to the
    snapshot and to the existence LISTs), then once in each object's tier (a kind may be served only then)."""
    from ansible_collections.manent.kubernetes.plugins.module_utils.engine.unchanged import UnchangedFinder
    deploys = _Deploys(cluster, namespace, tmp_path)
    deploys(_objects())
    examined = []
    real = UnchangedFinder.candidates

    def counted(finder, objects):
        objects = list(objects)
        examined.extend(objects)
        return real(finder, objects)

    monkeypatch.setattr(UnchangedFinder, "candidates", counted)
    again, _kube = deploys(_objects())
    _only(again, deploys)
    assert len(examined) == 2 * len(_objects())


def test_edit_by_another_field_manager_is_reapplied(cluster, namespace, tmp_path):
    deploys = _Deploys(cluster, namespace, tmp_path)
    deploys(_objects())
    # server-side apply of another manager, forcing a field manent owns (its value and ownership move)
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": namespace},
                   "data": {"mode": "b"}}, manager="someone-else")
    # an update (kubectl edit, scale) of another field manent owns
    cluster.kube.request("PATCH", cluster.path("apps/v1", "Deployment", namespace, "api"),
                         query={"fieldManager": "kubectl-edit"}, body={"spec": {"replicas": 3}},
                         content_type="application/merge-patch+json")
    result, kube = deploys(_objects())
    _only(result, deploys, **{deploys.ref("ConfigMap", "settings"): "configured",
                              deploys.ref("Deployment", "api"): "configured"})
    assert _patches(kube) == ["api", "settings"]
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"mode": "a", "level": "info"}
    assert cluster.get("apps/v1", "Deployment", namespace, "api")["spec"]["replicas"] == 1


def test_deleted_and_relabelled_objects_are_reapplied(cluster, namespace, tmp_path):
    deploys = _Deploys(cluster, namespace, tmp_path)
    deploys(_objects())
    cluster.delete("v1", "ConfigMap", namespace, "other")
    # another manager removes an ownership label (the object no longer names this release: not another
    # release's either, so the deploy goes on and takes it back)
    cluster.kube.request("PATCH", cluster.path("v1", "Service", namespace, "web"),
                         query={"fieldManager": "relabeller"},
                         body={"metadata": {"labels": {"manent.io/environment": None}}},
                         content_type="application/merge-patch+json")
    result, kube = deploys(_objects())
    _only(result, deploys, **{deploys.ref("ConfigMap", "other"): "created",
                              deploys.ref("Service", "web"): "configured"})
    assert _patches(kube) == ["other", "web"]
    labels = cluster.get("v1", "Service", namespace, "web")["metadata"]["labels"]
    assert labels["manent.io/environment"] == "test"


def test_removed_field_changed_image_and_changed_secret_are_applied(cluster, namespace, tmp_path):
    deploys = _Deploys(cluster, namespace, tmp_path)
    deploys(_objects())
    result, kube = deploys(_objects(image=PAUSE + "-other", settings={"mode": "a"}, secret="changed-Value-9e2f"))
    _only(result, deploys, **{deploys.ref("ConfigMap", "settings"): "configured",
                              deploys.ref("Deployment", "web"): "configured",
                              deploys.ref("Secret", "creds"): "configured"})
    assert _patches(kube) == ["creds", "settings", "web"]
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"mode": "a"}  # the field is gone
    web = cluster.get("apps/v1", "Deployment", namespace, "web")
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == PAUSE + "-other"
    data = cluster.get("v1", "Secret", namespace, "creds")["data"]
    assert base64.b64decode(data["password"]).decode() == "changed-Value-9e2f"
    assert SECRET_VALUE not in dump(result) and "changed-Value-9e2f" not in dump(result)


def test_secret_edited_live_is_reapplied_and_never_printed(cluster, namespace, tmp_path):
    deploys = _Deploys(cluster, namespace, tmp_path)
    deploys(_objects())
    cluster.kube.request("PATCH", cluster.path("v1", "Secret", namespace, "creds"), query={"fieldManager": "ops"},
                         body={"data": {"password": base64.b64encode(b"tampered-Value-77").decode()}},
                         content_type="application/merge-patch+json")
    result, kube = deploys(_objects())
    _only(result, deploys, **{deploys.ref("Secret", "creds"): "configured"})
    assert _patches(kube) == ["creds"]
    data = cluster.get("v1", "Secret", namespace, "creds")["data"]
    assert base64.b64decode(data["password"]).decode() == SECRET_VALUE
    text = json.dumps(dump(result))
    assert SECRET_VALUE not in text and "tampered-Value-77" not in text


def test_field_added_by_another_manager_keeps_the_object_unchanged(cluster, namespace, tmp_path):
    """Fields manent does not own are not its business (an apply would not touch them): still unchanged."""
    deploys = _Deploys(cluster, namespace, tmp_path)
    deploys(_objects())
    cluster.kube.request("PATCH", cluster.path("v1", "ConfigMap", namespace, "other"),
                         query={"fieldManager": "annotator"},
                         body={"metadata": {"annotations": {"example.com/note": "kept"}}},
                         content_type="application/merge-patch+json")
    result, kube = deploys(_objects())
    _only(result, deploys)
    assert _patches(kube) == []
    assert cluster.get("v1", "ConfigMap", namespace, "other")["metadata"]["annotations"]["example.com/note"] == "kept"


def test_an_edit_after_the_first_write_of_a_deploy_is_reapplied(cluster, namespace, tmp_path):
    """The deploy reads its unchanged candidates of all tiers before writing; once a tier writes (here the
    ConfigMaps), the later tiers read the cluster again: a Deployment edited right after that write (as a
    controller reacting to it would) is re-applied, not reported unchanged from the earlier read."""
    deploys = _Deploys(cluster, namespace, tmp_path)
    deploys(_objects())

    def edit_api():
        cluster.kube.request("PATCH", cluster.path("apps/v1", "Deployment", namespace, "api"),
                             query={"fieldManager": "kubectl-edit"}, body={"spec": {"replicas": 3}},
                             content_type="application/merge-patch+json")

    kube = _Meddling(cluster.kube, lambda m, p, q: m == "PATCH" and p.endswith("/configmaps/settings")
                     and "dryRun" not in q, edit_api)
    result, kube = deploys(_objects(settings={"mode": "b", "level": "info"}), kube=kube)
    assert kube.meddled
    _only(result, deploys, **{deploys.ref("ConfigMap", "settings"): "configured",
                              deploys.ref("Deployment", "api"): "configured"})
    assert _patches(kube) == ["api", "settings"]
    assert cluster.get("apps/v1", "Deployment", namespace, "api")["spec"]["replicas"] == 1


def test_an_edit_while_the_pre_stage_waits_is_reapplied(cluster, namespace, tmp_path):
    """Nothing is written when every object is unchanged, but a stage's wait takes time: a ConfigMap edited
    while the pre stage waits for its (unchanged) Deployment is re-applied in the main stage."""
    pre = deployment("migrate")
    pre["metadata"]["annotations"] = {"manent.io/deploy-on": "pre-install,pre-upgrade"}
    deploys = _Deploys(cluster, namespace, tmp_path)
    deploys(_objects() + [pre])

    def edit_settings():
        cluster.apply({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "settings", "namespace": namespace}, "data": {"mode": "edited"}},
                      manager="someone-else")

    waiting = "/apis/apps/v1/namespaces/%s/deployments/migrate" % namespace
    kube = _Meddling(cluster.kube, lambda m, p, q: reads_object(m, p, q, waiting), edit_settings)
    result, kube = deploys(_objects() + [pre], kube=kube)
    assert kube.meddled, "the pre stage waited for its Deployment"
    _only(result, deploys, **{deploys.ref("ConfigMap", "settings"): "configured",
                              deploys.ref("Deployment", "migrate"): "unchanged"})
    assert _patches(kube) == ["settings"]
    assert cluster.get("v1", "ConfigMap", namespace, "settings")["data"] == {"mode": "a", "level": "info"}


def test_rollout_wait_lists_each_kind_and_namespace_once_per_round(cluster, namespace, tmp_path):
    kube = Recording(cluster.kube)
    result = deploy(cluster, tmp_path, _objects(), namespace, version="1.0.0", kube=kube)
    assert result.status == "deployed"
    assert sorted(w["ref"] for w in result.waited) == [
        "Deployment/%s/api" % namespace, "Deployment/%s/web" % namespace]
    deployments = "/apis/apps/v1/namespaces/%s/deployments" % namespace
    last_apply = max(i for i, (m, p, q) in enumerate(kube.calls) if m == "PATCH")
    waited = kube.calls[last_apply + 1:]
    gets = [p for m, p, q in waited if m == "GET" and p.startswith(deployments + "/")]
    lists = [p for m, p, q in waited if m == "GET" and p == deployments and "labelSelector" not in q]
    # Each round reads the workloads not yet Current: both with one LIST, never one GET each. When one of them
    # became Current a round before the other, the last one is read alone, with one GET (one request either way).
    assert lists and len(set(gets)) <= 1, (lists, gets)


def test_first_install_asks_one_list_which_objects_exist(cluster, namespace, tmp_path):
    """A release without history (no stored baseline): one metadata LIST per kind and namespace tells which objects
    are new, so those are applied without a GET each; objects that exist already (here another release's, adopted)
    are still read before their apply and reported configured, not created."""
    other = ReleaseKey("other", "other", "test")
    assert deploy(cluster, tmp_path, [configmap("pre-%d" % i, v="a") for i in range(5)], namespace,
                  key=other).status == "deployed"
    kube = Recording(cluster.kube)
    objects = [configmap("pre-%d" % i, v="b") for i in range(5)] + [configmap("new-%d" % i, v="b") for i in range(5)]
    result = deploy(cluster, tmp_path, objects, namespace, kube=kube, adopt=True)
    assert result.status == "deployed", dump(result)
    done = actions(result)
    assert {done["ConfigMap/%s/pre-%d" % (namespace, i)] for i in range(5)} == {"configured"}, done
    assert {done["ConfigMap/%s/new-%d" % (namespace, i)] for i in range(5)} == {"created"}, done
    gets = [(p, q) for m, p, q in kube.calls if m == "GET"]
    assert ("/api/v1/namespaces/%s/configmaps" % namespace, {"limit": "500"}) in gets  # the LIST, no selector
    assert not [p for p, _q in gets if p.rsplit("/", 1)[-1].startswith("new-")], gets
    assert {cluster.get("v1", "ConfigMap", namespace, "new-%d" % i)["data"]["v"] for i in range(5)} == {"b"}


def _absence_lists(kube):
    """Indexes and paths of the metadata LISTs without selector (which objects exist), in request order."""
    return [(i, p) for i, (m, p, q) in enumerate(kube.calls) if m == "GET" and "limit" in q
            and "labelSelector" not in q]


def test_first_install_lists_every_tier_before_its_first_write(cluster, namespace, tmp_path):
    """Which objects exist is asked for every tier at once, before anything is written (not one LIST per tier
    between tiers: each is a round trip to a distant cluster); each kind once; no object read one by one."""
    objects = ([configmap("c%d" % i, v="1") for i in range(4)] + [service("s%d" % i) for i in range(4)]
               + [deployment("d%d" % i) for i in range(4)])
    kube = Recording(cluster.kube)
    result = deploy(cluster, tmp_path, objects, namespace, kube=kube, wait=False)
    assert result.status == "deployed", dump(result)
    assert set(actions(result).values()) == {"created"}
    lists = _absence_lists(kube)
    assert sorted(p.rsplit("/", 1)[-1] for _i, p in lists) == ["configmaps", "deployments", "services"], lists
    first_write = min(i for i, (m, p, q) in enumerate(kube.calls) if m in ("POST", "PUT", "PATCH", "DELETE")
                      and not p.startswith("/apis/authorization.k8s.io/"))
    assert max(i for i, _p in lists) < first_write, kube.calls
    assert not [p for m, p, q in kube.calls if m == "GET" and p.rsplit("/", 1)[-1] in {
        (o["metadata"]["name"]) for o in objects}], "no object was read one by one"


def test_an_object_created_by_someone_else_after_the_list_is_reported_configured(cluster, namespace, tmp_path):
    """The absence LIST is not trusted blindly: once it has been answered, another client creates one of the
    release's ConfigMaps; manent applies it (its values win) and reports it configured, as the apply's answer
    (200, not 201 Created) says, not created."""
    def create_late():
        cluster.apply(configmap("late", namespace=namespace, v="theirs", extra="kept"), manager="someone-else")

    kube = _Meddling(cluster.kube, lambda m, p, q: m == "GET" and p.endswith("/configmaps")
                     and "labelSelector" not in q and "limit" in q, create_late)
    objects = [configmap("c%d" % i, v="1") for i in range(4)] + [configmap("late", v="mine")]
    result = deploy(cluster, tmp_path, objects, namespace, kube=kube, wait=False)
    assert kube.meddled
    assert result.status == "deployed", dump(result)
    done = actions(result)
    assert done.pop("ConfigMap/%s/late" % namespace) == "configured"
    assert set(done.values()) == {"created"}, done
    assert cluster.get("v1", "ConfigMap", namespace, "late")["data"]["v"] == "mine"
    late = [c for c in result.changes if c.subject == "ConfigMap/%s/late" % namespace]
    assert "listed absent" in late[0].reason, late


def test_a_rerun_that_renders_differently_is_applied_and_said_but_drift_is_not_mistaken_for_it(cluster, namespace):
    """The same release (version and deploy id) whose artifact makes a value when rendered (a chart's
    randAlphaNum, genCA, or lookup answering empty): the object is applied again and the result says why each
    rerun changes it, naming the object, never the value. A live object edited by someone else is re-applied
    without that warning: the rendering still equals the copy stored in history."""
    def rendered(generated):
        return make_bundle([configmap("settings", mode="a"), creds(generated)], namespace, version="1.0.0",
                           deployment="d-same-inputs")

    first = deployer(cluster, wait=False).deploy(rendered("generated-Value-one-1f"))
    assert first.status == "deployed" and not any("rendered differently" in w for w in first.warnings)

    cluster.apply(dict(configmap("settings", mode="edited"), metadata={"name": "settings", "namespace": namespace}),
                  manager="someone-else")
    drifted = deployer(cluster, wait=False).deploy(rendered("generated-Value-one-1f"))
    assert actions(drifted)["ConfigMap/%s/settings" % namespace] == "configured", dump(drifted)
    assert not any("rendered differently" in w for w in drifted.warnings), drifted.warnings

    again = deployer(cluster, wait=False).deploy(rendered("generated-Value-two-2e"))
    assert again.status == "deployed"
    assert actions(again)["Secret/%s/creds" % namespace] == "configured", dump(again)
    assert actions(again)["ConfigMap/%s/settings" % namespace] == "unchanged", dump(again)
    said = [w for w in again.warnings if "rendered differently" in w]
    assert len(said) == 1 and "(Secret/%s/creds)" % namespace in said[0], again.warnings
    assert "generated-Value" not in json.dumps(again.warnings) and "ConfigMap" not in said[0]
    # the record of the release in service now holds what is live: a rollback to this version restores the
    # second rendering, not the first. The rerun that only met drift wrote no history.
    assert drifted.history == {} and again.history.get("written") is True, (drifted.history, again.history)
    stored = {o["kind"]: o for o in HistoryStore(cluster.kube, namespace, KEY).load("1.0.0")[1]}
    assert _secret_value(stored["Secret"]) == "generated-Value-two-2e"
    assert stored["ConfigMap"]["data"] == {"mode": "a"}
    assert locator(cluster, namespace)["replaced"] == ""  # a version never replaces itself


def _secret_value(secret):
    if "stringData" in secret:
        return secret["stringData"]["password"]
    return base64.b64decode(secret["data"]["password"]).decode()
