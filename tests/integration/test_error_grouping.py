# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Errors at scale on a real cluster: 100 objects failing for the same reason (their namespace does not exist,
create_namespace off) are reported once, with the count, a few names and what to do, not in 100 lines."""

from __future__ import annotations

import uuid

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApplyError
from tests.integration.deploy_helpers import deploy
from tests.objects import configmap

pytestmark = pytest.mark.integration


def test_hundred_objects_in_a_missing_namespace_fail_in_one_line(cluster, namespace, tmp_path):
    missing = "absent-" + uuid.uuid4().hex[:8]
    objects = [configmap("cm-%03d" % i, namespace=missing, v=str(i)) for i in range(100)]
    objects.append(configmap("fine", v="1"))  # in the release namespace, which exists
    with pytest.raises(ApplyError) as err:
        deploy(cluster, tmp_path, objects, namespace)
    message = str(err.value)
    lines = message.splitlines()
    assert lines[0] == "100 object(s) failed to apply:", message
    assert len(lines) == 2, message  # one line for the shared reason, not one per object
    assert lines[1].startswith('- 100 objects: namespaces "%s" not found (ConfigMap/%s/cm-' % (missing, missing)), \
        message
    assert "and 97 more" in lines[1] and "create_namespace" in lines[1], message
    assert cluster.get("v1", "Namespace", None, missing) is None
    assert cluster.get("v1", "ConfigMap", namespace, "fine") is not None  # applied in the same tier
