# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the collection's playbooks as AWX runs a job: ``ansible_runner.run`` on a private data directory of its
own per job, laid out as AWX writes it (``project/`` a checkout of a project repository whose playbooks import the
collection's, ``inventory/hosts`` the inventory as the script AWX writes, ``env/extravars``, ``env/envvars``,
``env/settings``), the collection found through ``ANSIBLE_COLLECTIONS_PATH`` in ``env/envvars``; and read back what
AWX reads: the job's status and rc, its events (``artifacts/<ident>/job_events/*.json``) and stdout. (AWX itself
hands ansible-runner the environment as an argument, without writing ``env/envvars``: the same variables reach
ansible-playbook.)"""

from __future__ import annotations

import glob
import itertools
import json
import os
import shutil
import sys
import uuid
from dataclasses import dataclass

import ansible_runner
import yaml

from tests.integration.playbook_helpers import ROOT

COLLECTIONS = os.path.join(ROOT, ".build", "collections")
# The project repository's playbooks: each imports the collection's playbook of the same name (docs/role.md,
# Tower / AWX: the job template's "Playbook" field names one of these).
PROJECT_PLAYBOOKS = ("deploy", "traffic", "rollback")
_JOB_IDS = itertools.count(1)


@dataclass
class Job:
    """One finished ansible-runner job."""

    ident: str
    status: str
    rc: int
    artifact_dir: str

    @property
    def events(self):
        """Every job event as written by ansible-runner, in order."""
        out = []
        for path in glob.glob(os.path.join(self.artifact_dir, "job_events", "*.json")):
            with open(path, encoding="utf-8") as handle:
                out.append(json.load(handle))
        return sorted(out, key=lambda event: event.get("counter", 0))

    @property
    def events_text(self):
        """The job events as JSON text, one per line: what AWX stores and shows."""
        return "\n".join(json.dumps(event) for event in self.events)

    @property
    def stdout(self):
        with open(os.path.join(self.artifact_dir, "stdout"), encoding="utf-8", errors="replace") as handle:
            return handle.read()

    @property
    def artifact_data(self):
        """The run's set_stats data, as AWX keeps it: ``artifact_data`` of the ``playbook_on_stats`` event."""
        stats = [event for event in self.events if event.get("event") == "playbook_on_stats"]
        assert len(stats) == 1, "one playbook_on_stats event, got %d" % len(stats)
        return stats[0]["event_data"].get("artifact_data") or {}

    def explain(self):
        return "job %s: status %s rc %s\n%s" % (self.ident, self.status, self.rc, self.stdout[-12000:])


def write_project(path):
    """A project repository checkout: one playbook per operation, importing the collection's playbook."""
    os.makedirs(path, exist_ok=True)
    for name in PROJECT_PLAYBOOKS:
        play = [{"name": "%s (manent.kubernetes.%s)" % (name.capitalize(), name),
                 "ansible.builtin.import_playbook": "manent.kubernetes." + name}]
        with open(os.path.join(path, name + ".yml"), "w", encoding="utf-8") as handle:
            handle.write("---\n" + yaml.safe_dump(play, sort_keys=False))
    return path


def write_inventory_script(inventory, path):
    """The inventory file ``inventory`` (YAML: ``all.hosts`` with their variables, ``all.vars``, groups under
    ``all.children``) as AWX writes a job's inventory: an executable script printing it as JSON, host variables in
    ``_meta.hostvars``."""
    with open(inventory, encoding="utf-8") as handle:
        source = yaml.safe_load(handle)["all"]
    groups = source.get("children") or {}
    data = {"all": {"children": sorted(groups), "vars": source.get("vars") or {}},
            "_meta": {"hostvars": source.get("hosts") or {}}}
    for name, group in groups.items():
        data[name] = {"hosts": sorted(group.get("hosts") or {}), "vars": group.get("vars") or {}}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n" % json.dumps(data))
    os.chmod(path, 0o700)
    return path


def awx_environment(cluster, ca_file=None):
    """The variables AWX's "OpenShift or Kubernetes API Bearer Token" credential injects into a job
    (awx/main/models/credential/injectors.py, kubernetes_bearer_token) for ``cluster`` with Verify SSL on and its CA
    (``ca_file``: another CA file; "": none, which AWX turns into K8S_AUTH_VERIFY_SSL=False, whatever Verify SSL
    says)."""
    ca_file = cluster.ca_file if ca_file is None else ca_file
    env = {"K8S_AUTH_HOST": cluster.url, "K8S_AUTH_API_KEY": cluster.token,
           "K8S_AUTH_VERIFY_SSL": "True" if ca_file else "False"}
    if ca_file:
        env["K8S_AUTH_SSL_CA_CERT"] = ca_file
    return env


def run_job(jobs_dir, project, inventory, playbook, extravars, envvars=None, limit=None, cmdline=None,
            verbosity=0, cancel=None, event_handler=None):
    """Run ``playbook`` (of ``project``) as one AWX job: a fresh private data directory under ``jobs_dir`` with a copy
    of the project, ``inventory`` (a file) as ``inventory/hosts``, ``extravars`` and ``envvars`` (added to the
    collection path and the variables AWX sets); ``cancel`` is ansible-runner's cancel_callback (AWX's cancel)."""
    job_id = next(_JOB_IDS)
    ident = "%d-%s-%s" % (job_id, playbook, uuid.uuid4().hex[:8])
    private = os.path.join(str(jobs_dir), ident)
    shutil.copytree(project, os.path.join(private, "project"))
    write_inventory_script(inventory, os.path.join(private, "inventory", "hosts"))
    os.makedirs(os.path.join(private, "env"))
    env = {
        "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
        # what AWX sets for a job (RunJob.build_env in awx/main/tasks/jobs.py and the ANSIBLE_* settings of
        # awx/settings/defaults.py), besides its callback, cache and ssh settings
        "ANSIBLE_FORCE_COLOR": "True",
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "MAX_EVENT_RES": "700000",
        "AWX_PRIVATE_DATA_DIR": private,
        "JOB_ID": str(job_id),
        "INVENTORY_ID": "1",
        # the execution environment's ansible-playbook first on the PATH
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
    }
    env.update(envvars or {})
    settings = {"job_timeout": 0, "pexpect_timeout": 5}
    for name, data in (("extravars", extravars), ("envvars", env), ("settings", settings)):
        with open(os.path.join(private, "env", name), "w", encoding="utf-8") as handle:
            yaml.safe_dump(data, handle)
    runner = ansible_runner.run(
        private_data_dir=private, playbook=playbook + ".yml", ident=ident, quiet=True, limit=limit,
        cmdline=cmdline, verbosity=verbosity or None,
        # an explicit callback: without one ansible-runner installs its own SIGINT/SIGTERM handlers in this process
        cancel_callback=cancel or (lambda: False),
        event_handler=event_handler)
    return Job(ident=ident, status=runner.status, rc=runner.rc,
               artifact_dir=os.path.join(private, "artifacts", ident))
