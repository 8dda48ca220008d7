# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history's conditioned writes when the API server refuses them (409, 404): which version each attempt starts
from, what is read again, when the lock of another deploy is final, and the error once the attempts are spent
(docs/history.md, Lock). The server's answers are scripted, request by request."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import error_from_status
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    HistoryError, InputError, LockedError)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.history.client import HistoryClient
from ansible_collections.manent.kubernetes.plugins.module_utils.history.companion import Companions
from ansible_collections.manent.kubernetes.plugins.module_utils.history.companion_format import SECRETS_TYPE
from ansible_collections.manent.kubernetes.plugins.module_utils.history.locator import Locator
from ansible_collections.manent.kubernetes.plugins.module_utils.history.locator_format import encode_locator, with_lock
from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import locator_name

T0 = datetime.datetime(2024, 5, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)
KEY = ReleaseKey(application="shop", artifact="shop-api", environment="prod")
NAME = locator_name(KEY) + "-1-0-0"


class _Answer:
    def __init__(self, data):
        self.data = data


class _Scripted:
    """Answers each request with the next answer: an HTTP status (raised as the client raises it) or a body.
    ``sent`` lists (method, the resourceVersion of a written body, or None) of every request."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.sent = []

    def request(self, method, _path, body=None, subject=None, **_kw):
        self.sent.append((method, ((body or {}).get("metadata") or {}).get("resourceVersion")))
        answer = self.answers.pop(0)
        if isinstance(answer, int):
            raise error_from_status(answer, {"message": "answered %d" % answer}, subject=subject)
        return _Answer(answer)


def configmap(version, name=NAME, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns",
                                                                  "resourceVersion": version}, "data": data}


def client_of(kube):
    return HistoryClient(kube, "ns", KEY, now=lambda: T0)


def remembering(kube, cm):
    """A client that read ``cm`` once (its first scripted answer)."""
    kube.answers.insert(0, cm)
    client = client_of(kube)
    client.get(cm["metadata"]["name"])
    kube.sent.clear()
    return client


def marked(cm):
    return dict(cm, data=dict(cm["data"], status="failed"))


# --------------------------------------------------------------------------- HistoryClient.update


def test_update_starts_from_the_remembered_version_and_reads_again_on_409():
    kube = _Scripted(409, configmap("2"), configmap("3", status="failed"))
    client = remembering(kube, configmap("1"))
    written = client.update(NAME, marked, "mark it")
    assert kube.sent == [("PUT", "1"), ("GET", None), ("PUT", "2")]
    assert written["metadata"]["resourceVersion"] == "3" and client.remembered(NAME) is written


@pytest.mark.parametrize("remember", [True, False])
def test_update_gives_up_after_five_conflicting_writes(remember):
    kube = _Scripted(*([409] + [configmap("2"), 409] * 4 if remember else [configmap("2"), 409] * 5))
    client = remembering(kube, configmap("1")) if remember else client_of(kube)
    with pytest.raises(HistoryError) as info:
        client.update(NAME, marked, "mark it")
    assert "cannot mark it: the ConfigMap kept changing under us (5 conflicting writes)" in str(info.value)
    assert info.value.subject == "ConfigMap/ns/" + NAME
    assert "another process is writing this release history" in info.value.hint
    assert [method for method, _version in kube.sent].count("PUT") == 5 and not kube.answers


def test_a_remembered_version_never_decides_alone_not_to_write():
    """Nothing to do, or an error, on the remembered version: read again, and decide on what was read."""
    kube = _Scripted(configmap("2"))
    client = remembering(kube, configmap("1"))
    assert client.update(NAME, lambda cm: None, "mark it")["metadata"]["resourceVersion"] == "2"
    assert kube.sent == [("GET", None)]

    def refuse_the_remembered(cm):
        if cm["metadata"]["resourceVersion"] == "1":
            raise InputError("stale")
        return marked(cm)

    kube = _Scripted(configmap("2"), configmap("3"))
    client = remembering(kube, configmap("1"))
    client.update(NAME, refuse_the_remembered, "mark it")
    assert kube.sent == [("GET", None), ("PUT", "2")]

    def refuse(cm):
        raise InputError("refused version %s" % cm["metadata"]["resourceVersion"])

    kube = _Scripted(configmap("2"))
    with pytest.raises(InputError, match="refused version 2"):  # decided on the fresh read
        remembering(kube, configmap("1")).update(NAME, refuse, "mark it")


def test_update_reads_again_on_404_for_the_remembered_version_then_says_it_is_gone():
    kube = _Scripted(404, 404)
    assert remembering(kube, configmap("1")).update(NAME, marked, "mark it", missing_ok=True) is None
    assert kube.sent == [("PUT", "1"), ("GET", None)]

    kube = _Scripted(404, 404)
    with pytest.raises(HistoryError) as info:
        remembering(kube, configmap("1")).update(NAME, marked, "mark it", missing_hint="save it first")
    assert "cannot mark it: the ConfigMap does not exist" in str(info.value) and info.value.hint == "save it first"


def test_a_404_on_a_fresh_read_s_write_is_an_error_with_the_server_s_text():
    kube = _Scripted(configmap("2"), 404)
    with pytest.raises(HistoryError) as info:
        client_of(kube).update(NAME, marked, "mark it")
    assert "cannot mark it: answered 404" in str(info.value) and "check that namespace ns exists" in info.value.hint
    assert kube.sent == [("GET", None), ("PUT", "2")]


# --------------------------------------------------------------------------- Companions.write_body


def secret(version, kind_of=SECRETS_TYPE):
    return {"apiVersion": "v1", "kind": "Secret", "type": kind_of,
            "metadata": {"name": NAME, "namespace": "ns", "resourceVersion": version}, "data": {}}


def companion_body():
    body = secret(None)
    del body["metadata"]["resourceVersion"]
    return body


def test_a_companion_that_exists_is_replaced_and_one_deleted_meanwhile_created_again():
    kube = _Scripted(409, secret("5"), 409, 404, secret("6"))
    Companions(client_of(kube)).write_body(companion_body(), "save it")
    assert kube.sent[:3] == [("POST", None), ("GET", None), ("PUT", "5")]
    assert [method for method, _version in kube.sent[3:]] == ["GET", "POST"]


def test_a_companion_gives_up_after_five_conflicting_writes():
    kube = _Scripted(*([409] + [secret("5"), 409] * 5))
    with pytest.raises(HistoryError) as info:
        Companions(client_of(kube)).write_body(companion_body(), "save it")
    assert "cannot save it: the Secret kept changing under us" in str(info.value)
    assert info.value.subject == "Secret/ns/" + NAME and "another process is writing" in info.value.hint
    assert not kube.answers


def test_a_secret_of_another_type_is_never_replaced():
    kube = _Scripted(409, secret("5", kind_of="Opaque"))
    with pytest.raises(HistoryError, match="exists and is not of type manent.io/release-secrets.v1"):
        Companions(client_of(kube)).write_body(companion_body(), "save it")
    assert kube.sent == [("POST", None), ("GET", None)]


# --------------------------------------------------------------------------- Locator.acquire


def locator(version, holder="", since=T0):
    cm = encode_locator(KEY, "ns", with_lock({}, holder, since) if holder else {}, now=T0)
    cm["metadata"]["resourceVersion"] = version
    return cm


def test_a_lock_broken_on_a_fresh_read_after_the_remembered_version_was_refused():
    kube = _Scripted(409, locator("2", holder="other"), locator("3", holder="mine"))
    mine = Locator(remembering(kube, locator("1")), holder="mine")
    assert mine.acquire(break_lock=True)["lockHolder"] == "mine"
    assert kube.sent == [("PUT", "1"), ("GET", None), ("PUT", "2")]
    assert mine.client.notes == ["broke the release lock held by deploy 'other' since 2024-05-01T12:00:00Z "
                                 "(break_lock: true) on ConfigMap/ns/" + locator_name(KEY)]


def test_after_a_409_the_lock_of_another_deploy_is_final_even_with_break_lock():
    kube = _Scripted(locator("1"), 409, locator("2", holder="other"))
    with pytest.raises(LockedError, match="deploy 'other' holds the release lock"):
        Locator(client_of(kube), holder="mine").acquire(break_lock=True)
    assert kube.sent == [("GET", None), ("PUT", "1"), ("GET", None)]


def test_a_locator_created_meanwhile_by_another_deploy_keeps_its_lock():
    kube = _Scripted(404, 409, locator("1", holder="other"))
    mine = Locator(client_of(kube), holder="mine")
    assert mine.read() is None
    with pytest.raises(LockedError):
        mine.acquire(break_lock=True)
    assert kube.sent == [("GET", None), ("POST", None), ("GET", None)]


def test_acquire_gives_up_after_five_conflicting_writes():
    kube = _Scripted(*([locator("1")] + [409, locator("1")] * 5))
    with pytest.raises(HistoryError) as info:
        Locator(client_of(kube), holder="mine").acquire()
    assert "cannot lock the release history: the locator kept changing (5 conflicting writes)" in str(info.value)
    assert "another process is writing this release history" in info.value.hint and not kube.answers


def test_a_locator_deleted_after_a_409_is_said_so():
    kube = _Scripted(locator("1"), 409, 404)
    with pytest.raises(HistoryError, match="the locator was deleted while locking it"):
        Locator(client_of(kube), holder="mine").acquire()
