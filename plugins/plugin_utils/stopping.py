# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A manent task stopped in an ansible-playbook worker ends cleanly: its deploy, rollback or traffic operation
marks its record failed and releases the history lock on the way out, instead of leaving the lock held for its
15 minutes.

Two ways a run is stopped reach the worker that runs the task (plugin_utils/controller_task.py):

- ansible-playbook gets SIGTERM or SIGINT (a cancelled CI job, Ctrl-C): it sends the signal on to its workers,
  whose own handler ends them at once (``os._exit``);
- ansible-playbook is killed (ansible-runner's cancel, which is AWX's: SIGKILL to the playbook's process group):
  ansible-core puts each worker in a session of its own, so nothing reaches it and it goes on deploying, unseen.

While a task runs, :func:`stopping` makes SIGTERM and SIGINT raise :class:`Interrupted` in it (the first one; later
ones wait for the clean-up), and, on Linux, has the kernel send SIGTERM when ansible-playbook ends
(``PR_SET_PDEATHSIG``). Once the task has returned, the signal goes again to the handler it replaced, which ends
the worker as ansible-core intends.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import Interrupted

SIGNALS = (signal.SIGTERM, signal.SIGINT)
PR_SET_PDEATHSIG = 1  # linux/prctl.h


@contextlib.contextmanager
def stopping():
    """Run the body with SIGTERM and SIGINT raising Interrupted; then deliver the signal that came, if one did, to
    the handlers the body ran without. Outside the main thread (where no handler can be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came = []

    def interrupt(signum, _frame):
        if came:
            return  # the task is cleaning up after the first one
        came.append(signum)
        raise Interrupted("the run was stopped (%s) while this task worked: it stopped there, and a deploy, rollback "
                          "or traffic operation holding the history lock marked its release failed and released the "
                          "lock" % signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, interrupt) for signum in SIGNALS}
    watching = []
    try:
        watching.append(_term_when_parent_ends())
        yield
    finally:
        if any(watching):
            _prctl_pdeathsig(0)
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        if came:
            os.kill(os.getpid(), came[0])


def _term_when_parent_ends():
    """In a worker process of ansible-playbook on Linux: SIGTERM to this process when ansible-playbook ends; a
    SIGTERM at once when it has already ended. True when set."""
    parent = multiprocessing.parent_process()
    if parent is None or not sys.platform.startswith("linux") or not _prctl_pdeathsig(signal.SIGTERM):
        return False
    if os.getppid() != parent.pid:
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def _prctl_pdeathsig(signum):
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
