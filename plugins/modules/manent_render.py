#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: manent_render
short_description: Render and validate a release's objects for one cluster
version_added: 0.1.0
description:
  - Turns an artifact into the exact, validated, ordered objects of one release for one cluster and writes them
    to a bundle file that M(manent.kubernetes.manent_apply) reads.
  - The artifact is a manifest file (YAML, multi-document YAML or JSON), a C(.tar.gz) of C(.yaml)/C(.yml)/C(.json)
    files read in name order, or a packaged Helm chart (C(helm package) output), detected automatically.
  - The artifact's sha256 is verified before anything is read.
  - Manifests get the variables C(${MANENT_APPLICATION}), C(${MANENT_ENVIRONMENT}), C(${MANENT_VERSION}),
    C(${MANENT_NAMESPACE}), C(${MANENT_DEPLOYMENT}) and C(${NAME}) for each O(variables) entry; any other C(${...})
    is left untouched.
  - Charts are rendered with C(helm template), isolated (empty environment, temporary home), with the cluster's
    version and API versions as capabilities. Hooks are skipped by default and listed, and test hooks never apply.
  - Once a release of the key is in service on the cluster (RV(in_service)), or while Helm keeps the release
    named by O(helm_migrate_release), a chart renders as C(helm upgrade) does (C(.Release.IsUpgrade) true,
    C(.Release.IsInstall) false); otherwise as C(helm install).
  - Every object is checked against the cluster's discovery and the table of removed/deprecated API versions,
    gets the release labels and annotations, and objects without a namespace get O(namespace).
  - The fields of every object are checked against the schemas the cluster publishes (OpenAPI v3, built-in kinds
    and installed CRDs) as server-side apply reads them, so that a value of the wrong type, an unknown field, two
    list entries with one key or Secret data that is not base64 fail here, naming the field, not half-way through
    the apply. Kinds defined by a CRD of the same release are left to the API server.
  - Nothing is written to the cluster.
author:
  - manent developers (@manent-io)
extends_documentation_fragment:
  - manent.kubernetes.connection
  - manent.kubernetes.option_names
  - manent.kubernetes.release
attributes:
  check_mode:
    support: full
    description: Rendering writes nothing to the cluster; check mode renders as usual.
  diff_mode:
    support: none
    description: Rendering changes nothing, so there is no difference to show.
options:
  artifact:
    description:
      - Local path of the artifact (the role fetches URLs once per run and passes the path).
    type: path
    required: true
  artifact_sha256:
    description:
      - Expected sha256 of the artifact. Required unless O(allow_unverified=true).
    type: str
  allow_unverified:
    description:
      - Accept an artifact without O(artifact_sha256). For development only.
    type: bool
    default: false
  version:
    description: Release version (annotation C(manent.io/version)).
    type: str
    required: true
  deployment:
    description:
      - Deploy id (annotation C(manent.io/deployment), variable C(${MANENT_DEPLOYMENT})).
      - Default a stable hash of version, artifact sha256 and parameters, so that a rerun changes nothing.
    type: str
  namespace:
    description: Namespace for objects that name none, and for the history.
    type: str
    default: default
  variables:
    description: Values of C(${NAME}) in manifests (the SPEC's C(var.NAME)). Plain manifests only.
    type: dict
    default: {}
  helm_release:
    description: C(.Release.Name) of a chart. Default O(artifact_name).
    type: str
  helm_migrate_release:
    description:
      - The Helm release this deploy takes over (manent_apply's O(manent.kubernetes.manent_apply#module:helm_migrate_release)).
      - While no release of the key is in service, a chart renders as C(helm upgrade) when Helm still keeps state
        for this release in the namespace (a release Secret C(sh.helm.release.v1.<name>.v<N>) not uninstalled),
        as C(helm upgrade --install) would; otherwise as C(helm install). Needs C(list) on Secrets.
    type: str
  helm_values_files:
    description: Values files inside the chart, lowest precedence first, for example C(values-prod.yaml).
    type: list
    elements: str
    default: []
  helm_values:
    description: Values as YAML text (above O(helm_values_files)).
    type: str
  helm_value:
    description: Single values by dotted path, parsed as YAML (highest precedence), for example C(image.tag=1.4.0).
    type: dict
    default: {}
  helm_hooks:
    description:
      - C(skip) leaves Helm hooks out (listed in the C(hooks_skipped) result, and as warnings of
        M(manent.kubernetes.manent_apply)).
      - C(apply) keeps them as objects of the release that M(manent.kubernetes.manent_apply) runs in lifecycle
        stages (C(pre-upgrade) before the main objects, waited for, in C(helm.sh/hook-weight) order; C(post-upgrade)
        after the rollout).
    type: str
    choices: [skip, apply]
    default: skip
  helm_skip_crds:
    description: Leave out the chart's C(crds/) directory.
    type: bool
    default: false
  helm_command:
    description: helm binary (name on PATH or path). Used only for charts.
    type: str
    default: helm
  helm_sha256:
    description: Expected sha256 of the helm binary, verified before every rendering.
    type: str
  helm_timeout:
    description: Longest a rendering may take, for example C(2m).
    type: str
    default: 2m
  require_image_digest:
    description: Reject workloads whose images are not pinned C(image@sha256:...).
    type: bool
    default: false
  slot:
    description:
      - Traffic slot (C(a) or C(b)), given to charts as C(.Values.manent.slot). Empty when not a traffic rollout.
      - Only a non-empty slot adds the values layer C(manent.slot); without one the chart gets exactly the values
        C(helm template) would get, so charts whose C(values.schema.json) forbids unknown top-level keys render.
      - With a slot, such a chart must allow the key C(manent) in its root schema, otherwise rendering fails with
        an error naming the chart. Charts should read the slot with C(.Values.manent) in parentheses, as in
        "(.Values.manent).slot", which is empty without a slot.
    type: str
    default: ""
  strategy:
    description:
      - C(rolling) deploys the release in place. C(traffic) deploys it to the slot that is not in service (C(a) for
        the first traffic release), read from the release history of the cluster unless O(slot) is given; the
        slot's objects are renamed and labelled (see O(traffic_rename)) and M(manent.kubernetes.manent_traffic)
        moves the traffic.
      - The version in service rendered again with the same parameters (a rerun) keeps the slot it is in service
        in; M(manent.kubernetes.manent_apply) then applies nothing. A candidate needs a version of its own, so the
        version in service with other parameters is refused by M(manent.kubernetes.manent_apply).
    type: str
    choices: [rolling, traffic]
    default: rolling
  traffic_rename:
    description:
      - With a slot, Deployments, StatefulSets, DaemonSets, Services, HPAs and PDBs get the suffix C(-<slot>) and
        the label C(manent.io/track). C(false) only adds the label, for charts that name objects per slot with
        C(.Values.manent.slot).
    type: bool
    default: true
  traffic_router:
    description: C(gateway-api) (HTTPRoute or GRPCRoute weights) or C(istio) (VirtualService weights; Services keep
      their names and are shared by both slots).
    type: str
    choices: [gateway-api, istio]
    default: gateway-api
  traffic_replicas:
    description: C(proportional) starts the candidate's Deployments and StatefulSets (not HPA-managed) at 1 replica
      (the manifest's count kept in annotation C(manent.io/replicas)); each traffic step grows them. C(manifest)
      keeps the manifest's replicas.
    type: str
    choices: [manifest, proportional]
    default: manifest
  traffic_migrate:
    description: Allow the first traffic release of an application whose release in service is not slotted (its
      objects have no C(-a)/C(-b) suffix); the un-suffixed objects keep serving until the route moves, and are
      removed by hand afterwards.
    type: bool
    default: false
  bundle:
    description: Where to write the bundle. Default a file in O(work_dir) named after the cluster and the release key.
    type: path
notes:
  - The bundle file may contain Secret data; it is written with mode 0600 in the controller's work directory.
"""

EXAMPLES = r"""
- name: Render the shop manifests for one cluster
  manent.kubernetes.manent_render:
    api_server: "{{ manent_api_server }}"
    token: "{{ manent_token }}"
    ca_file: /etc/manent/ca.crt
    artifact: /var/cache/manent/shop-1.4.0.yaml
    artifact_sha256: "{{ shop_sha256 }}"
    application: shop
    environment: prod
    version: 1.4.0
    namespace: shop-prod
    variables:
      REPLICAS: "3"
  register: rendered

- name: Render a packaged chart with production values
  manent.kubernetes.manent_render:
    api_server: https://10.0.0.10:6443
    token: file:/var/run/secrets/kubernetes.io/serviceaccount/token
    artifact: /var/cache/manent/shop-api-1.4.0.tgz
    artifact_sha256: "{{ chart_sha256 }}"
    application: shop
    artifact_name: shop-api
    environment: prod
    version: 1.4.0
    namespace: shop-prod
    helm_values_files: [values-prod.yaml]
    helm_value:
      image.tag: "1.4.0"
"""

RETURN = r"""
bundle:
  description: Path of the bundle file to give to M(manent.kubernetes.manent_apply).
  returned: success
  type: str
deployment:
  description: The deploy id used.
  returned: success
  type: str
slot:
  description: The traffic slot the objects were made for (C(a) or C(b)); empty for the rolling strategy.
  returned: success
  type: str
objects:
  description: Number of objects in the bundle.
  returned: success
  type: int
kinds:
  description: Count of objects per kind.
  returned: success
  type: dict
  sample: {"ConfigMap": 1, "Deployment": 1, "Service": 1}
hooks_skipped:
  description: Helm hooks left out, as C(Kind/name (hook event)).
  returned: success
  type: list
  elements: str
warnings_list:
  description: Deprecated API versions, lifecycle-annotation mistakes, objects outside the release namespace, notes of
    the schema check and helm's own warnings.
  returned: success
  type: list
  elements: str
deprecated_apis:
  description:
    - The warnings of RV(warnings_list) that name a deprecated apiVersion this cluster still serves, with its
      replacement (apiVersions it no longer serves fail the render instead).
    - What the role's audit counts with C(deploy_audit_fail_on=deprecated).
  returned: success
  type: list
  elements: str
cluster_version:
  description: The cluster's version (C(gitVersion)).
  returned: success
  type: str
in_service:
  description:
    - The release of this key in service on the cluster when it rendered (version, deployment, artifact (the
      sha256 of its artifact), slot, record), as
      M(manent.kubernetes.manent_history) lists it, or null when none is.
    - What the role's checkpoint compares across clusters when C(playbooks/deploy.yml) renders them all before its
      first wave.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import render_task
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.common import run_task


def main():
    run_task(AnsibleModule(argument_spec=render_task.argument_spec(), supports_check_mode=True), render_task)


if __name__ == "__main__":
    main()
