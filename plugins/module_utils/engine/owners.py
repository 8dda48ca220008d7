# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Objects of another manent release, found before any write.

A live object belongs to the release key its labels name (``identity.other_owner``; prune deletes only live
objects labeled as the release's own). Before a deploy writes anything (no namespace created, no history lock,
nothing applied; in check mode as well) the live copies of the objects it will apply are read: those that belong
to another release key stop the deploy with one error listing each of them and its release, unless ``adopt``
takes them over (each adoption is returned and becomes a warning). Objects the new manifests mark ownership
``anyone`` are shared by design and not looked at; objects of other tools (no manent labels), objects that do
not exist yet, kinds not served yet and objects the credentials may not read are not another release's.
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import MANAGED_BY, MANAGER, other_owner
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of, ref

SELECTOR = "%s=%s" % (MANAGED_BY, MANAGER)


def foreign(reader, objects, key, known=None):
    """[(object, owner ReleaseKey)] of ``objects`` whose live copy belongs to a release key other than ``key``.
    ``known``: live copies read already (``{key_of(obj): live}``); only the other objects are read."""
    candidates = [o for o in objects if lifecycle.ownership(o) != lifecycle.OWNERSHIP_ANYONE]
    known = known or {}
    live = reader.read_live([o for o in candidates if key_of(o) not in known], selector=SELECTOR)
    live.update(known)
    out = []
    for obj in candidates:
        owner = other_owner(live.get(key_of(obj)), key)
        if owner is not None:
            out.append((obj, owner))
    return out


def check(reader, objects, key, adopt=False, rollback=False, known=None):
    """The adoptions ``[{subject, from}]`` (``from``: the owner's tenant, application, artifact, environment)
    of ``objects`` deployed as release ``key``; without ``adopt`` any object of another release is an
    InputError listing them all, raised before anything is written. ``known``: as for :func:`foreign`."""
    found = foreign(reader, objects, key, known)
    if found and not adopt:
        if rollback:
            hint = ("a rollback does not take objects over: remove them from the other release, or deploy this "
                    "release with adopt: true (role variable deploy_adopt: true); nothing was written")
        else:
            hint = ("deploying would take them over from it: set adopt: true (role variable deploy_adopt: true) to "
                    "take them over, remove them from one of the releases, or mark objects shared on purpose "
                    "werf.io/ownership: anyone in both; nothing was written")
        raise InputError("%d object(s) belong to another manent release (tenant/application/artifact/environment):"
                         "\n- %s" % (len(found), "\n- ".join("%s belongs to release %s" % (ref(o), owner.describe())
                                                             for o, owner in found)),
                         subject="release %s" % key.describe(), hint=hint)
    return [{"subject": ref(o), "from": owner.to_dict()} for o, owner in found]


def warnings(adopted, key, dry_run=False):
    """One warning per adoption, naming the object, the release it came from and the one it goes to."""
    verb = "would be adopted" if dry_run else "adopted"
    return ["%s: %s from release %s by release %s" % (
        a["subject"], verb, "/".join(a["from"][k] for k in ("tenant", "application", "artifact", "environment")),
        key.describe()) for a in adopted]
