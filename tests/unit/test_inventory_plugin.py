# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin manent.kubernetes.clusters on recorded sources: a kubeconfig with one context per cluster
(fixtures/inventory/fleet-kubeconfig.yml) and the cluster Secrets of an Argo CD (fixtures/inventory/argocd-secrets.yml,
as the API server lists them). What each source finds, the kubeconfigs built from Secrets (read back by the engine's
kubeconfig loader), the private files, the management-cluster connection, and ansible-inventory's view of it all."""

import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base import kubeconfig
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.plugin_utils import (
    inventory_argocd, inventory_hosts, inventory_kubeconfig, inventory_management)
from ansible_collections.manent.kubernetes.plugins.plugin_utils.inventory_found import FoundCluster
from tests.unit.fakes import FakeKube

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "inventory")
FLEET = os.path.join(FIXTURES, "fleet-kubeconfig.yml")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATTERN = "^eks-(?P<region>[a-z]+-[0-9])-(?P<az>.*)$"
# Credentials in the fixtures: none may reach a host variable, ansible-inventory's output or a skip message.
FAKE_SECRETS = ("fake-bearer-token-eu1a-0123456789", "fake-password-0123456789", "fake-key-material-0123",
                "fake-kind-token-0123456789abcdef")


def secrets_list():
    with open(os.path.join(FIXTURES, "argocd-secrets.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


class ArgoKube(FakeKube):
    def answer(self, method, path, **kwargs):
        return secrets_list()


def by_name(found):
    return {cluster.name: cluster for cluster in found}


# --------------------------------------------------------------------------- kubeconfig source


def test_kubeconfig_one_host_per_context_referenced_by_path():
    found = by_name(inventory_kubeconfig.discover({"path": FLEET}, base_dir="/"))
    assert sorted(found) == ["eks-eu-1-eu-1a", "eks-eu-1-eu-1b", "gke_proj_us-east1_us1a", "kind-dev"]
    eu1a = found["eks-eu-1-eu-1a"]
    assert (eu1a.kubeconfig_path, eu1a.context, eu1a.kubeconfig) == (FLEET, "eks-eu-1-eu-1a", {})
    assert eu1a.source == "kubeconfig " + FLEET
    assert eu1a.variables == {"manent_cluster_server": "https://EU1A.gr7.eu-west-1.eks.amazonaws.com"}
    assert not any(secret in repr(found) for secret in FAKE_SECRETS)


@pytest.mark.parametrize("spec, expected", [
    # nothing given: the context's extension, then the cluster's (its az; its region loses to the context's)
    ({}, {"eks-eu-1-eu-1a": ("", ""), "eks-eu-1-eu-1b": ("eu-1", "eu-1b")}),
    # the pattern before the extensions
    ({"context_pattern": PATTERN}, {"eks-eu-1-eu-1a": ("eu-1", "eu-1a"), "eks-eu-1-eu-1b": ("eu-1", "eu-1b")}),
    # the mapping before the pattern, field by field
    ({"context_pattern": PATTERN, "topology": {"eks-eu-1-eu-1a": {"region": "eu-7"}, "kind-dev": {"az": "x-1"}}},
     {"eks-eu-1-eu-1a": ("eu-7", "eu-1a"), "kind-dev": ("", "x-1")}),
    ({"topology_extension": "other.io/topology"}, {"eks-eu-1-eu-1b": ("", "")}),
])
def test_kubeconfig_topology_order(spec, expected):
    found = by_name(inventory_kubeconfig.discover(dict(spec, path=FLEET), base_dir="/"))
    assert {name: (found[name].region, found[name].az) for name in expected} == expected


def test_kubeconfig_extension_labels_filters_and_names():
    found = inventory_kubeconfig.discover({"path": FLEET, "contexts": ["eks-*", "gke_*"], "exclude_contexts": ["*-1a"],
                                           "host_names": {"gke_proj_us-east1_us1a": "us1a"}}, base_dir="/")
    assert [(c.name, c.context) for c in found] == [("eks-eu-1-eu-1b", "eks-eu-1-eu-1b"),
                                                    ("us1a", "gke_proj_us-east1_us1a")]
    assert found[0].labels == {"team": "payments"}


def test_kubeconfig_names_sanitised(tmp_path):
    doc = {"clusters": [{"name": "c", "cluster": {"server": "https://x"}}],
           "contexts": [{"name": "arn:aws:eks:eu-west-1:1:cluster/a", "context": {"cluster": "c"}}]}
    (tmp_path / "kc").write_text(yaml.safe_dump(doc))
    found = inventory_kubeconfig.discover({"path": "kc"}, base_dir=str(tmp_path))  # relative to the inventory
    assert [(c.name, c.kubeconfig_path) for c in found] == [("arn_aws_eks_eu-west-1_1_cluster_a", str(tmp_path / "kc"))]


@pytest.mark.parametrize("spec, message", [
    ({"contexts": ["nope-*"]}, "no context of %s matches (contexts in it: eks-eu-1-eu-1a, " % FLEET),
    ({"context_pattern": "^(x"}, "context_pattern is not a regular expression"),
    ({"context_pattern": "^eks-(.*)$"}, "context_pattern has no named group region or az"),
    ({"topology": ["a"]}, "topology must be a mapping"),
    ({"contxts": ["a"]}, "unknown option(s) contxts"),
    ({"path": "/nonexistent/kc"}, "cannot read kubeconfig /nonexistent/kc"),
])
def test_kubeconfig_errors(spec, message):
    with pytest.raises(InputError) as err:
        inventory_kubeconfig.discover(dict({"path": FLEET}, **spec), base_dir="/", label="sources[0]")
    assert message in str(err.value)


# --------------------------------------------------------------------------- Argo CD source


def argocd(**spec):
    kube = ArgoKube()
    found = inventory_argocd.discover(kube, dict({"management": {}}, **spec), label="sources[1]")
    return kube, by_name(found)


def load(tmp_path, cluster):
    """The engine's view of the kubeconfig built for ``cluster`` (base/kubeconfig.py, as a task reads it)."""
    path = tmp_path / (cluster.name + ".kubeconfig")
    path.write_text(yaml.safe_dump(cluster.kubeconfig))
    return kubeconfig.load(str(path), cluster.context)


def test_argocd_lists_cluster_secrets_of_the_namespace():
    kube, found = argocd(namespace="gitops", label_selector="env=prod")
    assert kube.sent("query") == [("GET", "/api/v1/namespaces/gitops/secrets",
                                   {"labelSelector": "argocd.argoproj.io/secret-type=cluster,env=prod", "limit": "500"})]
    # Argo CD's own cluster is left out; unusable Secrets come back skipped, naming the Secret, never a value
    assert sorted(found) == ["arn_aws_eks_eu-west-1_123456789012_cluster_eks-eu2", "broken", "legacy", "onprem",
                             "prod-eu1a", "prod-us1a"]
    assert found["legacy"].skipped == ("Secret argocd/cluster-basic uses basic authentication (username/password), "
                                       "which Kubernetes removed")
    assert found["broken"].skipped == "the config of Secret argocd/cluster-broken is not a JSON object"
    assert not any(secret in found[name].skipped for name in found for secret in FAKE_SECRETS)


def test_argocd_bearer_token_and_tls(tmp_path):
    _kube, found = argocd()
    eu1a = found["prod-eu1a"]
    assert (eu1a.region, eu1a.az, eu1a.context) == ("eu-1", "eu-1a", "prod-eu1a")
    assert eu1a.labels == {"topology.kubernetes.io/region": "eu-1", "topology.kubernetes.io/zone": "eu-1a",
                           "env": "prod"}
    assert eu1a.variables == {"manent_cluster_server": "https://eu1a.example.com:6443",
                              "manent_argocd_secret": "argocd/cluster-eu1a"}
    assert "fake-bearer-token" not in repr(eu1a)  # the kubeconfig is not in the repr, nor in labels/variables
    target = load(tmp_path, eu1a)
    assert (target.server, target.token, target.tls_server_name) == (
        "https://eu1a.example.com:6443", "fake-bearer-token-eu1a-0123456789", "api.eu1a.internal")
    assert target.ca_data.startswith("-----BEGIN CERTIFICATE-----")


def test_argocd_exec_provider_and_aws(tmp_path):
    _kube, found = argocd()
    gcp = load(tmp_path, found["prod-us1a"])
    assert (gcp.exec.command, gcp.exec.args, gcp.exec.env, gcp.exec.api_version, gcp.exec.install_hint,
            gcp.exec.interactive_mode) == ("argocd-k8s-auth", ["gcp"], {"GOOGLE_APPLICATION_CREDENTIALS": "/var/run/gcp.json"},
                                           "client.authentication.k8s.io/v1beta1", "install argocd-k8s-auth", "Never")
    eks = found["arn_aws_eks_eu-west-1_123456789012_cluster_eks-eu2"]
    assert (eks.region, eks.az) == ("eu-2", "")
    aws = load(tmp_path, eks).exec
    assert aws.command == "aws"
    assert aws.args == ["--profile", "fleet", "eks", "get-token", "--cluster-name", "eks-eu2",
                        "--role-arn", "arn:aws:iam::123456789012:role/argocd", "--output", "json"]
    assert "AWS CLI" in aws.install_hint


def test_argocd_client_certificate_proxy_and_labels(tmp_path):
    _kube, found = argocd(region_label="region", host_names={"onprem": "dc1"})
    assert "dc1" in found and "onprem" not in found
    dc1 = found["dc1"]
    assert dc1.region == "eu-1"
    target = load(tmp_path, dc1)
    assert target.proxy_url == "http://proxy.example.com:3128"
    assert "fake-key-material-0123" in target.client_key and target.client_cert.startswith("-----BEGIN")


def test_argocd_in_cluster_only_when_asked():
    _kube, found = argocd(include_in_cluster=True, management={"kubeconfig": "~/mgmt.yaml", "context": "mgmt"})
    mine = found["in-cluster"]
    assert (mine.kubeconfig_path, mine.context, mine.kubeconfig) == (os.path.expanduser("~/mgmt.yaml"), "mgmt", {})
    _kube, found = argocd(include_in_cluster=True, management={"api_server": "https://mgmt", "token": "x"})
    assert "needs the management cluster given as a kubeconfig file" in found["in-cluster"].skipped


def test_argocd_unknown_option():
    with pytest.raises(InputError) as err:
        argocd(namespaces=["a"])
    assert "sources[1].argocd: unknown option(s) namespaces" in str(err.value)


# --------------------------------------------------------------------------- hosts and private files


def test_group_names_and_sanitising():
    assert inventory_hosts.group_name("region", "eu-1") == "region_eu1"
    assert inventory_hosts.group_name("az", "EU-1a") == "az_eu1a"
    assert inventory_hosts.sanitize("../x/y") == "_x_y"
    assert inventory_hosts.sanitize("..") == "_"


def test_private_kubeconfigs_0600_in_0700_directory_and_stale_ones_removed(tmp_path):
    directory = tmp_path / "creds"
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "a", "users": [{"name": "a", "user": {"token": "t"}}]}
    first = inventory_hosts.records([FoundCluster(name="a", source="s", kubeconfig=config),
                                     FoundCluster(name="b", source="s", kubeconfig=dict(config, **{"current-context": "b"})),
                                     FoundCluster(name="c", source="k", kubeconfig_path="/kc", context="c1")],
                                    str(directory))
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    paths = [record["kubeconfig"] for record in first]
    assert paths[:2] == [str(directory / "host-a.kubeconfig"), str(directory / "host-b.kubeconfig")]
    assert [stat.S_IMODE(os.stat(path).st_mode) for path in paths[:2]] == [0o600, 0o600]
    assert yaml.safe_load(open(paths[0], encoding="utf-8")) == config
    assert [(r["context"], r["private"]) for r in first] == [("a", True), ("b", True), ("c1", False)]
    assert "token" not in json.dumps(first)  # records (the cache) hold paths only
    assert inventory_hosts.missing_files(first) == []
    inventory_hosts.records([FoundCluster(name="a", source="s", kubeconfig=config)], str(directory))
    assert sorted(os.listdir(directory)) == ["host-a.kubeconfig"]
    assert inventory_hosts.missing_files(first) == [paths[1]]


def test_private_directory_narrowed_and_symlink_refused(tmp_path):
    wide = tmp_path / "wide"
    wide.mkdir(mode=0o755)
    inventory_hosts.private_dir(str(wide))
    assert stat.S_IMODE(os.stat(wide).st_mode) == 0o700
    (tmp_path / "link").symlink_to(wide)
    with pytest.raises(InputError) as err:
        inventory_hosts.private_dir(str(tmp_path / "link"))
    assert "a symlink is refused" in str(err.value)


def test_duplicate_host_names_name_both_sources():
    with pytest.raises(InputError) as err:
        inventory_hosts.check_unique([FoundCluster(name="eu1a", source="kubeconfig /a"),
                                      FoundCluster(name="eu1a", source="Argo CD argocd (Secret argocd/x)")])
    assert "host eu1a is found twice: by kubeconfig /a and by Argo CD argocd (Secret argocd/x)" in str(err.value)


def test_host_variables():
    record = {"name": "a", "source": "s", "region": "eu-1", "az": "", "kubeconfig": "/p", "context": "c",
              "labels": {"env": "prod"}, "variables": {"manent_cluster_server": "https://x", "ansible_connection": "ssh"}}
    assert inventory_hosts.host_variables(record, "/py") == {
        "manent_cluster_server": "https://x", "ansible_connection": "local", "ansible_python_interpreter": "/py",
        "manent_source": "s", "manent_labels": {"env": "prod"}, "manent_kubeconfig": "/p", "manent_context": "c",
        "region": "eu-1"}


# --------------------------------------------------------------------------- management cluster


def test_management_as_kubeconfig_or_static(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", "/a/config%s/b/config" % os.pathsep)
    options = inventory_management.connection_options({}, "m")
    assert (options.kubeconfig, options.context, options.insecure_skip_tls_verify) == ("/a/config", "", False)
    options = inventory_management.connection_options({"kubeconfig": "/k", "context": "mgmt", "validate_certs": "no"}, "m")
    assert (options.kubeconfig, options.context, options.insecure_skip_tls_verify) == ("/k", "mgmt", True)
    options = inventory_management.connection_options(
        {"api_server": "mgmt.example.com", "port": 7443, "token": "file:/t", "ca_file": "~/ca.pem"}, "m")
    assert (options.url, options.token, options.ca_file, options.kubeconfig) == (
        "https://mgmt.example.com:7443", "file:/t", os.path.expanduser("~/ca.pem"), "")
    assert inventory_management.relative_to({"kubeconfig": "kc", "ca_file": "env:X"}, str(tmp_path)) == {
        "kubeconfig": str(tmp_path / "kc"), "ca_file": "env:X"}


@pytest.mark.parametrize("spec, message", [
    ({"kubeconfig": "/k", "token": "t"}, "m: kubeconfig and token are both given"),
    ({"context": "c", "api_server": "https://x"}, "m: context is given with api_server"),
    ({"token": "t"}, "m: token given without api_server"),
    ({"api_sever": "x"}, "m: unknown option(s) api_sever"),
    ({"validate_certs": "maybe"}, "m: validate_certs is not a boolean"),
])
def test_management_errors(spec, message):
    with pytest.raises(InputError) as err:
        inventory_management.connection_options(spec, "m")
    assert message in str(err.value)


def test_management_connect_builds_the_modules_client(tmp_path):
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump({"current-context": "m", "clusters": [{"name": "c", "cluster": {"server": "https://m:6443"}}],
                                    "users": [{"name": "u", "user": {"token": "t"}}],
                                    "contexts": [{"name": "m", "context": {"cluster": "c", "user": "u"}}]}))
    kube = inventory_management.connect({"kubeconfig": str(path)}, "m")
    try:
        assert (kube.url, kube.target.context) == ("https://m:6443", "m")
    finally:
        kube.close()


# --------------------------------------------------------------------------- ansible-inventory


def ansible_inventory(tmp_path, config, *args):
    source = tmp_path / "clusters.manent.yml"
    source.write_text(yaml.safe_dump(config))
    env = dict(os.environ, ANSIBLE_INVENTORY_ENABLED="manent.kubernetes.clusters", ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".build", "collections"))
    command = [os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i", str(source), "--list"]
    proc = subprocess.run(command + list(args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    return proc


def says(stderr, message):
    """Whether ansible-inventory's stderr holds ``message``: ansible-core before 2.19 wraps warnings at 79 columns,
    at spaces, after hyphens or inside a long word, so both are compared without their whitespace."""
    return "".join(message.split()) in "".join(stderr.split())


def plain(value):
    """The --list output without the ``{"__ansible_unsafe": ...}`` wrappers that ansible-core before 2.19 writes."""
    if isinstance(value, dict):
        if list(value) == ["__ansible_unsafe"]:
            return value["__ansible_unsafe"]
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def test_ansible_inventory_groups_and_variables_as_the_role_expects(tmp_path):
    proc = ansible_inventory(tmp_path, {"plugin": "manent.kubernetes.clusters", "sources": [
        {"kubeconfig": {"path": FLEET, "context_pattern": PATTERN, "contexts": ["eks-*"]}}],
        "keyed_groups": [{"key": "manent_labels.team | default('none')", "prefix": "team"}],
        "compose": {"owner": "'team-' ~ (manent_labels.team | default('none'))"}})
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    assert sorted(listing["region_eu1"]["hosts"]) == ["eks-eu-1-eu-1a", "eks-eu-1-eu-1b"]
    assert listing["az_eu1b"]["hosts"] == ["eks-eu-1-eu-1b"] and listing["team_payments"]["hosts"] == ["eks-eu-1-eu-1b"]
    hostvars = plain(listing["_meta"]["hostvars"])
    eu1b = hostvars["eks-eu-1-eu-1b"]
    assert {key: eu1b[key] for key in ("ansible_connection", "ansible_python_interpreter", "manent_kubeconfig",
                                       "manent_context", "region", "az", "owner")} == {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "manent_kubeconfig": FLEET, "manent_context": "eks-eu-1-eu-1b", "region": "eu-1", "az": "eu-1b",
        "owner": "team-payments"}


def test_ansible_inventory_no_region_warns_or_fails_with_strict(tmp_path):
    config = {"plugin": "manent.kubernetes.clusters", "sources": [{"kubeconfig": {"path": FLEET, "contexts": ["kind-*"]}}]}
    proc = ansible_inventory(tmp_path, config)
    assert proc.returncode == 0, proc.stderr
    assert says(proc.stderr, "host kind-dev has no region (it is in no region_* group)")
    assert json.loads(proc.stdout)["ungrouped"]["hosts"] == ["kind-dev"]
    proc = ansible_inventory(tmp_path, dict(config, strict=True))
    assert says(proc.stderr, "host kind-dev has no region") and says(proc.stderr, "unset strict")
    assert "kind-dev" not in proc.stdout


def test_ansible_inventory_duplicate_host_names_fail(tmp_path):
    proc = ansible_inventory(tmp_path, {"plugin": "manent.kubernetes.clusters", "sources": [
        {"kubeconfig": FLEET}, {"kubeconfig": {"path": FLEET, "contexts": ["kind-dev"]}}]})
    assert says(proc.stderr, "host kind-dev is found twice: by kubeconfig %s and by kubeconfig %s" % (FLEET, FLEET))
    assert "kind-dev" not in proc.stdout


@pytest.mark.parametrize("item, message", [
    ({"kubeconfig": FLEET, "argocd": {}}, "sources[0] has kubeconfig, argocd: give exactly one of"),
    ({"helm": {}}, "sources[0] has helm: give exactly one of"),
    ({"argocd": "x"}, "sources[0].argocd must be a mapping of its options"),
])
def test_ansible_inventory_bad_source_items(tmp_path, item, message):
    proc = ansible_inventory(tmp_path, {"plugin": "manent.kubernetes.clusters", "sources": [item]})
    assert says(proc.stderr, message)


def test_ansible_inventory_a_sources_error_names_the_source_once(tmp_path):
    """A source's own error already starts with its place in sources: the plugin does not name it again."""
    proc = ansible_inventory(tmp_path, {"plugin": "manent.kubernetes.clusters", "sources": [
        {"kubeconfig": {"path": FLEET, "contexts": ["nope-*"]}}]})
    assert says(proc.stderr, "sources[0].kubeconfig: no context of %s matches" % FLEET), proc.stderr
    assert "sources[0] (kubeconfig)" not in proc.stderr and "kubeconfig: sources[0]" not in proc.stderr, proc.stderr
