# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make the repository importable as the installed collection ``ansible_collections.manent.kubernetes``.

The collection is exposed under ``.build/collections/ansible_collections/manent/kubernetes`` (a
symlink to the repository root), the layout ansible-test and ansible-playbook expect.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")


def _expose_collection():
    link = os.path.join(COLLECTIONS, "ansible_collections", "manent", "kubernetes")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        try:
            os.symlink(ROOT, link)
        except FileExistsError:
            pass
    if COLLECTIONS not in sys.path:
        sys.path.insert(0, COLLECTIONS)
    os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", COLLECTIONS)


_expose_collection()


# Reliability report (issue 14): records of this run only; RELIABILITY.md rewritten after a whole-suite run
# (`make test`: pytest tests), else written under .build/reliability for a look (hack/reliability_report.py).
def _reliability_controller(config):
    return not hasattr(config, "workerinput")  # pytest-xdist: the controller, not a worker


def _reliability_report():
    import importlib.util  # pylint: disable=import-outside-toplevel
    spec = importlib.util.spec_from_file_location("reliability_report",
                                                  os.path.join(ROOT, "hack", "reliability_report.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pytest_configure(config):
    """Each run records into its own directory (.build/reliability/run-<pid>), handed to xdist workers and
    subprocesses through the environment: a run still alive from before (killed make, deleted clone) can
    neither clear nor mix into this run's records. Directories of runs no longer alive are removed."""
    if not _reliability_controller(config) or os.environ.get("MANENT_RELIABILITY_DIR"):
        return
    import shutil  # pylint: disable=import-outside-toplevel
    base = os.path.join(ROOT, ".build", "reliability")
    if os.path.isdir(base):
        for name in os.listdir(base):
            pid = name[len("run-"):]
            if name.startswith("run-") and pid.isdigit() and not _pid_alive(int(pid)):
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    os.environ["MANENT_RELIABILITY_DIR"] = os.path.join(base, "run-%d" % os.getpid())


def pytest_sessionstart(session):
    if _reliability_controller(session.config):
        from tests import reliability  # pylint: disable=import-outside-toplevel
        _reliability_report().clear(reliability.records_dir())


def pytest_collection_finish(session):
    """The fault tests' own clusters boot in the background from here, while the tests before them run."""
    if not _reliability_controller(session.config) or getattr(session.config.option, "numprocesses", None):
        return
    if any(item.nodeid.startswith("tests/integration/test_faults.py") for item in session.items):
        from tests.integration import test_faults  # pylint: disable=import-outside-toplevel
        test_faults.boot_in_background()


def pytest_sessionfinish(session, exitstatus):  # pylint: disable=unused-argument
    if not _reliability_controller(session.config):
        return
    from tests import reliability  # pylint: disable=import-outside-toplevel
    reliability_report = _reliability_report()
    opts = session.config.option
    whole = [os.path.normpath(a) for a in session.config.args] == ["tests"] and not opts.keyword and \
        not opts.markexpr
    out = os.path.join(ROOT if whole else reliability.records_dir(), "RELIABILITY.md")
    records, problems = reliability_report.load(reliability.records_dir())
    if any(records.values()):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(reliability_report.render(records, problems))
