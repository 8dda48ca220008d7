# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every process of one ansible-playbook run, found by a marker in its environment: ansible-core's workers leave
the process group (and session) of ansible-playbook, so a signal to that group does not reach them, and once
ansible-playbook is gone they are no longer its children either. Linux (/proc)."""

from __future__ import annotations

import os
import signal
import time
import uuid

MARKER = "MANENT_TEST_RUN"


def new_marker():
    """{MARKER: a fresh value}: the environment entry that tags one run's processes."""
    return {MARKER: uuid.uuid4().hex}


def marked(marker):
    """Pids of the live processes whose environment holds ``marker`` ({MARKER: value})."""
    needle = ("%s=%s" % next(iter(marker.items()))).encode()
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % entry, "rb") as handle:
                environ = handle.read().split(b"\0")
            with open("/proc/%s/stat" % entry, encoding="utf-8", errors="replace") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ and state != "Z":
            out.append(int(entry))
    return out


def wait_gone(marker, timeout):
    """Wait until no process of the run is left; the pids still alive after ``timeout`` seconds ([] when none)."""
    deadline = time.monotonic() + timeout
    while True:
        left = marked(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def kill_all(marker):
    """SIGKILL every process of the run that is still alive."""
    for pid in marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def tail(log, size=3000):
    """The last ``size`` characters of the run's output file ``log``."""
    with open(log, encoding="utf-8", errors="replace") as handle:
        return handle.read()[-size:]


def wait_for_moment(condition, process, log, timeout, what="its moment"):
    """Wait until ``condition()`` holds while the run (``process``, a Popen writing ``log``) works; fails when the
    run ends first or the moment never comes within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            raise AssertionError("ansible-playbook ended before it was stopped:\n%s" % tail(log, 6000))
        assert time.monotonic() < deadline, "the run did not reach %s within %ds:\n%s" % (what, timeout, tail(log))
        time.sleep(0.2)


def kill_group(process, marker, timeout, workers_first=False):
    """SIGKILL the process group of ``process`` (ansible-playbook started in a session of its own), as AWX's cancel
    does (ansible-runner), and wait until every process of the run (``marker``) has ended; the pids left ([] when
    none). ``workers_first``: SIGKILL the run's other processes (ansible-core's workers, in sessions of their own)
    before, so that none of them can clean up: a lost runner, an OOM kill."""
    if workers_first:
        for pid in marked(marker):
            if pid != process.pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout)
    return wait_gone(marker, timeout)
