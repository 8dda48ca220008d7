# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start and stop local Kubernetes clusters for tests and the demo: no Docker, real components.

Each cluster is etcd + kube-apiserver + kube-controller-manager + kube-scheduler + kwok (fake nodes
whose pods really become Ready), on loopback, with its own CA, TLS serving certificate, static tokens,
client-certificate authentication, Node,RBAC authorization and service-account token issuing.

    python3 hack/clusters.py up   [--dir .clusters] [--topology eu-1/eu-1a,eu-1/eu-1b,us-1/us-1a:strict] [--controller-qps N]
    python3 hack/clusters.py down [--dir .clusters]
    python3 hack/clusters.py status [--dir .clusters]
    python3 hack/clusters.py nodes  [--dir .clusters]   # bring running clusters' nodes up to date

Nodes carry the labels of real nodes (kubernetes.io/os, kubernetes.io/arch, kubernetes.io/hostname,
topology.kubernetes.io/region and zone from the topology) and the capacity of an 8-CPU/32 GiB machine.

`up` writes <dir>/inventory.yml (one host per API server, groups region_<r> and az_<z>),
<dir>/state.json (ports, pids, credential files) and per-cluster credentials under <dir>/<name>/.
Binaries come from hack/build-tools.sh (cached outside the clone, keyed by version).
"""

import argparse
import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pki  # noqa: E402  pylint: disable=wrong-import-position

# region/az[:pki style]. us-1a's PKI is RFC 5280-strict, the others minimal as EKS's (hack/pki.py): every test
# run reaches both kinds of cluster.
DEFAULT_TOPOLOGY = "eu-1/eu-1a,eu-1/eu-1b,us-1/us-1a:strict"
NODES_PER_CLUSTER = 3
START_TIMEOUT = 180


def versions():
    """The pins of hack/versions.env as a dict (KEY=VALUE lines; comments ignored). The one reader of that
    file in Python: bench/bench.py and tests/helpers.py import it from here."""
    out = {}
    with open(os.path.join(HERE, "versions.env"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.split("=", 1)
                out[k.strip()] = v.strip().strip("\"'")
    return out


def cache_dir():
    """$MANENT_CACHE, else $XDG_CACHE_HOME/manent, else ~/.cache/manent (as hack/build-tools.sh)."""
    return os.environ.get("MANENT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "manent")


def binaries():
    v = versions()
    c = cache_dir()
    paths = {
        "etcd": os.path.join(c, "etcd-%s" % v["ETCD_VERSION"], "bin", "etcd"),
        "kwok": os.path.join(c, "kwok-%s" % v["KWOK_VERSION"], "bin", "kwok"),
        "helm": os.path.join(c, "helm-%s" % v["HELM_VERSION"], "bin", "helm"),
        "crds": os.path.join(c, "crds-gateway-%s-istio-%s" % (v["GATEWAY_API_VERSION"], v["ISTIO_API_VERSION"])),
        "capi_crds": os.path.join(c, "crds-cluster-api-%s" % v["CLUSTER_API_VERSION"], "cluster-api.yaml"),
    }
    for comp in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        paths[comp] = os.path.join(c, "kubernetes-%s" % v["K8S_VERSION"], "bin", comp)
    missing = [p for k, p in paths.items() if not os.path.exists(p)]
    if missing:
        subprocess.run(["bash", os.path.join(HERE, "build-tools.sh")], check=True)
    return paths


# ---------------------------------------------------------------- certificates

def _write(path, data, mode=0o600):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def make_pki(d, style="minimal"):
    """The cluster's CA, serving and client certificates, service-account key; ``style`` as hack/pki.py."""
    from cryptography.hazmat.primitives import serialization  # pylint: disable=import-outside-toplevel
    from cryptography.hazmat.primitives.asymmetric import rsa  # pylint: disable=import-outside-toplevel
    ca = pki.Authority("manent-test-ca-%s" % os.path.basename(d), style=style)
    _write(os.path.join(d, "ca.crt"), pki.cert_pem(ca.cert), 0o644)
    _write(os.path.join(d, "ca.key"), pki.key_pem(ca.key))
    for name, cn, orgs, server in (("serving", "kube-apiserver", (), True),
                                   ("admin", "manent-admin", ("system:masters",), False),
                                   ("deployer-client", "manent-deployer-cert", ("manent:deployers",), False)):
        cert, key = ca.issue(cn, orgs=orgs, server=server)
        _write(os.path.join(d, name + ".crt"), pki.cert_pem(cert), 0o644)
        _write(os.path.join(d, name + ".key"), pki.key_pem(key))
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write(os.path.join(d, "sa.key"), pki.key_pem(sa))
    _write(os.path.join(d, "sa.pub"), sa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)


# ---------------------------------------------------------------- processes

def kubeconfig(path, url, d):
    cfg = {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": url, "certificate-authority": os.path.join(d, "ca.crt")}}],
        "users": [{"name": "u", "user": {
            "client-certificate": os.path.join(d, "admin.crt"), "client-key": os.path.join(d, "admin.key")}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }
    _write(path, json.dumps(cfg, indent=1).encode())


def spawn(d, name, argv):
    log = open(os.path.join(d, "logs", name + ".log"), "ab")
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True, cwd=d)
    return p.pid


def controller_client_flags(qps):
    """Client rate limits of the controller-manager and the scheduler: their defaults (--kube-api-qps 20, burst 30
    for the controller-manager, as on most clusters) unless qps is set. A namespace of 900 Deployments takes the
    controller-manager several thousand writes (ReplicaSets, pods, their status) to roll out: minutes at 20 a second."""
    return ["--kube-api-qps", str(qps), "--kube-api-burst", str(2 * qps)] if qps else []


def cluster_processes(b, d, ports, url, controller_qps=None):
    kc = os.path.join(d, "admin.kubeconfig")
    client = controller_client_flags(controller_qps)
    return [
        ("etcd", [b["etcd"], "--name", "etcd", "--data-dir", os.path.join(d, "etcd"),
                  "--listen-client-urls", "http://127.0.0.1:%d" % ports["etcd"],
                  "--advertise-client-urls", "http://127.0.0.1:%d" % ports["etcd"],
                  "--listen-peer-urls", "http://127.0.0.1:%d" % ports["etcd_peer"],
                  "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % ports["etcd_peer"],
                  "--initial-cluster", "etcd=http://127.0.0.1:%d" % ports["etcd_peer"],
                  "--unsafe-no-fsync", "--quota-backend-bytes", str(2 * 1024 ** 3), "--log-level", "warn"]),
        ("kube-apiserver", [b["kube-apiserver"],
                            "--etcd-servers", "http://127.0.0.1:%d" % ports["etcd"],
                            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
                            "--secure-port", str(ports["api"]),
                            "--tls-cert-file", os.path.join(d, "serving.crt"),
                            "--tls-private-key-file", os.path.join(d, "serving.key"),
                            "--client-ca-file", os.path.join(d, "ca.crt"),
                            "--token-auth-file", os.path.join(d, "tokens.csv"),
                            "--authorization-mode", "Node,RBAC",
                            "--service-account-issuer", "https://kubernetes.default.svc",
                            "--service-account-key-file", os.path.join(d, "sa.pub"),
                            "--service-account-signing-key-file", os.path.join(d, "sa.key"),
                            "--service-cluster-ip-range", "10.96.0.0/16",
                            "--allow-privileged=true", "--profiling=false", "--v=1"]),
        ("kube-controller-manager", [b["kube-controller-manager"], "--kubeconfig", kc,
                                     "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
                                     "--bind-address", "127.0.0.1", "--secure-port", str(ports["kcm"]),
                                     "--service-account-private-key-file", os.path.join(d, "sa.key"),
                                     "--root-ca-file", os.path.join(d, "ca.crt"),
                                     "--use-service-account-credentials=false", "--leader-elect=false",
                                     "--controllers", "*,-nodeipam,-cloud-node-lifecycle,"
                                     "-service-lb-controller,-persistentvolume-binder,-attachdetach",
                                     "--concurrent-deployment-syncs", "10", "--v=1"] + client),
        ("kube-scheduler", [b["kube-scheduler"], "--kubeconfig", kc,
                            "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
                            "--bind-address", "127.0.0.1", "--secure-port", str(ports["sched"]),
                            "--leader-elect=false", "--v=1"] + client),
        ("kwok", [b["kwok"], "--kubeconfig", kc, "--config", os.path.join(HERE, "kwok", "stages.yaml"),
                  "--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake",
                  "--node-ip", "10.0.0.1", "--cidr", "10.244.0.1/16", "--server-address", ""]),
    ]


def _context(d):
    return pki.client_context(os.path.join(d, "ca.crt"))


def api(url, d, token, method, path, body=None, content_type="application/json", timeout=10):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", content_type)
    with urllib.request.urlopen(req, context=_context(d), timeout=timeout) as r:
        raw = r.read()
        return json.loads(raw) if raw else {}


def wait_ready(c, deadline):
    last = None
    while time.time() < deadline:
        try:
            req = urllib.request.Request(c["url"] + "/readyz")
            req.add_header("Authorization", "Bearer " + c["admin_token"])
            with urllib.request.urlopen(req, context=_context(c["dir"]), timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError, ssl.SSLError) as e:
            last = e
        for comp, pid in c["pids"].items():
            if not _alive(pid):
                raise RuntimeError("%s of cluster %s exited during start (see %s)" % (
                    comp, c["name"], os.path.join(c["dir"], "logs", comp + ".log")))
        time.sleep(0.5)
    raise RuntimeError("cluster %s not ready after %ss: %s" % (c["name"], START_TIMEOUT, last))


def apply(c, obj, token=None):
    """Server-side apply one object with the admin token (plain REST, no dependency)."""
    av = obj["apiVersion"]
    base = "/api/v1" if av == "v1" else "/apis/" + av
    plural = obj["kind"].lower() + "s" if not obj["kind"].endswith("s") else obj["kind"].lower() + "es"
    if obj["kind"] == "CustomResourceDefinition":
        plural = "customresourcedefinitions"
    ns = obj.get("metadata", {}).get("namespace")
    path = base + ("/namespaces/%s" % ns if ns else "") + "/%s/%s?fieldManager=manent-test-setup&force=true" % (
        plural, obj["metadata"]["name"])
    return api(c["url"], c["dir"], token or c["admin_token"], "PATCH", path, obj,
               content_type="application/apply-patch+yaml")


# What every kwok node looks like: the well-known labels a kubelet sets on a real node (charts select on them:
# nodeSelector kubernetes.io/os: linux, zone affinity) and the capacity of a common 8-CPU/32 GiB machine, with
# the kubelet's usual reservations taken off allocatable and its default 110 pods.
NODE_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
NODE_ALLOCATABLE = {"cpu": "7910m", "memory": "31Gi", "pods": "110", "ephemeral-storage": "95Gi"}


def node_manifest(c, index):
    """The Node object of kwok node ``index`` of cluster ``c`` (labels, annotations; status goes separately)."""
    name = "kwok-%s-%d" % (c["name"], index)
    labels = {
        "type": "kwok",
        "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "kwok.8x32",
        "topology.kubernetes.io/region": c["region"], "topology.kubernetes.io/zone": c["az"],
    }
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels,
                         "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {}, "status": {"capacity": NODE_CAPACITY, "allocatable": NODE_ALLOCATABLE}}


def _set_capacity(c, name):
    api(c["url"], c["dir"], c["admin_token"], "PATCH", "/api/v1/nodes/%s/status" % name,
        {"status": {"capacity": NODE_CAPACITY, "allocatable": NODE_ALLOCATABLE}},
        content_type="application/merge-patch+json")


def bootstrap_nodes(c):
    """Create (or bring up to date, on a running cluster) the kwok nodes: labels by server-side apply (a new
    node gets its status with it), then capacity and allocatable through the status subresource. kwok keeps an
    allocatable it finds; wait_nodes_and_sa sets it again on a node that kwok initialised before it was set."""
    for i in range(NODES_PER_CLUSTER):
        node = node_manifest(c, i)
        apply(c, node)
        _set_capacity(c, node["metadata"]["name"])


def bootstrap(c, b):
    """Fake nodes, the CRDs our tests need, and RBAC for the deployer client certificate."""
    import yaml
    bootstrap_nodes(c)
    for fname in ("gateway-api.yaml", "istio.yaml"):
        with open(os.path.join(b["crds"], fname)) as f:
            for doc in yaml.safe_load_all(f):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    apply(c, doc)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie child of ours is not alive
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _ports(base):
    return {"api": base, "etcd": base + 1, "etcd_peer": base + 2, "kcm": base + 3, "sched": base + 4}


def parse_topology(text):
    """``region/az[:style],...`` -> [(region, az, pki style)]; the style defaults to minimal."""
    out = []
    for item in text.split(","):
        place, _sep, style = item.strip().partition(":")
        region, _sep, az = place.partition("/")
        if not region or not az or (style or "minimal") not in pki.STYLES:
            raise SystemExit("bad topology entry %r: region/az or region/az:style, style one of %s"
                             % (item, ", ".join(pki.STYLES)))
        out.append((region, az, style or "minimal"))
    return out


def host_name(region, az):
    return az.replace("-", "")


def group_name(prefix, value):
    return "%s_%s" % (prefix, "".join(ch for ch in value.lower() if ch.isalnum()))


def write_inventory(root, clusters):
    hosts = {}
    groups = {}
    for c in clusters:
        hosts[c["name"]] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "manent_api_server": c["url"],
            "region": c["region"], "az": c["az"],
            "manent_ca_file": os.path.join(c["dir"], "ca.crt"),
            "manent_token": "file:" + os.path.join(c["dir"], "admin.token"),
        }
        for g in (group_name("region", c["region"]), group_name("az", c["az"])):
            groups.setdefault(g, {"hosts": {}})["hosts"][c["name"]] = {}
    inv = {"all": {"hosts": hosts, "children": groups}}
    import yaml
    with open(os.path.join(root, "inventory.yml"), "w") as f:
        f.write("# Written by hack/clusters.py: one host per local API server. Credentials are file: references.\n")
        yaml.safe_dump(inv, f, default_flow_style=False, sort_keys=False)


def up(args):
    root = os.path.abspath(args.dir)
    if os.path.exists(os.path.join(root, "state.json")):
        st = load_state(root)
        if st and all(_healthy(c) for c in st["clusters"]):
            print("clusters already running: %s" % ", ".join(c["name"] for c in st["clusters"]))
            return 0
        down(args)
    b = binaries()
    os.makedirs(root, exist_ok=True)
    topo = parse_topology(args.topology)
    clusters = []
    for i, (region, az, style) in enumerate(topo):
        name = host_name(region, az)
        d = os.path.join(root, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(os.path.join(d, "logs"))
        make_pki(d, style)
        admin_token = secrets.token_hex(24)
        deployer_token = secrets.token_hex(24)
        _write(os.path.join(d, "admin.token"), admin_token.encode())
        _write(os.path.join(d, "deployer.token"), deployer_token.encode())
        _write(os.path.join(d, "tokens.csv"), (
            '%s,manent-admin,1000,"system:masters"\n%s,manent-deployer,1001,"manent:deployers"\n'
            % (admin_token, deployer_token)).encode())
        ports = _ports(args.base_port + 10 * i)
        url = "https://127.0.0.1:%d" % ports["api"]
        kubeconfig(os.path.join(d, "admin.kubeconfig"), url, d)
        clusters.append({"name": name, "region": region, "az": az, "pki": style, "dir": d, "url": url, "ports": ports,
                         "admin_token": admin_token, "pids": {}, "controller_qps": args.controller_qps})
    state = {"clusters": clusters, "created": time.time()}
    try:
        for c in clusters:  # etcd + apiserver of every cluster first, in parallel
            for comp, argv in cluster_processes(b, c["dir"], c["ports"], c["url"], c["controller_qps"])[:2]:
                c["pids"][comp] = spawn(c["dir"], comp, argv)
        save_state(root, state)
        deadline = time.time() + START_TIMEOUT
        for c in clusters:
            wait_ready(c, deadline)
        for c in clusters:
            for comp, argv in cluster_processes(b, c["dir"], c["ports"], c["url"], c["controller_qps"])[2:]:
                c["pids"][comp] = spawn(c["dir"], comp, argv)
        save_state(root, state)
        for c in clusters:
            bootstrap(c, b)
        for c in clusters:
            wait_nodes_and_sa(c, deadline)
    except Exception as e:
        print("cluster start failed: %s" % e, file=sys.stderr)
        dump_logs(clusters)
        down(args)
        return 1
    write_inventory(root, clusters)
    print("started %d clusters: %s" % (len(clusters), ", ".join("%s (%s)" % (c["name"], c["url"]) for c in clusters)))
    print("inventory: %s" % os.path.join(root, "inventory.yml"))
    return 0


def wait_nodes_and_sa(c, deadline):
    while time.time() < deadline:
        try:
            nodes = api(c["url"], c["dir"], c["admin_token"], "GET", "/api/v1/nodes")["items"]
            ready = [n for n in nodes if any(x.get("type") == "Ready" and x.get("status") == "True"
                                             for x in n.get("status", {}).get("conditions", []))]
            api(c["url"], c["dir"], c["admin_token"], "GET", "/api/v1/namespaces/default/serviceaccounts/default")
            unsized = [n["metadata"]["name"] for n in ready if n["status"].get("allocatable") != NODE_ALLOCATABLE]
            for name in unsized:  # kwok initialised it with its own defaults: set ours again (kept from now on)
                _set_capacity(c, name)
            if len(ready) >= NODES_PER_CLUSTER and not unsized:
                return
        except urllib.error.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("cluster %s: nodes or the default service account not ready in time" % c["name"])


def dump_logs(clusters, lines=40):
    for c in clusters:
        for comp in c.get("pids", {}):
            p = os.path.join(c["dir"], "logs", comp + ".log")
            if os.path.exists(p):
                with open(p, "rb") as f:
                    tail = f.read().decode(errors="replace").splitlines()[-lines:]
                print("----- %s %s (last %d lines of %s)" % (c["name"], comp, lines, p), file=sys.stderr)
                print("\n".join(tail), file=sys.stderr)


def _healthy(c):
    if not all(_alive(pid) for pid in c["pids"].values()):
        return False
    try:
        req = urllib.request.Request(c["url"] + "/readyz")
        req.add_header("Authorization", "Bearer " + c["admin_token"])
        with urllib.request.urlopen(req, context=_context(c["dir"]), timeout=5) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def save_state(root, state):
    """Write state.json whole (a temporary file renamed over it): a reader never sees it half-written."""
    path = os.path.join(root, "state.json")
    _write(path + ".tmp", json.dumps(state, indent=1).encode())
    os.replace(path + ".tmp", path)


def load_state(root):
    try:
        with open(os.path.join(root, "state.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def down(args):
    root = os.path.abspath(args.dir)
    st = load_state(root)
    if not st:
        print("no clusters in %s" % root)
        return 0
    pids = [pid for c in st["clusters"] for pid in c.get("pids", {}).values()]
    for pid in reversed(pids):
        try:
            os.killpg(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.time() + 20
    while time.time() < deadline and any(_alive(p) for p in pids):
        _reap()
        time.sleep(0.2)
    for pid in pids:
        if _alive(pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
    _reap()
    os.unlink(os.path.join(root, "state.json"))
    print("stopped %d clusters" % len(st["clusters"]))
    return 0


def _reap():
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def status(args):
    st = load_state(os.path.abspath(args.dir))
    if not st:
        print("no clusters")
        return 1
    ok = True
    for c in st["clusters"]:
        h = _healthy(c)
        ok = ok and h
        print("%-8s %-28s %s" % (c["name"], c["url"], "ready" if h else "NOT READY"))
    return 0 if ok else 1


def nodes(args):
    """Bring the nodes of running clusters up to date (labels, capacity) without restarting anything."""
    st = load_state(os.path.abspath(args.dir))
    if not st:
        print("no clusters")
        return 1
    for c in st["clusters"]:
        bootstrap_nodes(c)
        print("%s: %d nodes labelled (os, arch, hostname, region %s, zone %s), allocatable %s" % (
            c["name"], NODES_PER_CLUSTER, c["region"], c["az"],
            ", ".join("%s=%s" % item for item in sorted(NODE_ALLOCATABLE.items()))))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("command", choices=("up", "down", "status", "nodes"))
    p.add_argument("--dir", default=os.environ.get("MANENT_CLUSTERS_DIR", os.path.join(ROOT, ".clusters")))
    p.add_argument("--topology", default=os.environ.get("MANENT_TOPOLOGY", DEFAULT_TOPOLOGY),
                   help="comma separated region/az, one cluster each")
    p.add_argument("--base-port", type=int, default=int(os.environ.get("MANENT_BASE_PORT", "17443")))
    p.add_argument("--controller-qps", type=int, default=int(os.environ.get("MANENT_CONTROLLER_QPS") or 0) or None,
                   help="client QPS of kube-controller-manager and kube-scheduler (burst twice that); default: "
                        "their own defaults. Clusters the bench starts use 200, so that the controllers' rate limit "
                        "does not hold back a rollout of thousands of objects")
    args = p.parse_args(argv)
    return {"up": up, "down": down, "status": status, "nodes": nodes}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
