# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Credentials and TLS against a real API server: tokens, client certificates, inline PEM, CA verification."""

import os

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import ConnectionOptions, Kube
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, InputError
from tests.integration.kube import whoami

pytestmark = pytest.mark.integration


def read(cluster, name):
    with open(os.path.join(cluster.dir, name)) as f:
        return f.read()


def test_client_certificate_and_inline_ca(cluster):
    kube = Kube(ConnectionOptions(server=cluster.url, ca=read(cluster, "ca.crt"),
                                  client_cert=read(cluster, "admin.crt"), client_key=read(cluster, "admin.key")))
    try:
        assert kube.version()[:2] >= (1, 30)
        assert whoami(kube) == "manent-admin"
        tmp = kube._tmp  # pylint: disable=protected-access
        assert tmp and sorted(os.listdir(tmp)) == ["ca.crt", "client.crt", "client.key"]
        assert oct(os.stat(os.path.join(tmp, "client.key")).st_mode & 0o777) == "0o600"
    finally:
        kube.close()
    assert not os.path.exists(tmp), "PEM files are removed on close"


def test_file_references_for_token_and_certificates(cluster):
    kube = Kube(ConnectionOptions(server=cluster.url, ca_file=cluster.ca_file,
                                  token="file:" + os.path.join(cluster.dir, "deployer.token")))
    assert whoami(kube) == "manent-deployer"
    kube.close()


def test_tls_is_verified_unless_turned_off(cluster):
    # Another cluster's CA does not sign this API server's certificate.
    wrong = [c for c in os.listdir(os.path.dirname(cluster.dir)) if c != os.path.basename(cluster.dir)
             and os.path.isfile(os.path.join(os.path.dirname(cluster.dir), c, "ca.crt"))]
    assert wrong, "needs a second cluster's CA"
    bad = Kube(ConnectionOptions(server=cluster.url, token=cluster.token,
                                 ca_file=os.path.join(os.path.dirname(cluster.dir), wrong[0], "ca.crt"), retries=1))
    with pytest.raises(ApiError) as err:
        bad.version()
    assert "TLS verification failed" in str(err.value) and cluster.token not in str(err.value)
    bad.close()
    insecure = Kube(ConnectionOptions(server=cluster.url, token=cluster.token, insecure_skip_tls_verify=True))
    assert insecure.version()
    insecure.close()


def test_bad_credentials_are_clear_and_never_echoed(cluster):
    kube = Kube(ConnectionOptions(server=cluster.url, ca_file=cluster.ca_file, token="not-a-valid-token-123",
                                  retries=1))
    with pytest.raises(ApiError) as err:
        kube.version()
    assert err.value.status == 401 and "not-a-valid-token-123" not in str(err.value)
    assert "credentials were not accepted" in str(err.value)
    with pytest.raises(InputError):
        Kube(ConnectionOptions(server=cluster.url, client_cert=read(cluster, "admin.crt")))
    with pytest.raises(InputError):
        Kube(ConnectionOptions(server="http://127.0.0.1:1"))
