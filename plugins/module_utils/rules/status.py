# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one status function: is a live object ready? A Python port of kstatus.

The rules follow sigs.k8s.io/cli-utils ``pkg/kstatus/status``: generic checks first
(deletionTimestamp, generation vs observedGeneration, the Reconciling and Stalled conditions),
then one small function per kind, early returns and an explicit default on every field read.
Reason strings are kstatus' own (LessReplicas, LessUpdated, ExtraPods, LessAvailable, ...).

Deliberate differences from kstatus, because a deploy waits on the result:
- a Job is InProgress until it completes (kstatus calls a started Job Current);
- a Pod in phase Failed is Failed, an unschedulable Pod stays InProgress (with the scheduler's message);
- a LoadBalancer Service is InProgress until it has an ingress address;
- a Deployment with ReplicaFailure=True (e.g. quota exceeded) reports that condition's message;
- a ProgressDeadlineExceeded condition updated no later than manent's last apply (managedFields time) belongs to
  the previous rollout (the controller keeps it when the new template matches an existing ReplicaSet): ignored;
- objects without kind-specific rules use a ``Ready`` condition when they have one;
- a StatefulSet with the OnDelete strategy waits for its replicas to be ready (kstatus: Current at once), and
  a DaemonSet with OnDelete does not wait for its pods to be updated (kstatus waits forever: nothing replaces
  them).

``finished`` is the outcome of a Job or Pod that ran to its end, also while it is being deleted.

``pod_problems`` explains, one short line per distinct problem, why the pods of a workload are
not ready; the wait loop adds it to its errors.
"""

from __future__ import annotations

from typing import NamedTuple

from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import group_of, name_of

IN_PROGRESS = "InProgress"
FAILED = "Failed"
CURRENT = "Current"
TERMINATING = "Terminating"
NOT_FOUND = "NotFound"
UNKNOWN = "Unknown"

# kstatus reason strings
TOO_FEW_READY = "LessReady"
TOO_FEW_AVAILABLE = "LessAvailable"
TOO_FEW_UPDATED = "LessUpdated"
TOO_FEW_REPLICAS = "LessReplicas"
EXTRA_PODS = "ExtraPods"
PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
JOB_FAILED = "JobFailed"

_MAX_INT32 = 2 ** 31 - 1
_MESSAGE_LIMIT = 240


class Result(NamedTuple):
    """Outcome of ``compute``: one of the status constants, a human message, a CamelCase reason."""

    status: str
    message: str
    reason: str = ""


def _current(message):
    return Result(CURRENT, message, "")


def _in_progress(reason, message):
    return Result(IN_PROGRESS, message, reason)


def _failed(reason, message):
    return Result(FAILED, message, reason)


# ---------------------------------------------------------------------------------------------
# field access with explicit defaults


def _field(obj, path, default=None):
    """Value at dotted ``path`` ('status.readyReplicas'), or ``default`` when any step is missing."""
    value = obj
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return default if value is None else value


def _int(obj, path, default):
    value = _field(obj, path)
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def _str(obj, path, default):
    value = _field(obj, path)
    return value if isinstance(value, str) else default


def _list(obj, path):
    value = _field(obj, path)
    return value if isinstance(value, list) else []


def conditions(obj):
    """The ``status.conditions`` entries that are dicts."""
    return [c for c in _list(obj, "status.conditions") if isinstance(c, dict)]


def condition(obj, cond_type):
    """The first condition of ``cond_type``, or None."""
    for cond in conditions(obj):
        if cond.get("type") == cond_type:
            return cond
    return None


def _has_condition(obj, cond_type, status):
    cond = condition(obj, cond_type)
    return cond is not None and cond.get("status") == status


def _short(text):
    """One line, at most _MESSAGE_LIMIT characters."""
    text = " ".join(str(text or "").split())
    if len(text) > _MESSAGE_LIMIT:
        text = text[:_MESSAGE_LIMIT - 3] + "..."
    return text


# ---------------------------------------------------------------------------------------------
# generic rules


def _generic(obj):
    if _str(obj, "metadata.deletionTimestamp", ""):
        return Result(TERMINATING, "Resource scheduled for deletion", "Terminating")
    result = _check_generation(obj)
    if result:
        return result
    for cond in conditions(obj):
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "Reconciling":
            return _in_progress(cond.get("reason") or "Reconciling", cond.get("message") or "Reconciling")
        if cond.get("type") == "Stalled":
            return _failed(cond.get("reason") or "Stalled", cond.get("message") or "Stalled")
    return None


def _check_generation(obj):
    generation = _int(obj, "metadata.generation", None)
    observed = _int(obj, "status.observedGeneration", None)
    if generation is None or observed is None or generation == observed:
        return None
    message = "%s generation is %d, but latest observed generation is %d" % (obj.get("kind"), generation, observed)
    return _in_progress("LatestGenerationNotObserved", message)


def _check_generation_set(obj):
    """DaemonSet: the controller always sets both fields once it has acted on the object."""
    kind = obj.get("kind")
    if _int(obj, "metadata.generation", None) is None:
        return _in_progress("NoGeneration", "%s metadata.generation not found" % kind)
    if _int(obj, "status.observedGeneration", None) is None:
        return _in_progress("NoObservedGeneration", "%s status.observedGeneration not found" % kind)
    return None


# ---------------------------------------------------------------------------------------------
# one function per kind


def _always_ready(_obj):
    return _current("Resource is always ready")


def _deployment(obj):
    # Without progressDeadlineSeconds the controller never sets Progressing: treat as progressing.
    progressing = _int(obj, "spec.progressDeadlineSeconds", _MAX_INT32) == _MAX_INT32
    available = False
    for cond in conditions(obj):
        if cond.get("type") == "Progressing":
            if cond.get("reason") == PROGRESS_DEADLINE_EXCEEDED and _stale(obj, cond):
                # from the rollout before manent's last apply: going back to an existing ReplicaSet, the
                # controller keeps the condition until that rollout progresses
                progressing = True
                continue
            if cond.get("reason") == PROGRESS_DEADLINE_EXCEEDED:
                message = "Progress deadline exceeded"
                if cond.get("message"):
                    message = "%s: %s" % (message, _short(cond.get("message")))
                return _failed(PROGRESS_DEADLINE_EXCEEDED, message)
            if cond.get("status") == "True" and cond.get("reason") == "NewReplicaSetAvailable":
                progressing = True
        elif cond.get("type") == "Available" and cond.get("status") == "True":
            available = True

    spec_replicas = _int(obj, "spec.replicas", 1)
    replicas = _int(obj, "status.replicas", 0)
    updated = _int(obj, "status.updatedReplicas", 0)
    ready = _int(obj, "status.readyReplicas", 0)
    available_replicas = _int(obj, "status.availableReplicas", 0)

    failure = condition(obj, "ReplicaFailure")
    if spec_replicas > replicas and failure is not None and failure.get("status") == "True":
        return _in_progress("ReplicaFailure", "Replicas: %d/%d: %s" % (
            replicas, spec_replicas, _short(failure.get("message") or failure.get("reason"))))
    if spec_replicas > replicas:
        return _in_progress(TOO_FEW_REPLICAS, "Replicas: %d/%d" % (replicas, spec_replicas))
    if spec_replicas > updated:
        return _in_progress(TOO_FEW_UPDATED, "Updated: %d/%d" % (updated, spec_replicas))
    if replicas > spec_replicas:
        return _in_progress(EXTRA_PODS, "Pending termination: %d" % (replicas - spec_replicas))
    if updated > available_replicas:
        return _in_progress(TOO_FEW_AVAILABLE, "Available: %d/%d" % (available_replicas, updated))
    if spec_replicas > ready:
        return _in_progress(TOO_FEW_READY, "Ready: %d/%d" % (ready, spec_replicas))
    if not progressing:
        return _in_progress("ReplicaSetNotAvailable", "ReplicaSet not Available")
    if not available:
        return _in_progress("DeploymentNotAvailable", "Deployment not Available")
    return _current("Deployment is available. Replicas: %d" % replicas)


def _applied_at(obj):
    """Server time (RFC 3339, second resolution) of field manager manent's last apply, or ""."""
    times = [entry.get("time") or "" for entry in _list(obj, "metadata.managedFields")
             if isinstance(entry, dict) and entry.get("manager") == "manent" and entry.get("operation") == "Apply"]
    return max(times) if times else ""


def _stale(obj, cond):
    """True when condition ``cond`` was last updated no later than manent's last apply: a deadline (at least
    one second) exceeded by the rollout that apply started would be stamped strictly later. Both times
    are the API server's."""
    applied, updated = _applied_at(obj), str(cond.get("lastUpdateTime") or "")
    return bool(applied and updated) and updated <= applied


def _statefulset(obj):
    spec_replicas = _int(obj, "spec.replicas", 1)
    ready = _int(obj, "status.readyReplicas", 0)
    current = _int(obj, "status.currentReplicas", 0)
    updated = _int(obj, "status.updatedReplicas", 0)
    replicas = _int(obj, "status.replicas", 0)
    partition = _int(obj, "spec.updateStrategy.rollingUpdate.partition", -1)

    if spec_replicas > replicas:
        return _in_progress(TOO_FEW_REPLICAS, "Replicas: %d/%d" % (replicas, spec_replicas))
    if spec_replicas > ready:
        return _in_progress(TOO_FEW_READY, "Ready: %d/%d" % (ready, spec_replicas))
    if replicas > spec_replicas:
        return _in_progress(EXTRA_PODS, "Pending termination: %d" % (replicas - spec_replicas))
    if _str(obj, "spec.updateStrategy.type", "") == "OnDelete":
        # kstatus says Current at once; the replicas are waited for, their update is not (pods are only
        # replaced when someone deletes them).
        return _current("StatefulSet uses the OnDelete update strategy: %d replicas ready, pods are updated only "
                        "when deleted" % ready)
    if partition != -1:
        # Only the ordinals at or above the partition are updated.
        if updated < spec_replicas - partition:
            return _in_progress("PartitionRollout", "updated: %d/%d" % (updated, spec_replicas - partition))
        return _current("Partition rollout complete. updated: %d" % updated)
    if spec_replicas > current:
        return _in_progress("LessCurrent", "current: %d/%d" % (current, spec_replicas))
    if _str(obj, "status.currentRevision", "") != _str(obj, "status.updateRevision", ""):
        return _in_progress("RevisionMismatch", "Waiting for updated revision to match current")
    return _current("All replicas scheduled as expected. Replicas: %d" % replicas)


def _daemonset(obj):
    result = _check_generation_set(obj)
    if result:
        return result
    desired = _int(obj, "status.desiredNumberScheduled", -1)
    current = _int(obj, "status.currentNumberScheduled", 0)
    updated = _int(obj, "status.updatedNumberScheduled", 0)
    available = _int(obj, "status.numberAvailable", 0)
    ready = _int(obj, "status.numberReady", 0)

    if desired == -1:
        return _in_progress("NoDesiredNumber", "Missing .status.desiredNumberScheduled")
    if desired > current:
        return _in_progress("LessCurrent", "Current: %d/%d" % (current, desired))
    if desired > updated and _str(obj, "spec.updateStrategy.type", "") != "OnDelete":
        return _in_progress(TOO_FEW_UPDATED, "Updated: %d/%d" % (updated, desired))
    if desired > available:
        return _in_progress(TOO_FEW_AVAILABLE, "Available: %d/%d" % (available, desired))
    if desired > ready:
        return _in_progress(TOO_FEW_READY, "Ready: %d/%d" % (ready, desired))
    return _current("All replicas scheduled as expected. Replicas: %d" % desired)


def _replicaset(obj):
    if _has_condition(obj, "ReplicaFailure", "True"):
        return _in_progress("ReplicaFailure", "Replica Failure condition. Check Pods")
    spec_replicas = _int(obj, "spec.replicas", 1)
    replicas = _int(obj, "status.replicas", 0)
    ready = _int(obj, "status.readyReplicas", 0)
    available = _int(obj, "status.availableReplicas", 0)
    labelled = _int(obj, "status.fullyLabeledReplicas", 0)

    if spec_replicas > labelled:
        return _in_progress("LessLabelled", "Labelled: %d/%d" % (labelled, spec_replicas))
    if spec_replicas > available:
        return _in_progress(TOO_FEW_AVAILABLE, "Available: %d/%d" % (available, spec_replicas))
    if spec_replicas > ready:
        return _in_progress(TOO_FEW_READY, "Ready: %d/%d" % (ready, spec_replicas))
    if replicas > spec_replicas:
        return _in_progress(EXTRA_PODS, "Pending termination: %d" % (replicas - spec_replicas))
    return _current("ReplicaSet is available. Replicas: %d" % replicas)


def _crash_looping(obj):
    names = []
    for status in _list(obj, "status.containerStatuses"):
        if isinstance(status, dict) and _str(status, "state.waiting.reason", "") == "CrashLoopBackOff":
            names.append(str(status.get("name") or "?"))
    return names


def _failure_detail(pod):
    """'Evicted: The node was low on resource: memory.' from a failed pod's status, or ''."""
    parts = [part for part in (_str(pod, "status.reason", ""), _str(pod, "status.message", "")) if part]
    return _short(": ".join(parts))


def _pod(obj):
    phase = _str(obj, "status.phase", "")
    if phase == "Succeeded":
        return _current("Pod has completed successfully")
    if phase == "Failed":
        detail = _failure_detail(obj)
        return _failed("PodFailed", "Pod has failed: %s" % detail if detail else "Pod has failed")
    if phase == "Running":
        if _has_condition(obj, "Ready", "True"):
            return _current("Pod is Ready")
        names = _crash_looping(obj)
        if names:
            return _failed("ContainerCrashLooping", "Containers in CrashLoop state: %s" % ",".join(names))
        return _in_progress("PodRunningNotReady", "Pod is running but is not Ready")
    if phase == "Pending":
        scheduled = condition(obj, "PodScheduled")
        if scheduled and scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
            message = "Pod could not be scheduled"
            if scheduled.get("message"):
                message = "%s: %s" % (message, _short(scheduled.get("message")))
            return _in_progress("PodUnschedulable", message)
        return _in_progress("PodPending", "Pod is in the Pending phase")
    if phase == "":
        return _in_progress("PodNotObserved", "Pod phase not available")
    return Result(UNKNOWN, "Unknown pod phase %s" % phase, "UnknownPhase")


def _pdb(_obj):
    # The generic observedGeneration check already ran: the disruption controller has seen this version.
    return _current("AllowedDisruptions has been computed.")


def _job_failure(obj):
    """(reason, message) when the Job failed for good, else None."""
    for cond_type in ("Failed", "FailureTarget"):
        cond = condition(obj, cond_type)
        if cond is not None and cond.get("status") == "True":
            return cond.get("reason") or JOB_FAILED, cond.get("message") or ""
    failed = _int(obj, "status.failed", 0)
    if failed > _int(obj, "spec.backoffLimit", 6):
        return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
    return None


def _job(obj):
    parallelism = _int(obj, "spec.parallelism", 1)
    completions = _int(obj, "spec.completions", parallelism)
    succeeded = _int(obj, "status.succeeded", 0)
    active = _int(obj, "status.active", 0)
    failed = _int(obj, "status.failed", 0)

    if _has_condition(obj, "Complete", "True"):
        return _current("Job Completed. succeeded: %d/%d" % (succeeded, completions))
    failure = _job_failure(obj)
    if failure:
        reason, detail = failure
        message = "Job Failed. failed: %d/%d" % (failed, completions)
        if detail:
            message = "%s: %s: %s" % (message, reason, _short(detail))
        return _failed(JOB_FAILED, message)
    if _has_condition(obj, "Suspended", "True"):
        return _current("Job is suspended")
    if not _str(obj, "status.startTime", ""):
        return _in_progress("JobNotStarted", "Job not started")
    return _in_progress("JobRunning", "Job in progress. succeeded: %d/%d, active: %d, failed: %d" % (
        succeeded, completions, active, failed))


def _service(obj):
    if _str(obj, "spec.type", "ClusterIP") != "LoadBalancer":
        return _current("Service is ready")
    if not _str(obj, "spec.clusterIP", ""):
        return _in_progress("NoIPAssigned", "ClusterIP not set. Service type: LoadBalancer")
    if not _list(obj, "status.loadBalancer.ingress"):
        return _in_progress("NoIngress", "LoadBalancer has no ingress address yet")
    return _current("Service is ready")


def _pvc(obj):
    phase = _str(obj, "status.phase", "unknown")
    if phase != "Bound":
        return _in_progress("NotBound", "PVC is not Bound. phase: %s" % phase)
    return _current("PVC is Bound")


def _crd(obj):
    for cond in conditions(obj):
        if cond.get("type") == "NamesAccepted" and cond.get("status") == "False":
            return _failed(cond.get("reason") or "NamesNotAccepted", cond.get("message") or "Names not accepted")
        if cond.get("type") == "Established":
            if cond.get("status") == "False" and cond.get("reason") != "Installing":
                return _failed(cond.get("reason") or "NotEstablished", cond.get("message") or "Not established")
            if cond.get("status") == "True":
                return _current("CRD is established")
    return _in_progress("Installing", "Install in progress")


def _ready_condition(obj):
    ready = condition(obj, "Ready")
    if ready is None:
        return _current("Resource is current")
    if ready.get("status") == "True":
        return _current(ready.get("message") or "Resource is Ready")
    message = "Ready condition is %s" % (ready.get("status") or "Unknown")
    if ready.get("message"):
        message = "%s: %s" % (message, _short(ready.get("message")))
    return _in_progress(ready.get("reason") or "NotReady", message)


# "group/Kind" ("Kind" for the core group) -> rule
_RULES = {
    "Service": _service,
    "Pod": _pod,
    "Secret": _always_ready,
    "ConfigMap": _always_ready,
    "PersistentVolumeClaim": _pvc,
    "apps/StatefulSet": _statefulset,
    "apps/DaemonSet": _daemonset,
    "extensions/DaemonSet": _daemonset,
    "apps/Deployment": _deployment,
    "extensions/Deployment": _deployment,
    "apps/ReplicaSet": _replicaset,
    "extensions/ReplicaSet": _replicaset,
    "policy/PodDisruptionBudget": _pdb,
    "batch/CronJob": _always_ready,
    "batch/Job": _job,
    "apiextensions.k8s.io/CustomResourceDefinition": _crd,
}


def _rule_key(obj):
    group = group_of(obj)
    kind = obj.get("kind") or ""
    return "%s/%s" % (group, kind) if group else kind


def compute(obj):
    """Status of a live object (a dict with its ``status``); None means it does not exist."""
    if obj is None:
        return Result(NOT_FOUND, "Resource not found", "NotFound")
    if not isinstance(obj, dict):
        return Result(UNKNOWN, "Not an object: %r" % (obj,), "NotAnObject")
    result = _generic(obj)
    if result:
        return result
    rule = _RULES.get(_rule_key(obj), _ready_condition)
    return rule(obj)


def finished(obj):
    """The outcome of a Job or Pod that ran to its end (a Job Complete or failed, a Pod Succeeded or Failed), or None
    (not finished, or another kind). Unlike :func:`compute` it holds while the object is being deleted: a Job's
    ``ttlSecondsAfterFinished`` or a delete policy removes it right after it finished, and that outcome stays."""
    if not isinstance(obj, dict):
        return None
    key = _rule_key(obj)
    if key == "batch/Job":
        result = _job(obj)
        done = _has_condition(obj, "Complete", "True") or result.status == FAILED
    elif key == "Pod":
        result = _pod(obj)
        done = _str(obj, "status.phase", "") in ("Succeeded", "Failed")
    else:
        return None
    return result if done else None


def is_permanent_failure(obj, result):
    """True when waiting longer cannot help: a Deployment past its progress deadline, a failed Job or Pod."""
    if obj is None or result.status != FAILED:
        return False
    key = _rule_key(obj)
    if key in ("apps/Deployment", "extensions/Deployment"):
        return result.reason == PROGRESS_DEADLINE_EXCEEDED
    if key == "batch/Job":
        return result.reason == JOB_FAILED
    if key == "Pod":  # phase Failed is terminal: the kubelet never restarts the pod
        return result.reason == "PodFailed"
    return False


# ---------------------------------------------------------------------------------------------
# why are the pods not ready


def _terminated_text(terminated):
    text = "exit code %s" % terminated.get("exitCode", "?")
    if terminated.get("reason"):
        text = "%s (%s)" % (text, terminated["reason"])
    if terminated.get("message"):
        text = "%s: %s" % (text, _short(terminated["message"]))
    return text


def _container_problem(status, init):
    """One phrase for a container that is waiting for a bad reason or exited with an error, else None."""
    label = "%scontainer %s" % ("init " if init else "", status.get("name") or "?")
    waiting = _field(status, "state.waiting", {})
    reason = waiting.get("reason") if isinstance(waiting, dict) else None
    if reason and reason != "PodInitializing":
        if reason == "CrashLoopBackOff":
            # The waiting message names the pod; the last termination says what went wrong.
            last = _field(status, "lastState.terminated", {})
            detail = _terminated_text(last) if isinstance(last, dict) and last else "restarting"
            return "CrashLoopBackOff: %s %s" % (label, detail)
        text = "%s: %s" % (reason, label)
        if waiting.get("message"):
            text = "%s: %s" % (text, _short(waiting["message"]))
        return text
    terminated = _field(status, "state.terminated", {})
    if isinstance(terminated, dict) and terminated and terminated.get("exitCode", 0) != 0:
        return "%s failed: %s" % (label, _terminated_text(terminated))
    return None


def _pod_problem(pod):
    """Why one pod is not ready, or None when it is ready, finished or going away."""
    phase = _str(pod, "status.phase", "")
    if _str(pod, "metadata.deletionTimestamp", "") or phase == "Succeeded":
        return None
    if phase == "Running" and _has_condition(pod, "Ready", "True"):
        return None
    if phase == "Failed":
        return "Failed: %s" % (_failure_detail(pod) or "pod failed")
    scheduled = condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        reason = scheduled.get("reason") or "NotScheduled"
        return "%s: %s" % (reason, _short(scheduled.get("message") or "not scheduled"))
    problems = []
    for path, init in (("status.initContainerStatuses", True), ("status.containerStatuses", False)):
        for status in _list(pod, path):
            problem = _container_problem(status, init) if isinstance(status, dict) else None
            if problem:
                problems.append(problem)
    if problems:
        return "; ".join(problems)
    ready = condition(pod, "Ready")
    if ready is not None and ready.get("status") != "True":
        text = "not ready"
        if ready.get("reason"):
            text = "%s: %s" % (text, ready["reason"])
        if ready.get("message"):
            text = "%s: %s" % (text, _short(ready["message"]))
        return text
    return "%s" % (phase or "not observed yet")


def pod_problems(pods):
    """One line per distinct reason the given pods are not ready, e.g. '3 pods: ImagePullBackOff: ...'."""
    grouped = {}
    for pod in pods or []:
        if not isinstance(pod, dict):
            continue
        problem = _pod_problem(pod)
        if problem:
            grouped.setdefault(problem, []).append(name_of(pod) or "?")
    lines = []
    for problem, names in grouped.items():
        if len(names) == 1:
            lines.append("pod %s: %s" % (names[0], problem))
        else:
            lines.append("%d pods: %s" % (len(names), problem))
    return lines
