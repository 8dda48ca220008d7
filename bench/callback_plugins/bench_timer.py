# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark helper (make bench): record how long each task took on each host, as JSON in $BENCH_TIMER_FILE."""

from __future__ import annotations

DOCUMENTATION = """
name: bench_timer
type: aggregate
short_description: seconds per task and host, for make bench
description:
  - Writes a JSON list of {task, host, seconds} to the file named by the environment variable BENCH_TIMER_FILE.
requirements:
  - enabled with ANSIBLE_CALLBACKS_ENABLED=bench_timer and ANSIBLE_CALLBACK_PLUGINS=bench/callback_plugins
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._started = {}
        self._records = []

    def v2_runner_on_start(self, host, task):
        self._started[(task._uuid, host.get_name())] = time.monotonic()

    def _done(self, result, **_kwargs):
        key = (result._task._uuid, result._host.get_name())
        start = self._started.pop(key, None)
        if start is not None:
            self._records.append({"task": result._task.get_name(), "host": key[1],
                                  "seconds": round(time.monotonic() - start, 3)})

    v2_runner_on_ok = _done
    v2_runner_on_failed = _done
    v2_runner_on_skipped = _done
    v2_runner_on_unreachable = _done

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("BENCH_TIMER_FILE")
        if path:
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(self._records, handle)
