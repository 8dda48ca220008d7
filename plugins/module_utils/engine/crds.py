# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The wait until the CustomResourceDefinitions of a release are Established *and* every kind they serve
(objects.served_kinds) is in discovery, so that the custom resources of the next tiers can be applied. The CRDs are
observed (wait.wait_for with a watch: each one LISTed and watched by name); discovery, which offers no watch, is
polled (wait.poll)."""

from __future__ import annotations

import time

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApplyError, WaitError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import served_kinds
from ansible_collections.manent.kubernetes.plugins.module_utils.rules.status import CURRENT
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.wait import poll, wait_for

ESTABLISHED_POLL = 0.2


def wait_established(reader, discovery, crds, timeout):
    """Wait until ``crds`` are Established (read through ``reader``) and every served version of theirs is in
    ``discovery`` (refreshed each round), both within ``timeout`` seconds; ApplyError naming what is missing."""
    if not crds:
        return
    deadline = time.monotonic() + timeout
    try:
        wait_for(crds, reader.get, timeout=timeout, interval=ESTABLISHED_POLL, select=lambda _crd: True,
                 watch=reader)
    except WaitError as exc:
        pending = [entry["ref"] for entry in exc.statuses if entry["status"] != CURRENT]
        raise ApplyError("CustomResourceDefinition(s) not Established within %ss: %s" % (timeout, ", ".join(pending)),
                         hint="check the CRDs' conditions (kubectl describe crd) and the API server log") from None
    missing = []

    def served():
        discovery.refresh()
        missing[:] = [served.api_version + " " + served.kind for crd in crds for served in served_kinds(crd)
                      if not discovery.served(served.api_version, served.kind)]
        return not missing

    if not poll(served, max(0.0, deadline - time.monotonic()), interval=ESTABLISHED_POLL):
        raise ApplyError("CustomResourceDefinition(s) Established but not served by discovery within %ss: "
                         "%s" % (timeout, ", ".join(missing)),
                         hint="check the API server's aggregated discovery, then deploy again")
