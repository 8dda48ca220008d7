# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile and broken input through the real modules and the real clusters (issue 14): each case runs
manent_render, manent_apply or manent_history as Ansible runs them (the module file, its JSON arguments, its JSON
result), must fail with a message naming the file/document/field/record at fault, and must write nothing: the
resourceVersions of every object in the test namespace, the cluster's namespaces and its cluster-wide RBAC objects
are the same before and after.

Inputs are generated at test time (tests/unit/test_hostile_input.py has the pure input cases).
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import os

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history import anchor as ha
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    OBJECTS_KEY, decode_record, decode_strays, with_objects)
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import stamp
from tests.helpers import helm_binary
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release, ReleaseKey
from tests.integration.deploy_helpers import deploy, versions
from tests.objects import configmap
from tests.integration.module_helpers import connection, key_of_test, packaged_chart, run_module, targz
from tests.integration.playbook_helpers import sha256
from tests.reliability import record

pytestmark = pytest.mark.integration

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n"
CLUSTER_WIDE = (("v1", "Namespace"), ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
                ("rbac.authorization.k8s.io/v1", "ClusterRole"))


# --------------------------------------------------------------------------- running modules


def snapshot(cluster, namespace):
    """What a write would change: every object of ``namespace`` by resourceVersion, and the cluster-wide objects
    (Namespaces, ClusterRoles, ClusterRoleBindings) of this test's release key."""
    state = versions(cluster, namespace)  # without what the controllers add to a fresh namespace
    selector = "manent.io/application=%s" % key_of_test(namespace).application
    for api_version, kind in CLUSTER_WIDE:
        for obj in cluster.list(api_version, kind, selector=selector):
            state["%s/%s" % (kind, obj["metadata"]["name"])] = obj["metadata"]["resourceVersion"]
    return state


def refused(case, cluster, namespace, run, *expected):
    """``run()`` -> (failed, result) must fail naming ``expected`` and leave the cluster as it was."""
    before = snapshot(cluster, namespace)
    try:
        failed, result = run()
        message = result.get("msg", "")
        assert failed, "%s: the module did not fail: %s" % (case, json.dumps(result)[:2000])
        for text in expected:
            assert text in message, "%s: %r not in %r" % (case, text, message)
        assert snapshot(cluster, namespace) == before, "%s: something was written" % case
        assert cluster.token not in json.dumps(result)
    except BaseException:
        record("input", case, False, source=__name__)
        raise
    record("input", case, True, detail=message[:300], source=__name__)
    return result


# --------------------------------------------------------------------------- artifacts


def _file(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


LAUGHS = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\na0: &a0 [%s]\n" % ", ".join(['"lol"'] * 10) + \
    "".join("a%d: &a%d [%s]\n" % (n, n, ", ".join(["*a%d" % (n - 1)] * 10)) for n in range(1, 10))
LOOP = ('{{- range $i := until 100000 }}{{- range $j := until 100000 }}{{- end }}{{- end }}\n' + CM)
RECURSE = '{{- define "loop" }}{{ include "loop" . }}{{- end }}{{ include "loop" . }}\n'
GARBAGE = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n  : : [\n"
LOOKUP = ('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: looked\ndata:\n  found: '
          '"{{ len (lookup "v1" "Secret" "kube-system" "") }}"\n')
OUTSIDE = ('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: files\ndata:\n  passwd: '
           '{{ .Files.Get "../../../../../../etc/passwd" | quote }}\n  hostname: {{ .Files.Get "/etc/hostname" | quote }}\n')

SECRET_NOT_BASE64 = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  password: hunter2-not-base64\n"
MISSPELT = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replica: 2\n  selector:\n"
            "    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n"
            "      containers:\n      - name: web\n        image: registry.k8s.io/pause:3.10\n        env:\n"
            "        - {name: PORT, value: 8080}\n")

RENDER_CASES = [
    # (case, build(tmp_path) -> (artifact, extra module args), expected texts in msg)
    ("module: archive with ../ path", lambda t: (targz(t, "a.tar.gz", [("../evil.yaml", CM.encode())]), {}),
     ("a.tar.gz", "../evil.yaml")),
    ("module: archive with a symlink", lambda t: (targz(t, "a.tar.gz", [("pw.yaml", None, "/etc/passwd")]), {}),
     ("a.tar.gz", "symbolic link")),
    ("module: YAML alias bomb", lambda t: (_file(t, "bomb.yaml", LAUGHS), {}), ("bomb.yaml#1", "alias")),
    ("module: duplicate keys", lambda t: (_file(t, "dup.yaml", CM + "  k: again\n"), {}),
     ("dup.yaml#1", "duplicate key 'k'")),
    ("module: non-UTF-8 manifest", lambda t: (_file(t, "bin.yaml", b"kind: \xff\xfe\n"), {}),
     ("bin.yaml", "not UTF-8")),
    ("module: invalid object name among valid objects",
     lambda t: (_file(t, "app.yaml", CM + "---\n" + CM.replace("name: cfg", "name: Bad_Name")), {}),
     ("app.yaml#2", "metadata.name 'Bad_Name'")),
    ("module: invalid label value", lambda t: (_file(t, "app.yaml", CM.replace(
        "  name: cfg\n", "  name: cfg\n  labels: {tier: 'front end'}\n")), {}), ("app.yaml#1", "metadata.labels.tier")),
    ("module: invalid namespace on an object", lambda t: (_file(t, "app.yaml", CM.replace(
        "  name: cfg\n", "  name: cfg\n  namespace: Not_Valid\n")), {}), ("app.yaml#1", "'Not_Valid'")),
    ("module: kind the cluster does not serve", lambda t: (_file(t, "app.yaml", CM.replace(
        "kind: ConfigMap", "kind: ConfigMapp")), {}), ("app.yaml#1", "does not serve")),
    ("module: unquoted number and boolean in ConfigMap data", lambda t: (_file(t, "app.yaml", CM.replace(
        "  k: v\n", "  k: v\n  port: 8080\n  debug: yes\n")), {}),
     ("app.yaml#1", "data.port: expected a string, got an integer (quote it", "data.debug: expected a string, got a "
      "boolean")),
    ("module: Secret data that is not base64", lambda t: (_file(t, "app.yaml", SECRET_NOT_BASE64), {}),
     ("app.yaml#1", "Secret/", "data.password: is not valid base64")),
    ("module: chart Deployment with a misspelt field", lambda t: (packaged_chart(t, {"web.yaml": MISSPELT}), {}),
     ("hostile-0.1.0.tgz", "Deployment/", "spec.replica: no such field",
      "containers[0].env[0].value: expected a string, got an integer")),
    ("module: artifact sha256 mismatch", lambda t: (_file(t, "app.yaml", CM), {"artifact_sha256": "ab" * 32}),
     ("app.yaml", "sha256 mismatch")),
    ("module: helm binary sha256 mismatch", lambda t: (packaged_chart(t, {"cm.yaml": CM}), {"helm_sha256": "cd" * 32}),
     ("helm_sha256", "expected " + "cd" * 32)),
    ("module: chart template that loops", lambda t: (packaged_chart(t, {"loop.yaml": LOOP}), {"helm_timeout": "3s"}),
     ("helm_timeout", "did not finish within")),
    ("module: chart template that recurses", lambda t: (packaged_chart(t, {"loop.yaml": RECURSE}), {}),
     ("hostile-0.1.0.tgz", "helm template failed")),
    ("module: chart emitting garbage", lambda t: (packaged_chart(t, {"garbage.yaml": GARBAGE}), {}),
     ("hostile-0.1.0.tgz", "templates/garbage.yaml")),
    ("module: invalid Chart.yaml", lambda t: (packaged_chart(t, {"cm.yaml": CM}, chart_yaml="apiVersion: v2\nname: [x\n"), {}),
     ("hostile-0.1.0.tgz", "helm template failed")),
    ("module: helm_value that is not valid YAML", lambda t: (packaged_chart(t, {"cm.yaml": CM}),
                                                             {"helm_value": {"image.tag": "{unclosed"}}),
     ("helm_value.image.tag", "not valid YAML")),
    ("module: helm_values alias bomb", lambda t: (packaged_chart(t, {"cm.yaml": CM}), {"helm_values": LAUGHS}),
     ("helm_values", "alias")),
]


@pytest.mark.parametrize("case, build, expected", RENDER_CASES, ids=[row[0] for row in RENDER_CASES])
def test_render_refuses_hostile_input_without_writing(cluster, namespace, tmp_path, case, build, expected):
    path, extra = build(tmp_path)
    args = dict(connection(cluster, namespace, tmp_path), artifact=path, version="1.0.0",
                helm_command=helm_binary(), bundle=str(tmp_path / "bundle.json"))
    args.setdefault("artifact_sha256", sha256(path))
    args.update(extra)
    result = refused(case, cluster, namespace, lambda: run_module("manent_render", tmp_path, **args), *expected)
    assert not os.path.exists(args["bundle"]), "no bundle may be written for refused input"
    assert "hunter2" not in json.dumps(result)  # a Secret's value is never shown


def test_chart_lookup_and_outside_files_stay_inside(cluster, namespace, tmp_path):
    """``lookup`` answers empty (helm never talks to the cluster) and ``.Files.Get`` cannot reach outside the
    chart: the chart renders, and nothing of the cluster's Secrets or the worker's files gets in."""
    case = "module: chart that tries lookup and reads files outside itself"
    path = packaged_chart(tmp_path, {"lookup.yaml": LOOKUP, "files.yaml": OUTSIDE})
    args = dict(connection(cluster, namespace, tmp_path), artifact=path, version="1.0.0", artifact_sha256=sha256(path),
                helm_command=helm_binary(), bundle=str(tmp_path / "bundle.json"))
    before = snapshot(cluster, namespace)
    try:
        failed, result = run_module("manent_render", tmp_path, **args)
        assert not failed, result
        with open(args["bundle"], encoding="utf-8") as handle:
            objects = {obj["metadata"]["name"]: obj for obj in json.load(handle)["objects"]}
        assert objects["looked"]["data"]["found"] == "0"
        assert objects["files"]["data"] == {"passwd": "", "hostname": ""}
        assert snapshot(cluster, namespace) == before
    except BaseException:
        record("input", case, False, source=__name__)
        raise
    record("input", case, True, detail="lookup answered empty; .Files.Get outside the chart answered empty",
           source=__name__)


def test_apply_refuses_a_bundle_edited_after_render(cluster, namespace, tmp_path):
    """A bundle changed between manent_render and manent_apply (a valid object, then an invalid one) is refused
    whole before the first write: no Namespace, no history, no object."""
    path = _file(tmp_path, "app.yaml", CM + "---\n" + CM.replace("name: cfg", "name: other"))
    args = dict(connection(cluster, namespace, tmp_path), artifact=path, version="1.0.0", artifact_sha256=sha256(path),
                bundle=str(tmp_path / "bundle.json"))
    failed, result = run_module("manent_render", tmp_path, **args)
    assert not failed, result
    with open(args["bundle"], encoding="utf-8") as handle:
        data = json.load(handle)
    data["objects"][-1]["metadata"]["name"] = "Evil/../Name"
    with open(args["bundle"], "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    apply_args = {name: value for name, value in connection(cluster, namespace, tmp_path).items()
                  if name in ("api_server", "token", "ca_file", "work_dir")}
    apply_args.update(bundle=args["bundle"], wait=False)
    refused("module: bundle edited after render", cluster, namespace,
            lambda: run_module("manent_apply", tmp_path, **apply_args), "bundle", "metadata.name 'Evil/../Name'")


# --------------------------------------------------------------------------- tampered history


def _packed(objects):
    return base64.b64encode(gzip.compress(json.dumps(objects).encode())).decode()


def _stamped(obj, namespace):
    return stamp(obj, Release(key_of_test(namespace), "1.0.0", "d1"))


TAMPER = [
    ("history: record with bad gzip", lambda cm, ns: cm["binaryData"].update(
        {OBJECTS_KEY: base64.b64encode(b"\x1f\x8b\x08garbage").decode()}), ("objects are corrupt",)),
    ("history: record with the wrong schema", lambda cm, ns: cm["binaryData"].update(
        {OBJECTS_KEY: _packed({"objects": "none"})}), ("not a list of objects",)),
    ("history: record holding an object outside the release namespace", lambda cm, ns: cm["binaryData"].update(
        {OBJECTS_KEY: _packed([_stamped({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                         "metadata": {"name": "grab", "namespace": "kube-system"},
                                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                     "kind": "ClusterRole", "name": "cluster-admin"},
                                         "subjects": [{"kind": "Group", "name": "system:authenticated"}]}, ns)])}),
     ("RoleBinding/kube-system/grab", "outside the release namespace")),
    ("history: record holding another release's objects", lambda cm, ns: cm["binaryData"].update(
        {OBJECTS_KEY: _packed([stamp({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "settings", "namespace": ns}, "data": {"a": "stolen"}}, Release(
                ReleaseKey("billing", "ledger", "prod"), "7.0.0", "d7"))])}),
     ("ConfigMap/%(ns)s/settings", "belongs to another release (untenanted/billing/ledger/prod)")),
]
# Relabelled, a record leaves the list audit reads (records are found by their labels); rollback reads it by name.
# A cluster-scoped object is no sign of tampering for audit (charts have ClusterRoles); a rollback writes one only
# when the record's anchor vouches for it (history/anchor.py), and this release never anchored any.
ROLLBACK_ONLY = [
    ("history: record relabelled as another release's", lambda cm, ns: cm["metadata"]["labels"].update(
        {"manent.io/application": "billing"}), ("labels name another release",)),
    ("history: record holding a cluster-scoped object", lambda cm, ns: cm["binaryData"].update(
        {OBJECTS_KEY: _packed([_stamped({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                                         "metadata": {"name": "grab-" + ns},
                                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                     "kind": "ClusterRole", "name": "cluster-admin"},
                                         "subjects": [{"kind": "Group", "name": "system:authenticated"}]}, ns)])}),
     ("ClusterRoleBinding/grab-%(ns)s", "cluster-scoped object(s) that the history in %(ns)s cannot vouch for",
      "nothing was changed")),
]


def test_a_record_edited_to_list_objects_of_others_does_not_get_them_pruned(cluster, namespace, tmp_path):
    """Whoever may edit ConfigMaps in the release namespace can change what history says the release had. A record
    in service edited to list objects the release never had (another tool's in its namespace, one in another
    namespace, a cluster-scoped one), stamped with this release's labels, must not make the next deploy delete
    them with its rights: prune deletes only live objects labeled as this release's, and says why it left the
    others. It used to delete every listed object that no other manent release owned."""
    key = key_of_test(namespace)
    deploy(cluster, tmp_path, [configmap("settings", a="1")], namespace, version="1.0.0", key=key, wait=False)
    victims = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim", "namespace": namespace},
         "data": {"owner": "another tool"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim-" + namespace, "namespace": "default"},
         "data": {"owner": "another namespace"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "victim-" + namespace}, "rules": []},
    ]
    try:
        for obj in victims:
            cluster.apply(obj)
        record = record_name(key, "1.0.0")
        cm = cluster.get("v1", "ConfigMap", namespace, record)
        _meta, stored = decode_record(cm)
        stored += [stamp(json.loads(json.dumps(obj)), Release(key, "1.0.0", "d1")) for obj in victims]
        cm = with_objects(cm, stored, record)
        cm["metadata"].pop("managedFields", None)
        cluster.kube.request("PUT", cluster.path("v1", "ConfigMap", namespace, record), body=cm)

        result = deploy(cluster, tmp_path, [configmap("settings", a="2")], namespace, version="2.0.0", key=key,
                        wait=False, prune=True)

        assert result.status == "deployed" and result.pruned == [], result.pruned
        skipped = {c.subject: c.reason for c in result.changes if c.reason.startswith("not pruned")}
        why = "not pruned: it does not carry the labels of %s on the cluster" % key.describe()
        for obj in victims:
            meta = obj["metadata"]
            assert cluster.get(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"]) is not None, meta
            subject = "/".join(p for p in (obj["kind"], meta.get("namespace"), meta["name"]) if p)
            assert skipped.get(subject, "").startswith(why), skipped
    finally:
        for obj in victims[1:]:
            meta = obj["metadata"]
            cluster.delete(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])


@pytest.fixture
def two_releases(cluster, namespace, tmp_path):
    """Versions 1.0.0 then 2.0.0 of KEY deployed (2.0.0 in service, 1.0.0 the one rollback goes to)."""
    key = key_of_test(namespace)
    deploy(cluster, tmp_path, [configmap("settings", a="1")], namespace, version="1.0.0", key=key, wait=False)
    deploy(cluster, tmp_path, [configmap("settings", a="2")], namespace, version="2.0.0", key=key, wait=False)
    return record_name(key, "1.0.0")


@pytest.mark.parametrize("operation, case, change, expected",
                         [("rollback",) + row for row in TAMPER + ROLLBACK_ONLY] + [("audit",) + row for row in TAMPER],
                         ids=["rollback-" + row[0] for row in TAMPER + ROLLBACK_ONLY] +
                             ["audit-" + row[0] for row in TAMPER])
def test_tampered_history_is_refused_on_rollback_and_audit(cluster, namespace, tmp_path, two_releases, operation,
                                                           case, change, expected):
    cm = cluster.get("v1", "ConfigMap", namespace, two_releases)
    change(cm, namespace)
    cm["metadata"].pop("managedFields", None)
    cluster.kube.request("PUT", cluster.path("v1", "ConfigMap", namespace, two_releases), body=cm)
    args = dict(connection(cluster, namespace, tmp_path), operation=operation, wait=False)
    refused("%s (%s)" % (case, operation), cluster, namespace, lambda: run_module("manent_history", tmp_path, **args),
            two_releases, *[text % {"ns": namespace} for text in expected])


def _put_record(cluster, namespace, cm):
    cm = copy.deepcopy(cm)
    cm["metadata"].pop("managedFields", None)
    cm["metadata"].pop("resourceVersion", None)
    cluster.kube.request("PUT", cluster.path("v1", "ConfigMap", namespace, cm["metadata"]["name"]), body=cm)


def _anchors(cluster, namespace, key):
    annotations = cluster.get("v1", "Namespace", None, namespace)["metadata"].get("annotations") or {}
    return json.loads(annotations.get(ha.annotation(key)) or "{}")


def test_a_rollback_writes_cluster_scoped_objects_only_as_manent_stored_them(cluster, namespace, tmp_path):
    """History lives in ConfigMaps of the release namespace: whoever may edit them there must not be able to make a
    rollback write cluster-wide. Each deploy anchors the digest of its record's cluster-scoped objects on the
    release Namespace; a rollback writes them as stored only when that anchor vouches for the record, otherwise
    only where the cluster already holds them, and stops before any change naming the others, unless told to
    trust the history. Before, a record edited to widen a ClusterRole was rolled back to as it was."""
    key = key_of_test(namespace)
    name = "reader-" + namespace

    def role(*verbs):
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": list(verbs)}]}

    def verbs():
        return cluster.get("rbac.authorization.k8s.io/v1", "ClusterRole", None, name)["rules"][0]["verbs"]

    def rollback(**more):
        args = dict(connection(cluster, namespace, tmp_path), operation="rollback", wait=False, **more)
        return run_module("manent_history", tmp_path, **args)

    try:
        deploy(cluster, tmp_path, [configmap("settings", a="1"), role("get")], namespace, version="1.0.0", key=key,
               wait=False)
        deploy(cluster, tmp_path, [configmap("settings", a="2"), role("get", "list")], namespace, version="2.0.0",
               key=key, wait=False)
        assert list(_anchors(cluster, namespace, key)) == ["1.0.0", "2.0.0"]
        record = record_name(key, "1.0.0")
        original = cluster.get("v1", "ConfigMap", namespace, record)

        # 1. 1.0.0's ClusterRole widened in its record: refused, nothing written
        _meta, stored = decode_record(original)
        for obj in stored:
            if obj["kind"] == "ClusterRole":
                obj["rules"] = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
        _put_record(cluster, namespace, with_objects(copy.deepcopy(original), stored, record))
        refused("history: record whose cluster-scoped object was changed (rollback)", cluster, namespace, rollback,
                record, "ClusterRole/" + name, "cannot vouch for", "nothing was changed")
        assert verbs() == ["get", "list"]

        # 2. the record as manent wrote it: the anchor vouches for it, the ClusterRole goes back
        _put_record(cluster, namespace, with_objects(cluster.get("v1", "ConfigMap", namespace, record),
                                                     decode_record(original)[1], record))
        failed, result = rollback()
        assert not failed and result["status"] == "rolled-back", result
        assert verbs() == ["get"]

        # 3. no anchor (records written before anchors): a change of the ClusterRole is refused, unless trusted
        cluster.kube.request("PATCH", "/api/v1/namespaces/%s" % namespace, content_type="application/merge-patch+json",
                             body={"metadata": {"annotations": {ha.annotation(key): None}}})
        refused("history: record without anchor, cluster-scoped object to change (rollback)", cluster, namespace,
                lambda: rollback(rollback_to="2.0.0"), "ClusterRole/" + name, "restore_cluster_scoped")
        failed, result = rollback(rollback_to="2.0.0", restore_cluster_scoped=True)
        assert not failed and result["status"] == "rolled-back", result
        assert verbs() == ["get", "list"]
        assert list(_anchors(cluster, namespace, key)) == ["2.0.0"]  # the rollback wrote 2.0.0's record again

        # 4. without an anchor, a cluster-scoped object the cluster already holds is no obstacle
        cluster.kube.request("PATCH", "/api/v1/namespaces/%s" % namespace, content_type="application/merge-patch+json",
                             body={"metadata": {"annotations": {ha.annotation(key): None}}})
        failed, result = rollback(rollback_to="2.0.0")
        assert not failed and result["status"] == "rolled-back", result
        assert verbs() == ["get", "list"]
    finally:
        cluster.delete("rbac.authorization.k8s.io/v1", "ClusterRole", None, name)


def test_a_rollback_prunes_cluster_scoped_objects_only_for_records_the_anchor_vouches_for(
        cluster, namespace, tmp_path):
    """A record edited to leave out a cluster-scoped object must not make a rollback to it delete that object
    (whoever may edit ConfigMaps in the namespace could otherwise have a CRD, and every custom resource of it,
    deleted cluster-wide). A rollback to a record the anchor does not vouch for prunes no cluster-scoped object
    and says which it left; nor does it anchor that record when it writes it again, which would vouch for it.
    A record the anchor vouches for is pruned as usual, also when it has no cluster-scoped object at all."""
    key = key_of_test(namespace)
    names = {"kept": "kept-" + namespace, "added": "added-" + namespace}

    def role(which):
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": names[which]}, "rules": []}

    def live(which):
        return cluster.get("rbac.authorization.k8s.io/v1", "ClusterRole", None, names[which]) is not None

    def rollback(**more):
        args = dict(connection(cluster, namespace, tmp_path), operation="rollback", wait=False, prune=True, **more)
        return run_module("manent_history", tmp_path, **args)

    try:
        deploy(cluster, tmp_path, [configmap("settings", a="0")], namespace, version="0.9.0", key=key, wait=False)
        deploy(cluster, tmp_path, [configmap("settings", a="1"), role("kept")], namespace, version="1.0.0", key=key,
               wait=False)
        deploy(cluster, tmp_path, [configmap("settings", a="2"), role("kept"), role("added")], namespace,
               version="2.0.0", key=key, wait=False)
        # 0.9.0 came before any anchor of this key: it has none. 1.0.0 and 2.0.0 are anchored.
        assert list(_anchors(cluster, namespace, key)) == ["1.0.0", "2.0.0"]

        # 1.0.0's record with its ClusterRole taken out: the rollback to it leaves both ClusterRoles
        record = record_name(key, "1.0.0")
        original = cluster.get("v1", "ConfigMap", namespace, record)
        stripped = [o for o in decode_record(original)[1] if o["kind"] != "ClusterRole"]
        _put_record(cluster, namespace, with_objects(copy.deepcopy(original), stripped, record))
        failed, result = rollback()
        assert not failed and result["status"] == "rolled-back", result
        assert live("kept") and live("added")
        warned = json.dumps(result.get("warnings", []))  # Ansible's warnings: text, or mappings holding it
        assert "not pruned, cluster-scoped: " in warned and "ClusterRole/" + names["kept"] in warned, warned
        assert "ClusterRole/" + names["added"] in warned, warned
        assert _anchors(cluster, namespace, key)["1.0.0"] != ha.digest(stripped)  # written again, not vouched for
        # listed in the restored record for the next deploy, whose artifact decides, to prune
        strays = decode_strays(cluster.get("v1", "ConfigMap", namespace, record))
        assert {s["metadata"]["name"] for s in strays} == set(names.values()), strays

        # 2.0.0 again, then back to 1.0.0 as manent wrote it: its anchor vouches, the added ClusterRole goes
        failed, result = rollback(rollback_to="2.0.0")
        assert not failed and result["status"] == "rolled-back", result
        _put_record(cluster, namespace, with_objects(cluster.get("v1", "ConfigMap", namespace, record),
                                                     decode_record(original)[1], record))
        failed, result = rollback(rollback_to="1.0.0")
        assert not failed and result["status"] == "rolled-back", result
        cluster.assert_deleted("rbac.authorization.k8s.io/v1", "ClusterRole", None, names["added"])
        assert live("kept")

        # 0.9.0 has no anchor: the rollback to it prunes no ClusterRole; a version without cluster-scoped objects
        # deployed once the key has anchors is anchored (""), and a rollback to it prunes them
        failed, result = rollback(rollback_to="0.9.0")
        assert not failed and result["status"] == "rolled-back" and live("kept"), result
        deploy(cluster, tmp_path, [configmap("settings", a="3"), role("kept")], namespace, version="3.0.0", key=key,
               wait=False)
        deploy(cluster, tmp_path, [configmap("settings", a="4")], namespace, version="4.0.0", key=key, wait=False)
        assert _anchors(cluster, namespace, key)["4.0.0"] == ""
        deploy(cluster, tmp_path, [configmap("settings", a="5"), role("kept")], namespace, version="5.0.0", key=key,
               wait=False)
        failed, result = rollback(rollback_to="4.0.0")
        assert not failed and result["status"] == "rolled-back", result
        cluster.assert_deleted("rbac.authorization.k8s.io/v1", "ClusterRole", None, names["kept"])
    finally:
        for name in names.values():
            cluster.delete("rbac.authorization.k8s.io/v1", "ClusterRole", None, name)
