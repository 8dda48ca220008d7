# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Public charts we did not write, unchanged (hack/versions.env PUBLIC_CHARTS: packaged from their projects' Go
modules by hack/build-tools.sh charts), deployed through playbooks/deploy.yml as a user would: first install with
the rollout wait, a redeploy that must change nothing, a check-mode upgrade that must write nothing, the upgrade,
and a rollback through playbooks/rollback.yml to the values of the first release (for a release with objects
outside its namespace, which the history does not restore, the rollback is refused and the first release's
artifact is deployed again instead, as the refusal says).

What they bring that our own test charts do not: metrics-server writes a RoleBinding into kube-system next to its
namespace; ingress-nginx has admission webhooks and hooks (pre/post install and upgrade Jobs and their RBAC, with
before-hook-creation and hook-succeeded delete policies), run here as lifecycle stages (deploy_helm_hooks: apply):
after its install, upgrade and rollback no object with hook-succeeded is left, as after helm install, and the result
lists each deletion;
external-dns has a CRD in crds/ and a values.schema.json with enums; descheduler deploys a CronJob.

Each chart gets names of its own (fullnameOverride and the like, from the test's namespace) and its cluster-scoped
objects and those outside its namespace are deleted afterwards. The ingress-nginx webhook only watches the test's
namespace, and metrics-server's APIService is left out: an aggregated API with no server behind it would make the
discovery of every other test on the cluster report a failed group."""

from __future__ import annotations

import threading

import pytest

from tests.helpers import helm_binary, public_chart
from tests.integration.playbook_helpers import artifact, base_vars, run_playbook
from tests.integration.public_chart_helpers import (
    SPANS_NAMESPACES, apply_result, cases, cleanup, deleted_by_policy, hook_succeeded_left, stages)


def _assert_admission_hooks_deleted(cluster, ns, run):
    """After an install or upgrade of ingress-nginx: no object whose helm.sh/hook-delete-policy says hook-succeeded
    is left (as after helm install), and the result lists the deletion of each: its admission RBAC (hooks of the
    pre and the post event: deleted after each) and both admission Jobs."""
    name = "ing-%s-admission" % ns
    rbac = ["ServiceAccount/%s/%s" % (ns, name), "Role/%s/%s" % (ns, name), "RoleBinding/%s/%s" % (ns, name),
            "ClusterRole/%s" % name, "ClusterRoleBinding/%s" % name]
    jobs = ["Job/%s/%s-create" % (ns, name), "Job/%s/%s-patch" % (ns, name)]
    assert sorted(deleted_by_policy(apply_result(run, cluster.name))) == sorted(rbac * 2 + jobs), run.explain()
    cluster.wait(lambda: hook_succeeded_left(cluster, ns) == [], timeout=60,
                 what="no hook-succeeded object left (Jobs are deleted in the background)")


@pytest.mark.integration
@pytest.mark.parametrize("chart", ["metrics-server", "ingress-nginx", "external-dns", "descheduler"])
def test_a_public_chart_installs_redeploys_unchanged_upgrades_and_rolls_back(
        chart, clusters, inventory_path, namespaces, tmp_path):
    ns = namespaces
    cluster = clusters[-1]
    path, version = public_chart(chart)
    values_1, values_2, probe, (want_1, want_2), more = cases(ns)[chart]
    application = "%s-%s" % (chart, ns)  # a release of its own: nothing shared with an earlier run's leftovers
    extra = base_vars(tmp_path, ns, deploy_application=application, deploy_helm_command=helm_binary(),
                      deploy_helm_release=chart, deploy_helm_value=values_1, deploy_wait_timeout="120s",
                      deploy_artifact=artifact(chart, version, path), **more)
    verbose = 1 if chart == "ingress-nginx" else 0  # its hooks' deletions are read from manent_apply's result
    try:
        run = run_playbook("deploy", inventory_path, extra, tmp_path / "install", limit=cluster.name,
                           verbosity=verbose)
        assert run.rc == 0, run.explain()
        if chart == "ingress-nginx":
            _assert_admission_hooks_deleted(cluster, ns, run)
        installed = run.summary[cluster.name]
        assert installed["status"] == "deployed" and installed["version"] == version, run.explain()
        assert set(installed["counts"]) <= {"created", "recreated", "deleted"}, installed["counts"]
        assert probe(cluster, ns) == want_1
        # said when rendering, long before a rollback would need it
        assert ("outside the release namespace %s" % ns in run.output) == (chart in SPANS_NAMESPACES), run.explain()

        # the same release again: nothing is written, every object is reported unchanged; with hooks applied, the
        # hooks run again (docs/lifecycle.md: as helm upgrade does) and every other object is unchanged
        run = run_playbook("deploy", inventory_path, extra, tmp_path / "again", limit=cluster.name, verbosity=1)
        assert run.rc == 0, run.explain()
        again = run.summary[cluster.name]
        assert "rendered differently" not in run.output, run.explain()  # these charts render the same each time
        if more.get("deploy_helm_hooks") == "apply":
            main = [s for s in stages(run) if s["stage"] == "upgrade"]
            assert main and again["counts"]["unchanged"] == main[0]["objects"], (again["counts"], stages(run))
        else:
            assert again["counts"] == {"unchanged": again["objects"]} and not again["changed"], run.explain()
            assert run.recap[cluster.name]["changed"] == 0, run.explain()

        # the upgrade in check mode: reported, not written
        upgrade = dict(extra, deploy_helm_value=values_2, deploy_artifact=artifact(chart, version + "-2", path))
        run = run_playbook("deploy", inventory_path, upgrade, tmp_path / "check", limit=cluster.name, check=True)
        assert run.rc == 0, run.explain()
        assert run.summary[cluster.name]["changed"], run.explain()
        assert probe(cluster, ns) == want_1

        run = run_playbook("deploy", inventory_path, upgrade, tmp_path / "upgrade", limit=cluster.name,
                           verbosity=verbose)
        assert run.rc == 0, run.explain()
        if chart == "ingress-nginx":
            _assert_admission_hooks_deleted(cluster, ns, run)
        upgraded = run.summary[cluster.name]
        assert (upgraded["status"], upgraded["version"], upgraded["previous"]) == ("deployed", version + "-2",
                                                                                   version), run.explain()
        assert probe(cluster, ns) == want_2

        run = run_playbook("rollback", inventory_path, upgrade, tmp_path / "rollback", limit=cluster.name,
                           verbosity=verbose)
        if chart == "ingress-nginx":  # its hooks have no rollback events: none runs, none is left
            assert run.rc == 0, run.explain()
            assert deleted_by_policy(apply_result(run, cluster.name)) == [], run.explain()
            assert hook_succeeded_left(cluster, ns) == []
        if chart in SPANS_NAMESPACES:
            # the history kept in the release namespace does not restore objects elsewhere: refused, nothing
            # changed, and the way back is the one the message gives, the first release's artifact deployed again
            assert run.rc != 0, run.explain()
            assert "is outside the release namespace %s" % ns in run.output, run.explain()
            assert "deploying the artifact of the version you want again" in run.output, run.explain()
            assert probe(cluster, ns) == want_2
            run = run_playbook("deploy", inventory_path, extra, tmp_path / "back", limit=cluster.name)
            assert run.rc == 0, run.explain()
            back = run.summary[cluster.name]
            assert (back["status"], back["version"], back["previous"]) == ("deployed", version, version + "-2"), \
                run.explain()
        else:
            assert run.rc == 0, run.explain()
            back = run.summary[cluster.name]
            assert (back["status"], back["version"]) == ("rolled-back", version), run.explain()
        assert probe(cluster, ns) == want_1
    finally:
        cleanup(cluster, ns, application)


@pytest.mark.integration
def test_hooks_of_a_public_chart_run_as_stages_in_order_and_a_value_its_schema_refuses_writes_nothing(
        clusters, inventory_path, namespaces, tmp_path):
    ns = namespaces
    cluster = clusters[-1]
    path, version = public_chart("ingress-nginx")
    values, _values_2, _probe, _want, more = cases(ns)["ingress-nginx"]
    application = "ingress-nginx-" + ns
    extra = base_vars(tmp_path, ns, deploy_application=application, deploy_helm_command=helm_binary(),
                      deploy_helm_release="ingress-nginx", deploy_helm_value=values, deploy_wait_timeout="120s",
                      deploy_artifact=artifact("ingress-nginx", version, path), **more)
    try:
        run = run_playbook("deploy", inventory_path, extra, tmp_path / "install", limit=cluster.name, verbosity=1)
        assert run.rc == 0, run.explain()
        # the pre-install Job (and its RBAC) before the release, the post-install one after it; each Job is deleted
        # once it succeeded (helm.sh/hook-delete-policy: hook-succeeded)
        assert [(s["stage"], s["status"]) for s in stages(run)] == [
            ("pre-install", "done"), ("install", "done"), ("post-install", "done")], run.explain()
        for job in ("ing-%s-admission-create" % ns, "ing-%s-admission-patch" % ns):
            cluster.assert_deleted("batch/v1", "Job", ns, job, timeout=60)
        assert cluster.get("apps/v1", "Deployment", ns, "ing-%s-controller" % ns)

        # external-dns's schema allows only some log levels: the render stops before any write, naming the value
        edns_path, edns_version = public_chart("external-dns")
        bad = base_vars(tmp_path, ns, deploy_application="external-dns-" + ns, deploy_helm_command=helm_binary(),
                        deploy_helm_release="external-dns",
                        deploy_helm_value={"fullnameOverride": "edns-" + ns, "logLevel": "verbose"},
                        deploy_artifact=artifact("external-dns", edns_version, edns_path))
        run = run_playbook("deploy", inventory_path, bad, tmp_path / "bad", limit=cluster.name)
        assert run.rc != 0, run.explain()
        assert "external-dns-%s.tgz: helm template failed" % edns_version in run.output, run.explain()
        assert "at '/logLevel': value must be one of 'panic', 'debug', 'info'" in run.output, run.explain()
        assert run.summary[cluster.name]["status"] == "failed", run.explain()
        assert cluster.get("apps/v1", "Deployment", ns, "edns-" + ns) is None
        assert not cluster.list("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                selector="manent.io/application=external-dns-" + ns)
    finally:
        cleanup(cluster, ns, application)
        cleanup(cluster, ns, "external-dns-" + ns)


class _ShortTtl(threading.Thread):
    """Gives every Job of ``namespace`` ``ttlSecondsAfterFinished: 0`` as soon as it appears, as ingress-nginx 4.15's
    chart writes it on its admission Jobs (the pinned 4.11 sets it only where batch/v1alpha1 is served): the TTL
    controller then deletes each hook Job the moment it finished. ``patched``: the Jobs given the TTL (name, uid)."""

    def __init__(self, cluster, namespace):
        super().__init__(daemon=True, name="short-ttl")
        self.cluster, self.namespace = cluster, namespace
        self.patched = set()
        self.stop = threading.Event()
        self.start()

    def run(self):
        while not self.stop.wait(0.05):
            for job in self.cluster.list("batch/v1", "Job", self.namespace):
                meta = job["metadata"]
                if "ttlSecondsAfterFinished" in job["spec"] or (meta["name"], meta["uid"]) in self.patched:
                    continue
                try:
                    self.cluster.kube.request(
                        "PATCH", "/apis/batch/v1/namespaces/%s/jobs/%s" % (self.namespace, meta["name"]),
                        body={"metadata": {"uid": meta["uid"]}, "spec": {"ttlSecondsAfterFinished": 0}},
                        content_type="application/merge-patch+json")
                    self.patched.add((meta["name"], meta["uid"]))
                except Exception:  # pylint: disable=broad-except  # deleted or replaced meanwhile: the next round
                    continue


@pytest.mark.integration
def test_ingress_nginx_with_hook_jobs_deleted_by_their_ttl_installs_upgrades_and_rolls_back(
        clusters, inventory_path, namespaces, tmp_path):
    """The issue's case: the admission Jobs (pre-install/pre-upgrade, post-install/post-upgrade, hook-succeeded)
    deleted by their TTL as soon as they finished, deployed through the role with hooks applied: each stage sees its
    Job complete, the deploy, the upgrade and the rollback succeed."""
    ns = namespaces
    cluster = clusters[-1]
    path, version = public_chart("ingress-nginx")
    values_1, values_2, probe, (want_1, want_2), more = cases(ns)["ingress-nginx"]
    application = "ingress-nginx-ttl-" + ns
    extra = base_vars(tmp_path, ns, deploy_application=application, deploy_helm_command=helm_binary(),
                      deploy_helm_release="ingress-nginx", deploy_helm_value=values_1, deploy_wait_timeout="120s",
                      deploy_artifact=artifact("ingress-nginx", version, path), **more)
    upgrade = dict(extra, deploy_helm_value=values_2, deploy_artifact=artifact("ingress-nginx", version + "-2", path))
    ttl = _ShortTtl(cluster, ns)
    try:
        for step, variables, want in (("install", extra, want_1), ("upgrade", upgrade, want_2)):
            run = run_playbook("deploy", inventory_path, variables, tmp_path / step, limit=cluster.name, verbosity=1)
            assert run.rc == 0, run.explain()
            assert [s["status"] for s in stages(run)] == ["done", "done", "done"], run.explain()
            assert probe(cluster, ns) == want
        run = run_playbook("rollback", inventory_path, upgrade, tmp_path / "rollback", limit=cluster.name)
        assert run.rc == 0, run.explain()
        assert (run.summary[cluster.name]["status"], run.summary[cluster.name]["version"]) == ("rolled-back", version)
        assert probe(cluster, ns) == want_1
        # both admission Jobs of the install and of the upgrade got the TTL, and it deleted them
        assert len(ttl.patched) == 4, ttl.patched
        cluster.wait(lambda: not cluster.list("batch/v1", "Job", ns), what="the hook Jobs deleted")
    finally:
        ttl.stop.set()
        ttl.join(5)
        cleanup(cluster, ns, application)
