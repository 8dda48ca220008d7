# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parity with the real Helm: a chart deployed through the role leaves the cluster as ``helm install`` and
``helm upgrade`` leave it (docs/lifecycle.md, Parity with helm install and helm upgrade).

For each public chart the tests deploy unchanged (public_chart_helpers.cases: metrics-server, ingress-nginx,
external-dns, descheduler) and for tests/data/charts hook-parity (Helm hooks of many kinds with every delete policy,
an upgrade that removes one object and adds another), the pinned helm installs the chart into one namespace and the
role (playbooks/deploy.yml with ``deploy_helm_hooks: apply`` and ``deploy_prune: true``, what a Helm user's deploy
needs) into another namespace of the same cluster, with the same values; then both upgrade to a changed value.
After each step the live objects of both are compared by API group, kind, namespace and name, the namespace's own
name mapped out of names (each release names its objects after its namespace, so that the cluster-scoped objects of
the two do not collide): the namespace itself, the objects of ``kube-system`` and the cluster-scoped objects whose
names contain it. A difference fails the test, naming each object and the side that has it.

Left out, as inherent (INHERENT): Helm's release Secrets, manent's history ConfigMaps, and what controllers make
from the compared objects (anything with ownerReferences: Pods, ReplicaSets, EndpointSlices, the Jobs of a CronJob,
with generated names). Cluster-scoped objects whose names do not contain the namespace (a CRD of a chart's crds/) are
one object for both releases and cannot be told apart. helm runs without ``--wait``: the local clusters give no
LoadBalancer Service an address (ingress-nginx's controller Service), which ``--wait`` would wait for; Helm waits for
its hook Jobs either way, and the comparison waits until both sides settle (objects being deleted count as gone)."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.render.helm import set_values_tree
from tests.helpers import chart_path, helm_binary, public_chart
from tests.integration.module_helpers import run_helm
from tests.integration.playbook_helpers import artifact, base_vars, run_playbook
from tests.integration.public_chart_helpers import cases, cleanup, listable_kinds, live_inventory

pytestmark = pytest.mark.integration

SETTLE = 90  # seconds both sides get to settle after a step (objects deleted in the background, Endpoints)
PLACEHOLDER = "<ns>"
INHERENT = (
    ("Helm's release storage", lambda group, kind, meta: (group, kind) == ("", "Secret")
     and meta["name"].startswith("sh.helm.release.v1.")),
    ("manent's history", lambda group, kind, meta: (group, kind) == ("", "ConfigMap")
     and "manent.io/history" in (meta.get("labels") or {})),
    ("made by a controller from a compared object", lambda group, kind, meta: bool(meta.get("ownerReferences"))),
)


# hook-parity's values: the chart names its cluster-scoped objects after the namespace itself
HOOK_PARITY = ({"revision": "1", "first": True}, {"revision": "2", "first": False})


def _charts(ns):
    """chart -> (path, version, Helm release name, values of the install, values of the upgrade)."""
    out = {}
    for chart, (values_1, values_2, _probe, _want, _more) in cases(ns).items():
        path, version = public_chart(chart)
        out[chart] = (path, version, chart, values_1, values_2)
    out["hook-parity"] = (chart_path("hook-parity-0.1.0.tgz"), "0.1.0", "parity") + HOOK_PARITY
    return out


@pytest.fixture
def two_namespaces(clusters):
    """Two fresh namespaces on the second cluster (the public chart tests use the last one: external-dns's CRD is
    one object per cluster), deleted after the test."""
    cluster = clusters[1]
    names = ["t-" + uuid.uuid4().hex[:10], "t-" + uuid.uuid4().hex[:10]]
    for name in names:
        cluster.create_namespace(name)
    yield cluster, names
    for name in names:
        cluster.delete_namespace(name)


def _comparable(cluster, ns, kinds):
    """{(group, kind, namespace, name) with ``ns`` mapped out: metadata} of the release in ``ns``, INHERENT left
    out."""
    out = {}
    for group, kind, where, name, meta in live_inventory(cluster, ns, kinds):
        if any(applies(group, kind, meta) for _why, applies in INHERENT):
            continue
        out[(group, kind, where.replace(ns, PLACEHOLDER), name.replace(ns, PLACEHOLDER))] = meta
    return out


def _named(key, ns):
    group, kind, where, name = (part.replace(PLACEHOLDER, ns) for part in key)
    return "%s%s/%s" % ("%s/" % group if group else "", kind, "/".join(p for p in (where, name) if p))


def assert_same_objects(cluster, helm_ns, role_ns, step):
    """The objects Helm left in ``helm_ns`` are those the role left in ``role_ns`` (see the module docstring), once
    both settled (up to SETTLE seconds); otherwise fails naming each object and the side that has it."""
    kinds = listable_kinds(cluster)
    deadline = time.monotonic() + SETTLE
    while True:
        helm, role = _comparable(cluster, helm_ns, kinds), _comparable(cluster, role_ns, kinds)
        only_helm, only_role = sorted(set(helm) - set(role)), sorted(set(role) - set(helm))
        if not (only_helm or only_role) or time.monotonic() > deadline:
            break
        time.sleep(1)
    lines = ["only helm has %s" % _named(key, helm_ns) for key in only_helm]
    lines += ["only the role has %s" % _named(key, role_ns) for key in only_role]
    assert not lines, "after %s, the objects differ (helm: %s, role: %s):\n- %s" % (
        step, helm_ns, role_ns, "\n- ".join(lines))
    return sorted(role)


def _helm(cluster, tmp_path, verb, release, path, ns, values):
    values_file = tmp_path / ("values-%s.json" % verb)
    values_file.write_text(json.dumps(set_values_tree(values)))
    done = run_helm(cluster, tmp_path, verb, release, path, "--namespace", ns, "--values", str(values_file),
                    "--timeout", "180s")
    assert done.returncode == 0, "helm %s failed:\n%s%s" % (verb, done.stdout, done.stderr)


def _remove_leftovers(cluster, namespaces, kinds):
    """Delete what the releases left outside their namespaces (cluster-scoped objects named after them, objects in
    kube-system): Helm's hooks without a deleting policy and a CRD hook among them. The namespaces themselves go with
    the fixture."""
    by_kind = {(res.group, res.kind): res for res in kinds}
    for ns in namespaces:
        for group, kind, where, name, _meta in live_inventory(cluster, ns, kinds):
            if where == ns or (group, kind) == ("", "Namespace"):
                continue
            res = by_kind[(group, kind)]
            cluster.delete("%s/%s" % (group, res.version) if group else res.version, kind, where or None, name)


@pytest.mark.parametrize("chart", ["metrics-server", "ingress-nginx", "external-dns", "descheduler", "hook-parity"])
def test_a_chart_installed_and_upgraded_by_the_role_leaves_the_objects_helm_leaves(
        chart, two_namespaces, inventory_path, tmp_path):
    cluster, (helm_ns, role_ns) = two_namespaces
    path, version, release, helm_1, helm_2 = _charts(helm_ns)[chart]
    _path, _version, _release, role_1, role_2 = _charts(role_ns)[chart]
    application = "parity-%s-%s" % (chart, role_ns)
    extra = base_vars(tmp_path, role_ns, deploy_application=application, deploy_helm_command=helm_binary(),
                      deploy_helm_release=release, deploy_helm_value=role_1, deploy_wait_timeout="120s",
                      deploy_artifact=artifact(chart, version, path), deploy_helm_hooks="apply", deploy_prune=True)
    upgrade = dict(extra, deploy_helm_value=role_2, deploy_artifact=artifact(chart, version + "-2", path))
    try:
        _helm(cluster, tmp_path, "install", release, path, helm_ns, helm_1)
        run = run_playbook("deploy", inventory_path, extra, tmp_path / "install", limit=cluster.name)
        assert run.rc == 0, run.explain()
        installed = assert_same_objects(cluster, helm_ns, role_ns, "install")

        _helm(cluster, tmp_path, "upgrade", release, path, helm_ns, helm_2)
        run = run_playbook("deploy", inventory_path, upgrade, tmp_path / "upgrade", limit=cluster.name)
        assert run.rc == 0, run.explain()
        upgraded = assert_same_objects(cluster, helm_ns, role_ns, "upgrade")
        if chart == "hook-parity":  # the comparison compared something: what the chart's hooks leave, and the prune
            names = {(kind, name) for _group, kind, _where, name in installed}
            assert {("ConfigMap", "parity-seed"), ("Secret", "parity-hook-failed"), ("Job", "parity-smoke"),
                    ("ConfigMap", "parity-first"), ("CustomResourceDefinition", "hooks.<ns>.parity.manent.test")} \
                <= names, installed
            assert not {("ServiceAccount", "parity-hook"), ("ClusterRole", "parity-<ns>-hook"),
                        ("Job", "parity-migrate"), ("ConfigMap", "parity-post")} & names, installed
            names = {(kind, name) for _group, kind, _where, name in upgraded}
            assert ("ConfigMap", "parity-later") in names and ("ConfigMap", "parity-first") not in names, upgraded
            assert ("Deployment", "parity-warmup") not in names, upgraded
    finally:
        cleanup(cluster, role_ns, application)
        _remove_leftovers(cluster, (helm_ns, role_ns), listable_kinds(cluster))
