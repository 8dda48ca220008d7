# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Session fixtures for integration tests: real local clusters (hack/clusters.py), never mocks.

By default the fixture starts the clusters of hack/clusters.py (or reuses the ones already running
in .clusters/) and stops them at the end of the session if it started them. To run the tests
against clusters you already have, set MANENT_TEST_INVENTORY to an inventory in the same format
(see docs/testing.md). If the clusters cannot start, the session fails: it never skips.
"""

import fcntl
import os
import subprocess
import sys
import uuid

import pytest
import yaml

from tests.integration import prometheus_helpers
from tests.integration.kube import Cluster

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTERS_DIR = os.environ.get("MANENT_CLUSTERS_DIR", os.path.join(ROOT, ".clusters"))
PROMETHEUS_DIR = os.environ.get("MANENT_PROMETHEUS_DIR", os.path.join(ROOT, ".prometheus"))


def _load_inventory(path):
    with open(path) as f:
        inv = yaml.safe_load(f)
    hosts = inv["all"]["hosts"]
    return [Cluster.from_hostvars(name, hv) for name, hv in hosts.items()]


@pytest.fixture(scope="session")
def clusters():
    external = os.environ.get("MANENT_TEST_INVENTORY")
    if external:
        yield _load_inventory(external)
        return
    script = os.path.join(ROOT, "hack", "clusters.py")
    os.makedirs(CLUSTERS_DIR, exist_ok=True)
    with open(os.path.join(CLUSTERS_DIR, ".fixture.lock"), "w", encoding="utf-8") as lock:
        # pytest -n: one worker starts the clusters, the others wait here and then find them running
        fcntl.flock(lock, fcntl.LOCK_EX)
        status = subprocess.run([sys.executable, script, "status", "--dir", CLUSTERS_DIR],
                                capture_output=True, text=True, check=False)
        started = status.returncode != 0
        if started:
            up = subprocess.run([sys.executable, script, "up", "--dir", CLUSTERS_DIR], capture_output=True,
                                text=True, check=False)
            if up.returncode != 0:
                pytest.fail("local clusters did not start:\n%s\n%s" % (up.stdout, up.stderr[-20000:]),
                            pytrace=False)
    # A pytest-xdist worker leaves the clusters it started running: the other workers may still be using them
    # (make clusters-down stops them).
    started = started and not os.environ.get("PYTEST_XDIST_WORKER")
    try:
        found = _load_inventory(os.path.join(CLUSTERS_DIR, "inventory.yml"))
        if len(found) < 2:
            pytest.fail("integration tests need at least 2 clusters, inventory has %d" % len(found), pytrace=False)
        yield found
    finally:
        if started and os.environ.get("MANENT_KEEP_CLUSTERS") != "1":
            subprocess.run([sys.executable, script, "down", "--dir", CLUSTERS_DIR], check=False)


@pytest.fixture(scope="session")
def cluster(clusters):
    return clusters[0]


@pytest.fixture(scope="session")
def inventory_path(clusters):
    return os.environ.get("MANENT_TEST_INVENTORY") or os.path.join(CLUSTERS_DIR, "inventory.yml")


@pytest.fixture
def namespace(cluster):
    """A fresh namespace on the first cluster, deleted after the test."""
    name = "t-" + uuid.uuid4().hex[:10]
    cluster.create_namespace(name)
    yield name
    cluster.delete_namespace(name)


@pytest.fixture
def namespaces(clusters):
    """The same fresh namespace on every cluster."""
    name = "t-" + uuid.uuid4().hex[:10]
    for c in clusters:
        c.create_namespace(name)
    yield name
    for c in clusters:
        c.delete_namespace(name)


@pytest.fixture(scope="session")
def prometheus():
    """The shared Prometheus rig (hack/prometheus.py: Prometheus scraping the traffic exporter every second), a
    prometheus_helpers.PrometheusRig: ``.url``, ``.client``, ``.exporter``, ``.service()``. Started once (pytest -n:
    one worker starts it, the others wait on a lock in .prometheus/ and reuse it), stopped at the end by the
    session that started it unless that is a pytest-xdist worker or MANENT_KEEP_PROMETHEUS=1
    (make prometheus-down stops it). A start failure fails the session: these tests never skip."""
    shared, started = prometheus_helpers.start_shared(PROMETHEUS_DIR)
    started = started and not os.environ.get("PYTEST_XDIST_WORKER")
    try:
        yield shared
    finally:
        if started and os.environ.get("MANENT_KEEP_PROMETHEUS") != "1":
            prometheus_helpers.stop_shared(PROMETHEUS_DIR)


@pytest.fixture
def traffic(prometheus):
    """A service label of this test's own on the shared exporter (prometheus_helpers.Service): ``set(slot, rps=...,
    error_ratio=..., latency_seconds=...)``, ``selector(slot=...)``; forgotten after the test."""
    service = prometheus.service()
    yield service
    service.reset()


@pytest.fixture
def private_prometheus(prometheus, tmp_path):
    """Start Prometheus instances of this test's own, scraping the shared exporter, that it may stop, kill, pause
    and start again: ``private_prometheus(auth=None | "basic" | "bearer")`` returns a prometheus_helpers.Instance.
    Every one is stopped after the test."""
    instances = []

    def start(auth=None):
        instance = prometheus.start_private(tmp_path / ("prometheus-%d" % len(instances)), auth=auth)
        instances.append(instance)
        return instance

    yield start
    for instance in instances:
        instance.close()
