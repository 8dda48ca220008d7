#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: manent_apply
short_description: Apply a rendered release to one cluster, wait for its rollout, prune, record history
version_added: 0.1.0
description:
  - Applies the bundle written by M(manent.kubernetes.manent_render) with server-side apply (field manager C(manent)),
    in dependency order, objects of one tier concurrently.
  - Before any write (and in check mode), objects whose live labels name another manent release (another tenant,
    application, artifact or environment) stop the deploy with one error listing each object and its release, unless
    O(adopt=true). Objects with ownership C(anyone) in the bundle are shared and not checked; objects of other tools
    (without manent's labels) are taken over as before.
  - Namespaces first, then every object the deploy will write is applied with C(dryRun=All), all at once; an object
    the API server refuses (an immutable field changed, a value its validation, an admission webhook or a policy
    rejects) stops the deploy with nothing else written. Skipped when none of them exists yet (a first install);
    Pods, objects a delete policy recreates and kinds defined by a CRD of the release are left to their tier.
  - Then the release is saved in history (a ConfigMap, under a lock), then CRDs (waited until Established), RBAC,
    configuration, Services, workloads and the rest.
  - "Lifecycle stages: objects annotated C(werf.io/deploy-on: pre-<phase>) (or Helm hooks C(pre-install),
    C(pre-upgrade), C(pre-rollback) rendered with C(helm_hooks: apply)) are applied and waited for (Jobs until they
    complete, Pods until they succeed, workloads until Current) before the main objects; a failure there stops the
    deploy before the main objects are touched and marks the release failed in history. C(post-<phase>) objects
    are applied once the main rollout is Current. Inside a stage objects go in groups of ascending
    C(werf.io/weight) or C(helm.sh/hook-weight). Once a stage is done, delete policies C(succeeded) and C(failed)
    (C(hook-succeeded), C(hook-failed)) delete each of its objects, of any kind but CustomResourceDefinitions, that
    succeeded or failed, as Helm does at the end of each hook event; an object someone else changed since this deploy
    applied it is left, saying why. See the collection's docs/lifecycle.md."
  - Waits for every Deployment, StatefulSet and DaemonSet at once. A Deployment past its C(progressDeadlineSeconds)
    fails at once, with the reasons of its unready pods.
  - Each Helm hook that manent_render left out is an Ansible warning, and listed in RV(details.helm_hooks_skipped).
  - With O(prune=true), deletes the objects of the previous release that this one no longer has (never Namespaces,
    never C(helm.sh/resource-policy=keep) or ownership C(anyone) objects).
  - Marks the release in service and deletes history beyond O(keep_releases).
  - In check mode every object is applied with C(dryRun=All) and nothing, history included, is written.
  - In diff mode each changed object's difference (without server noise; Secret values redacted) is returned.
author:
  - manent developers (@manent-io)
extends_documentation_fragment:
  - manent.kubernetes.connection
  - manent.kubernetes.option_names
attributes:
  check_mode:
    support: full
    description: Server-side dry run of every object; nothing is stored.
  diff_mode:
    support: full
    description: Per-object differences between the live object and the applied (or dry-run) result.
options:
  bundle:
    description: Path of the bundle written by M(manent.kubernetes.manent_render).
    type: path
    required: true
  wait:
    description:
      - Wait for the rollout of workloads.
      - Objects of pre- and post- lifecycle stages are waited for even when false, and so is the main rollout when
        a post stage follows it.
    type: bool
    default: true
  wait_timeout:
    description: Deadline of each rollout wait (the main rollout, and each weight group of a lifecycle stage), for
      example C(5m).
    type: str
    default: 5m
  prune:
    description: Delete objects of the previous release that the bundle no longer contains.
    type: bool
    default: false
  keep_releases:
    description: Releases kept in history (minimum 2).
    type: int
    default: 5
  force_conflicts:
    description:
      - Take over fields owned by other field managers (for example C(kubectl) or C(helm)), as Flux and Argo CD do.
        The fields taken over are reported per object.
      - When false, a conflict fails the object with the fields and their managers.
    type: bool
    default: true
  concurrency:
    description:
      - Requests sent at once (objects applied at once within a tier, and kinds listed at once).
      - Over long round trips (a remote cluster) more requests at once shorten a first install; the API server's
        CPU bounds it on a local cluster.
    type: int
    default: 32
  break_lock:
    description: Take the history lock even if another deploy holds it (after checking that deploy is gone).
    type: bool
    default: false
  create_namespace:
    description:
      - Create the release namespace when it does not exist (like C(helm --create-namespace)). Needs the right to
        create Namespaces. When false, a missing namespace that the artifact does not create is an error before
        any write.
    type: bool
    default: false
  adopt:
    description:
      - Take over objects that belong to another manent release (their live labels name another tenant, application,
        artifact or environment). Each one is listed in RV(adopted) and is a warning; the other release no longer
        prunes it.
      - When false, such objects fail the deploy before anything is written, naming each object and its release.
    type: bool
    default: false
  helm_migrate_release:
    description:
      - After a successful first deploy that adopted the objects of a C(helm install), delete only Helm's release
        state Secrets C(sh.helm.release.v1.<name>.v*) of this release name. Never the objects.
    type: str
"""

EXAMPLES = r"""
- name: Apply the rendered release, wait and prune
  manent.kubernetes.manent_apply:
    api_server: "{{ manent_api_server }}"
    token: "{{ manent_token }}"
    ca_file: /etc/manent/ca.crt
    bundle: "{{ rendered.bundle }}"
    prune: true
    wait_timeout: 5m
  register: applied

- name: Dry run with diffs (check mode)
  manent.kubernetes.manent_apply:
    api_server: "{{ manent_api_server }}"
    token: "{{ manent_token }}"
    bundle: "{{ rendered.bundle }}"
  check_mode: true
  diff: true
"""

RETURN = r"""
host:
  description: The API server deployed to, as an https URL with its port (from O(api_server) and O(port)), SPEC's
    per-target C(host).
  returned: always
  type: str
  sample: https://10.0.0.1:6443
status:
  description: C(deployed), C(checked) (check mode) or C(failed).
  returned: always
  type: str
details:
  description: The SPEC's per-target details, plus C(version), C(objects_skipped), C(phase), C(slot),
    C(namespace_created), C(application) and C(environment).
  returned: always
  type: dict
  contains:
    namespace:
      description: Release namespace.
      type: str
    objects:
      description: Objects of the release applied (or dry-run), each counted once; objects deleted by prune, or
        skipped, are not counted, nor the release namespace that O(create_namespace) created (RV(details.namespace_created)),
        so that a first deploy counts what the next one does.
      type: int
    release:
      description:
        - Name of the release's history record (a ConfigMap in the release namespace), as in SPEC's example.
        - Before this collection version it held the version deployed, now in RV(details.version).
      type: str
      sample: manent-shop-shop-api-prod-5f1c2a9b-1.4.0
    version:
      description: Version deployed.
      type: str
    previous:
      description: Version that was in service before.
      type: str
    pruned:
      description: Objects deleted by prune, as C(Kind/namespace/name).
      type: list
      elements: str
    helm_hooks_skipped:
      description: Helm hooks that manent_render left out (C(helm_hooks=skip), and test hooks), as C(Kind/name (hook
        events)); each one is also an Ansible warning.
      type: list
      elements: str
    objects_skipped:
      description: Objects not verifiable in check mode (their namespace would be created by the release).
      type: int
    phase:
      description: C(install), C(upgrade) or C(rollback).
      type: str
    slot:
      description: The traffic slot (C(a) or C(b)) of a traffic rollout, else empty.
      type: str
    namespace_created:
      description: The release namespace when this deploy created it (O(create_namespace)), else empty; its creation
        is in RV(changes) and RV(counts), not in RV(details.objects).
      type: str
    application:
      description: The release key's application (O(manent.kubernetes.manent_render#module:application)).
      type: str
      version_added: 1.1.0
    environment:
      description: The release key's environment.
      type: str
      version_added: 1.1.0
stages:
  description: The lifecycle stages run, in order (C(pre-upgrade), C(upgrade), C(post-upgrade), ...), each with
    C(stage), C(objects) (its number of objects) and C(status) (C(done) or C(failed)); the deploy stopped at the
    failed one. Empty in check mode.
  returned: always
  type: list
  elements: dict
changes:
  description: One entry per object and step, in the order of the deploy, C(subject) (Kind/namespace/name), C(action)
    (created, configured, unchanged, recreated, deleted, skipped; a Job deleted by its delete policy C(succeeded) or
    C(failed) has a second entry C(deleted)), C(reason), C(seconds), the server's warnings and C(takeovers), the
    fields taken over from other field managers (each C(field) and C(manager)).
  returned: always
  type: list
  elements: dict
counts:
  description: Number of objects per action.
  returned: always
  type: dict
waited:
  description: Workloads (and Jobs and Pods of lifecycle stages) waited for, with their final status and seconds.
  returned: success
  type: list
  elements: dict
timings:
  description: Seconds spent in apply, wait, prune and in total.
  returned: always
  type: dict
history:
  description: What was written to history (C(written)), records deleted by cleanup, Helm secrets deleted.
  returned: always
  type: dict
adopted:
  description: Objects taken over from another manent release with O(adopt=true) (would be, in check mode).
  returned: always
  type: list
  elements: dict
  contains:
    subject:
      description: The object, as C(Kind/namespace/name).
      type: str
    from:
      description: The release it belonged to, C(tenant), C(application), C(artifact) and C(environment).
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import apply_task
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks.common import run_task


def main():
    run_task(AnsibleModule(argument_spec=apply_task.argument_spec(), supports_check_mode=True), apply_task)


if __name__ == "__main__":
    main()
