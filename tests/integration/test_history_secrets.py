"""Secret values never stored in history ConfigMaps (issue 10, part 1), on a real cluster.

The release's Secrets go to a companion Secret of the record's name; a token bound to the built-in
``view`` ClusterRole (ConfigMaps yes, Secrets no) must find no Secret value in any history object it
can read, rollback must still restore Secrets exactly, and records of the earlier format (Secrets inside
the ConfigMap) must be read and migrated by the next deploy.
"""

import base64
import gzip
import json
import os

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.history.companion_format import SECRETS_TYPE
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import locator_name, record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import (
    OBJECTS_KEY, SECRETS_FIELD, decode_record, encode_record)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, HistoryError
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import Release
from tests.integration.deploy_helpers import (
    KEY, deploy, deployer, labelled_history, locator, make_bundle, record_status)
from tests.objects import configmap
from tests.integration.kube import can_list

pytestmark = pytest.mark.integration

PLAIN = {"1.0.0": "s3cr3t-value-one", "2.0.0": "s3cr3t-value-two", "3.0.0": "s3cr3t-value-three"}
TOKEN_VALUE = "tok-9f8e7d6c5b4a"


def db_secret(version):
    """A Secret with one value in stringData and one in data (base64)."""
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "type": "Opaque",
            "stringData": {"password": PLAIN[version]},
            "data": {"token": base64.b64encode(TOKEN_VALUE.encode()).decode()}}


def needles(version):
    """Every form in which the Secret values of ``version`` could leak: plain and base64."""
    values = [PLAIN[version], TOKEN_VALUE]
    return values + [base64.b64encode(v.encode()).decode() for v in values]


def readable_text(obj):
    """The object as JSON plus every binaryData/data value that is base64 of gzip, unpacked."""
    parts = [json.dumps(obj)]
    for field in ("binaryData", "data"):
        for value in (obj.get(field) or {}).values():
            try:
                raw = base64.b64decode(value, validate=True)
            except (ValueError, TypeError):
                continue
            if raw[:2] == b"\x1f\x8b":
                parts.append(gzip.decompress(raw).decode("utf-8"))
    return "\n".join(parts)


def view_token(cluster, namespace):
    """A ServiceAccount token of ``namespace`` bound to the built-in ``view`` ClusterRole there."""
    cluster.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "viewer", "namespace": namespace}})
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "viewer", "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                   "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": namespace}]})
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    path = "/api/v1/namespaces/%s/serviceaccounts/viewer/token" % namespace
    return cluster.kube.request("POST", path, body=request).data["status"]["token"]


def live_password(cluster, namespace):
    live = cluster.get("v1", "Secret", namespace, "db")
    return base64.b64decode(live["data"]["password"]).decode(), base64.b64decode(live["data"]["token"]).decode()


def test_view_role_reads_no_secret_value_in_history(cluster, namespace, tmp_path):
    for version in ("1.0.0", "2.0.0"):
        result = deploy(cluster, tmp_path, [configmap("cfg", v=version), db_secret(version)], namespace,
                        version=version)
        assert result.status == "deployed"

    token = view_token(cluster, namespace)
    with Kube(cluster.connection(token=token)) as viewer:
        cluster.wait(lambda: can_list(viewer, namespace, "configmaps"), what="RBAC for the viewer")
        with pytest.raises(ApiError) as denied:
            viewer.get_json("/api/v1/namespaces/%s/secrets" % namespace)
        assert denied.value.status == 403, "the view ClusterRole must not read Secrets"
        readable = viewer.get_json("/api/v1/namespaces/%s/configmaps" % namespace)["items"]

    names = {cm["metadata"]["name"] for cm in readable}
    records = [record_name(KEY, v) for v in ("1.0.0", "2.0.0")]
    assert set(records) | {locator_name(KEY)} <= names, "the viewer reads the whole history"
    for cm in readable:
        text = readable_text(cm)
        for version in ("1.0.0", "2.0.0"):
            for needle in needles(version):
                assert needle not in text, "%s leaks a Secret value" % cm["metadata"]["name"]
    # The records still list the Secret (without values) and name the companion that holds it.
    for cm in (c for c in readable if c["metadata"]["name"] in records):
        meta, stored = decode_record(cm)
        assert meta["secrets"] == cm["metadata"]["name"] and meta["format"] == "2"
        assert [o["metadata"]["name"] for o in stored if o["kind"] == "Secret"] == ["db"]
    # The same search finds the value where it is meant to be: the companion Secret (admin only).
    companion = cluster.get("v1", "Secret", namespace, records[1])
    assert companion["type"] == "manent.io/release-secrets.v1"
    assert PLAIN["2.0.0"] in readable_text(companion)
    assert companion["metadata"]["ownerReferences"][0]["name"] == records[1]


def test_rollback_restores_the_previous_secret_value(cluster, namespace, tmp_path):
    for version in ("1.0.0", "2.0.0"):
        deploy(cluster, tmp_path, [db_secret(version)], namespace, version=version)
    assert live_password(cluster, namespace) == (PLAIN["2.0.0"], TOKEN_VALUE)

    result = deployer(cluster).rollback(namespace, KEY)

    assert result.status == "rolled-back" and result.release == "1.0.0"
    assert live_password(cluster, namespace) == (PLAIN["1.0.0"], TOKEN_VALUE)
    # The rollback wrote the record of 1.0.0 again: its companion still holds the value it restored.
    stored = HistoryStore(cluster.kube, namespace, KEY).load("1.0.0")[1]
    assert [o for o in stored if o["kind"] == "Secret"][0]["stringData"] == {"password": PLAIN["1.0.0"]}


def test_cleanup_and_redeploy_without_secrets_delete_companions(cluster, namespace, tmp_path):
    for version in ("1.0.0", "2.0.0", "3.0.0"):
        deploy(cluster, tmp_path, [db_secret(version)], namespace, version=version, keep_releases=2)
    companions = {s["metadata"]["name"] for s in cluster.list("v1", "Secret", namespace)
                  if s.get("type") == SECRETS_TYPE}
    assert companions == {record_name(KEY, "2.0.0"), record_name(KEY, "3.0.0")}
    assert record_name(KEY, "1.0.0") not in labelled_history(cluster, namespace)

    # 3.0.0 deployed again (another deploy id) without its Secret: the record is replaced, its companion goes.
    bundle = make_bundle([configmap("cfg", v="3")], namespace, version="3.0.0", deployment="d-again")
    deployer(cluster).deploy(bundle)
    remaining = {s["metadata"]["name"] for s in cluster.list("v1", "Secret", namespace)
                 if s.get("type") == SECRETS_TYPE}
    assert remaining == {record_name(KEY, "2.0.0")}
    assert HistoryStore(cluster.kube, namespace, KEY).load("3.0.0")[0]["secrets"] == ""


def test_configmap_rights_suffice_for_releases_without_secrets(cluster, namespace, tmp_path):
    with open(os.path.join(cluster.dir, "deployer.token"), encoding="utf-8") as f:
        token = f.read().strip()
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                   "metadata": {"name": "cm-only", "namespace": namespace},
                   "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]})
    cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "cm-only", "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-only"},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "manent-deployer"}]})
    with Kube(cluster.connection(token=token)) as limited:
        cluster.wait(lambda: can_list(limited, namespace, "configmaps"), what="RBAC for manent-deployer")
        assert not can_list(limited, namespace, "secrets")
        for version in ("1.0.0", "2.0.0", "3.0.0"):
            result = deploy(cluster, tmp_path, [configmap("cfg", v=version)], namespace, version=version,
                            kube=limited, keep_releases=2, prune=True)
            assert result.status == "deployed"
        rolled = deployer(cluster, kube=limited).rollback(namespace, KEY)
    assert rolled.status == "rolled-back" and locator(cluster, namespace)["version"] == "2.0.0"
    assert cluster.get("v1", "ConfigMap", namespace, "cfg")["data"] == {"v": "2.0.0"}


def old_format_record(namespace, version, objects, status="deployed"):
    """A record as the earlier format wrote it: every object, Secret values included, in the ConfigMap."""
    cm = encode_record(Release(KEY, version, "d-old-" + version), namespace, [], meta={"status": status})
    raw = json.dumps(objects, sort_keys=True, separators=(",", ":")).encode()
    cm["binaryData"] = {OBJECTS_KEY: base64.b64encode(gzip.compress(raw)).decode()}
    cm["data"].pop(SECRETS_FIELD)
    cm["data"].update(format="1", objectCount=str(len(objects)))
    return cm


def old_release_in_service(cluster, namespace):
    """1.0.0 deployed by an earlier manent and in service: its record holds the Secret value; the record's name."""
    first = make_bundle([configmap("cfg", v="1"), db_secret("1.0.0")], namespace, version="1.0.0",
                        deployment="d-old-1.0.0")
    for obj in first.objects:
        cluster.apply(obj, manager="manent")
    cluster.kube.request("POST", "/api/v1/namespaces/%s/configmaps" % namespace,
                         body=old_format_record(namespace, "1.0.0", first.objects))
    store = HistoryStore(cluster.kube, namespace, KEY, holder="setup")
    store.acquire()
    store.promote(first.release)
    store.release_lock()
    return record_name(KEY, "1.0.0")


def test_earlier_format_is_read_then_migrated_by_the_next_deploy(cluster, namespace, tmp_path):
    old_name = old_release_in_service(cluster, namespace)
    assert PLAIN["1.0.0"] in readable_text(cluster.get("v1", "ConfigMap", namespace, old_name))

    # Read as it is (no write needed): rollback target, audit and prune candidates all see the Secret.
    meta, objects = HistoryStore(cluster.kube, namespace, KEY).load("1.0.0")
    assert meta["format"] == "1" and [o for o in objects if o["kind"] == "Secret"][0]["stringData"] == {
        "password": PLAIN["1.0.0"]}

    result = deploy(cluster, tmp_path, [configmap("cfg", v="2"), db_secret("2.0.0")], namespace, version="2.0.0")
    assert result.status == "deployed"
    assert any("moved the Secret values of ConfigMap/%s/%s" % (namespace, old_name) in w for w in result.warnings)

    migrated = cluster.get("v1", "ConfigMap", namespace, old_name)
    for needle in needles("1.0.0"):
        assert needle not in readable_text(migrated)
    assert migrated["data"]["format"] == "2" and migrated["data"]["status"] == "superseded"
    assert cluster.get("v1", "Secret", namespace, old_name)["type"] == SECRETS_TYPE

    rolled = deployer(cluster).rollback(namespace, KEY)
    assert rolled.status == "rolled-back" and rolled.release == "1.0.0"
    assert live_password(cluster, namespace) == (PLAIN["1.0.0"], TOKEN_VALUE)
    assert record_status(cluster, namespace, "2.0.0") == "rolled-back"


def test_a_redeployed_version_of_the_earlier_format_is_rewritten_not_migrated(cluster, namespace, tmp_path):
    """Version 1.0.0 in service, recorded by the earlier format, deployed again (another deploy id, another Secret
    value): its record is rewritten in the current format with the new value in its companion Secret. The move
    of earlier-format Secrets, read while the record is written, leaves that record alone: moving it from the
    copy read before would put the old value back into the companion."""
    name = old_release_in_service(cluster, namespace)

    result = deploy(cluster, tmp_path, [configmap("cfg", v="1"), db_secret("2.0.0")], namespace, version="1.0.0")
    assert result.status == "deployed"
    assert not any("moved the Secret values of ConfigMap/%s/%s" % (namespace, name) in w for w in result.warnings)
    assert not any("changed while its Secrets were moved" in w for w in result.warnings), result.warnings
    record = cluster.get("v1", "ConfigMap", namespace, name)
    assert record["data"]["format"] == "2"
    for needle in needles("1.0.0") + needles("2.0.0"):
        assert needle not in readable_text(record)
    _meta, objects = HistoryStore(cluster.kube, namespace, KEY).load("1.0.0")
    assert [o for o in objects if o["kind"] == "Secret"][0]["stringData"] == {"password": PLAIN["2.0.0"]}


def test_missing_companion_is_a_clear_error_before_any_change(cluster, namespace, tmp_path):
    for version in ("1.0.0", "2.0.0"):
        deploy(cluster, tmp_path, [db_secret(version)], namespace, version=version)
    cluster.delete("v1", "Secret", namespace, record_name(KEY, "1.0.0"))
    with pytest.raises(HistoryError) as err:
        deployer(cluster).rollback(namespace, KEY)
    message = str(err.value)
    assert "Secret/%s/%s" % (namespace, record_name(KEY, "1.0.0")) in message and "missing" in message
    assert live_password(cluster, namespace)[0] == PLAIN["2.0.0"], "nothing was changed"
    assert locator(cluster, namespace)["version"] == "2.0.0"


def test_oversized_secrets_stop_before_any_write(cluster, namespace, tmp_path):
    big = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "blob"}, "type": "Opaque",
           "data": {"blob": base64.b64encode(os.urandom(700 * 1024)).decode(),
                    "more": base64.b64encode(os.urandom(300 * 1024)).decode()}}
    with pytest.raises(HistoryError) as err:
        deploy(cluster, tmp_path, [configmap("cfg", v="1"), big], namespace, version="1.0.0")
    assert "Secret objects take" in str(err.value) and "nothing was written" in str(err.value)
    assert labelled_history(cluster, namespace) == {}
    assert [s for s in cluster.list("v1", "Secret", namespace) if s["metadata"]["name"] == "blob"] == []
