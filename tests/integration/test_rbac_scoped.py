# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""RBAC (issue 14): a token with a namespace-scoped Role only deploys into that namespace, history included; an
object outside it stops the deploy before anything is written, and the error names the missing permission."""

import uuid

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ManentError
from tests.integration.deploy_helpers import deploy, labelled_history, locator, versions
from tests.objects import configmap
from tests.reliability import record
from tests.integration.kube import deployer_token

pytestmark = pytest.mark.integration


@pytest.fixture
def scoped(cluster, namespace):
    """A Kube of user manent-deployer, bound to a Role in ``namespace`` only."""
    token = deployer_token(cluster, namespace)
    with Kube(cluster.connection(token=token)) as kube:
        yield kube, token


def test_namespace_scoped_role_deploys_into_its_namespace(cluster, namespace, tmp_path, scoped):
    case = "namespace-scoped Role deploys into its namespace, history included"
    try:
        result = deploy(cluster, tmp_path, [configmap("cfg", v="1")], namespace, version="1.0.0", kube=scoped[0],
                        wait=False)
        assert result.status == "deployed"
        assert locator(cluster, namespace)["version"] == "1.0.0"
        assert len(labelled_history(cluster, namespace)) == 2  # locator and record
    except BaseException:
        record("rbac", case, False, source=__name__)
        raise
    record("rbac", case, True, source=__name__)


def test_object_outside_the_role_namespace_is_refused_before_any_write(cluster, namespace, tmp_path, scoped):
    kube, token = scoped
    deploy(cluster, tmp_path, [configmap("cfg", v="1")], namespace, version="1.0.0", kube=kube, wait=False)
    outside = "t-" + uuid.uuid4().hex[:10]
    cluster.create_namespace(outside)
    case = "object outside the Role's namespace refused before any write, naming the permission"
    try:
        before, before_outside = versions(cluster, namespace), versions(cluster, outside)
        with pytest.raises(ManentError) as err:
            deploy(cluster, tmp_path, [configmap("cfg", v="2"), configmap("elsewhere", namespace=outside)],
                   namespace, version="2.0.0", kube=kube, wait=False)
        message = str(err.value)
        assert "ConfigMap/%s/elsewhere" % outside in message, message
        assert "forbidden" in message.lower() and "configmaps" in message, message
        assert token not in message
        assert versions(cluster, outside) == before_outside
        assert versions(cluster, namespace) == before, "something was written in the release namespace"
    except BaseException:
        record("rbac", case, False, detail="writes happen before the 403 of the object outside", source=__name__)
        raise
    finally:
        cluster.delete_namespace(outside)
    record("rbac", case, True, detail=message[:300], source=__name__)
