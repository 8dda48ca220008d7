# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a source of the inventory plugin ``manent.kubernetes.clusters`` finds: one cluster, as the plugin turns it
into an inventory host (groups ``region_*``/``az_*``, variables ``region``/``az``, the connection variables the
role reads).

Each source (a kubeconfig, Cluster API ``Cluster`` objects, Argo CD cluster Secrets) has one function
``discover(...) -> list[FoundCluster]``. A source never puts a credential into ``variables``: a kubeconfig that the
user already holds is referenced by its path (``kubeconfig_path``); one that the source read from a cluster (a
Cluster API kubeconfig Secret, an Argo CD cluster Secret) is handed over as ``kubeconfig`` (a mapping, credentials
inside), which the plugin writes to a private 0600 file and references by path. The inventory, ``ansible-inventory
--list`` and the inventory cache therefore hold paths and names only."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FoundCluster:
    """One cluster found by a source."""

    name: str  # the inventory host name (unique within the source)
    source: str  # which source found it, for messages: "kubeconfig /path", "Cluster API mgmt/ns", "Argo CD argocd"
    region: str = ""  # "" when the source has no region for it: the plugin then applies its defaults / strict rule
    az: str = ""
    context: str = ""  # the kubeconfig context that reaches it
    kubeconfig_path: str = ""  # a kubeconfig file the user holds (kubeconfig source): referenced, never copied
    kubeconfig: dict = field(default_factory=dict, repr=False)  # a kubeconfig read from a cluster: written 0600
    labels: dict = field(default_factory=dict)  # non-secret labels/annotations/extensions, for compose/keyed_groups
    variables: dict = field(default_factory=dict)  # other non-secret host variables (server, source coordinates)
    skipped: str = ""  # why the cluster is left out (not provisioned, control plane not ready): the plugin warns
