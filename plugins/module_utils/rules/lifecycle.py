# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helm and Nelm lifecycle annotations: the one place that reads them.

Nelm's ``werf.io/<x>`` keys are honoured, and so is the same key under ``manent.io/<x>``; when both
spellings are set they must agree. Values are trimmed; lists are comma separated.

+------------------------------+-------------------------------+---------------------------+---------------------------+
| key                          | values                        | default                   | meaning                   |
+==============================+===============================+===========================+===========================+
| helm.sh/resource-policy      | keep (case-insensitive)       | unset                     | never deleted, neither by |
|                              |                               |                           | prune nor by rollback     |
+------------------------------+-------------------------------+---------------------------+---------------------------+
| werf.io/ownership            | release, anyone               | anyone for Helm hooks and | release: pruned when it   |
| manent.io/ownership          |                               | CRDs from a chart's crds/ | leaves the render; anyone:|
|                              |                               | (manent.io/source: crds); | shared, never pruned for  |
|                              |                               | release otherwise         | being absent              |
+------------------------------+-------------------------------+---------------------------+---------------------------+
| werf.io/deploy-on            | install, upgrade, rollback,   | install,upgrade,rollback; | phases in which the object|
| manent.io/deploy-on          | their pre-/post- forms,       | Helm hooks: the install/  | is applied; pre-X/post-X: |
|                              | uninstall and its pre-/post-  | upgrade/rollback events   | in X, in the stage before/|
|                              | forms                         | of helm.sh/hook           | after the main objects    |
|                              |                               |                           | (stages.py); uninstall    |
|                              |                               |                           | forms never apply         |
+------------------------------+-------------------------------+---------------------------+---------------------------+
| werf.io/weight               | an integer (may be negative)  | helm.sh/hook-weight, else | order inside a stage:     |
| manent.io/weight             |                               | 0                         | ascending groups of equal |
| helm.sh/hook-weight          |                               |                           | weight                    |
| (werf.io/manent.io win)      |                               |                           |                           |
+------------------------------+-------------------------------+---------------------------+---------------------------+
| werf.io/delete-policy        | before-creation,              | Helm hooks:               | before-creation: recreate |
| manent.io/delete-policy      | before-creation-if-immutable, | before-creation (Helm's   | on every deploy; ...-if-  |
| helm.sh/hook-delete-policy   | succeeded, failed; aliases    | default); Jobs:           | immutable: only when apply|
| (werf.io/manent.io win)      | before-hook-creation,         | before-creation-if-       | fails "field is immutable"|
|                              | hook-succeeded, hook-failed   | immutable; else none;     | succeeded/failed: delete  |
|                              |                               | empty value: none;        | once the object (any kind)|
|                              |                               | CRDs: none, whatever is   | succeeded or failed in its|
|                              |                               | set (as Helm)             | stage (stages.py)         |
+------------------------------+-------------------------------+---------------------------+---------------------------+
| werf.io/delete-propagation   | Foreground, Background,       | Foreground                | deletionPropagation of    |
| manent.io/delete-propagation | Orphan (case-insensitive)     |                           | every delete of the object|
+------------------------------+-------------------------------+---------------------------+---------------------------+
| manent.io/source             | crds                          | unset                     | set by the renderer on    |
|                              |                               |                           | CRDs from a chart's crds/ |
+------------------------------+-------------------------------+---------------------------+---------------------------+

Namespaces are never pruned, whatever their annotations say. Invalid values raise InputError naming
the object, the annotation and the bad value; :func:`lint` collects them, with the combinations that
are valid but almost certainly wrong, as warnings.
"""

from __future__ import annotations

import re

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import annotations as annotations_of
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import is_crd, ref, split_api_version

PREFIXES = ("werf.io/", "manent.io/")

RESOURCE_POLICY_ANNOTATION = "helm.sh/resource-policy"
HOOK_ANNOTATION = "helm.sh/hook"
HOOK_DELETE_POLICY_ANNOTATION = "helm.sh/hook-delete-policy"
HOOK_WEIGHT_ANNOTATION = "helm.sh/hook-weight"
CRDS_SOURCE_ANNOTATION = "manent.io/source"
CRDS_SOURCE_VALUE = "crds"

OWNERSHIP = "ownership"
DEPLOY_ON = "deploy-on"
DELETE_POLICY = "delete-policy"
DELETE_PROPAGATION = "delete-propagation"
WEIGHT = "weight"

OWNERSHIP_RELEASE = "release"
OWNERSHIP_ANYONE = "anyone"

INSTALL = "install"
UPGRADE = "upgrade"
ROLLBACK = "rollback"
PHASES = (INSTALL, UPGRADE, ROLLBACK)

# Stages of a phase: before the main objects, the main objects, after the main rollout (stages.py runs them).
PRE, MAIN, POST = "pre", "main", "post"

BEFORE_CREATION = "before-creation"
BEFORE_CREATION_IF_IMMUTABLE = "before-creation-if-immutable"
SUCCEEDED = "succeeded"
FAILED = "failed"
DELETE_POLICIES = (BEFORE_CREATION, BEFORE_CREATION_IF_IMMUTABLE, SUCCEEDED, FAILED)
AFTER_STAGE = frozenset((SUCCEEDED, FAILED))  # the policies that act once the object's stage is done (stages.py)
_DELETE_POLICY_ALIASES = {
    "before-hook-creation": BEFORE_CREATION,
    "hook-succeeded": SUCCEEDED,
    "hook-failed": FAILED,
}

PROPAGATIONS = ("Foreground", "Background", "Orphan")
DEFAULT_PROPAGATION = "Foreground"

# Nelm's twelve deploy-on values -> (manent phase, stage) (None: accepted, never applied).
_DEPLOY_ON_VALUES = {}
for _phase in PHASES + ("uninstall",):
    for _form, _stage in (("pre-%s", PRE), ("%s", MAIN), ("post-%s", POST)):
        _DEPLOY_ON_VALUES[_form % _phase] = (_phase, _stage) if _phase in PHASES else None

# helm.sh/hook test events ("test-success" and "test-failure" are Helm 2's spellings): a hook with one of them is
# never applied, whatever its other events (see is_test_hook).
TEST_HOOK_EVENTS = frozenset(("test", "test-success", "test-failure"))

# helm.sh/hook events -> (manent phase, stage) (delete and test events never apply).
_HOOK_EVENTS = {
    "pre-install": (INSTALL, PRE), "post-install": (INSTALL, POST),
    "pre-upgrade": (UPGRADE, PRE), "post-upgrade": (UPGRADE, POST),
    "pre-rollback": (ROLLBACK, PRE), "post-rollback": (ROLLBACK, POST),
    "pre-delete": None, "post-delete": None, "crd-install": None,
    **dict.fromkeys(TEST_HOOK_EVENTS),
}


def _split(value):
    return [item.strip() for item in str(value).split(",") if item.strip()]


def _annotation(obj, name):
    """(key, value) of werf.io/<name> or manent.io/<name>, or (None, None); conflicting spellings fail."""
    annos = annotations_of(obj)
    found = [(prefix + name, annos[prefix + name]) for prefix in PREFIXES if annos.get(prefix + name) is not None]
    if len(found) == 2 and _normalise(found[0][1]) != _normalise(found[1][1]):
        raise InputError("annotations %s: %r and %s: %r disagree" % (found[0][0], found[0][1], found[1][0],
                                                                     found[1][1]),
                         subject=ref(obj), hint="keep one spelling, or give both the same value")
    return found[0] if found else (None, None)


def _normalise(value):
    return ",".join(sorted(item.lower() for item in _split(value)))


def _invalid(obj, key, value, allowed):
    return InputError("annotation %s has invalid value %r" % (key, value), subject=ref(obj),
                      hint="allowed: %s" % ", ".join(allowed))


def is_hook(obj):
    """True for Helm hooks (a non-empty helm.sh/hook annotation)."""
    return bool(str(annotations_of(obj).get(HOOK_ANNOTATION) or "").strip())


def is_test_hook(obj):
    """True when one of the helm.sh/hook events is a test event: never applied (as ``helm install`` treats
    it, and as the renderer drops it even with ``helm_hooks: apply``)."""
    return bool(hook_events(obj) & TEST_HOOK_EVENTS)


def hook_events(obj):
    """The helm.sh/hook events, lower-cased (empty for ordinary objects)."""
    return frozenset(item.lower() for item in _split(annotations_of(obj).get(HOOK_ANNOTATION) or ""))


def is_crd_from_crds_dir(obj):
    return str(annotations_of(obj).get(CRDS_SOURCE_ANNOTATION) or "").strip().lower() == CRDS_SOURCE_VALUE


def resource_policy_keep(obj):
    """True when helm.sh/resource-policy is keep (trimmed, case-insensitive, as Helm compares it)."""
    return str(annotations_of(obj).get(RESOURCE_POLICY_ANNOTATION) or "").strip().lower() == "keep"


def ownership(obj, default=None):
    """"release" or "anyone".

    An explicit werf.io/manent.io annotation wins; then ``default`` when given; then "anyone" for Helm
    hooks and for CRDs from a chart's crds/ directory; "release" otherwise.
    """
    key, value = _annotation(obj, OWNERSHIP)
    if key is not None:
        value = str(value).strip().lower()
        if value not in (OWNERSHIP_RELEASE, OWNERSHIP_ANYONE):
            raise _invalid(obj, key, value, (OWNERSHIP_RELEASE, OWNERSHIP_ANYONE))
        return value
    if default is not None:
        if default not in (OWNERSHIP_RELEASE, OWNERSHIP_ANYONE):
            raise ValueError("ownership default must be 'release' or 'anyone', not %r" % (default,))
        return default
    if is_hook(obj) or is_crd_from_crds_dir(obj):
        return OWNERSHIP_ANYONE
    return OWNERSHIP_RELEASE


def deploy_on(obj):
    """The phases (subset of install/upgrade/rollback) in which obj is applied.

    werf.io/manent.io deploy-on wins; for Helm hooks without it, the install/upgrade/rollback events of
    helm.sh/hook; otherwise all three. Uninstall values are accepted and never apply.
    """
    return frozenset(phase for phase, _stage in deploy_on_stages(obj))


def deploy_on_stages(obj):
    """The (phase, stage) pairs in which obj is applied: ``pre-upgrade`` is (upgrade, pre), ``upgrade``
    (upgrade, main), ``post-upgrade`` (upgrade, post); Helm hook events map the same way."""
    key, value = _annotation(obj, DEPLOY_ON)
    if key is None:
        if is_hook(obj):
            return frozenset(_HOOK_EVENTS[e] for e in hook_events(obj) if _HOOK_EVENTS.get(e))
        return frozenset((phase, MAIN) for phase in PHASES)
    items = [item.lower() for item in _split(value)]
    if not items:
        raise InputError("annotation %s is empty: the object would never be applied" % key, subject=ref(obj),
                         hint="remove the annotation or list phases, e.g. install,upgrade,rollback")
    pairs = set()
    for item in items:
        if item not in _DEPLOY_ON_VALUES:
            raise _invalid(obj, key, item, sorted(_DEPLOY_ON_VALUES))
        if _DEPLOY_ON_VALUES[item]:
            pairs.add(_DEPLOY_ON_VALUES[item])
    return frozenset(pairs)


def stages_in(obj, phase):
    """The stages (PRE, MAIN, POST) in which obj is applied in ``phase``; empty when it is not applied."""
    return frozenset(stage for p, stage in deploy_on_stages(obj) if p == phase)


def applies_in(obj, phase):
    """True when obj is applied in ``phase`` (install, upgrade or rollback)."""
    if phase not in PHASES:
        raise ValueError("phase must be one of %s, not %r" % (", ".join(PHASES), phase))
    return phase in deploy_on(obj)


def weight(obj):
    """The order of obj inside its stage (an int, default 0): werf.io/manent.io weight wins over
    helm.sh/hook-weight. Objects of equal weight are applied together, lower weights first."""
    key, value = _annotation(obj, WEIGHT)
    if key is None:
        raw = annotations_of(obj).get(HOOK_WEIGHT_ANNOTATION)
        if raw is None or not str(raw).strip():
            return 0
        key, value = HOOK_WEIGHT_ANNOTATION, raw
    try:
        return int(str(value).strip())
    except ValueError:
        raise InputError("annotation %s has invalid value %r: not an integer" % (key, value), subject=ref(obj),
                         hint="write a whole number such as -5, 0 or 10 (quoted in YAML)") from None


def delete_policies(obj):
    """The delete policies of obj (a frozenset of DELETE_POLICIES).

    werf.io/manent.io delete-policy wins over helm.sh/hook-delete-policy; an empty value means none.
    Defaults: before-creation for Helm hooks (Helm's own default), before-creation-if-immutable for
    Jobs, none otherwise. A CustomResourceDefinition has none, whatever it says (values are still checked):
    deleting it deletes every object of its kinds, so Helm never deletes one by a hook delete policy either.
    """
    policies = _delete_policies(obj)
    return frozenset() if is_crd(obj) else policies


def _delete_policies(obj):
    key, value = _annotation(obj, DELETE_POLICY)
    if key is None:
        raw = annotations_of(obj).get(HOOK_DELETE_POLICY_ANNOTATION)
        if raw is not None:
            key, value = HOOK_DELETE_POLICY_ANNOTATION, raw
    if key is None:
        if is_hook(obj):
            return frozenset((BEFORE_CREATION,))
        if obj.get("kind") == "Job" and split_api_version(obj.get("apiVersion"))[0] == "batch":
            return frozenset((BEFORE_CREATION_IF_IMMUTABLE,))
        return frozenset()
    policies = set()
    for item in (item.lower() for item in _split(value)):
        item = _DELETE_POLICY_ALIASES.get(item, item)
        if item not in DELETE_POLICIES:
            raise _invalid(obj, key, item, DELETE_POLICIES + tuple(_DELETE_POLICY_ALIASES))
        policies.add(item)
    return frozenset(policies)


def delete_propagation(obj):
    """deletionPropagation for deleting obj: "Foreground" (default), "Background" or "Orphan"."""
    key, value = _annotation(obj, DELETE_PROPAGATION)
    if key is None:
        return DEFAULT_PROPAGATION
    for propagation in PROPAGATIONS:
        if str(value).strip().lower() == propagation.lower():
            return propagation
    raise _invalid(obj, key, value, PROPAGATIONS)


def prunable(obj):
    """(True, None) when prune or rollback may delete obj, else (False, reason)."""
    if obj.get("kind") == "Namespace" and not split_api_version(obj.get("apiVersion"))[0]:
        return False, "Namespaces are never deleted"
    if resource_policy_keep(obj):
        return False, "%s: keep" % RESOURCE_POLICY_ANNOTATION
    if ownership(obj) == OWNERSHIP_ANYONE:
        key = _annotation(obj, OWNERSHIP)[0]
        why = ("annotation %s" % key if key else "default for Helm hooks" if is_hook(obj)
               else "default for CRDs from crds/")
        return False, "ownership anyone (%s): not the release's alone" % why
    return True, None


def _spelling(obj):
    """The prefix obj's lifecycle annotations use: manent.io/ when only that one is used, else werf.io/."""
    annos = annotations_of(obj)
    used = {prefix for prefix in PREFIXES for name in (OWNERSHIP, DEPLOY_ON, DELETE_POLICY, DELETE_PROPAGATION)
            if prefix + name in annos}
    return "manent.io/" if used == {"manent.io/"} else "werf.io/"


def lint(obj):
    """Warnings about obj's lifecycle annotations: invalid values, and valid but risky combinations."""
    subject = ref(obj)
    warnings = []
    for read in (ownership, deploy_on, delete_policies, delete_propagation, weight):
        try:
            read(obj)
        except InputError as err:
            warnings.append(str(err))
    if warnings:
        return warnings
    explicit = _annotation(obj, DELETE_POLICY)[0] or HOOK_DELETE_POLICY_ANNOTATION in annotations_of(obj)
    if is_crd(obj) and explicit and _delete_policies(obj):
        warnings.append("%s: a CustomResourceDefinition is never deleted by a delete policy (deleting it would "
                        "delete every object of its kinds; Helm does not either): its delete policy is ignored"
                        % subject)
    phases = deploy_on(obj)
    if not phases:
        warnings.append("%s: deploy-on names no install, upgrade or rollback phase: manent never applies it"
                        % subject)
    elif UPGRADE not in phases and ownership(obj) == OWNERSHIP_RELEASE and not resource_policy_keep(obj):
        warnings.append("%s: deployed on %s only: upgrades leave the live object as it is (later changes to it "
                        "are never applied) and do not delete it while it stays in the artifact; once it leaves "
                        "the artifact, prune deletes it, as every object owned by the release; add %s%s: anyone "
                        "to keep it then too" % (subject, ",".join(p for p in PHASES if p in phases),
                                                 _spelling(obj), OWNERSHIP))
    return warnings


_IMMUTABLE_PATTERNS = (
    re.compile(r"field is immutable", re.IGNORECASE),
    re.compile(r"is immutable after creation", re.IGNORECASE),
    re.compile(r"updates to statefulset spec for fields other than", re.IGNORECASE),
    re.compile(r"may not change once set", re.IGNORECASE),
)


def is_immutable_error(message):
    """True when an API server error message (422 Invalid) says an immutable field was changed."""
    text = str(message or "")
    return any(pattern.search(text) for pattern in _IMMUTABLE_PATTERNS)
