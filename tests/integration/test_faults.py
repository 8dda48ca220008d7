# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Faults injected into real clusters (issue 14, Faults): processes killed and restarted, connections reset,
answers lost or throttled (hack/tcpproxy.py), a cluster going down during a multi-cluster run, concurrent
deploys, ansible-playbook killed with SIGKILL.

Every test runs on clusters this module starts itself (hack/clusters.py up --dir <tmp> --base-port
MANENT_FAULTS_BASE_PORT, default 19700; three clusters eu1a, eu1b, us1a; booted in the background from the
start of the session) and stops at the end: the shared clusters are never disturbed (MANENT_FAULTS_DIR=<dir>
reuses clusters started there by hand, for development). Nothing is mocked: ``Tap`` only runs a fault (kill
a process) at an exact moment, just before a real request leaves. Each case is written to the reliability records
(tests/reliability.py), from which hack/reliability_report.py writes RELIABILITY.md.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import locator_name, record_name
from ansible_collections.manent.kubernetes.plugins.module_utils.history.record_format import STATUS_DEPLOYED
from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.discovery import Discovery
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, LockedError, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.operations import Traffic, TrafficOptions
from tests import reliability
from tests.integration.deploy_helpers import KEY, deployer, labelled_history, locator, record_status, render_bundle
from tests.integration.kube import Cluster
from tests.integration.playbook_helpers import artifact, base_vars, run_playbook, write_manifest
from tests.objects import configmap, deployment

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HACK = os.path.join(ROOT, "hack")
sys.path.insert(0, HACK)
import clusterctl  # noqa: E402  pylint: disable=wrong-import-position,import-error
import tcpproxy  # noqa: E402  pylint: disable=wrong-import-position,import-error

BASE_PORT = int(os.environ.get("MANENT_FAULTS_BASE_PORT", "19700"))
TOPOLOGY = "eu-1/eu-1a,eu-1/eu-1b,us-1/us-1a"
RESTART_BUDGET = 150.0  # seconds a request may retry while a killed API server restarts (slow shared machines)
SOURCE = "tests/integration/test_faults.py"


# --------------------------------------------------------------------------- dedicated clusters


class Faults:
    """The module's own clusters: handles, their directory, and one-process stop/start."""

    def __init__(self, root):
        self.root = root
        self.inventory = os.path.join(root, "inventory.yml")
        with open(self.inventory, encoding="utf-8") as handle:
            hosts = yaml.safe_load(handle)["all"]["hosts"]
        self.clusters = {name: Cluster.from_hostvars(name, hv) for name, hv in hosts.items()}

    @property
    def first(self):
        return self.clusters["eu1a"]

    def kube(self, name="eu1a", **overrides):
        """A fresh Kube (own connection pool and retry state) on cluster ``name``."""
        overrides.setdefault("retry_time", RESTART_BUDGET)
        return Kube(self.clusters[name].connection(**overrides))

    def restart_later(self, component, down=1.0, name="eu1a"):
        """Kill ``component`` now (SIGKILL); start it again after ``down`` seconds on a thread; returns the
        ``Restart`` (join it before asserting: it raises when the component could not be started again)."""
        clusterctl.stop(self.root, name, component)
        return Restart(self, name, component, down)

    def log_tail(self, name, component, lines=40):
        path = os.path.join(self.clusters[name].dir, "logs", component + ".log")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return "".join(handle.readlines()[-lines:])
        except OSError as exc:
            return "(no log: %s)" % exc


class Restart(threading.Thread):
    """Start a killed component again after ``down`` seconds. The harness, not the product, must bring it back:
    a start that fails (the process exits, or is not ready within START_WAIT) is retried with a fresh process, up
    to START_ATTEMPTS times, and a final failure is kept with the component's log tail and raised by ``join``
    (a thread's exception is otherwise lost, and the deploy under test only sees an API server that never returns)."""

    START_ATTEMPTS = 3
    START_WAIT = 60.0

    def __init__(self, faults, name, component, down):
        super().__init__(daemon=True, name="restart-%s-%s" % (name, component))
        self.faults, self.cluster, self.component, self.down = faults, name, component, down
        self.error = None
        self.start()

    def run(self):
        time.sleep(self.down)
        failures = []
        for attempt in range(1, self.START_ATTEMPTS + 1):
            try:
                clusterctl.start(self.faults.root, self.cluster, self.component, timeout=self.START_WAIT)
                return
            except BaseException as exc:  # pylint: disable=broad-except  # kept for join(), retried first
                tail = self.faults.log_tail(self.cluster, self.component)
                failures.append("attempt %d: %s: %s\n%s" % (attempt, type(exc).__name__, exc, tail))
                try:  # a process that started but is not ready: kill it before the next attempt
                    clusterctl.stop(self.faults.root, self.cluster, self.component)
                except BaseException:  # pylint: disable=broad-except
                    pass
        self.error = "%s of %s could not be started again:\n%s" % (self.component, self.cluster, "\n".join(failures))

    def join(self, timeout=None):
        super().join(timeout)
        if self.is_alive():
            raise AssertionError("%s of %s: still restarting after %ss" % (self.component, self.cluster, timeout))
        if self.error:
            raise AssertionError(self.error)


_BOOT = {}


def _up_command(root):
    return [sys.executable, os.path.join(HACK, "clusters.py"), "up", "--dir", root, "--base-port", str(BASE_PORT),
            "--topology", TOPOLOGY]


def _down(root):
    subprocess.run([sys.executable, os.path.join(HACK, "clusters.py"), "down", "--dir", root], capture_output=True,
                   check=False)
    shutil.rmtree(root, ignore_errors=True)


def boot_in_background():
    """Start this module's clusters now, in the background (tests/conftest.py calls it when the session selected
    a test of this module), so that they boot while the tests before this module run."""
    if os.environ.get("MANENT_FAULTS_DIR") or _BOOT:
        return
    root = tempfile.mkdtemp(prefix="manent-faults-")
    with open(os.path.join(root, "up.log"), "wb") as log:
        _BOOT["proc"] = subprocess.Popen(_up_command(root), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
    _BOOT["root"] = root
    atexit.register(_down, root)  # also when the session ends before the fixture ran


@pytest.fixture(scope="module")
def faults():
    reuse = os.environ.get("MANENT_FAULTS_DIR")  # development: clusters already started there, kept running
    if reuse:
        yield Faults(reuse)
        return
    boot_in_background()
    root, proc = _BOOT["root"], _BOOT["proc"]
    try:
        if proc.wait() != 0:
            with open(os.path.join(root, "up.log"), encoding="utf-8", errors="replace") as log:
                pytest.fail("dedicated fault clusters did not start (base port %d):\n%s" % (BASE_PORT, log.read()[-20000:]),
                            pytrace=False)
        yield Faults(root)
    finally:
        _down(root)


@pytest.fixture
def ns(faults):
    """A fresh namespace on every fault cluster."""
    name = "f-" + uuid.uuid4().hex[:10]
    for c in faults.clusters.values():
        c.create_namespace(name)
    return name


class Tap:
    """Run ``action`` once, just before the first request matching ``match(method, url, body)`` leaves ``kube``
    (the request itself then goes to the real server, as usual)."""

    def __init__(self, kube, match, action):
        self._pool = kube._pool  # pylint: disable=protected-access
        kube._pool = self  # pylint: disable=protected-access
        self.match = match
        self.action = action
        self.fired = False
        self.result = None

    def request(self, method, url, **kw):
        if not self.fired and self.match(method, url, kw.get("body") or b""):
            self.fired = True
            self.result = self.action()
        return self._pool.request(method, url, **kw)

    def __getattr__(self, name):
        return getattr(self._pool, name)


def release_objects(tag):
    return [configmap("settings", v=tag), deployment("web", replicas=2,
                                                     template_annotations={"manent.test/tag": tag})]


def check_consistent(cluster, ns, in_service, versions_saved):
    """History says ``in_service`` is in service, its objects are live, and one record per version exists."""
    loc = locator(cluster, ns)
    assert loc["version"] == in_service, loc
    assert loc["lockHolder"] == "", "the lock is released: %r" % loc
    assert cluster.get("v1", "ConfigMap", ns, "settings")["data"] == {"v": in_service}
    records = sorted(name for name in labelled_history(cluster, ns) if name != locator_name(KEY))
    assert records == sorted(record_name(KEY, v) for v in versions_saved), records
    assert record_status(cluster, ns, in_service) == STATUS_DEPLOYED


def record(case, passed, detail=""):
    reliability.record("fault", case, passed, detail=detail, source=SOURCE)


class Case:
    """Record the case as passed when the block's assertions held, failed (and re-raise) otherwise."""

    def __init__(self, case):
        self.case = case
        self.detail = ""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, _tb):
        record(self.case, exc_type is None, self.detail if exc_type is None else "%s: %s" % (
            exc_type.__name__, str(exc).splitlines()[0][:300] if str(exc) else ""))
        return False


# --------------------------------------------------------------------------- API server / etcd killed


PHASES = {"apply": "eu1a", "wait": "eu1b", "history": "us1a"}  # one cluster per phase: the restarts overlap


def _phase_match(phase, ns):
    """When to kill the API server: at the Deployment's apply, at the first read of it after that (the rollout
    wait), or at the promote (the locator written with the new record in service)."""
    seen = {"patched": False}
    loc_path = "/namespaces/%s/configmaps/%s" % (ns, locator_name(KEY))

    def match(method, url, body):
        applied = method == "PATCH" and "/deployments/web" in url and "dryRun=All" not in url  # not its dry run
        if phase == "apply":
            return applied
        if phase == "wait":
            if applied:
                seen["patched"] = True
                return False
            return seen["patched"] and method == "GET" and "/deployments" in url
        return method == "PUT" and url.split("?")[0].endswith(loc_path) and \
            record_name(KEY, "2.0.0").encode() in body and b'"lockHolder"' in body
    return match


def _ride_out(faults, ns, tmp_path, phase):
    tmp_path.mkdir(parents=True, exist_ok=True)
    name = PHASES[phase]
    cluster = faults.clusters[name]
    deployer(cluster, kube=faults.kube(name), wait_timeout=120).deploy(
        render_bundle(cluster, tmp_path, release_objects("1.0.0"), ns, version="1.0.0"))
    kube = faults.kube(name)
    tap = Tap(kube, _phase_match(phase, ns), lambda: faults.restart_later("kube-apiserver", name=name))
    with Case("kube-apiserver SIGKILLed and restarted during the %s phase: the deploy rides it out, history "
              "consistent, rerun converges" % phase) as case:
        bundle = render_bundle(cluster, tmp_path, release_objects("2.0.0"), ns, version="2.0.0")
        started = time.monotonic()
        try:
            result = deployer(cluster, kube=kube, wait_timeout=120).deploy(bundle)
        finally:  # a failed restart explains a failed deploy: join raises it
            if tap.fired:
                tap.result.join(RESTART_BUDGET)
        assert tap.fired, "the fault was injected"
        assert result.status == "deployed", result.to_dict()
        check_consistent(cluster, ns, "2.0.0", ["1.0.0", "2.0.0"])
        case.detail = "deploy finished %.0fs after the kill" % (time.monotonic() - started)
        again = deployer(cluster, kube=faults.kube(name), wait_timeout=120).deploy(bundle)
        assert again.status == "deployed"
        assert {c.action for c in again.changes} <= {"unchanged"}, [(c.subject, c.action) for c in again.changes]
        check_consistent(cluster, ns, "2.0.0", ["1.0.0", "2.0.0"])


def test_api_server_killed_and_restarted_during_apply_wait_and_history_write(faults, ns, tmp_path):
    """Three deploys at once, one per cluster, each losing its API server (SIGKILL, restarted 1 s later) at a
    different moment: the apply of the Deployment, the rollout wait, the history write of the promote."""
    errors = {}

    def run(phase):
        try:
            _ride_out(faults, ns, tmp_path / phase, phase)
        except BaseException as exc:  # pylint: disable=broad-except  # re-raised below
            errors[phase] = exc
    threads = [threading.Thread(target=run, args=(phase,)) for phase in PHASES]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    for phase, exc in errors.items():
        raise AssertionError("%s phase: %s" % (phase, exc)) from exc


def test_etcd_stopped_for_seconds_during_apply(faults, ns, tmp_path):
    cluster = faults.first
    kube = faults.kube()
    tap = Tap(kube, lambda m, u, b: m == "PATCH" and "/deployments/web" in u and "dryRun=All" not in u,
              lambda: faults.restart_later("etcd", down=4.0))
    with Case("etcd SIGKILLed for 4 s during the apply phase: deploy rides it out, history consistent"):
        bundle = render_bundle(cluster, tmp_path, release_objects("1.0.0"), ns, version="1.0.0")
        try:
            result = deployer(cluster, kube=kube, wait_timeout=120).deploy(bundle)
        finally:
            if tap.fired:
                tap.result.join(RESTART_BUDGET)
        assert tap.fired and result.status == "deployed"
        check_consistent(cluster, ns, "1.0.0", ["1.0.0"])


def test_api_server_restarted_while_the_rollout_wait_watches_it_resumes_and_ends(faults, ns, tmp_path):
    """The rollout wait watches a Deployment (three replicas, ``minReadySeconds: 5``: it takes a while); half a second
    after its WATCH left, the API server is killed and started again 1 s later. The watch breaks, is resumed from its
    resourceVersion (or, answered 410, listed again) once the server is back, and the deploy ends deployed with the
    rollout seen Current."""
    cluster = faults.first
    kube = faults.kube()
    restarts, watches = [], []

    def kill_soon():
        def run():
            time.sleep(0.5)
            restarts.append(faults.restart_later("kube-apiserver"))
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    tap = Tap(kube, lambda m, u, b: m == "GET" and "watch=1" in u and "/deployments" in u, kill_soon)
    Tap(kube, lambda m, u, b: "watch=1" in u and "/deployments" in u and watches.append(u), lambda: None)  # counts
    slow = deployment("web", replicas=3)
    slow["spec"]["minReadySeconds"] = 5
    with Case("kube-apiserver SIGKILLed and restarted while the rollout wait watches: the watch resumes, the wait "
              "ends Current, history consistent") as case:
        bundle = render_bundle(cluster, tmp_path, [configmap("settings", v="1.0.0"), slow], ns, version="1.0.0")
        started = time.monotonic()
        try:
            result = deployer(cluster, kube=kube, wait_timeout=120).deploy(bundle)
        finally:
            if tap.fired:
                tap.result.join(30)
                for restart in restarts:
                    restart.join(RESTART_BUDGET)
        assert tap.fired and restarts, "the API server was killed while the wait watched"
        assert result.status == "deployed", result.to_dict()
        assert [(w["ref"], w["status"]) for w in result.waited] == [("Deployment/%s/web" % ns, "Current")]
        assert cluster.get("apps/v1", "Deployment", ns, "web")["status"]["availableReplicas"] == 3
        assert len(watches) >= 2, watches  # watched again once the server was back
        check_consistent(cluster, ns, "1.0.0", ["1.0.0"])
        case.detail = "deploy finished %.0fs after it started, %d watch requests" % (
            time.monotonic() - started, len(watches))


# --------------------------------------------------------------------------- the proxy: 429, slow, resets


@pytest.fixture
def http_proxy(faults):
    proxy = tcpproxy.Proxy(("127.0.0.1", int(faults.first.url.rsplit(":", 1)[1])), tls_dir=faults.first.dir)
    proxy.start()
    yield proxy
    proxy.stop()


def proxied(faults, proxy, **overrides):
    overrides.setdefault("retry_time", 60)
    return Kube(faults.first.connection(server="https://127.0.0.1:%d" % proxy.port, **overrides))


def test_api_server_gone_longer_than_the_budget_fails_clearly_and_a_rerun_converges(faults, ns, tmp_path,
                                                                                    http_proxy):
    """The API server goes away (every connection reset, new ones refused) at the Deployment's apply and stays
    away longer than the retry budget: the run fails naming the server, the new release is not in service, its
    lock names the holder; once the server is back a rerun (break_lock) converges."""
    cluster = faults.first
    deployer(cluster, kube=proxied(faults, http_proxy), wait_timeout=60).deploy(
        render_bundle(cluster, tmp_path, release_objects("1.0.0"), ns, version="1.0.0"))
    with Case("API server unreachable longer than the retry budget (3 s): clear error naming the server, nothing "
              "claimed in service, stale lock names its holder, rerun converges"):
        # the apply itself (its first attempt, without force), not the dry run of it before the first write
        http_proxy.set(down_on_match="PATCH /apis/apps/v1/namespaces/%s/deployments/web?fieldManager=manent&force=false"
                       % ns)
        bundle = render_bundle(cluster, tmp_path, release_objects("2.0.0"), ns, version="2.0.0")
        with pytest.raises(ManentError) as err:
            deployer(cluster, kube=proxied(faults, http_proxy, retry_time=3), holder="gone@ci:1",
                     wait_timeout=60).deploy(bundle)
        text = str(err.value)
        assert "cannot reach https://127.0.0.1:%d" % http_proxy.port in text and "attempts over" in text, text
        http_proxy.set(refuse=False)
        loc = locator(cluster, ns)
        assert loc["version"] == "1.0.0", "the half-applied 2.0.0 is not in service: %r" % loc
        assert record_status(cluster, ns, "2.0.0") in ("pending", "failed")
        assert loc["lockHolder"] == "gone@ci:1", "the cut-off run could not release its lock: %r" % loc
        with pytest.raises(LockedError) as locked:
            deployer(cluster, kube=faults.kube(), holder="rerun", wait_timeout=60).deploy(bundle)
        assert "gone@ci:1" in str(locked.value) and "break_lock" in str(locked.value)
        result = deployer(cluster, kube=faults.kube(), holder="rerun", break_lock=True, wait_timeout=60).deploy(bundle)
        assert result.status == "deployed"
        assert any("broke the release lock" in w and "gone@ci:1" in w for w in result.warnings), result.warnings
        check_consistent(cluster, ns, "2.0.0", ["1.0.0", "2.0.0"])


def test_throttled_answers_are_retried_after_retry_after_and_the_deploy_succeeds(faults, ns, tmp_path, http_proxy):
    cluster = faults.first
    kube = proxied(faults, http_proxy)
    with Case("HTTP 429 with Retry-After: 2 s on 2 reads: retried after the advertised time"):
        http_proxy.set(throttle_next=2, retry_after=2, throttle_match="GET /version")
        started = time.monotonic()
        assert kube.request("GET", "/version").status == 200
        waited = time.monotonic() - started
        assert http_proxy.stats["throttled"] == 2
        assert waited >= 4.0, "slept at least the two Retry-After times (%.1fs)" % waited
    with Case("HTTP 429 on every 3rd request (applies, history writes, reads) during a deploy: deployed"):
        http_proxy.set(throttle_probability=0.33, retry_after=0, throttle_match="")
        result = deployer(cluster, kube=kube, wait_timeout=60).deploy(
            render_bundle(cluster, tmp_path, release_objects("1.0.0"), ns, version="1.0.0"))
        http_proxy.set(throttle_probability=0.0)
        assert result.status == "deployed" and http_proxy.stats["throttled"] > 2, http_proxy.stats
        check_consistent(cluster, ns, "1.0.0", ["1.0.0"])
    with Case("HTTP 429 with a Retry-After beyond the retry budget: reported at once, not slept through"):
        short = proxied(faults, http_proxy, retry_time=5)
        http_proxy.set(throttle_next=1, retry_after=3600, throttle_match="GET /version")
        before = http_proxy.stats["requests"]
        with pytest.raises(ApiError) as err:
            short.request("GET", "/version")
        assert err.value.status == 429 and err.value.retry_after == 3600
        assert http_proxy.stats["requests"] - before == 1, "not retried"


@pytest.mark.parametrize("status", [400, 403, 404, 409, 422])
def test_permanent_errors_are_never_retried(faults, ns, http_proxy, status):
    kube = proxied(faults, http_proxy)
    forbidden = proxied(faults, http_proxy, token="file:" + os.path.join(faults.first.dir, "deployer.token"))
    cm_path = "/api/v1/namespaces/%s/configmaps" % ns
    kube.request("POST", cm_path, body=configmap("exists", v="1"))
    requests = {
        400: lambda: kube.request("POST", cm_path, body=b"{not json"),
        403: lambda: forbidden.request("GET", "/api/v1/namespaces/kube-system/secrets"),
        404: lambda: kube.request("GET", cm_path + "/missing"),
        409: lambda: kube.request("POST", cm_path, body=configmap("exists", v="2")),
        422: lambda: kube.request("PATCH", cm_path + "/Bad_Name", query={"fieldManager": "t"},
                                  body=configmap("Bad_Name", v="1"), content_type="application/apply-patch+yaml"),
    }
    with Case("permanent error %d: sent once, never retried, the server's message kept" % status):
        before = http_proxy.stats["requests"]
        with pytest.raises(ApiError) as err:
            requests[status]()
        assert err.value.status == status, err.value
        assert http_proxy.stats["requests"] - before == 1, "exactly one request for a %d" % status


def test_lost_answers_of_writes_are_retried_safely(faults, ns, tmp_path, http_proxy):
    """The request reaches the API server and is handled, then the connection is reset before the answer: an
    SSA PATCH and a conditional PUT are repeated (declarative / 409 re-read), a history POST is sent again and
    its 409 read as "exists"."""
    cluster = faults.first
    kube = proxied(faults, http_proxy)
    deployer(cluster, kube=kube, wait_timeout=60).deploy(
        render_bundle(cluster, tmp_path, release_objects("1.0.0"), ns, version="1.0.0"))
    for method in ("PATCH", "PUT", "POST"):
        with Case("connection reset after the server handled a %s (answer lost) during a deploy: "
                  "retried safely, deployed, nothing duplicated" % method):
            version = {"PATCH": "2.0.0", "PUT": "3.0.0", "POST": "4.0.0"}[method]
            before = http_proxy.stats["lost"]
            http_proxy.set(lose_response_next=2, lose_response_match=method + " ")
            result = deployer(cluster, kube=kube, wait_timeout=60).deploy(
                render_bundle(cluster, tmp_path, release_objects(version), ns, version=version))
            http_proxy.set(lose_response_next=0)
            assert http_proxy.stats["lost"] - before == 2
            assert result.status == "deployed", result.to_dict()
            saved = ["1.0.0", "2.0.0", "3.0.0", "4.0.0"]
            check_consistent(cluster, ns, version, saved[:saved.index(version) + 1])


def test_slow_and_resetting_connections(faults, ns, tmp_path):
    cluster = faults.first
    proxy = tcpproxy.Proxy(("127.0.0.1", int(cluster.url.rsplit(":", 1)[1])), seed=14)
    proxy.start()
    try:
        kube = Kube(cluster.connection(server="https://127.0.0.1:%d" % proxy.port, retry_time=60))
        with Case("50 ms per round trip (every request): deployed"):
            proxy.set(delay_ms=50)
            result = deployer(cluster, kube=kube, wait_timeout=60).deploy(
                render_bundle(cluster, tmp_path, release_objects("1.0.0"), ns, version="1.0.0"))
            assert result.status == "deployed"
            check_consistent(cluster, ns, "1.0.0", ["1.0.0"])
        with Case("TCP resets: 30% of connections reset at a random byte of their first 64 KiB: deployed"):
            proxy.set(delay_ms=0, reset_probability=0.3)
            proxy.drop_connections()
            result = deployer(cluster, kube=kube, wait_timeout=60).deploy(
                render_bundle(cluster, tmp_path, release_objects("2.0.0"), ns, version="2.0.0"))
            proxy.set(reset_probability=0.0)
            assert result.status == "deployed" and proxy.stats["resets"] > 0, proxy.stats
            check_consistent(cluster, ns, "2.0.0", ["1.0.0", "2.0.0"])
    finally:
        proxy.stop()


# --------------------------------------------------------------------------- concurrency: the lock


class Hold:
    """Holds a deploy just before its first apply of the Deployment (after it took the lock) until released."""

    def __init__(self, kube):
        self.reached = threading.Event()
        self.go = threading.Event()
        Tap(kube, lambda m, u, b: m == "PATCH" and "/deployments/web" in u and "dryRun=All" not in u, self._hold)

    def _hold(self):
        self.reached.set()
        self.go.wait(120)


def test_concurrent_operations_exactly_one_proceeds_the_other_names_the_holder(faults, ns, tmp_path):
    cluster = faults.first
    for version in ("1.0.0", "2.0.0"):
        deployer(cluster, kube=faults.kube(), wait_timeout=60).deploy(
            render_bundle(cluster, tmp_path, release_objects(version), ns, version=version))
    kube = faults.kube()
    hold = Hold(kube)
    outcome = {}

    def first():
        try:
            outcome["first"] = deployer(cluster, kube=kube, holder="deploy-one@ci:1", wait_timeout=60).deploy(
                render_bundle(cluster, tmp_path, release_objects("3.0.0"), ns, version="3.0.0")).status
        except ManentError as exc:  # pragma: no cover - reported by the assertion below
            outcome["first"] = exc
    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert hold.reached.wait(60), "the first deploy reached its apply phase"
        others = {
            "a second deploy of the same release": lambda: deployer(
                cluster, kube=faults.kube(), holder="deploy-two@ci:2").deploy(
                render_bundle(cluster, tmp_path, release_objects("3.0.0"), ns, version="3.0.0")),
            "a rollback": lambda: deployer(cluster, kube=faults.kube(), holder="rollback@ci:3").rollback(ns, KEY),
            "a traffic step": lambda: Traffic(faults.first.kube, Discovery(faults.first.kube), ns, KEY, TrafficOptions(
                route="shop", service="shop", holder="traffic@ci:4")).run("step", 10),
        }
        for what, run in others.items():
            with Case("%s while a deploy holds the lock: refused naming the holder, nothing written" % what):
                before = cluster.get("v1", "ConfigMap", ns, "settings")["metadata"]["resourceVersion"]
                with pytest.raises(LockedError) as err:
                    run()
                assert "deploy-one@ci:1" in str(err.value) and "break_lock" in str(err.value), str(err.value)
                assert cluster.get("v1", "ConfigMap", ns, "settings")["metadata"]["resourceVersion"] == before
    finally:
        hold.go.set()
        thread.join(120)
    with Case("the deploy holding the lock proceeds to the end while the others were refused"):
        assert outcome["first"] == "deployed", outcome
        check_consistent(cluster, ns, "3.0.0", ["1.0.0", "2.0.0", "3.0.0"])


def test_two_deploys_racing_for_a_new_release_key_exactly_one_wins(faults, ns, tmp_path):
    cluster = faults.first
    barrier = threading.Barrier(2, timeout=30)
    outcomes = {}
    locator_path = "/configmaps/" + locator_name(KEY)

    def run(i):
        kube = faults.kube()
        Tap(kube, lambda m, u, b: m == "GET" and u.split("?")[0].endswith(locator_path), barrier.wait)
        try:
            outcomes[i] = deployer(cluster, kube=kube, holder="racer-%d@ci" % i, wait_timeout=60).deploy(
                render_bundle(cluster, tmp_path, release_objects("1.%d.0" % i), ns, version="1.%d.0" % i)).status
        except LockedError as exc:
            outcomes[i] = exc
    with Case("two deploys of one release key started at the same instant: exactly one proceeds, the other "
              "names the winner"):
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        wins = [i for i, o in outcomes.items() if o == "deployed"]
        losses = [o for o in outcomes.values() if isinstance(o, LockedError)]
        assert len(wins) == 1 and len(losses) == 1, outcomes
        assert "racer-%d@ci" % wins[0] in str(losses[0])
        winner = "1.%d.0" % wins[0]
        check_consistent(cluster, ns, winner, [winner])


def test_an_expired_lock_is_taken_over_with_a_note(faults, ns, tmp_path):
    cluster = faults.first
    deployer(cluster, kube=faults.kube()).deploy(render_bundle(cluster, tmp_path, release_objects("1.0.0"), ns))
    with Case("stale lock of a killed deploy: refused naming the holder while held, taken over (with a warning) "
              "once expired"):
        name = locator_name(KEY)
        cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
                       "data": {"lockHolder": "killed@ci:99", "lockSince": "2026-01-01T00:00:00Z",
                                "lockExpires": "2099-01-01T00:00:00Z"}}, manager="fault-test")
        bundle = render_bundle(cluster, tmp_path, release_objects("2.0.0"), ns, version="2.0.0")
        with pytest.raises(LockedError) as err:
            deployer(cluster, kube=faults.kube(), holder="next@ci").deploy(bundle)
        assert "killed@ci:99" in str(err.value) and "2099-01-01" in str(err.value)
        # time passes: the lock's expiry is now in the past
        cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
                       "data": {"lockHolder": "killed@ci:99", "lockSince": "2026-01-01T00:00:00Z",
                                "lockExpires": "2026-01-01T00:15:00Z"}}, manager="fault-test")
        result = deployer(cluster, kube=faults.kube(), holder="next@ci").deploy(bundle)
        assert result.status == "deployed"
        assert any("took over the expired release lock" in w and "killed@ci:99" in w for w in result.warnings), \
            result.warnings
        check_consistent(cluster, ns, "2.0.0", ["1.0.0", "2.0.0"])


# --------------------------------------------------------------------------- ansible-playbook


def _manifest(tmp_path, name="web", annotations=None, extra_configmaps=0):
    """A ConfigMap and a Deployment whose pods change with ${VERSION} (each release rolls out new pods), plus
    ``extra_configmaps`` ConfigMaps (a longer apply phase)."""
    pod_annotations = {"manent.test/release": "${VERSION}"}
    pod_annotations.update(annotations or {})
    extra = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "extra-%02d" % i},
              "data": {"v": "${VERSION}"}} for i in range(extra_configmaps)]
    return write_manifest(str(tmp_path / ("%s-%s.yaml" % (name, uuid.uuid4().hex[:6]))), [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"v": "${VERSION}"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}, "annotations": pod_annotations},
                               "spec": {"containers": [{"name": name, "image": "registry.k8s.io/pause:3.10"}]}}}}]
        + extra)


WEB_KEY = ReleaseKey(application="web", artifact="web", environment="test")  # the release key of _vars


def _vars(tmp_path, ns, version, manifest):
    return base_vars(tmp_path, ns, deploy_application="web", deploy_wait_timeout="20s",
                     deploy_artifact=artifact("web", version, manifest), deploy_variables={"VERSION": version})


def test_one_cluster_down_during_a_multi_cluster_run(faults, ns, tmp_path):
    """eu1b is reached through a proxy that goes down at eu1b's first write (after the plan read every cluster):
    eu1b fails, eu1a (same wave) deploys, us1a (next wave) is not started; -l eu1b converges. (Down after
    the lock was taken, the rerun names the stale lock: test_api_server_gone_longer_than_the_budget...)"""
    eu1b = faults.clusters["eu1b"]
    proxy = tcpproxy.Proxy(("127.0.0.1", int(eu1b.url.rsplit(":", 1)[1])), tls_dir=eu1b.dir)
    proxy.start()
    try:
        with open(faults.inventory, encoding="utf-8") as handle:
            inv = yaml.safe_load(handle)
        inv["all"]["hosts"]["eu1b"]["manent_api_server"] = "https://127.0.0.1:%d" % proxy.port
        inventory = str(tmp_path / "inventory.yml")
        with open(inventory, "w", encoding="utf-8") as handle:
            yaml.safe_dump(inv, handle)
        manifest = _manifest(tmp_path)
        extra = _vars(tmp_path, ns, "1.0.0", manifest)
        with Case("one of three clusters down during a role run: it is reported failed, the other cluster of its "
                  "wave deploys, the next wave is not started; rerun with -l converges"):
            # down at eu1b's first write: the deploy's lock on the new release key (a create)
            proxy.set(down_on_match="POST /api/v1/namespaces/%s/configmaps" % ns)
            run = run_playbook("deploy", inventory, extra, tmp_path / "run1")
            assert run.rc != 0, run.explain()
            statuses = {h: e["status"] for h, e in run.summary.items()}
            assert statuses == {"eu1a": "deployed", "eu1b": "failed", "us1a": "not started"}, run.explain()
            assert "cannot reach https://127.0.0.1:%d" % proxy.port in run.summary["eu1b"]["message"], run.summary
            assert locator(faults.clusters["eu1a"], ns, WEB_KEY)["version"] == "1.0.0"
            assert locator(faults.clusters["us1a"], ns, WEB_KEY) is None, "the next wave was not touched"
            eu1b_loc = locator(eu1b, ns, WEB_KEY)
            assert eu1b_loc is None or eu1b_loc["version"] == "", eu1b_loc
            proxy.set(refuse=False)
            rerun = run_playbook("deploy", inventory, extra, tmp_path / "run2", limit="eu1b")
            assert rerun.rc == 0, rerun.explain()
            assert {h: e["status"] for h, e in rerun.summary.items()} == {"eu1b": "deployed"}, rerun.explain()
            assert locator(eu1b, ns, WEB_KEY)["version"] == "1.0.0" and locator(eu1b, ns, WEB_KEY)["lockHolder"] == ""
    finally:
        proxy.stop()


def _descendants(root):
    """Pids of every process below ``root`` (from /proc), deepest last."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, encoding="utf-8", errors="replace") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kill_when(args, ready, timeout=120):
    """Start ansible-playbook (own process group), SIGKILL the whole group once ``ready()``; returns the output."""
    out = args[2]
    with open(out, "wb") as handle:
        proc = subprocess.Popen(args[0], cwd=ROOT, env=args[1], stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            if proc.poll() is not None:
                with open(out, encoding="utf-8", errors="replace") as handle:
                    raise AssertionError("ansible-playbook ended before the fault: %s" % handle.read()[-4000:])
            if time.monotonic() > deadline:
                raise AssertionError("the fault moment never came")
            time.sleep(0.05)
    finally:
        # the whole tree, ansible-playbook last: Ansible runs a local module in its own session, which would outlive
        # its controller, and a worker that sees ansible-playbook end first would clean up (plugin_utils/stopping.py)
        for pid in _descendants(proc.pid) + [proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(30)
    with open(out, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _playbook_command(tmp_path, extra, limit):
    vars_file = str(tmp_path / "kill-vars.json")
    with open(vars_file, "w", encoding="utf-8") as handle:
        json.dump(extra, handle)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    return ([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", limit[1],
             os.path.join(ROOT, "playbooks", "deploy.yml"), "-e", "@" + vars_file, "-l", limit[0]], env,
            str(tmp_path / ("killed-%s.log" % uuid.uuid4().hex[:6])))


def test_ansible_playbook_killed_mid_apply_and_mid_wait_rerun_converges(faults, ns, tmp_path):
    cluster = faults.first
    target = ("eu1a", faults.inventory)
    first = _vars(tmp_path, ns, "1.0.0", _manifest(tmp_path))
    run = run_playbook("deploy", faults.inventory, first, tmp_path / "r0", limit="eu1a")
    assert run.rc == 0, run.explain()

    with Case("ansible-playbook SIGKILLed mid-apply: history keeps the old release in service, the stale lock "
              "names its holder"):
        extra = _vars(tmp_path, ns, "2.0.0", _manifest(tmp_path, extra_configmaps=30))
        _kill_when(_playbook_command(tmp_path, extra, target),
                   lambda: (locator(cluster, ns, WEB_KEY) or {}).get("lockHolder", "") != "")
        loc = locator(cluster, ns, WEB_KEY)
        assert loc["version"] == "1.0.0" and loc["lockHolder"], loc
        holder = loc["lockHolder"]
        with pytest.raises(LockedError) as err:
            deployer(cluster, kube=faults.kube(), holder="probe").deploy(
                render_bundle(cluster, tmp_path, release_objects("9.0.0"), ns, version="9.0.0", key=WEB_KEY))
        assert holder in str(err.value) and "break_lock" in str(err.value)

    with Case("ansible-playbook SIGKILLed mid-wait (after taking over with break_lock): in service unchanged"):
        extra = _vars(tmp_path, ns, "3.0.0", _manifest(tmp_path, annotations={"manent.test/never-ready": "true"}))
        extra["deploy_break_lock"] = True

        def waiting():
            dep = cluster.get("apps/v1", "Deployment", ns, "web") or {}
            annotations = dep.get("spec", {}).get("template", {}).get("metadata", {}).get("annotations") or {}
            return "manent.test/never-ready" in annotations
        _kill_when(_playbook_command(tmp_path, extra, target), waiting)
        loc = locator(cluster, ns, WEB_KEY)
        assert loc["version"] == "1.0.0" and loc["lockHolder"] not in ("", holder), loc
        assert record_status(cluster, ns, "3.0.0", WEB_KEY) == "pending"
        holder = loc["lockHolder"]

    with Case("rerun after SIGKILL with break_lock: true converges, the broken lock and its holder reported"):
        extra = _vars(tmp_path, ns, "3.0.0", _manifest(tmp_path))
        extra["deploy_break_lock"] = True
        run = run_playbook("deploy", faults.inventory, extra, tmp_path / "r3", limit="eu1a")
        assert run.rc == 0, run.explain()
        assert "broke the release lock held by deploy %r" % holder in run.output, run.explain()
        loc = locator(cluster, ns, WEB_KEY)
        assert loc["version"] == "3.0.0" and loc["lockHolder"] == ""
        assert record_status(cluster, ns, "3.0.0", WEB_KEY) == STATUS_DEPLOYED
        assert record_status(cluster, ns, "2.0.0", WEB_KEY) in ("pending", "failed", None)


# --------------------------------------------------------------------------- soak (make soak, not make test)


SOAK_ROUNDS = int(os.environ.get("MANENT_SOAK_ROUNDS", "0"))


def _nth_request(nth):
    """A Tap match that is true for the ``nth`` request only."""
    count = {"n": 0}

    def match(_m, _u, _b):
        count["n"] += 1
        return count["n"] == nth
    return match


@pytest.mark.skipif(not SOAK_ROUNDS, reason="make soak (MANENT_SOAK_ROUNDS) runs the randomized fault rounds")
def test_soak_randomized_faults(faults, ns, tmp_path):
    """Rounds of deploys, each under a fault drawn at random (seeded: MANENT_SOAK_SEED reproduces a run): after
    every round the history names as in service exactly the last release that was fully deployed, the lock is
    free and the live objects are that release's. A round may fail (a fault longer than the budget); the next
    one must then converge."""
    import random  # pylint: disable=import-outside-toplevel
    seed = int(os.environ.get("MANENT_SOAK_SEED") or time.time())
    rng = random.Random(seed)
    cluster = faults.first
    proxy = tcpproxy.Proxy(("127.0.0.1", int(cluster.url.rsplit(":", 1)[1])), tls_dir=cluster.dir, seed=seed)
    proxy.start()
    in_service, saved = None, []
    try:
        for round_no in range(SOAK_ROUNDS):
            version = "%d.0.0" % (round_no + 1)
            fault = rng.choice(["none", "apiserver", "etcd", "throttle", "lose", "slow", "down"])
            kube = Kube(cluster.connection(server="https://127.0.0.1:%d" % proxy.port, retry_time=RESTART_BUDGET))
            restart = {}
            proxy.reset_settings()
            if fault in ("apiserver", "etcd"):
                nth = rng.randint(1, 40)
                match = _nth_request(nth)
                component = "kube-apiserver" if fault == "apiserver" else "etcd"
                tap = Tap(kube, match, lambda c=component: faults.restart_later(c, down=rng.uniform(0.5, 4)))
                restart["tap"] = tap
            elif fault == "throttle":
                proxy.set(throttle_probability=rng.uniform(0.1, 0.5), retry_after=rng.choice([0, 1]))
            elif fault == "lose":
                proxy.set(lose_response_next=rng.randint(1, 4), lose_response_match=rng.choice(["PATCH ", "PUT ", "POST ", ""]))
            elif fault == "slow":
                proxy.set(delay_ms=rng.choice([20, 50, 100]))
            elif fault == "down":
                proxy.set(down_on_match=rng.choice(["PATCH ", "PUT ", "GET "]))
                kube.options.retry_time = 3
            detail = "seed %d round %d fault %s" % (seed, round_no, fault)
            with Case("soak: deploy %s under a random fault (%s)" % (version, fault)) as case:
                case.detail = detail
                try:
                    deployer(cluster, kube=kube, holder="soak@%d" % round_no, break_lock=True, wait_timeout=120).deploy(
                        render_bundle(cluster, tmp_path, release_objects(version), ns, version=version))
                    in_service = version
                except ManentError as exc:
                    assert fault in ("down", "apiserver", "etcd"), "%s: %s" % (detail, exc)
                finally:
                    if "tap" in restart and restart["tap"].fired:
                        restart["tap"].result.join(RESTART_BUDGET)
                    proxy.reset_settings()
                saved.append(version)
                loc = locator(cluster, ns)
                if in_service:
                    assert loc["version"] == in_service, (detail, loc)
                    assert cluster.get("v1", "ConfigMap", ns, "settings")["data"]["v"] in (in_service, version)
                if in_service == version:
                    assert loc["lockHolder"] == "" and record_status(cluster, ns, version) == STATUS_DEPLOYED, loc
                    assert cluster.get("v1", "ConfigMap", ns, "settings")["data"] == {"v": version}
    finally:
        proxy.stop()
