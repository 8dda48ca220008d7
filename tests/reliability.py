# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Records of the reliability suite (faults injected, hostile inputs tried, secret channels checked).

Each test calls :func:`record` once per case with the outcome it asserted; hack/reliability_report.py
turns the records of one ``make test`` run into RELIABILITY.md. A case is recorded as passed only after
its assertions held (call it after them, or with ``passed=False`` before re-raising).
"""

import json
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATEGORIES = ("fault", "input", "secret", "rbac", "tls")


def records_dir():
    """This run's records: $MANENT_RELIABILITY_DIR (tests/conftest.py sets .build/reliability/run-<pid> for
    each pytest run), else the newest run's directory under .build/reliability (for the report script)."""
    if os.environ.get("MANENT_RELIABILITY_DIR"):
        return os.environ["MANENT_RELIABILITY_DIR"]
    base = os.path.join(ROOT, ".build", "reliability")
    runs = [os.path.join(base, n) for n in os.listdir(base) if n.startswith("run-")] if os.path.isdir(base) else []
    return max(runs, key=os.path.getmtime) if runs else base


def record(category, case, passed, detail="", source=""):
    """Append one case outcome (JSON line) to <records_dir>/<category>.jsonl."""
    if category not in CATEGORIES:
        raise ValueError("unknown reliability category %r (one of %s)" % (category, ", ".join(CATEGORIES)))
    os.makedirs(records_dir(), exist_ok=True)
    line = {"category": category, "case": case, "passed": bool(passed), "detail": detail, "source": source,
            "pid": os.getpid(), "time": time.time()}
    with open(os.path.join(records_dir(), category + ".jsonl"), "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, sort_keys=True) + "\n")
