# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes objects tests build, in one place for unit and integration tests: each builder gives the
smallest valid object of its kind, and keyword arguments add what a test needs."""

from __future__ import annotations

PAUSE = "registry.k8s.io/pause:3.10"
NEVER_READY = {"manent.test/never-ready": "true"}  # the kwok stage that keeps such a pod unready (hack/kwok)


def metadata(name, namespace=None, annotations=None, labels=None):
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = dict(annotations)
    if labels:
        meta["labels"] = dict(labels)
    return meta


def deployment(name, namespace=None, image=PAUSE, replicas=1, template_annotations=None, deadline=None,
               annotations=None, labels=None, api_version="apps/v1", strategy=None, container="app"):
    """A Deployment of one container selecting ``app: <name>``; ``replicas=None`` leaves spec.replicas out."""
    spec = {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": container, "image": image}]}}}
    if replicas is not None:
        spec["replicas"] = replicas
    if template_annotations:
        spec["template"]["metadata"]["annotations"] = dict(template_annotations)
    if deadline is not None:
        spec["progressDeadlineSeconds"] = deadline
    if strategy:
        spec["strategy"] = strategy
    return {"apiVersion": api_version, "kind": "Deployment",
            "metadata": metadata(name, namespace, annotations, labels), "spec": spec}


def configmap(name, annotations=None, namespace=None, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(name, namespace, annotations),
            "data": dict(data)}


def secret(name, string_data=None, data=None, namespace=None, type_="Opaque"):
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": metadata(name, namespace), "type": type_}
    if string_data is not None:
        obj["stringData"] = dict(string_data)
    if data is not None:
        obj["data"] = dict(data)
    return obj


def service(name, port=80, namespace=None):
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata(name, namespace),
            "spec": {"selector": {"app": name}, "ports": [{"port": port, "targetPort": port}]}}


def job(name, command="true", annotations=None):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata(name, annotations=annotations),
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "job", "image": PAUSE, "command": ["/pause", command]}]}}}}


V1_WITH_SIZE = object()  # crd()'s default versions


def crd(group, kind, plural, versions=V1_WITH_SIZE, scope="Namespaced", api_version="apiextensions.k8s.io/v1"):
    """A CustomResourceDefinition of ``kind`` in ``group``; ``versions`` default to v1 served and stored, with a
    schema of an object whose spec has an integer ``size`` (any other value, None included, is used as given)."""
    if versions is V1_WITH_SIZE:
        versions = [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": {
                "size": {"type": "integer"}}}}}}}]
    return {"apiVersion": api_version, "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": scope, "versions": versions,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind}}}
