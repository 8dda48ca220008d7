# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role manent.kubernetes.deploy and the playbooks, run with ansible-playbook against the real local
clusters (eu1a + eu1b in region eu-1, us1a in us-1): deploy everywhere, idempotence, check mode, secrets
kept out of -vvv output, rollback, -l limits, checkpoint divergence, waves stopping after a failed wave, the
demo. Each test works in its own fresh namespace and asserts on cluster state and on the role's summary."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid

import pytest
import yaml

from tests.helpers import chart_path, helm_binary
from tests.integration.playbook_helpers import (
    PAUSE, ROOT, SHOP, artifact, base_vars, deployment_ready, labelled_history, resource_versions, run_playbook,
    secret_values, sha256, shop_vars, vault_encrypt, write_inventory, write_manifest)

ROLE = os.path.join(ROOT, "roles", "deploy")


def _yaml(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _by_name(clusters):
    return {c.name: c for c in clusters}


def _greeting(cluster, namespace):
    cm = cluster.get("v1", "ConfigMap", namespace, "shop-config")
    return None if cm is None else cm["data"]["greeting"]


# --------------------------------------------------------------------------- static checks (no cluster)


ENTRY_POINTS = ("main", "plan", "wave_deploy", "wave_plan", "rollback", "checkpoint", "audit", "history", "traffic",
                "wave", "waves")  # the last two: deprecated names of wave_deploy and wave_plan
# A role variable in task text: public deploy_*, internal _deploy_*, registered __deploy_* (not manent_deploy_waves).
VARIABLE = re.compile(r"(?<![A-Za-z0-9_])(_{0,2}deploy_[a-z0-9_]+)")
INCLUDES = ("ansible.builtin.import_tasks", "ansible.builtin.include_tasks", "import_tasks", "include_tasks")


def _texts(node):
    """Every key and string value of a YAML document (comments are not in it)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from _texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _texts(value)
    elif isinstance(node, str):
        yield node


def _included(node):
    """The task files a document imports or includes; of a templated name, every file name quoted in it."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in INCLUDES:
                name = value["file"] if isinstance(value, dict) else value
                yield from re.findall(r"'([^']+\.yml)'", name) if "{{" in name else [name]
            else:
                yield from _included(value)
    elif isinstance(node, list):
        for value in node:
            yield from _included(value)


def entry_point_files(entry):
    """tasks/<entry>.yml and every task file it imports or includes, transitively."""
    tasks = os.path.join(ROLE, "tasks")
    todo, files = [os.path.join(tasks, entry + ".yml")], []
    while todo:
        path = todo.pop()
        if path not in files:
            files.append(path)
            for name in _included(_yaml(path)):
                here = os.path.join(os.path.dirname(path), name)
                todo.append(here if os.path.exists(here) else os.path.join(tasks, name))
    return files


def entry_point_variables(entry):
    """The public deploy_* variables that the tasks of ``entry`` read, directly or through the internal values of
    vars/main.yml that they use (followed transitively)."""
    internal = _yaml(os.path.join(ROLE, "vars", "main.yml"))
    todo = [name for path in entry_point_files(entry) for text in _texts(_yaml(path))
            for name in VARIABLE.findall(text)]
    seen = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            if name.startswith("_deploy_option_names"):
                continue  # the variables' names, for messages (tasks/option_names.py): not read
            todo.extend(found for text in _texts(internal.get(name)) for found in VARIABLE.findall(text))
    return {name for name in seen if name.startswith("deploy_")}


def test_argument_specs_mirror_defaults_and_each_entry_point_lists_its_own_variables():
    defaults = _yaml(os.path.join(ROLE, "defaults", "main.yml"))
    specs = _yaml(os.path.join(ROLE, "meta", "argument_specs.yml"))["argument_specs"]
    assert sorted(specs) == sorted(ENTRY_POINTS)
    options = {entry: specs[entry]["options"] for entry in ENTRY_POINTS}
    role_options = {entry: {k for k in opts if k.startswith("deploy_")} for entry, opts in options.items()}
    host_variables = {k for k in options["main"] if not k.startswith("deploy_")}
    assert host_variables and all(k.startswith("manent_") for k in host_variables)
    # (a) main and the other entry points together document every default, and nothing else.
    assert set().union(*role_options.values()) == set(defaults)
    for entry in ENTRY_POINTS:
        assert os.path.exists(os.path.join(ROLE, "tasks", entry + ".yml")), entry
        # (b) each option is in defaults/main.yml with the same default, and documented alike everywhere.
        for name in role_options[entry]:
            assert options[entry][name].get("default") == defaults[name], (entry, name)
            assert options[entry][name] == options["main"].get(name, options[entry][name]), (entry, name)
        # Every entry point runs the preflight, which checks the host variables.
        assert {k for k in options[entry] if not k.startswith("deploy_")} == host_variables, entry
        # (c) the variables its tasks read are exactly the ones it documents; plan also validates every option of
        # main, so that playbooks/deploy.yml stops on a bad variable before its checkpoint reads any cluster.
        read = entry_point_variables(entry) | (role_options["main"] if entry == "plan" else set())
        assert sorted(read - role_options[entry]) == [], "%s reads undocumented variables" % entry
        assert sorted(role_options[entry] - read) == [], "%s documents variables it does not read" % entry


def test_entry_point_variables_follow_includes_and_internal_values():
    """The check above can fail: rollback reaches deploy_rollback_to only through an import's vars, deploy_tenant
    only through phases/rollback_reapply.yml, deploy_artifact only through vars/main.yml (_deploy_application)."""
    files = [os.path.relpath(path, os.path.join(ROLE, "tasks")) for path in entry_point_files("traffic")]
    assert "phases/traffic_step.yml" in files and "phases/preflight.yml" in files
    rollback = entry_point_variables("rollback")
    assert {"deploy_rollback_to", "deploy_tenant", "deploy_artifact"} <= rollback
    assert "deploy_helm_command" not in rollback and "deploy_checkpoint_fields" not in rollback
    assert "deploy_helm_command" in entry_point_variables("main")


def test_example_envconfigs_name_their_artifacts_real_sha256():
    for envconfig, path in (("shop", SHOP),
                            ("sample", os.path.join(ROOT, "tests", "data", "charts", "manent-sample-0.1.0.tgz"))):
        data = _yaml(os.path.join(ROOT, "examples", "envconfig", "untenanted", envconfig, "prod.yml"))
        assert data["deploy_artifact"]["sha256"] == sha256(path)
        assert os.path.join(ROOT, data["deploy_artifact"]["source"]) == path


def test_example_inventory_has_region_and_az_groups():
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-inventory"), "-i",
                          os.path.join(ROOT, "examples", "inventory.yml"), "--graph"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for group in ("@region_eu1", "@az_eu1a", "@az_eu1b", "@region_us1", "@az_us1a"):
        assert group in out


# --------------------------------------------------------------------------- validation before any change


@pytest.mark.integration
@pytest.mark.parametrize("overrides, expected", [
    ({"deploy_parallel": "many"}, "deploy_parallel"),
    ({"deploy_helm_hooks": "sometimes"}, "deploy_helm_hooks"),
    ({"deploy_keep_releases": 1}, "deploy_keep_releases: must be at least 2"),
    ({"deploy_concurrency": -1}, "deploy_concurrency: must be at least 1, or 0 for manent_apply's default"),
    ({"deploy_artifact": {"type": "kubernetes", "name": "shop", "version": "1", "source": SHOP, "sha256": "abc"}},
     "deploy_artifact.sha256: must be the 64 hex digits"),
    ({"deploy_artifact": {"type": "kubernetes", "name": "shop", "version": "1", "source": SHOP, "sha256": "0" * 64}},
     "has sha256 " + sha256(SHOP)),
    ({"deploy_artifact": {"type": "kubernetes", "name": "shop", "version": "1", "source": SHOP + ".missing",
                          "sha256": sha256(SHOP)}},
     SHOP + ".missing: is not a file on the controller"),
    # digits only, unquoted in YAML (here a JSON number): read as a number, which the message says
    ({"deploy_artifact": {"type": "kubernetes", "name": "shop", "version": "1", "source": SHOP, "sha256": 1234}},
     "deploy_artifact.sha256: was read by YAML as the number 1234, not as text"),
], ids=["type", "choice", "preflight", "concurrency", "sha-format", "sha-mismatch", "missing-file", "sha-number"])
def test_bad_variables_stop_before_any_cluster_is_touched(inventory_path, tmp_path, overrides, expected):
    extra = shop_vars(tmp_path, "never-created-ns", "1.0.0", "hello")
    extra.update(overrides)
    run = run_playbook("deploy", inventory_path, extra, tmp_path)
    assert run.rc != 0, run.explain()
    assert expected in run.output, run.explain()
    assert "Deploy | Render the release" not in run.output  # the first task that reads a cluster


# --------------------------------------------------------------------------- one release key, many runs


@pytest.mark.integration
def test_deploy_idempotence_check_mode_secrets_limit_checkpoint_and_rollback(clusters, inventory_path, namespaces,
                                                                             tmp_path):
    """One namespace through a release's life: deploy everywhere (with -vvv --diff: no secret in the output),
    rerun (no change), check mode (writes nothing), a new version on region eu-1 only (-l), a deploy everywhere
    that the checkpoint stops (the clusters diverge), and a rollback of eu-1 that brings them back together."""
    ns = namespaces
    by_name = _by_name(clusters)
    v1 = shop_vars(tmp_path, ns, "1.0.0", "hello from 1.0.0")
    # The three forms of credentials: eu1a's token in Ansible Vault, us1a's from an environment variable,
    # eu1b's from a file (as written by hack/clusters.py).
    password_file = tmp_path / "vault-password"
    password_file.write_text("test-vault-password\n")
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"), host_vars={
        "eu1a": {"manent_token": vault_encrypt(by_name["eu1a"].token, "test-vault-password")},
        "us1a": {"manent_token": "env:MANENT_TEST_TOKEN_US1A"}})
    env = {"ANSIBLE_VAULT_PASSWORD_FILE": str(password_file), "MANENT_TEST_TOKEN_US1A": by_name["us1a"].token}

    def playbook(name, extra, **kw):
        return run_playbook(name, inventory, extra, tmp_path, env=env, **kw)

    # 1. First deploy, wave by wave, with -vvv --diff: nothing secret in the output.
    run = playbook("deploy", v1, diff=True, verbosity=3)
    assert run.rc == 0, run.explain()
    for value in secret_values(clusters):
        assert value not in run.output, "a secret value appears in the -vvv --diff output"
    assert "Secret/%s/shop-credentials (absent)" % ns in run.output  # the Secret's diff was shown, redacted
    summary = run.summary
    assert sorted(summary) == ["eu1a", "eu1b", "us1a"]
    for host, entry in summary.items():
        assert (entry["status"], entry["version"], entry["previous"], entry["objects"]) == \
            ("deployed", "1.0.0", "", 4), host
        assert entry["counts"] == {"created": 4}, host
    assert "host  status    version  previous  objects  changes" in run.output  # the printed table
    assert "2 wave(s) by region: eu-1: eu1a, eu1b -> us-1: us1a" in run.output
    for c in clusters:
        assert deployment_ready(c, ns, "shop"), c.name
        assert _greeting(c, ns) == "hello from 1.0.0"
        assert len(labelled_history(c, ns, "shop")) == 2, c.name  # locator + record of 1.0.0

    # 2. Second run: no change anywhere (PLAY RECAP changed=0) and nothing rewritten; one request at a time
    # (deploy_concurrency reaches manent_apply: an invalid value would fail the apply task).
    before = {c.name: resource_versions(c, ns) for c in clusters}
    run = playbook("deploy", dict(v1, deploy_concurrency=1))
    assert run.rc == 0, run.explain()
    assert sorted(run.recap) == ["eu1a", "eu1b", "us1a"], run.explain()
    assert all(r["changed"] == 0 and r["failed"] == 0 for r in run.recap.values()), run.explain()
    assert all(e["counts"] == {"unchanged": 4} and not e["changed"] for e in run.summary.values()), run.summary
    assert {c.name: resource_versions(c, ns) for c in clusters} == before

    # 3. Check mode of a new version: a dry run with diffs that writes nothing, history included.
    v2 = shop_vars(tmp_path, ns, "2.0.0", "hello from 2.0.0", replicas="3")
    run = playbook("deploy", v2, check=True, diff=True)
    assert run.rc == 0, run.explain()
    assert {e["status"] for e in run.summary.values()} == {"checked"}
    assert "hello from 2.0.0" in run.output  # the diff of the ConfigMap
    assert {c.name: resource_versions(c, ns) for c in clusters} == before

    # 4. -l region_eu1: only eu1a and eu1b change; us1a is not even in the run.
    run = playbook("deploy", v2, limit="region_eu1")
    assert run.rc == 0, run.explain()
    assert sorted(run.summary) == ["eu1a", "eu1b"]
    assert sorted(run.recap) == ["eu1a", "eu1b"], run.explain()
    assert _greeting(by_name["eu1a"], ns) == _greeting(by_name["eu1b"], ns) == "hello from 2.0.0"
    assert by_name["eu1a"].get("apps/v1", "Deployment", ns, "shop")["spec"]["replicas"] == 3
    assert resource_versions(by_name["us1a"], ns) == before["us1a"]

    # 5. Everywhere again: the clusters run different releases, the checkpoint stops before any change.
    before = {c.name: resource_versions(c, ns) for c in clusters}
    run = playbook("deploy", shop_vars(tmp_path, ns, "3.0.0", "v3"))
    assert run.rc != 0, run.explain()
    assert "the targeted clusters run different releases" in run.output
    # the table, one line per release in service (version, artifact sha256, clusters, hosts), each on its own line
    table = [line.strip(' ",').split() for line in run.output.splitlines()]
    rows = {row[0]: row[2:] for row in table if row and row[0] in ("2.0.0", "1.0.0") and len(row) > 3}
    assert rows == {"2.0.0": ["2", "eu1a,", "eu1b"], "1.0.0": ["1", "us1a"]}, run.explain()
    assert "Deploy | Apply" not in run.output  # every cluster rendered (read-only), none applied
    assert {c.name: resource_versions(c, ns) for c in clusters} == before

    # 6. Roll region eu-1 back (same -l behaviour): 1.0.0 again, from the history in the clusters.
    run = playbook("rollback", v2, limit="region_eu1")
    assert run.rc == 0, run.explain()
    assert {h: (e["status"], e["version"], e["previous"]) for h, e in run.summary.items()} == {
        "eu1a": ("rolled-back", "1.0.0", "2.0.0"), "eu1b": ("rolled-back", "1.0.0", "2.0.0")}
    for c in clusters:
        assert _greeting(c, ns) == "hello from 1.0.0"
        assert c.get("apps/v1", "Deployment", ns, "shop")["spec"]["replicas"] == 2
        assert deployment_ready(c, ns, "shop"), c.name
    assert resource_versions(by_name["us1a"], ns) == before["us1a"]


@pytest.mark.integration
def test_checkpoint_stops_when_a_cluster_cannot_be_read(clusters, inventory_path, namespaces, tmp_path):
    """A targeted cluster that cannot be read (nothing listens at its address) stops the deploy before any change
    on any cluster. playbooks/deploy.yml stops at that cluster's rendering, which reads its discovery and the
    release in service for the checkpoint (its plan play has any_errors_fatal, and no wave starts); a play of the
    role's checkpoint entry point reads every cluster it can, prints the table and names the cluster it could
    not read."""
    ns = namespaces
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"),
                                host_vars={"us1a": {"manent_api_server": "https://127.0.0.1:1"}})
    extra = shop_vars(tmp_path, ns, "1.0.0", "hello")
    run = run_playbook("deploy", inventory, extra, tmp_path)
    assert run.rc != 0, run.explain()
    assert "fatal: [us1a]" in run.output and "cannot reach https://127.0.0.1:1" in run.output, run.explain()
    assert "Checkpoint | Releases in service" not in run.output and "Deploy | Apply" not in run.output

    playbook = tmp_path / "checkpoint.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Checkpoint only", "hosts": "all", "connection": "local", "gather_facts": False,
        "tasks": [{"name": "Checkpoint", "ansible.builtin.import_role": {
            "name": "manent.kubernetes.deploy", "tasks_from": "checkpoint"}}]}]))
    run = run_playbook(str(playbook)[:-len(".yml")], inventory, extra, tmp_path)
    assert run.rc != 0, run.explain()
    assert "the history of us1a could not be read" in run.output, run.explain()
    assert "nothing was changed" in run.output
    rows = [line.strip(' ",').split() for line in run.output.splitlines()]
    assert ["(none)", "-", "2", "eu1a,", "eu1b"] in rows, run.explain()  # the clusters read, nothing in service
    for c in clusters:
        if c.name != "us1a":
            assert resource_versions(c, ns) == {}, c.name
            assert labelled_history(c, ns, "shop") == [], c.name


# --------------------------------------------------------------------------- waves


@pytest.mark.integration
def test_waves_stop_after_the_first_wave_with_a_failure(clusters, inventory_path, namespaces, tmp_path):
    ns = namespaces
    # One manifest; ${POD_STATE} is "never-ready" in region eu-1 (group variable) and "ready" elsewhere: the
    # kwok clusters keep pods annotated manent.test/never-ready unready, and the deadline makes it fail at once
    # (14 s: long enough for one progress line, printed after 10 s of waiting).
    manifest = write_manifest(str(tmp_path / "web.yaml"), [{
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "progressDeadlineSeconds": 14, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"},
                                           "annotations": {"manent.test/${POD_STATE}": "true"}},
                              "spec": {"containers": [{"name": "web", "image": PAUSE}]}}}}])
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"), {
        "all": {"deploy_variables": {"POD_STATE": "ready"}},
        "region_eu1": {"deploy_variables": {"POD_STATE": "never-ready"}},
    })
    extra = base_vars(tmp_path, ns, deploy_application="web", deploy_artifact=artifact("web", "1.0.0", manifest))
    run = run_playbook("deploy", inventory, extra, tmp_path)

    assert run.rc != 0, run.explain()
    summary = run.summary
    statuses = {h: e["status"] for h, e in summary.items()}
    assert statuses == {"eu1a": "failed", "eu1b": "failed", "us1a": "not started"}, run.explain()
    assert "ProgressDeadlineExceeded" in summary["eu1a"]["message"] or \
        "progress" in summary["eu1a"]["message"].lower(), summary["eu1a"]
    assert "eu1a: " in run.output and "not started" in run.output  # the table names both
    assert "manent_apply [eu1a]: still rolling out: Deployment/%s/web" % ns in run.output, run.explain()
    # Each cluster that failed fails in the outcome, not only the first of its wave (its run_once is false then).
    assert all(run.recap[h]["failed"] == 1 and run.recap[h]["rescued"] == 1 for h in ("eu1a", "eu1b")), run.explain()
    us1a = _by_name(clusters)["us1a"]
    assert us1a.get("apps/v1", "Deployment", ns, "web") is None
    assert labelled_history(us1a, ns, "web") == []
    for name in ("eu1a", "eu1b"):
        c = _by_name(clusters)[name]
        assert c.get("apps/v1", "Deployment", ns, "web") is not None
        statuses = {cm["metadata"].get("labels", {}).get("manent.io/release-version"): cm["data"].get("status")
                    for cm in labelled_history(c, ns, "web") if cm["metadata"]["labels"]["manent.io/history"]
                    == "record"}
        assert statuses == {"1.0.0": "failed"}, statuses


@pytest.mark.integration
def test_a_rendering_that_fails_on_a_later_wave_stops_the_deploy_before_the_first_wave(
        clusters, inventory_path, namespaces, tmp_path):
    """playbooks/deploy.yml renders every targeted cluster before its first wave writes anything: a manifest that
    only region us-1's variables make invalid stops the run, and the clusters of the first wave (eu-1) stay
    untouched, without objects or history. The message names the file and the cluster."""
    ns = namespaces
    manifest = write_manifest(str(tmp_path / "settings.yaml"), [{
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
        "data": {"mode": "${MODE}"}}])
    with open(manifest, encoding="utf-8") as handle:
        text = handle.read()
    with open(manifest, "w", encoding="utf-8") as handle:  # unquoted: a value that is not YAML breaks the document
        handle.write(text.replace("'${MODE}'", "${MODE}"))
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"), {
        "all": {"deploy_variables": {"MODE": "fast"}},
        "region_us1": {"deploy_variables": {"MODE": "[unclosed"}},
    })
    extra = base_vars(tmp_path, ns, deploy_application="settings",
                      deploy_artifact=artifact("settings", "1.0.0", manifest))
    run = run_playbook("deploy", inventory, extra, tmp_path)

    assert run.rc != 0, run.explain()
    assert "fatal: [us1a]" in run.output and "settings.yaml" in run.output, run.explain()
    assert "Deploy | Apply" not in run.output, run.explain()
    # The summary is shown and exported as for a failed wave: the cluster that failed, the others not started.
    assert {h: e["status"] for h, e in run.summary.items()} == {
        "eu1a": "not started", "eu1b": "not started", "us1a": "failed"}, run.explain()
    assert "settings.yaml" in run.summary["us1a"]["message"], run.summary
    for c in clusters:
        assert c.get("v1", "ConfigMap", ns, "settings") is None, c.name
        assert labelled_history(c, ns, "settings") == [], c.name

    # The same inventory without the bad value deploys every wave.
    inventory = write_inventory(inventory_path, str(tmp_path / "inventory.yml"),
                                {"all": {"deploy_variables": {"MODE": "fast"}}})
    run = run_playbook("deploy", inventory, extra, tmp_path)
    assert run.rc == 0, run.explain()
    assert {h: e["status"] for h, e in run.summary.items()} == {h: "deployed" for h in ("eu1a", "eu1b", "us1a")}
    for c in clusters:
        assert c.get("v1", "ConfigMap", ns, "settings")["data"] == {"mode": "fast"}, c.name


@pytest.mark.integration
def test_the_wave_entry_point_without_its_plan_play_says_what_to_run(clusters, inventory_path, namespaces,
                                                                     tmp_path):
    """Entry point "wave" applies what the plan play rendered in the same run. Started alone, it fails for each
    cluster with what to run instead (it said "'__deploy_render' is undefined"), and writes nothing."""
    ns = namespaces
    manifest = write_manifest(str(tmp_path / "settings.yaml"), [{
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "fast"}}])
    playbook = tmp_path / "wave-only.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "A wave without its plan play", "hosts": "all", "connection": "local", "gather_facts": False,
        "tasks": [{"name": "Deploy this wave", "ansible.builtin.import_role": {
            "name": "manent.kubernetes.deploy", "tasks_from": "wave", "rolespec_validate": False}}]}]))
    extra = base_vars(tmp_path, ns, deploy_application="settings",
                      deploy_artifact=artifact("settings", "1.0.0", manifest))
    run = run_playbook(str(playbook)[:-len(".yml")], inventory_path, extra, tmp_path)

    assert run.rc != 0, run.explain()
    assert 'nothing was rendered for this cluster in this run: entry point "wave" applies what the plan play' \
        in run.output, run.explain()
    assert "'__deploy_render' is undefined" not in run.output, run.explain()
    for c in clusters:
        assert c.get("v1", "ConfigMap", ns, "settings") is None, c.name
        assert labelled_history(c, ns, "settings") == [], c.name


# --------------------------------------------------------------------------- audit


@pytest.mark.integration
def test_audit_names_removed_api_versions_without_touching_the_clusters(clusters, inventory_path, namespaces,
                                                                        tmp_path):
    ns = namespaces
    manifest = write_manifest(str(tmp_path / "pdb.yaml"), [{
        "apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}])
    extra = base_vars(tmp_path, ns, deploy_application="web", deploy_artifact=artifact("web", "1.0.0", manifest))
    run = run_playbook("audit", inventory_path, extra, tmp_path, limit="region_eu1")
    assert run.rc != 0, run.explain()
    rows = [line.strip(' ",').split() for line in run.output.splitlines()]
    assert ["eu1a", "error", "0", "0", "0"] in rows and ["eu1b", "error", "0", "0", "0"] in rows, run.explain()
    assert "PodDisruptionBudget" in run.output and "policy/v1" in run.output
    for c in clusters:
        assert resource_versions(c, ns) == {}, c.name

    # Without an artifact source only the stored history is audited: nothing stored, nothing found.
    extra["deploy_artifact"] = {}
    run = run_playbook("audit", inventory_path, extra, tmp_path, limit="region_eu1")
    assert run.rc == 0, run.explain()
    rows = [line.strip(' ",').split() for line in run.output.splitlines()]
    assert ["eu1a", "not", "checked", "0", "0", "0"] in rows, run.explain()


@pytest.mark.integration
def test_audit_fails_on_deprecated_apis_only_when_asked_never_on_other_warnings(inventory_path, namespaces, tmp_path):
    """deploy_audit_fail_on: deprecated fails on a deprecated apiVersion the cluster still serves (v1 Endpoints,
    deprecated since 1.33), not on the artifact's other warnings (here an object outside the release namespace)."""
    ns = namespaces
    settings = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}}
    endpoints = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "legacy"}}
    elsewhere = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "elsewhere", "namespace": "default"},
                 "data": {"b": "2"}}

    def audit(name, objects, fail_on):
        manifest = write_manifest(str(tmp_path / (name + ".yaml")), objects)
        extra = base_vars(tmp_path, ns, deploy_application="web", deploy_audit_fail_on=fail_on,
                          deploy_artifact=artifact("web", "1.0.0", manifest))
        return run_playbook("audit", inventory_path, extra, tmp_path, limit="eu1a")

    run = audit("deprecated", [settings, endpoints], "deprecated")
    assert run.rc != 0, run.explain()
    assert "eu1a: artifact:" in run.output and "Endpoints" in run.output and "discovery.k8s.io/v1" in run.output
    run = audit("deprecated", [settings, endpoints], "removed")
    assert run.rc == 0, run.explain()
    assert "Endpoints" in run.output  # shown, not failing
    run = audit("elsewhere", [settings, elsewhere], "deprecated")
    assert run.rc == 0, run.explain()
    assert "outside the release namespace" in run.output, run.explain()


# --------------------------------------------------------------------------- the demo


@pytest.mark.integration
@pytest.mark.slow
def test_demo_deploys_both_samples_wave_by_wave_then_rolls_back(clusters, inventory_path, namespaces, tmp_path):
    ns = namespaces
    extra = {"manent_demo_namespace": ns, "deploy_parallel": 3,
             "deploy_cache_dir": str(tmp_path / "cache"), "deploy_work_dir": str(tmp_path / "work")}
    run = run_playbook("demo", inventory_path, extra, tmp_path, env={"MANENT_HELM": helm_binary()})
    assert run.rc == 0, run.explain()
    assert run.output.count("PLAY [Deploy wave by wave]") == 6  # 3 deploys x 2 waves
    for c in clusters:
        assert _greeting(c, ns) == "hello from shop 1.0.0"  # rolled back from 1.1.0
        assert deployment_ready(c, ns, "shop"), c.name
        assert deployment_ready(c, ns, "sample-manent-sample"), c.name
        records = {cm["metadata"]["labels"].get("manent.io/release-version"): cm["data"].get("status")
                   for cm in labelled_history(c, ns, "shop") if cm["metadata"]["labels"]["manent.io/history"]
                   == "record"}
        assert records == {"1.0.0": "deployed", "1.1.0": "rolled-back"}, records
    assert "1.0.0 deployed, 1.1.0 rolled-back" in run.output or "1.1.0 rolled-back" in run.output


# --------------------------------------------------------------------------- what a new user meets


@pytest.mark.integration
def test_a_missing_helm_is_named_by_its_role_variable_once(clusters, inventory_path, namespaces, tmp_path):
    """A chart with deploy_helm_command naming no binary: the error names deploy_helm_command (not the module's
    helm_command), the role's own output says it once (the summary: the failed rendering reports it, the final
    failure points to the summary instead of repeating it), and nothing is written to the cluster."""
    ns = namespaces
    missing = str(tmp_path / "bin" / "helm")
    chart = chart_path("manent-sample-0.1.0.tgz")
    extra = base_vars(tmp_path, ns, deploy_application="sample", deploy_artifact=artifact("manent-sample", "0.1.0", chart),
                      deploy_helm_release="sample", deploy_helm_command=missing)
    run = run_playbook("deploy", inventory_path, extra, tmp_path, limit="eu1a")

    assert run.rc != 0, run.explain()
    message = "deploy_helm_command: helm binary %s not found" % missing
    assert message in run.summary["eu1a"]["message"], run.summary
    assert not re.search(r"(?<!deploy_)helm_command: ", run.output), run.explain()  # the module's name never shown
    summary = run.output.split("TASK [manent.kubernetes.deploy : Summary | Per-cluster summary]")[1].split("\nTASK [")[0]
    assert summary.count(message) == 1, run.explain()
    outcome = run.output.split("TASK [manent.kubernetes.deploy : Outcome | Fail when this cluster failed]")[1]
    assert message not in outcome and "failed: the error is in the summary above" in outcome, run.explain()
    # before the summary, only the failed rendering reports it (ansible-core 2.19+ shows a failed task's message
    # twice: its error and its result)
    before = run.output.split("TASK [manent.kubernetes.deploy : Summary |")[0]
    assert 1 <= before.count(message) <= 2, run.explain()
    by_name = _by_name(clusters)
    assert resource_versions(by_name["eu1a"], ns) == {}, "something was written"
    assert labelled_history(by_name["eu1a"], ns, "sample") == []


@pytest.mark.integration
def test_the_object_count_is_the_same_on_the_first_deploy_that_creates_the_namespace(
        clusters, tmp_path, inventory_path):
    """deploy_create_namespace: the first deploy creates the release namespace; the summary counts the release's
    objects on both runs alike, and says what the first one added."""
    ns = "t-" + uuid.uuid4().hex[:10]
    eu1a = _by_name(clusters)["eu1a"]
    extra = shop_vars(tmp_path, ns, "1.0.0", "hello", replicas="1", deploy_create_namespace=True)
    try:
        first = run_playbook("deploy", inventory_path, extra, tmp_path, limit="eu1a")
        assert first.rc == 0, first.explain()
        one = first.summary["eu1a"]  # read now: the next run writes the same summary file
        again = dict(extra, deploy_variables={"REPLICAS": "1", "GREETING": "again"})
        second = run_playbook("deploy", inventory_path, again, tmp_path, limit="eu1a")
        assert second.rc == 0, second.explain()
        two = second.summary["eu1a"]
    finally:
        eu1a.delete_namespace(ns)
    assert one["details"]["objects"] == two["details"]["objects"] == len(app_objects_of_shop()), (one, two)
    assert one["details"]["namespace_created"] == ns and not two["details"]["namespace_created"]
    assert one["counts"].get("created") == one["details"]["objects"] + 1, one
    note = "eu1a: namespace %s created (deploy_create_namespace), counted in changes, not in objects" % ns
    assert note in first.output and note not in second.output, first.explain()


def app_objects_of_shop():
    """The objects of examples/artifacts/shop.yaml."""
    with open(SHOP, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]
