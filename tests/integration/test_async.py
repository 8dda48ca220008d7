# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules run with ``async`` (their action plugins hand such a task to the module, which Ansible runs in the
background and polls): a render, a deploy and a history read, each to its result."""

from __future__ import annotations

import os

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey
from tests.integration.playbook_helpers import run_adhoc, sha256, write_manifest

pytestmark = pytest.mark.integration
ASYNC = ["-B", "120", "-P", "1"]


def test_render_apply_and_history_run_async(cluster, namespace, tmp_path):
    key = ReleaseKey(application="async", artifact="async", environment="test")
    server = dict(api_server=cluster.url, token="file:" + os.path.join(cluster.dir, "admin.token"),
                  ca_file=cluster.ca_file)
    connection = dict(server, application=key.application, artifact_name=key.artifact, environment=key.environment,
                      namespace=namespace, work_dir=str(tmp_path / "work"))
    artifact = write_manifest(str(tmp_path / "app.yaml"), [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "async"}, "data": {"k": "v"}}])

    rendered = run_adhoc("manent_render", dict(connection, artifact=artifact, artifact_sha256=sha256(artifact),
                                               version="1.0.0"), ASYNC)
    assert rendered.get("finished") == 1 and not rendered.get("failed"), rendered
    assert rendered["objects"] == 1 and os.path.isfile(rendered["bundle"]), rendered

    applied = run_adhoc("manent_apply", dict(server, bundle=rendered["bundle"]), ASYNC)
    assert applied.get("finished") == 1 and not applied.get("failed"), applied
    assert applied["status"] == "deployed" and applied["changed"] is True, applied
    assert cluster.get("v1", "ConfigMap", namespace, "async")["data"] == {"k": "v"}

    listed = run_adhoc("manent_history", dict(connection, operation="list"), ASYNC)
    assert listed.get("finished") == 1 and not listed.get("failed"), listed
    assert [r["version"] for r in listed["records"]] == ["1.0.0"], listed
