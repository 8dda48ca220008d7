# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""delete.Deleter: the apiVersion an object stored in history is deleted through, and the DELETE it sends (a fake
discovery and API; the real deletes are tested against clusters in test_deploy, test_lifecycle, test_removed_apis)."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.engine.delete import DeleteOptions, Deleter
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApplyError, ConflictError, NotFoundError


class FakeDiscovery:
    def __init__(self, served):
        self.served_gvk = set(served)  # {("apps/v1", "Deployment"), ...}

    def served(self, api_version, kind):
        return (api_version, kind) in self.served_gvk

    def versions_of(self, group, kind):
        return sorted(av.split("/")[-1] for av, k in self.served_gvk
                      if k == kind and (av.split("/")[0] if "/" in av else "") == group)


class FakeReader:
    def __init__(self, live=None):
        self.live = live

    def path(self, obj):
        return "/%s/%s" % (obj["apiVersion"], obj["metadata"]["name"])

    def get(self, _obj):
        return self.live


class FakeKube:
    def __init__(self, missing=False, conflict=False):
        self.calls = []
        self.missing = missing
        self.conflict = conflict

    def request(self, method, path, query=None, subject=None, body=None, content_type=None):
        self.calls.append((method, path, query, body))
        if self.missing:
            raise NotFoundError("not found", status=404, subject=subject)
        if self.conflict:
            raise ConflictError("Precondition failed", status=409, subject=subject)


def obj(api_version, kind, name="web"):
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "shop"}}


@pytest.mark.parametrize("stored, served, expected", [
    (obj("apps/v1", "Deployment"), {("apps/v1", "Deployment")}, "apps/v1"),
    (obj("apps/v1beta2", "Deployment"), {("apps/v1", "Deployment")}, "apps/v1"),
    (obj("extensions/v1beta1", "Deployment"), {("apps/v1", "Deployment")}, "apps/v1"),
    (obj("extensions/v1beta1", "Ingress"), {("networking.k8s.io/v1", "Ingress")}, "networking.k8s.io/v1"),
])
def test_served_version_of_a_stored_object(stored, served, expected):
    deleter = Deleter(FakeKube(), FakeDiscovery(served), FakeReader())
    assert deleter.served(stored)["apiVersion"] == expected
    assert stored["apiVersion"] != expected or deleter.served(stored) is stored


def test_no_served_version_names_the_object():
    deleter = Deleter(FakeKube(), FakeDiscovery(set()), FakeReader())
    with pytest.raises(ApplyError) as err:
        deleter.served(obj("extensions/v1beta1", "PodSecurityPolicy", "restricted"))
    assert str(err.value).startswith("PodSecurityPolicy/shop/restricted: cannot delete")


def test_delete_sends_its_options_in_the_body():
    kube = FakeKube()
    deleter = Deleter(kube, FakeDiscovery(set()), FakeReader(), DeleteOptions(dry_run=True))
    assert deleter.delete(obj("v1", "ConfigMap"), propagation="Background", uid="u-1") is True
    assert kube.calls == [("DELETE", "/v1/web", {"propagationPolicy": "Background", "dryRun": "All"},
                           {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
                            "preconditions": {"uid": "u-1"}, "dryRun": ["All"]})]


def test_absent_is_not_an_error_and_a_replaced_object_counts_as_gone():
    assert Deleter(FakeKube(missing=True), FakeDiscovery(set()), FakeReader()).delete(obj("v1", "ConfigMap")) is False
    replaced = FakeReader(live={"metadata": {"uid": "new"}})
    assert Deleter(FakeKube(), FakeDiscovery(set()), replaced).delete(obj("v1", "ConfigMap"), uid="old") is True


class GoneAfterDelete(FakeReader):
    """The live copy until the DELETE was sent, then nothing."""

    def __init__(self, live, kube):
        super().__init__(live)
        self.kube = kube

    def get(self, _obj):
        return None if self.kube.calls else self.live


def _copy(uid="u-1", rv="10", managers=("manent",), annotations=None, rules=None, status=None):
    out = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": "adm", "uid": uid, "resourceVersion": rv,
                        "labels": {"app.kubernetes.io/managed-by": "manent"},
                        "managedFields": [{"manager": m, "operation": "Apply" if m == "manent" else "Update"}
                                          for m in managers]},
           "rules": rules or [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}
    if annotations:
        out["metadata"]["annotations"] = dict(annotations)
    if status:
        out["status"] = status
    return out


def _delete_applied(live, applied, **kube_options):
    kube = FakeKube(**kube_options)
    deleter = Deleter(kube, FakeDiscovery(set()), GoneAfterDelete(live, kube))
    desired = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "adm"}}
    return deleter.delete_applied(desired, applied), kube.calls


def test_delete_applied_deletes_the_object_as_applied_with_its_uid_and_resource_version():
    outcome, calls = _delete_applied(_copy(), _copy())
    assert outcome == (True, "")
    assert calls[0][3]["preconditions"] == {"uid": "u-1", "resourceVersion": "10"}
    assert calls[0][3]["propagationPolicy"] == "Foreground"


def test_delete_applied_ignores_what_the_server_and_kubernetes_components_write_on_their_own():
    live = _copy(rv="12", managers=("manent", "kube-controller-manager"), status={"x": 1},
                 annotations={"deployment.kubernetes.io/revision": "1"})
    outcome, calls = _delete_applied(live, _copy())
    assert outcome == (True, "")
    assert calls[0][3]["preconditions"] == {"uid": "u-1", "resourceVersion": "12"}


@pytest.mark.parametrize("live, why", [
    (_copy(uid="u-2"), "another object of its name replaced the one this deploy applied"),
    (_copy(rv="11", managers=("manent", "kubectl-edit"),
           rules=[{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
     "changed since this deploy applied it (by kubectl-edit)"),
    (_copy(rv="11", managers=("manent", "kubectl-annotate"), annotations={"team": "a"}),
     "changed since this deploy applied it (by kubectl-annotate)"),
])
def test_delete_applied_leaves_an_object_replaced_or_changed_by_someone_else(live, why):
    outcome, calls = _delete_applied(live, _copy())
    assert outcome == (False, why) and calls == []


def test_delete_applied_of_an_object_gone_or_changed_meanwhile():
    assert _delete_applied(None, _copy()) == ((False, ""), [])
    deleting = _copy()
    deleting["metadata"]["deletionTimestamp"] = "2026-12-07T00:00:00Z"
    assert _delete_applied(deleting, _copy()) == ((False, ""), [])
    assert _delete_applied(_copy(), _copy(), missing=True)[0] == (False, "")
    assert _delete_applied(_copy(), _copy(), conflict=True)[0] == (False, "changed while it was being deleted")


def test_delete_applied_of_an_object_found_unchanged_needs_its_live_copy_to_hold_it():
    outcome, calls = _delete_applied(_copy(), None)
    assert outcome == (False, "it no longer holds what this deploy found unchanged") and calls == []
