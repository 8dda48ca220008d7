# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubeconfig loader (base/kubeconfig.py) and the exec credential cache (base/exec_credentials.py): variants,
errors that name the kubeconfig, context and field but never a value, renewal before expiry and after a 401."""

import base64
import json
from datetime import datetime, timezone

import pytest
import urllib3
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base import exec_credentials, kubeconfig
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
SECRET = "s3cr3t-token-value-0123456789"


def doc(user=None, cluster=None, current="ctx"):
    fields = {"server": "https://k8s.example.com"}
    fields.update(cluster or {})
    return {"apiVersion": "v1", "kind": "Config", "current-context": current,
            "clusters": [{"name": "c", "cluster": fields}], "users": [{"name": "u", "user": user or {"token": SECRET}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}},
                         {"name": "other", "context": {"cluster": "c", "user": "u"}}]}


def write(tmp_path, content):
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(content))
    return str(path)


def error(source, context=""):
    with pytest.raises(InputError) as err:
        kubeconfig.load(source, context)
    text = str(err.value)
    assert SECRET not in text
    return text


def test_path_inline_mapping_and_env(tmp_path, monkeypatch):
    path = write(tmp_path, doc())
    assert kubeconfig.load(path).token == SECRET
    assert kubeconfig.load(yaml.safe_dump(doc())).label == "inline"
    assert kubeconfig.load(doc(), "other").context == "other"
    monkeypatch.setenv("KC_PATH", path)
    assert kubeconfig.load("env:KC_PATH").label.startswith("env:KC_PATH")
    monkeypatch.setenv("KC_TEXT", yaml.safe_dump(doc()))
    assert kubeconfig.load("env:KC_TEXT").label == "env:KC_TEXT"


def test_cluster_fields_and_relative_paths(tmp_path):
    (tmp_path / "ca.crt").write_text(PEM)
    (tmp_path / "tok").write_text(SECRET)
    target = kubeconfig.load(write(tmp_path, doc({"tokenFile": "tok"}, {
        "certificate-authority": "ca.crt", "tls-server-name": "kubernetes", "proxy-url": "http://proxy:3128"})))
    assert target.ca_file == str(tmp_path / "ca.crt") and target.token_file == str(tmp_path / "tok")
    assert target.tls_server_name == "kubernetes" and target.proxy_url == "http://proxy:3128"
    data = base64.b64encode(PEM.encode()).decode()
    assert kubeconfig.load(doc(cluster={"certificate-authority-data": data})).ca_data == PEM


def test_errors_name_kubeconfig_context_and_field(tmp_path):
    path = write(tmp_path, doc({"username": "admin", "password": SECRET}))
    text = error(path)
    assert path in text and "'ctx'" in text and "username" in text and "removed" in text
    text = error(doc({"auth-provider": {"name": "gcp", "config": {"access-token": SECRET}}}))
    assert "auth-provider 'gcp'" in text and "gke-gcloud-auth-plugin" in text and "inline" in text
    assert "no context 'nope'" in error(doc(), "nope")
    assert "no current-context" in error(dict(doc(), **{"current-context": ""}))
    assert "only https://" in error(doc(cluster={"server": "http://k8s:8080"}))
    assert "socks" in error(doc(cluster={"proxy-url": "socks5://p:1080"}))
    assert "clusters[c].cluster.certificate-authority-data" in error(doc(cluster={"certificate-authority-data": "x"}))
    assert "does not exist" in error(doc({"client-certificate": "/nonexistent.crt", "client-key": "/n.key"}))
    assert "not valid YAML" in error("a: [b\nc: d")
    assert "cannot read kubeconfig" in error(str(tmp_path / "missing"))


def test_exec_entries():
    spec = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws", "args": ["eks", "get-token"],
            "env": [{"name": "AWS_PROFILE", "value": "prod"}], "installHint": "install awscli",
            "provideClusterInfo": True}
    target = kubeconfig.load(doc({"exec": spec}))
    assert target.exec.command == "aws" and target.exec.env == {"AWS_PROFILE": "prod"}
    assert target.exec.interactive_mode == "IfAvailable"
    assert "interactiveMode Always" in error(doc({"exec": dict(spec, interactiveMode="Always")}))
    assert "v1alpha1" in error(doc({"exec": dict(spec, apiVersion="client.authentication.k8s.io/v1alpha1")}))


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


def stamp(epoch):
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def auth(clock, answers, cache_dir="", command="plugin"):
    """An ExecAuth whose plugin answers from ``answers`` (callables of the run's number), recording its env."""
    exec_credentials._MEMORY.clear()  # pylint: disable=protected-access
    target = kubeconfig.load(doc({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": command,
                                           "installHint": "see the docs", "provideClusterInfo": True,
                                           "env": [{"name": "X", "value": "1"}]}}))
    seen = []

    def runner(argv, env, timeout, owner):
        seen.append((argv, env))
        answer = answers[min(len(seen), len(answers)) - 1]
        return answer(len(seen)) if callable(answer) else answer

    return exec_credentials.ExecAuth(target, cache_dir=cache_dir, clock=clock, runner=runner), seen


def credential(clock, lifetime):
    def answer(n):
        return json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                           "status": {"token": "tok-%d" % n, "expirationTimestamp": stamp(clock.now + lifetime)}})
    return answer


def test_cached_until_shortly_before_expiry():
    clock = Clock()
    exec_auth, seen = auth(clock, [credential(clock, 600)])
    assert exec_auth.current().token == "tok-1"
    clock.now += 500
    assert exec_auth.current().token == "tok-1" and len(seen) == 1
    clock.now += 45  # within the last minute (a tenth of 600 s): renewed
    assert exec_auth.current().token == "tok-2"
    info = json.loads(seen[0][1]["KUBERNETES_EXEC_INFO"])
    assert info["spec"]["interactive"] is False and info["spec"]["cluster"]["server"] == "https://k8s.example.com"
    assert seen[0][1]["X"] == "1"


def test_401_runs_the_plugin_once_and_not_again_for_a_renewed_credential():
    clock = Clock()
    exec_auth, seen = auth(clock, [credential(clock, 600)])
    first = exec_auth.current()
    renewed = exec_auth.refresh(first)
    assert renewed.token == "tok-2" and len(seen) == 2
    assert exec_auth.refresh(first).token == "tok-2" and len(seen) == 2  # another request's 401: already renewed
    same = json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                       "status": {"token": "tok-2"}})
    exec_auth2, _seen = auth(clock, [same])
    assert exec_auth2.refresh(exec_auth2.current()) is None  # the plugin gives the refused one again


def test_shared_between_workers_encrypted(tmp_path, monkeypatch):
    monkeypatch.setitem(exec_credentials._SHARED, "key", None)  # pylint: disable=protected-access
    exec_credentials.share_across_workers()
    clock = Clock()
    exec_auth, seen = auth(clock, [credential(clock, 600)], cache_dir=str(tmp_path))
    assert exec_auth.current().token == "tok-1"
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and oct(files[0].stat().st_mode & 0o777) == "0o600"
    assert b"tok-1" not in files[0].read_bytes()
    other, seen_other = auth(clock, [credential(clock, 600)], cache_dir=str(tmp_path))  # memory cleared: a worker
    assert other.current().token == "tok-1" and not seen_other and len(seen) == 1


@pytest.mark.parametrize("answer,text", [
    ("nothing json " + SECRET, "not an ExecCredential"),
    (json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                 "status": {"token": SECRET}}), "not the configured"),
    (json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {}}),
     "neither a token"),
])
def test_bad_answers_name_command_context_and_hint(answer, text):
    exec_auth, _seen = auth(Clock(), [answer])
    with pytest.raises(InputError) as err:
        exec_auth.current()
    message = str(err.value)
    assert text in message and "'plugin'" in message and "'ctx'" in message and "see the docs" in message
    assert SECRET not in message


def test_missing_and_failing_plugins(tmp_path):
    exec_credentials._MEMORY.clear()  # pylint: disable=protected-access
    target = kubeconfig.load(doc({"exec": {"apiVersion": "client.authentication.k8s.io/v1",
                                           "command": str(tmp_path / "nope"), "installHint": "brew install it"}}))
    with pytest.raises(InputError) as err:
        exec_credentials.ExecAuth(target).current()
    assert "was not found" in str(err.value) and "brew install it" in str(err.value)
    script = tmp_path / "fails"
    script.write_text("#!/bin/sh\necho %s >&2\nexit 3\n" % SECRET)
    script.chmod(0o755)
    target.exec.command = str(script)
    with pytest.raises(InputError) as err:
        exec_credentials.ExecAuth(target).current()
    assert "exited with status 3" in str(err.value) and SECRET not in str(err.value)


def test_module_options_kubeconfig_or_static():
    params = {"api_server": None, "port": 6443, "insecure_skip_tls_verify": False, "request_timeout": 30.0,
              "kubeconfig": None, "context": None}
    with pytest.raises(InputError) as err:
        common.connection(params)
    assert "api_server, or kubeconfig" in str(err.value)
    options = common.connection(dict(params, kubeconfig="/k", context="c", work_dir="/tmp/kcu"))
    assert options.kubeconfig == "/k" and options.context == "c" and not options.server
    assert common.connection_warnings(dict(params, kubeconfig="/k")) == []
    both = dict(params, kubeconfig="/k", api_server="https://x", token=SECRET,
                option_names={"kubeconfig": "manent_kubeconfig", "api_server": "manent_api_server"})
    options = common.connection(both)
    assert options.server == "https://x" and not options.kubeconfig
    warning = common.connection_warnings(both)[0]
    assert "manent_kubeconfig" in warning and "manent_api_server, token are used" in warning and SECRET not in warning


class FakeAnswer:
    def __init__(self, status, body):
        self.status = status
        self.data = json.dumps(body).encode()
        self.headers = urllib3.HTTPHeaderDict()

    def release_conn(self):
        pass

    def close(self):
        pass

    def stream(self, amt=None, decode_content=True):
        yield self.data + b"\n"


class FakePool:
    """Answers 401 to any token but ``valid[0]``; records the tokens sent."""

    def __init__(self):
        self.valid = ["tok-1"]
        self.sent = []

    def request(self, method, url, **kw):
        token = kw["headers"].get("Authorization", "")[len("Bearer "):]
        self.sent.append(token)
        if token != self.valid[0]:
            return FakeAnswer(401, {"kind": "Status", "message": "Unauthorized", "code": 401})
        return FakeAnswer(200, {"type": "ADDED", "object": {}} if "watch" in url else {"major": "1", "minor": "34"})

    def clear(self):
        pass


def kube_with(exec_auth):
    from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import ConnectionOptions, Kube
    kube = Kube(ConnectionOptions(server="", kubeconfig=doc(), retries=1, retry_time=0))
    kube._source, kube.target = exec_auth, exec_auth.target  # pylint: disable=protected-access
    kube._pool = FakePool()  # pylint: disable=protected-access
    return kube


def test_requests_and_watches_renew_after_a_401_once():
    clock = Clock()
    exec_auth, seen = auth(clock, [credential(clock, 600)])
    kube = kube_with(exec_auth)
    pool = kube._pool  # pylint: disable=protected-access
    assert kube.get_json("/version")["minor"] == "34" and pool.sent == ["tok-1"]
    for _attempt in range(20):
        kube.get_json("/version")
    assert len(seen) == 1  # no plugin run per request
    pool.valid[0] = "tok-2"  # the credential was revoked: the plugin's next one works
    assert kube.get_json("/version")["minor"] == "34" and pool.sent[-2:] == ["tok-1", "tok-2"] and len(seen) == 2
    pool.valid[0] = "tok-3"  # a WATCH opened with a refused credential resumes with a fresh one
    events = list(kube.stream("/api/v1/pods", query={"watch": "1"}).events())
    assert events == [{"type": "ADDED", "object": {}}] and pool.sent[-2:] == ["tok-2", "tok-3"] and len(seen) == 3
    pool.valid[0] = "never"  # the fresh credential is refused too: reported, the plugin ran once more only
    with pytest.raises(Exception) as err:
        kube.get_json("/version")
    assert getattr(err.value, "status", None) == 401 and "newly obtained credential" in str(err.value)
    assert len(seen) == 4


def test_expiry_renews_between_requests():
    clock = Clock()
    exec_auth, seen = auth(clock, [credential(clock, 10)])
    kube = kube_with(exec_auth)
    pool = kube._pool  # pylint: disable=protected-access
    kube.get_json("/version")
    clock.now += 9.5  # within the last tenth of its 10 s
    pool.valid[0] = "tok-2"
    kube.get_json("/version")
    assert pool.sent == ["tok-1", "tok-2"] and len(seen) == 2


def test_static_options_keep_no_changing_credential():
    from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import ConnectionOptions, Kube
    kube = Kube(ConnectionOptions(server="https://k8s.example.com", token=SECRET))
    assert kube._source is None and kube._headers("application/json")["Authorization"] == "Bearer " + SECRET  # pylint: disable=protected-access
