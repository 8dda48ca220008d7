# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A chart's install and upgrade paths through manent_render and manent_apply on a real cluster: the first
deploy of a release key renders as ``helm install`` (``.Release.IsInstall``), every deploy once a release is in
service as ``helm upgrade`` (``.Release.IsUpgrade``), so objects a chart makes only at install time are not made
again (a password generated at install would otherwise be replaced by a new one at each deploy), and are pruned
unless kept, as helm upgrade does."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.helpers import helm_binary
from tests.integration.module_helpers import connection, kubeconfig, packaged_chart, run_module
from tests.integration.playbook_helpers import sha256

pytestmark = pytest.mark.integration

PHASE = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: phase\ndata:\n"
         "  isInstall: {{ .Release.IsInstall | quote }}\n  isUpgrade: {{ .Release.IsUpgrade | quote }}\n")
# Install-only objects: one kept (helm.sh/resource-policy: keep, the usual shape of a generated password), one not.
SEED = ("{{- if .Release.IsInstall }}\napiVersion: v1\nkind: Secret\nmetadata:\n  name: seed\n  annotations:\n"
        "    helm.sh/resource-policy: keep\nstringData:\n  password: {{ randAlphaNum 16 | quote }}\n{{- end }}\n")
ONCE = "{{- if .Release.IsInstall }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: once\n{{- end }}\n"


def _render(cluster, namespace, tmp_path, chart, version, **more):
    """manent_render of ``chart`` as ``version``; (render result, bundle path, bundle objects by kind/name)."""
    args = dict(connection(cluster, namespace, tmp_path), artifact=chart, version=version, artifact_sha256=sha256(chart),
                helm_command=helm_binary(), bundle=str(tmp_path / ("bundle-%s.json" % version)), **more)
    failed, rendered = run_module("manent_render", tmp_path, **args)
    assert not failed, rendered
    with open(args["bundle"], encoding="utf-8") as handle:
        objects = {"%s/%s" % (obj["kind"], obj["metadata"]["name"]): obj for obj in json.load(handle)["objects"]}
    return rendered, args["bundle"], objects


def _deploy(cluster, namespace, tmp_path, chart, version):
    """manent_render then manent_apply of ``chart`` as ``version``; (render result, bundle objects by name)."""
    rendered, bundle, objects = _render(cluster, namespace, tmp_path, chart, version)
    apply_args = {name: value for name, value in connection(cluster, namespace, tmp_path).items()
                  if name in ("api_server", "token", "ca_file", "work_dir")}
    failed, applied = run_module("manent_apply", tmp_path, bundle=bundle, wait=False, prune=True, **apply_args)
    assert not failed and applied["status"] == "deployed", applied
    return rendered, objects


def test_a_chart_renders_as_helm_install_first_then_as_helm_upgrade(cluster, namespace, tmp_path):
    chart = packaged_chart(tmp_path, {"phase.yaml": PHASE, "seed.yaml": SEED, "once.yaml": ONCE}, name="phases")

    rendered, objects = _deploy(cluster, namespace, tmp_path, chart, "1.0.0")
    assert not rendered["in_service"], rendered
    assert objects["ConfigMap/phase"]["data"] == {"isInstall": "true", "isUpgrade": "false"}
    assert {"Secret/seed", "ConfigMap/once"} <= set(objects), sorted(objects)
    password = cluster.get("v1", "Secret", namespace, "seed")["data"]["password"]

    rendered, objects = _deploy(cluster, namespace, tmp_path, chart, "2.0.0")
    assert rendered["in_service"]["version"] == "1.0.0", rendered
    assert objects["ConfigMap/phase"]["data"] == {"isInstall": "false", "isUpgrade": "true"}
    assert not {"Secret/seed", "ConfigMap/once"} & set(objects), sorted(objects)
    assert cluster.get("v1", "ConfigMap", namespace, "phase")["data"] == {"isInstall": "false", "isUpgrade": "true"}
    # the generated password stays as the install made it (kept); the install-only ConfigMap is pruned
    assert cluster.get("v1", "Secret", namespace, "seed")["data"]["password"] == password
    cluster.assert_deleted("v1", "ConfigMap", namespace, "once")

    # a rerun of the release in service renders the same (as an upgrade): nothing changes
    rendered, objects = _deploy(cluster, namespace, tmp_path, chart, "2.0.0")
    assert objects["ConfigMap/phase"]["data"] == {"isInstall": "false", "isUpgrade": "true"}
    assert cluster.get("v1", "Secret", namespace, "seed")["data"]["password"] == password


def test_a_chart_taken_over_from_helm_renders_as_helm_upgrade_while_helm_keeps_the_release(
        cluster, namespace, tmp_path):
    """Before manent's first deploy of a release that ``helm install`` made, ``helm upgrade --install`` would
    render it as an upgrade: so does manent_render when told the Helm release it takes over (helm_migrate_release),
    and only while Helm keeps state for it; without it, or for another name, it is an install."""
    chart = packaged_chart(tmp_path, {"phase.yaml": PHASE, "seed.yaml": SEED}, name="phases")
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": str(home / "cache"),
           "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data")}
    subprocess.run([helm_binary(), "install", "phases", chart, "--namespace", namespace,
                    "--kubeconfig", kubeconfig(cluster, tmp_path / "kubeconfig")],
                   env=env, check=True, capture_output=True, text=True, timeout=120)
    assert cluster.get("v1", "Secret", namespace, "sh.helm.release.v1.phases.v1") is not None

    for more, upgrade in (({}, False), ({"helm_migrate_release": "other"}, False),
                          ({"helm_migrate_release": "phases"}, True)):
        rendered, _bundle, objects = _render(cluster, namespace, tmp_path, chart, "1.0.0", helm_release="phases",
                                             **more)
        assert not rendered["in_service"], rendered
        assert objects["ConfigMap/phase"]["data"]["isUpgrade"] == str(upgrade).lower(), more
        assert ("Secret/seed" in objects) is not upgrade, (more, sorted(objects))
