# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""errors.group_failures: many objects failing for the same reason are said once; errors.listing names them."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import group_failures, listing


def missing(i):
    return 'ConfigMap/gone/cm-%03d apply failed: namespaces "gone" not found' % i


def test_a_shared_reason_is_said_once_with_count_names_and_what_to_do():
    lines = group_failures([missing(i) for i in range(100)])
    assert len(lines) == 1
    assert lines[0].startswith('100 objects: namespaces "gone" not found (ConfigMap/gone/cm-000, '
                               'ConfigMap/gone/cm-001, ConfigMap/gone/cm-002 and 97 more); create the namespace')


def test_the_object_name_inside_a_reason_does_not_split_a_group():
    lines = group_failures(['ConfigMap/ns/a apply failed: ConfigMap "a" is invalid: data: Too long',
                            'ConfigMap/ns/b apply failed: ConfigMap "b" is invalid: data: Too long'])
    assert lines == ['2 objects: ConfigMap "<name>" is invalid: data: Too long (ConfigMap/ns/a, ConfigMap/ns/b)']


def test_single_failures_keep_their_line_and_order():
    other = "Deployment/ns/web: server-side apply conflict: field .spec.replicas is owned by kubectl"
    lines = group_failures([missing(1), other, missing(2), "not an object line"])
    assert lines == ['2 objects: namespaces "gone" not found (ConfigMap/gone/cm-001, ConfigMap/gone/cm-002); '
                     'create the namespace first: add it to the manifests, or set create_namespace '
                     '(role: deploy_create_namespace: true) for the release namespace',
                     other, "not an object line"]


def test_listing_names_the_first_objects_then_how_many_more():
    assert listing(["a", "b", "c"], 3) == "a, b, c"
    assert listing(iter(["a", "b", "c", "d", "e"]), 2) == "a, b and 3 more"
    assert listing([], 3) == ""
