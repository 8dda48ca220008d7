# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What unit tests of the waits (engine/wait.py, engine/progress.py) run against besides tests/unit/fakes.py's
FakeClock: scripted answers per object, and live Deployments with a status."""

from __future__ import annotations

from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import ref


class Script:
    """fetch(obj): answers per ref, one per call; the last answer repeats. Records the calls."""

    def __init__(self, answers):
        self.answers = {key: list(value) for key, value in answers.items()}
        self.calls = []

    def __call__(self, obj):
        key = ref(obj)
        self.calls.append(key)
        answers = self.answers[key]
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def live_deployment(name, replicas=2, ready=None, updated=None, generation=1, observed=1, conditions=None,
                    annotations=None):
    """A Deployment of namespace shop as the API server shows it, with the status of ``ready`` and ``updated``
    replicas (all of them by default) and the conditions of a finished rollout unless ``conditions``."""
    ready = replicas if ready is None else ready
    updated = replicas if updated is None else updated
    meta = {"name": name, "namespace": "shop", "generation": generation}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
        "spec": {"replicas": replicas, "progressDeadlineSeconds": 600},
        "status": {
            "observedGeneration": observed, "replicas": replicas, "updatedReplicas": updated,
            "readyReplicas": ready, "availableReplicas": ready,
            "conditions": conditions if conditions is not None else [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
            ],
        },
    }
