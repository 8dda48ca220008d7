# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""May this identity write every object of the release? Asked before the first write of a deploy.

One SelfSubjectAccessReview per resource and namespace of the release (not one per object), for the verb a
server-side apply is authorized as (``patch``). A denied review stops the deploy with one error naming each
missing permission and the objects that need it; nothing has been written then (history included). A review
the API server cannot answer (the review API itself forbidden or failing) proves nothing and is skipped: the
apply would then report the 403 itself, as before.
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, ApplyError, listing
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import concurrently
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import (
    is_crd, namespace_of, ref, served_kinds, split_api_version)

REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
WHOAMI_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
VERBS = ("patch",)
SHOWN = 3  # objects named per missing permission
CONCURRENCY = 8  # reviews asked at the same time


def _resource(discovery, obj, defined):
    """(group, plural, namespaced) of ``obj``'s kind: from discovery, else from a CRD of the release; None if
    neither knows it (render already refused unknown kinds)."""
    res = discovery.find(obj["apiVersion"], obj["kind"])
    if res is not None:
        return res.group, res.plural, res.namespaced
    return defined.get((split_api_version(obj["apiVersion"])[0], obj["kind"]))


def _units(discovery, objects):
    """{(group, plural, namespace): [refs]} of ``objects``."""
    defined = {(s.group, s.kind): (s.group, s.plural, s.namespaced) for crd in objects if is_crd(crd)
               for s in served_kinds(crd)}
    units = {}
    for obj in objects:
        found = _resource(discovery, obj, defined)
        if found is None:
            continue
        group, plural, namespaced = found
        units.setdefault((group, plural, namespace_of(obj) if namespaced else ""), []).append(ref(obj))
    return units


def _allowed(kube, verb, group, plural, namespace):
    """True/False from the API server; None when it cannot tell."""
    attributes = {"verb": verb, "group": group, "resource": plural}
    if namespace:
        attributes["namespace"] = namespace
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes}}
    try:
        answer = kube.request("POST", REVIEW_PATH, body=body, subject="SelfSubjectAccessReview").data
    except ApiError:
        return None
    status = answer.get("status") if isinstance(answer, dict) else None
    if not isinstance(status, dict):
        return None
    return bool(status.get("allowed"))


def denied(kube, discovery, objects, verbs=VERBS, concurrency=CONCURRENCY):
    """One line per (verb, resource, namespace) this identity may not write, naming a few of its objects. The
    reviews are independent: they are asked at the same time (one round trip, not one per resource)."""
    units = sorted(_units(discovery, objects).items())
    asked = [(verb, unit) for unit, _refs in units for verb in verbs]
    answers = dict(zip(asked, concurrently(lambda item: _allowed(kube, item[0], *item[1]), asked, concurrency)))
    lines = []
    for (group, plural, namespace), refs in units:
        for verb in verbs:
            if answers[(verb, (group, plural, namespace))] is False:
                where = "in namespace %s" % namespace if namespace else "cluster-wide"
                lines.append("cannot %s %s %s (%s)" % (verb, "%s.%s" % (plural, group) if group else plural,
                                                       where, listing(refs, SHOWN)))
    return lines


def whoami(kube):
    """The user name of these credentials (SelfSubjectReview), or "" when the server does not say."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    try:
        answer = kube.request("POST", WHOAMI_PATH, body=body, subject="SelfSubjectReview").data
    except ApiError:
        return ""
    user = ((answer or {}).get("status") or {}).get("userInfo") or {} if isinstance(answer, dict) else {}
    return user.get("username") or ""


def check(kube, discovery, objects):
    """ApplyError naming every missing permission (and the user), before anything is written."""
    lines = denied(kube, discovery, objects)
    if lines:
        user = whoami(kube)
        who = 'user "%s"' % user if user else "the deploying identity"
        raise ApplyError("forbidden: %s may not write %d resource(s) of this release: %s"
                         % (who, len(lines), "; ".join(lines)),
                         subject="RBAC", hint="grant them in a Role/ClusterRole bound to %s, or remove the objects "
                                              "from the artifact; nothing was written" % who)
