# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugins/plugin_utils/stopping.py: a task stopped by SIGTERM or SIGINT cleans up, then the signal reaches the
handler the task ran without (ansible-core's, which ends the worker); a worker whose parent (ansible-playbook) is
killed gets SIGTERM and cleans up too. Real signals and processes, no mocks."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
import types

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import Interrupted
from ansible_collections.manent.kubernetes.plugins.plugin_utils import controller_task, stopping

SPEC = {"api_server": {"type": "str", "required": True}}


def _action():
    return types.SimpleNamespace(_task=types.SimpleNamespace(args={"api_server": "https://api.example:6443"}),
                                 _play_context=types.SimpleNamespace(check_mode=False, diff=False))


@pytest.fixture
def replaced_handlers():
    """Handlers standing in for ansible-core's worker handlers: they record the signals they get."""
    got = []
    before = {signum: signal.signal(signum, lambda signum, _frame: got.append(signum)) for signum in stopping.SIGNALS}
    yield got
    for signum, handler in before.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize("signum", stopping.SIGNALS)
def test_a_stopped_task_cleans_up_and_the_signal_then_reaches_the_replaced_handler(replaced_handlers, signum):
    done = []

    def task(_params, _check_mode, _diff, _on_progress):
        try:
            os.kill(os.getpid(), signum)
            done.append("went on")
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # another stop while cleaning up: the clean-up goes on
            done.append("cleaned up")

    result = controller_task.run(_action(), {}, "manent_apply", SPEC, task)
    assert done == ["cleaned up"]
    assert result["failed"] and signal.Signals(signum).name in result["msg"], result
    assert "released the lock" in result["msg"]
    assert replaced_handlers == [signum], "the first signal, once, after the clean-up"
    assert all(signal.getsignal(s).__name__ == "<lambda>" for s in stopping.SIGNALS), "the replaced handlers are back"


def test_a_task_that_is_not_stopped_changes_nothing(replaced_handlers):
    result = controller_task.run(_action(), {}, "manent_apply", SPEC, lambda *_args: {"changed": False})
    assert result == {"changed": False} and replaced_handlers == []


def test_interrupted_is_no_exception_handlers_of_errors_would_take():
    assert not issubclass(Interrupted, Exception)


def _worker(started, cleaned):
    """ansible-core's WorkerProcess: forked by ansible-playbook, runs the task inside stopping()."""
    with stopping.stopping():
        try:
            with open(started, "w", encoding="utf-8"):
                pass
            time.sleep(120)
        except Interrupted:
            with open(cleaned, "w", encoding="utf-8") as handle:
                handle.write("cleaned up")
            raise


def _playbook(started, cleaned):
    """ansible-playbook: forks the worker and waits for it."""
    worker = multiprocessing.get_context("fork").Process(target=_worker, args=(started, cleaned))
    worker.start()
    worker.join()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_whose_ansible_playbook_is_killed_cleans_up(tmp_path):
    started, cleaned = str(tmp_path / "started"), str(tmp_path / "cleaned")
    playbook = multiprocessing.get_context("fork").Process(target=_playbook, args=(started, cleaned))
    playbook.start()
    deadline = time.monotonic() + 60
    while not os.path.exists(started):
        assert time.monotonic() < deadline and playbook.is_alive(), "the worker did not start"
        time.sleep(0.05)
    os.kill(playbook.pid, signal.SIGKILL)  # as ansible-runner cancels a job
    playbook.join(30)
    deadline = time.monotonic() + 60
    while not os.path.exists(cleaned):
        assert time.monotonic() < deadline, "the worker was not told that ansible-playbook ended"
        time.sleep(0.05)
    with open(cleaned, encoding="utf-8") as handle:
        assert handle.read() == "cleaned up"
