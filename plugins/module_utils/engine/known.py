# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a deploy knows of the live copies of its objects before it writes, so that the tiers need not read them
again: which objects are unchanged from the release in service (a baseline and a snapshot of their live copies,
unchanged.py decides) and which do not exist (one LIST per kind and namespace for every tier at once)."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import key_of
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.unchanged import UnchangedFinder
from ansible_collections.manent.kubernetes.plugins.module_utils.rules import lifecycle

RECREATING = frozenset((lifecycle.BEFORE_CREATION, lifecycle.BEFORE_CREATION_IF_IMMUTABLE))


class Known:
    """The knowledge of one deploy, read through ``reader`` (cluster/live.py)."""

    def __init__(self, reader):
        self.reader = reader
        self._finder = None
        # live copies of the candidates, read at once before the deploy's first write (take_snapshot); None once
        # it wrote
        self.snapshot = None
        # (absent keys, listed keys) of the objects that are not candidates, listed at once before the first
        # write (list_absent); None: each tier lists its own
        self.existence = None
        # (snapshot, unchanged keys, {key: live}, keys asked) of the last find made from a snapshot: verify asks for
        # every object of the deploy, then each tier for its own, from the same snapshot until something is written
        self._found = None

    def use_baseline(self, objects):
        """``objects``: the stored objects of the release in service (the deploy gives them). Objects equal to them
        whose live copy still holds them are reported unchanged without a PATCH (unchanged.py); None or empty:
        every object is applied."""
        self._finder = UnchangedFinder(self.reader, objects) if objects else None

    def candidates(self, objects):
        """The objects among ``objects`` that may be unchanged (UnchangedFinder.candidates); [] without a baseline.
        A deploy asks once before its first read and hands the answer to take_snapshot and list_absent (the pass
        compares every object with its stored copy)."""
        return self._finder.candidates(objects) if self._finder else []

    def take_snapshot(self, candidates):
        """Read the live copies of ``candidates`` (from :meth:`candidates`) now, for the tiers to decide from until
        the first write or wait (unchanged.py); the snapshot, or None without a baseline."""
        self.snapshot = self._finder.snapshot(candidates) if self._finder else None
        return self.snapshot

    def forget_snapshot(self):
        """From now on each tier lists its candidates again (something was written or waited for)."""
        self.snapshot = None
        self._found = None

    def find(self, objects):
        """UnchangedFinder.find for ``objects`` (unchanged keys, {key: live} of the others read); answered from the
        last call when it asked for all of them from the same snapshot."""
        if not self._finder:
            return set(), {}
        keys = {key_of(o) for o in objects}
        found = self._found
        if found is not None and self.snapshot is not None and found[0] is self.snapshot and keys <= found[3]:
            return found[1] & keys, {k: v for k, v in found[2].items() if k in keys}
        same, known = self._finder.find(objects, self.snapshot)
        if self.snapshot is not None:
            self._found = (self.snapshot, same, known, keys)
        return same, dict(known)

    def list_absent(self, objects, candidates):
        """Learn now, for every tier at once, which of ``objects`` that cannot be unchanged (not candidates of
        the baseline) do not exist: one metadata-only LIST per kind and namespace (LiveReader.existence), all
        sent together, instead of one LIST per tier between tiers. Their tiers then apply the absent ones without
        reading each; those listed present are read just before their apply, as before. The answer of each
        apply still says whether it created the object (201), so an object that someone else created after this
        LIST is reported configured, not created. Objects a delete policy may recreate are left to their tier,
        which reads them just before (it must delete one that exists). Kinds not served yet are left too.
        ``candidates``: what :meth:`candidates` answered for (at least) ``objects``."""
        skip = {key_of(o) for o in candidates}
        wanted = [o for o in objects if key_of(o) not in skip and not RECREATING & lifecycle.delete_policies(o)]
        self.existence = self.reader.existence(wanted)

    def forget_absent(self):
        """Each tier lists which of its objects exist again (the end of a deploy)."""
        self.existence = None
