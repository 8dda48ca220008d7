# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""engine/write.py, the clean-up after a failed or stopped deploy: whatever error marking the record failed or
releasing the lock meets, the deploy's own error stays the one raised, the lock is still released, and a warning
says what could not be done."""

from __future__ import annotations

import types

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ApplyError, HistoryError, Interrupted)
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.context import DeployContext
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.result import DeployResult
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.write import Writer


class Store:
    """The history store of one deploy: records what the clean-up asks of it; ``mark_error``/``release_error``
    are raised by those calls."""

    def __init__(self, mark_error=None, release_error=None):
        self.calls, self.notes = [], []
        self.mark_error, self.release_error = mark_error, release_error

    def mark(self, version, status, **options):
        self.calls.append(("mark", version, status, options))
        if self.mark_error is not None:
            raise self.mark_error

    def release_lock(self):
        self.calls.append(("release_lock",))
        if self.release_error is not None:
            raise self.release_error


def _writer():
    return Writer(DeployContext(kube=None, discovery=None, reader=None, applier=None, deleter=None, options=None))


def _plan(store, saved=True, saving=True, deployment="d2"):
    release = types.SimpleNamespace(version="2.0.0", deployment=deployment)
    return types.SimpleNamespace(result=DeployResult(status="pending", namespace="ns", release="2.0.0", previous=""),
                                 store=store, redeploy=False, locked=True, saved=saved, saving=saving, started=0.0,
                                 located={}, strays_noted=False, bundle=types.SimpleNamespace(release=release))


def _fail(writer, plan, error):
    """What Writer.write does when its stages raise ``error``."""
    with pytest.raises(type(error)) as raised:
        try:
            raise error
        except (ApplyError, Interrupted) as exc:
            writer._failed(plan, exc)  # pylint: disable=protected-access
            raise
        finally:
            writer._close(plan, {})  # pylint: disable=protected-access
    return raised.value


@pytest.mark.parametrize("error", [ApplyError("the rollout timed out", subject="Deployment/shop"),
                                   Interrupted("the run was stopped (SIGTERM)")])
def test_the_record_is_marked_failed_and_the_lock_released(error):
    store = Store()
    plan = _plan(store)
    assert _fail(_writer(), plan, error) is error
    assert store.calls == [("mark", "2.0.0", "failed", {}), ("release_lock",)]
    assert plan.result.status == "failed" and error.partial is plan.result
    assert not plan.result.warnings


@pytest.mark.parametrize("mark_error", [HistoryError("cannot set the status", subject="ConfigMap/ns/rec"),
                                        OSError("connection reset by peer"), ValueError("")])
@pytest.mark.parametrize("error", [ApplyError("the rollout timed out", subject="Deployment/shop"),
                                   Interrupted("the run was stopped (SIGTERM)")])
def test_a_mark_that_fails_keeps_the_error_releases_the_lock_and_says_so(error, mark_error):
    store = Store(mark_error=mark_error)
    plan = _plan(store)
    assert _fail(_writer(), plan, error) is error
    assert store.calls == [("mark", "2.0.0", "failed", {}), ("release_lock",)]
    warning, = plan.result.warnings
    assert warning.startswith("could not mark release 2.0.0 failed, its record still says pending: ")
    if not isinstance(mark_error, HistoryError):
        assert type(mark_error).__name__ in warning and str(mark_error) in warning


@pytest.mark.parametrize("release_error", [HistoryError("cannot release", subject="ConfigMap/ns/loc"),
                                           RuntimeError("pool closed")])
def test_a_lock_release_that_fails_keeps_the_error_and_says_so(release_error):
    error = ApplyError("the rollout timed out", subject="Deployment/shop")
    store = Store(release_error=release_error)
    plan = _plan(store)
    assert _fail(_writer(), plan, error) is error
    assert plan.result.warnings == ["could not release the history lock (it expires by itself; or deploy with "
                                    "break_lock: true once no other deploy runs): " +
                                    (str(release_error) if isinstance(release_error, HistoryError)
                                     else "RuntimeError: pool closed")]


def test_stopped_while_saving_marks_the_record_only_if_this_deploy_wrote_it():
    """The stop came while the record was being saved (the create may or may not have been handled): the clean-up
    marks the record failed if it exists and holds this deploy's id; before saving, nothing is marked."""
    error = Interrupted("the run was stopped (SIGTERM)")
    store = Store()
    _fail(_writer(), _plan(store, saved=False), error)
    assert store.calls == [("mark", "2.0.0", "failed", {"missing_ok": True, "of_deployment": "d2"}),
                           ("release_lock",)]
    for plan in (_plan(Store(), saved=False, saving=False), _plan(Store(), saved=False, deployment="")):
        _fail(_writer(), plan, Interrupted("the run was stopped (SIGINT)"))
        assert plan.store.calls == [("release_lock",)]
