# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory plugin manent.kubernetes.clusters: one host per Kubernetes cluster, from kubeconfig contexts, Argo CD
cluster Secrets or Cluster API Cluster objects, grouped as the deploy role expects."""

from __future__ import annotations

DOCUMENTATION = r"""
name: clusters
short_description: Kubernetes clusters from kubeconfig contexts, Argo CD cluster Secrets or Cluster API
description:
  - Builds one inventory host per Kubernetes cluster, as the C(manent.kubernetes.deploy) role expects them
    (docs/role.md) - groups C(region_<region>) and C(az_<az>) (the value lower-cased, only letters and digits kept -
    region C(eu-1) gives C(region_eu1)), host variables C(region), C(az), C(ansible_connection=local),
    C(ansible_python_interpreter), C(manent_kubeconfig) and C(manent_context).
  - "Sources, in the order given: a kubeconfig file (one host per context), the cluster Secrets of Argo CD
    (label C(argocd.argoproj.io/secret-type: cluster)) on a management cluster, the C(Cluster) objects of Cluster API
    (cluster.x-k8s.io) on a management cluster."
  - Credentials never become host variables and never reach C(ansible-inventory --list) or the inventory cache. A
    kubeconfig the user holds is referenced by its path; a kubeconfig built from a Secret (Argo CD, Cluster API) is
    written to a 0600 file in the private 0700 directory O(credentials_dir) and referenced by path.
  - The inventory file must end in C(clusters.yml), C(clusters.yaml), C(clusters.manent.yml) or C(clusters.manent.yaml).
  - See docs/inventory.md for the credential design, the cache and how to move from a hand-kept inventory.
version_added: 1.0.0
author:
  - manent developers (@manent-io)
requirements:
  - kubernetes (the Python client, for the Argo CD and Cluster API sources)
  - PyYAML
extends_documentation_fragment:
  - ansible.builtin.constructed
  - ansible.builtin.inventory_cache
options:
  plugin:
    description: The name of this plugin; it makes the file an inventory source of this plugin.
    type: str
    required: true
    choices: [manent.kubernetes.clusters]
  sources:
    description:
      - Where the clusters are listed. Each item has exactly one of the keys O(sources[].kubeconfig),
        O(sources[].argocd), O(sources[].cluster_api).
      - A host name found by two sources (or twice by one) is an error that names both.
    type: list
    elements: dict
    required: true
    suboptions:
      kubeconfig:
        description:
          - One host per context of a kubeconfig file. A string is the file's path.
          - Region and AZ of a context come from, in this order (each separately) - O(sources[].kubeconfig.topology),
            O(sources[].kubeconfig.context_pattern), the extension O(sources[].kubeconfig.topology_extension) of the
            context, then of its cluster.
        type: dict
        suboptions:
          path:
            description:
              - The kubeconfig file. C(~) is expanded; a relative path is relative to the inventory file's directory.
              - Hosts reference it as C(manent_kubeconfig) (an absolute path) - it is read again by every task, so
                rotated tokens and exec plugins keep working.
              - Default the first file of E(KUBECONFIG), else C(~/.kube/config).
            type: str
          contexts:
            description: Glob patterns of the context names to include (default all).
            type: list
            elements: str
          exclude_contexts:
            description: Glob patterns of context names to leave out (after O(sources[].kubeconfig.contexts)).
            type: list
            elements: str
            default: []
          topology:
            description: "Context name -> C({region: ..., az: ...})."
            type: dict
            default: {}
          context_pattern:
            description:
              - A regular expression searched in the context name; its named groups C(region) and C(az) give them.
            type: str
          topology_extension:
            description:
              - The name of a kubeconfig extension (in C(contexts[].context.extensions), else
                C(clusters[].cluster.extensions)) whose C(extension) holds C(region) and C(az).
            type: str
            default: manent.io/topology
          host_names:
            description:
              - Context name -> host name. Other contexts are named after themselves, every character other than
                letters, digits, C(_), C(-) and C(.) replaced by C(_)
                (C(arn:aws:eks:eu-west-1:1:cluster/a) gives C(arn_aws_eks_eu-west-1_1_cluster_a)).
            type: dict
            default: {}
      argocd:
        description:
          - One host per Argo CD cluster Secret (label C(argocd.argoproj.io/secret-type=cluster)) in a namespace of a
            management cluster - its C(name), C(server) and C(config) (C(bearerToken), C(tlsClientConfig),
            C(execProviderConfig), C(awsAuthConfig)), written as a kubeconfig 0600 in O(credentials_dir).
          - C(awsAuthConfig) becomes the exec plugin C(aws [--profile <profile>] eks get-token --cluster-name
            <clusterName> [--role-arn <roleARN>] --output json), the credential Argo CD's own C(argocd-k8s-auth aws)
            mints; the AWS CLI must be installed on the controller.
          - Secrets with basic authentication (C(username)/C(password)) are left out with a warning.
        type: dict
        suboptions:
          management:
            description:
              - The cluster Argo CD runs on - either C(kubeconfig) (a path, relative to the inventory file's directory;
                C(env:NAME); or the YAML; default the E(KUBECONFIG) file, else C(~/.kube/config)) and C(context) (default
                its current context), or
                C(api_server) (with C(port), default 6443), C(token) (inline, C(file:/path) or C(env:NAME)), C(ca) or
                C(ca_file), C(client_cert) and C(client_key); both with C(validate_certs) (default true) and
                C(request_timeout) (seconds, default 30).
              - It needs C(list) on Secrets in O(sources[].argocd.namespace).
            type: dict
            default: {}
          namespace:
            description: The namespace of Argo CD's cluster Secrets.
            type: str
            default: argocd
          label_selector:
            description: A label selector narrowing the Secrets (added to the secret-type label).
            type: str
          region_label:
            description: The Secret label holding the region.
            type: str
            default: topology.kubernetes.io/region
          az_label:
            description: The Secret label holding the availability zone.
            type: str
            default: topology.kubernetes.io/zone
          include_in_cluster:
            description:
              - Include the Secret of Argo CD's own cluster (C(https://kubernetes.default.svc)), reached with the
                O(sources[].argocd.management) connection (given as a kubeconfig, which the host then references).
            type: bool
            default: false
          host_names:
            description: Cluster name -> host name; others are named after the Secret's C(name), sanitised.
            type: dict
            default: {}
      cluster_api:
        description:
          - One host per Cluster API C(Cluster) (cluster.x-k8s.io, the version the management cluster prefers of
            C(v1beta2) and C(v1beta1)) that is provisioned and whose control plane is ready, reached with the kubeconfig
            of its Secret C(<name>-kubeconfig) (key C(value)), written 0600 in O(credentials_dir).
          - A Cluster not in phase C(Provisioned), whose infrastructure is not provisioned or control plane not
            initialized, whose C(ControlPlaneAvailable) (v1beta2) or C(ControlPlaneReady) (v1beta1) condition is not
            true, or whose kubeconfig Secret is missing or unusable, is left out with a warning giving the reason.
          - Host variables C(manent_capi) (C(namespace), C(name), C(api_version), C(phase), C(version),
            C(cluster_class)) and C(manent_cluster_server); C(manent_labels) holds the Cluster's labels.
        type: dict
        suboptions:
          management:
            description:
              - The management cluster, as O(sources[].argocd.management).
              - It needs C(list) on C(clusters.cluster.x-k8s.io) and C(get) on the Secrets C(<name>-kubeconfig) in
                O(sources[].cluster_api.namespaces).
            type: dict
            default: {}
          namespaces:
            description: The namespaces of the C(Cluster) objects (default all namespaces).
            type: list
            elements: str
          label_selector:
            description: A label selector narrowing the C(Cluster) objects (C(env=prod,tier!=edge)).
            type: str
          region_label:
            description: The C(Cluster) label holding the region.
            type: str
            default: topology.kubernetes.io/region
          az_label:
            description: The C(Cluster) label holding the availability zone.
            type: str
            default: topology.kubernetes.io/zone
          prefix_namespace:
            description:
              - Name the hosts C(<namespace>.<name>) instead of C(<name>).
              - Without it, two C(Cluster) objects of one name in different namespaces are an error (host names do
                not change when a Cluster appears in another namespace).
            type: bool
            default: false
  credentials_dir:
    description:
      - The private directory (0700) where kubeconfigs built from Secrets are written (0600), one per host.
      - Default C(~/.cache/manent/inventory/<hash>), the hash of the inventory file's absolute path.
      - Files of hosts no longer found are removed when the sources are read again.
    type: path
  python_interpreter:
    description:
      - The host variable C(ansible_python_interpreter) of every host.
      - Default the template C({{ ansible_playbook_python }}) (the Python that runs ansible-playbook, which the
        role's tasks run on as C(ansible_connection=local)), as docs/role.md recommends.
    type: str
  region_prefix:
    description: The prefix of the region groups.
    type: str
    default: region
  az_prefix:
    description: The prefix of the availability-zone groups.
    type: str
    default: az
notes:
  - A cluster without a region is an error with O(strict), else a warning, and the host is in no region group.
  - With O(cache), the cache holds host names, groups and non-secret variables (paths of kubeconfigs, never their
    content). A cached host whose kubeconfig file in O(credentials_dir) is gone makes the plugin read its sources
    again instead of handing out a missing path.
"""

EXAMPLES = r"""
# clusters.manent.yml - every context of a kubeconfig, region/az from the context name eks-<region>-<az>
plugin: manent.kubernetes.clusters
sources:
  - kubeconfig:
      path: ~/.kube/fleet.yaml
      contexts: ["eks-*"]
      context_pattern: '^eks-(?P<region>[a-z]+-[0-9])-(?P<az>[a-z]+-[0-9][a-z])$'

---
# clusters.manent.yml - Argo CD's cluster Secrets, the management cluster given by a kubeconfig context
plugin: manent.kubernetes.clusters
sources:
  - argocd:
      management: {kubeconfig: ~/.kube/config, context: mgmt}
      namespace: argocd
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: ~/.cache/manent/inventory-cache
keyed_groups:
  - key: manent_labels['env'] | default('none')
    prefix: env

---
# clusters.manent.yml - a kubeconfig and Cluster API clusters together, a region from a mapping
plugin: manent.kubernetes.clusters
sources:
  - kubeconfig:
      path: kubeconfigs/legacy.yaml
      topology:
        legacy-eu: {region: eu-1, az: eu-1a}
  - cluster_api:
      management: {api_server: https://mgmt.example.com:6443, token: env:MGMT_TOKEN, ca_file: /etc/mgmt-ca.pem}
      namespaces: [fleet]
"""

import hashlib
import os

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable

try:  # ansible-core 2.19+: variables from plugins are templated only when marked so
    from ansible.template import trust_as_template
except ImportError:  # earlier versions template every variable
    def trust_as_template(value):
        return value

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ManentError
from ansible_collections.manent.kubernetes.plugins.plugin_utils import inventory_hosts

SOURCE_KINDS = ("kubeconfig", "argocd", "cluster_api")
PLAYBOOK_PYTHON = "{{ ansible_playbook_python }}"
FILE_SUFFIXES = ("clusters.yml", "clusters.yaml", "clusters.manent.yml", "clusters.manent.yaml")


def _source_error(exc, label, kind):
    """The message of a source's error, naming the source once: its own messages start with their place in sources
    (``sources[0].kubeconfig: no context of ... matches``); any other is prefixed with it."""
    message = str(exc.message)
    if not message.startswith(label):
        return "%s (%s): %s" % (label, kind, exc)
    return "%s (%s)" % (message, exc.hint) if exc.hint else message


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    """Kubernetes clusters as inventory hosts."""

    NAME = "manent.kubernetes.clusters"

    def __init__(self):
        super().__init__()
        self._path = ""

    def verify_file(self, path):
        return super().verify_file(path) and path.endswith(FILE_SUFFIXES)

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        self._path = os.path.abspath(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache
        update_cache = self.get_option("cache") and not cache
        records = None
        if use_cache:
            try:
                records = self._cache[cache_key]
            except KeyError:
                update_cache = True
            else:
                missing = inventory_hosts.missing_files(records)
                if missing:
                    self.display.vvv("manent.kubernetes.clusters: %d kubeconfig file(s) of the cached inventory are "
                                     "gone (%s): reading the sources again" % (len(missing), missing[0]))
                    records, update_cache = None, True
        if records is None:
            records = self._discover()
        if update_cache:
            self._cache[cache_key] = records
        self._populate(records)

    # ------------------------------------------------------------------ sources

    def _credentials_dir(self):
        configured = self.get_option("credentials_dir")
        if configured:
            return os.path.abspath(os.path.expanduser(configured))
        digest = hashlib.sha256(self._path.encode("utf-8")).hexdigest()[:16]
        return os.path.join(os.path.expanduser("~"), ".cache", "manent", "inventory", digest)

    def _discover(self):
        """The host records of every source (FoundCluster -> inventory_hosts.record), kubeconfigs written."""
        items = self.get_option("sources") or []
        if not isinstance(items, list) or not items:
            raise AnsibleParserError("%s: sources must be a non-empty list" % self._path)
        found = []
        for index, item in enumerate(items):
            label = "sources[%d]" % index
            kind, spec = self._source_item(item, label)
            try:
                clusters = self._run_source(kind, spec, label)
            except ManentError as exc:
                raise AnsibleParserError(_source_error(exc, label, kind)) from None
            for cluster in clusters:
                if cluster.skipped:
                    self.display.warning("manent.kubernetes.clusters: %s: %s left out: %s"
                                         % (cluster.source, cluster.name, cluster.skipped))
                    continue
                found.append(cluster)
        try:
            inventory_hosts.check_unique(found)
            return inventory_hosts.records(found, self._credentials_dir())
        except ManentError as exc:
            raise AnsibleParserError(str(exc)) from None
        except OSError as exc:
            raise AnsibleParserError("cannot write the private kubeconfigs in %s: %s (set credentials_dir to a "
                                     "directory of your own)" % (self._credentials_dir(), exc.strerror)) from None

    def _source_item(self, item, label):
        if not isinstance(item, dict):
            raise AnsibleParserError("%s: each source is a mapping with one of %s" % (label, ", ".join(SOURCE_KINDS)))
        kinds = [kind for kind in SOURCE_KINDS if kind in item]
        others = sorted(set(item) - set(SOURCE_KINDS))
        if len(kinds) != 1 or others:
            raise AnsibleParserError("%s has %s: give exactly one of %s" % (
                label, ", ".join(kinds + others) or "none of them", ", ".join(SOURCE_KINDS)))
        spec = item[kinds[0]]
        if kinds[0] == "kubeconfig" and isinstance(spec, str):
            spec = {"path": spec}
        if spec is None:
            spec = {}
        if not isinstance(spec, dict):
            raise AnsibleParserError("%s.%s must be a mapping of its options" % (label, kinds[0]))
        return kinds[0], spec

    def _run_source(self, kind, spec, label):
        if kind == "kubeconfig":
            from ansible_collections.manent.kubernetes.plugins.plugin_utils import inventory_kubeconfig
            return inventory_kubeconfig.discover(spec, base_dir=os.path.dirname(self._path), label=label)
        from ansible_collections.manent.kubernetes.plugins.plugin_utils import inventory_management
        spec = dict(spec, management=inventory_management.relative_to(spec.get("management"), os.path.dirname(self._path)))
        kube = inventory_management.connect(spec["management"], "%s.%s.management" % (label, kind))
        try:
            if kind == "argocd":
                from ansible_collections.manent.kubernetes.plugins.plugin_utils import inventory_argocd
                return inventory_argocd.discover(kube, spec, label=label)
            try:
                from ansible_collections.manent.kubernetes.plugins.plugin_utils import inventory_capi
            except ImportError:
                raise AnsibleParserError("%s: the cluster_api source is not part of this collection's version"
                                         % label) from None
            return inventory_capi.discover(kube, spec, label=label)
        finally:
            kube.close()

    # ------------------------------------------------------------------ hosts

    def _populate(self, records):
        strict = self.get_option("strict")
        region_prefix, az_prefix = self.get_option("region_prefix"), self.get_option("az_prefix")
        interpreter = self.get_option("python_interpreter") or trust_as_template(PLAYBOOK_PYTHON)
        for record in records:
            name = record["name"]
            if not record.get("region"):
                message = "%s: host %s has no region (it is in no %s_* group)" % (record["source"], name, region_prefix)
                if strict:
                    raise AnsibleError("manent.kubernetes.clusters: " + message + "; give it one, or unset strict")
                self.display.warning("manent.kubernetes.clusters: " + message)
            self.inventory.add_host(name)
            variables = inventory_hosts.host_variables(record, interpreter)
            for key, value in variables.items():
                self.inventory.set_variable(name, key, value)
            for prefix, value in ((region_prefix, record.get("region")), (az_prefix, record.get("az"))):
                if value:
                    group = self.inventory.add_group(inventory_hosts.group_name(prefix, value))
                    self.inventory.add_child(group, name)
            hostvars = self.inventory.get_host(name).get_vars()
            self._set_composite_vars(self.get_option("compose"), hostvars, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), hostvars, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), hostvars, name, strict=strict)
