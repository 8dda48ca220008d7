# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Leaving Helm: after manent adopted the objects of a ``helm install``, delete Helm's release state Secrets
``sh.helm.release.v1.<release>.v<N>`` (type ``helm.sh/release.v1``) and nothing else, never the objects."""

from __future__ import annotations

import re

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import is_label_value

HELM_RELEASE_TYPE = "helm.sh/release.v1"


def helm_release_exists(kube, namespace, release_name):
    """True when Helm keeps state for release ``release_name`` in ``namespace`` (a release Secret of any revision
    not uninstalled, as ``helm upgrade --install`` looks for one): a chart taken over from Helm then renders as
    ``helm upgrade`` would. One LIST, at most one item; a name no Helm release can have finds nothing."""
    if not release_name or not is_label_value(str(release_name)):
        return False
    found = kube.get_json("/api/v1/namespaces/%s/secrets" % namespace,
                          subject="Secret/%s/sh.helm.release.v1.%s.*" % (namespace, release_name),
                          query={"fieldSelector": "type=%s" % HELM_RELEASE_TYPE,
                                 "labelSelector": "owner=helm,name=%s,status!=uninstalled" % release_name,
                                 "limit": "1"})
    return bool(found.get("items"))


def delete_helm_release_secrets(client, release_name):
    """Delete the Helm 3 release Secrets of ``release_name`` in the namespace of ``client`` (a
    :class:`HistoryClient`); returns their names by revision."""
    if not release_name:
        raise InputError("no Helm release name given", subject="helm release")
    pattern = re.compile(r"^sh\.helm\.release\.v1\.%s\.v(\d+)$" % re.escape(str(release_name)))
    items = client.call("GET", client.path(resource="secrets"),
                        client.subject("sh.helm.release.v1.%s.*" % release_name, "Secret"),
                        "list the Helm release secrets",
                        query={"fieldSelector": "type=%s" % HELM_RELEASE_TYPE}).get("items") or []
    found = []
    for secret in items:
        match = pattern.match((secret.get("metadata") or {}).get("name") or "")
        if match and secret.get("type") == HELM_RELEASE_TYPE:
            found.append((int(match.group(1)), secret))
    deleted = []
    for _revision, secret in sorted(found, key=lambda item: item[0]):
        if client.delete(secret, "delete the Helm release secret", resource="secrets", kind="Secret"):
            deleted.append(secret["metadata"]["name"])
    return deleted
