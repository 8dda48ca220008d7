# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Traffic (percentage) rollouts of one release key in one cluster: the operations by name, and their run.

A release deployed with the traffic strategy goes to the slot that is not in service and is recorded as
the *candidate* (history locator fields ``candidate*``); the operations then move traffic by changing
only the weights of the route (router.py) and scale the slots' workloads (scaler.py):

* ``step(percent)``: proportional replicas grow first, then the route gives the candidate ``percent``;
  replicas shrink only after traffic has moved and the settle delay has passed.
* ``promote``: the candidate at full size and Ready, then 100 %, then the history pointer moves (the
  replaced release is recorded for rollback and retirement).
* ``abort``: the stable slot Ready at full size, then all traffic (testers too) back to it, the settle
  delay, then the candidate's workloads scaled to zero (its HPAs deleted, so they cannot scale it up).
* ``retire``: after ``scale_down_delay`` from the promotion, and only while the route sends nothing to it,
  the replaced slot's workloads are scaled to zero and its HPAs deleted.
* ``rollback``: before the replaced slot is retired, it is brought back to full size, gets all traffic and
  goes back into service (the release rolled back from is marked ``rolled-back`` and can be retired).
* ``status``: the slots, versions, weights and readiness.

Every operation but ``status`` holds the release lock (its holder ``user@host:pid``, as a deploy's) and checks
everything it needs (the release, the route, the DestinationRule) before its first write; a failure after a write
says exactly what was written (the result's ``written``, kept in the error's ``partial``). Right before its first
write it records itself in the locator (state.py ``begin``: the operation, its target weights and replicas, who and
when), and clears that record after its last: a run killed in between (AWX's cancel) leaves it for ``status`` and
the next run, and one stopped by a signal or an error adds when and why. Each is idempotent: rerun after a failure
or a kill at any point, it finishes the work (the same step finishes the interrupted one; abort undoes it). In
check mode nothing is stored: the writes are dry runs (dryRun=All) and the result says what would change.
"""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError, Interrupted, ManentError
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.events import Recorder
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import default_holder
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import LiveReader
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.delete import DeleteOptions, Deleter
from ansible_collections.manent.kubernetes.plugins.module_utils.history.store import HistoryStore
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic import moves, retire, status
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.options import TrafficOptions, TrafficResult
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.router import Router
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.scaler import SlotScaler
from ansible_collections.manent.kubernetes.plugins.module_utils.traffic.state import ReleaseState

# Each operation by its name: a function of (Traffic, TrafficResult, percent).
OPERATIONS = {
    "status": status.status,
    "step": moves.step,
    "promote": moves.promote,
    "abort": moves.abort,
    "retire": retire.retire,
    "rollback": moves.rollback,
}
READ_ONLY = ("status",)  # run without the release lock


class Traffic:
    """The traffic operations of one release key in ``namespace`` of one cluster: the context every operation
    gets (``options``, ``state``, ``scaler``, ``router``, ``events``)."""

    def __init__(self, kube, discovery, namespace, key, options=None):
        self.options = options or TrafficOptions()
        if not self.options.route or not self.options.service:
            raise InputError("traffic operations need the route and the service", subject="traffic_route",
                             hint="set traffic_route and traffic_service (and traffic_route_kind for GRPCRoute)")
        reader = LiveReader(kube, discovery)
        deleter = Deleter(kube, discovery, reader, DeleteOptions(dry_run=self.options.dry_run))
        store = HistoryStore(kube, namespace, key, holder=self.options.holder or default_holder(),
                             now=self.options.now)
        self.state = ReleaseState(store, namespace, dry_run=self.options.dry_run, now=self.options.now)
        self.scaler = SlotScaler(kube, reader, deleter, key, self.options)
        self.router = Router(kube, discovery, namespace, self.options)
        self.events = Recorder(kube, dry_run=self.options.dry_run)  # traffic/story.py: what each operation did

    def run(self, operation, percent=None):
        """Run the operation named ``operation``; its TrafficResult. A ManentError (or a stop of the run) carries
        the result so far as ``partial``, and its message says exactly what was written before it."""
        if operation not in OPERATIONS:
            raise InputError("unknown traffic operation %r" % (operation,), subject="operation",
                             hint="use one of: %s" % ", ".join(OPERATIONS))
        result = TrafficResult(operation=operation, dry_run=self.options.dry_run)
        try:
            self._locked(operation, result, percent)
        except (ManentError, Interrupted) as err:
            err.partial = result
            if isinstance(err, ManentError):
                err.hint = "; ".join(part for part in (err.hint, result.account()) if part)
            raise
        return result

    def _locked(self, operation, result, percent):
        """The operation under the release lock (``status`` reads only: no lock)."""
        if operation in READ_ONLY:
            OPERATIONS[operation](self, result, percent)
            return
        store = self.state.store
        locked = False
        try:
            if not self.options.dry_run:
                store.acquire(break_lock=self.options.break_lock)
                locked = True
            OPERATIONS[operation](self, result, percent)
            self.state.finish()
        except (ManentError, Interrupted) as err:
            self.state.stopped(str(err))
            raise
        finally:
            if locked:
                store.release_lock()
            result.warnings.extend(store.notes)
        result.history = self.state.view()
