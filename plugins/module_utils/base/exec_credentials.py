# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Credentials of kubeconfig ``exec`` plugins (``aws eks get-token``, ``gke-gcloud-auth-plugin``, ``kubelogin``),
kept for the run and renewed before they expire and after a 401.

The plugin runs as client-go runs it (k8s.io/client-go/plugin/pkg/client/auth/exec):

- the command with its args, the controller's environment plus the kubeconfig's ``env``, and
  ``KUBERNETES_EXEC_INFO`` (an ExecCredential whose spec says ``interactive: false`` and, with
  ``provideClusterInfo``, the cluster); no terminal (stdin is /dev/null), a timeout;
- its answer must be an ExecCredential of the configured apiVersion with a token or a client certificate and key;
- the credential is kept per plugin + cluster (command, args, env, server) and used until shortly before its
  ``expirationTimestamp`` (a tenth of its lifetime before, at most a minute), then the plugin runs again; a 401
  runs it again once (:meth:`ExecAuth.refresh`) unless another request did already.

Where it is kept: in the process's memory, and, for the other workers of the same ``ansible-playbook`` run
(each task of each host is a forked process), in a 0600 file of the work directory holding the credential
encrypted with a key that exists only in the memory of that run's processes (:func:`share_across_workers`, called
in the controller's parent process): the file is unreadable to anything else, and worthless once the run ends.

A plugin that is missing, fails, times out or prints something that is not an ExecCredential raises an InputError
naming the command, the context and the kubeconfig, and the plugin's installHint. Its output and its stderr are
never shown (they may hold the credential, or the keys to it)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess  # nosec B404 - runs the credential plugin the kubeconfig names, as kubectl does
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

PLUGIN_TIMEOUT = 60.0
REFRESH_MARGIN_MAX = 60.0  # seconds before expiry a credential is renewed, at most
REFRESH_SHARE = 0.1  # ... and at most this share of its lifetime

_MEMORY = {}  # cache key -> Credential
_LOCKS = {}
_GUARD = threading.Lock()
_SHARED = {"key": None}  # the run's key for the workers' file cache (share_across_workers)


def share_across_workers():
    """Make the credentials one worker of this run obtains readable to the others: a random key, kept in this
    process's memory (the controller's parent, before it forks a worker per task and host), encrypts the file
    cache. Without it (a module run as a separate process) the cache is the process's memory only."""
    if _SHARED["key"] is None:  # only a key: nothing is imported or run for runs that use no exec plugin
        _SHARED["key"] = os.urandom(32)


@dataclass
class Credential:
    token: str = ""
    client_cert: str = ""  # PEM
    client_key: str = ""
    expires: float | None = None  # epoch seconds
    obtained: float = 0.0

    def fresh(self, now):
        if self.expires is None:
            return True  # client-go: used until a 401
        margin = min(REFRESH_MARGIN_MAX, max(0.0, (self.expires - self.obtained) * REFRESH_SHARE))
        return now < self.expires - margin


class ExecAuth:
    """The credential of one exec plugin for one cluster (target: kubeconfig.Target)."""

    def __init__(self, target, cache_dir="", clock=time.time, runner=None, timeout=PLUGIN_TIMEOUT):
        self.target = target
        self.config = target.exec
        self.cache_dir = cache_dir
        self.clock = clock
        self.runner = runner or _run
        self.timeout = timeout
        self.runs = 0  # plugin runs of this object (tests)
        identity = json.dumps([self.config.command, self.config.args, sorted(self.config.env.items()),
                               self.config.api_version, target.server, target.ca_data or target.ca_file],
                              separators=(",", ":"))
        self.key = hashlib.sha256(identity.encode()).hexdigest()
        with _GUARD:
            self._lock = _LOCKS.setdefault(self.key, threading.Lock())

    def current(self):
        """The credential to send now: the cached one while fresh, else the plugin's new one."""
        now = self.clock()
        cred = _MEMORY.get(self.key)
        if cred is not None and cred.fresh(now):
            return cred
        with self._lock:
            cred = _MEMORY.get(self.key)
            if cred is not None and cred.fresh(self.clock()):
                return cred
            cred = self._shared()
            if cred is not None and cred.fresh(self.clock()):
                _MEMORY[self.key] = cred
                return cred
            return self._obtain()

    def refresh(self, refused):
        """After a 401 of a request that sent credential ``refused``: a new credential (the plugin runs again),
        or the one another request obtained meanwhile. None when the plugin gave the refused one again."""
        with self._lock:
            cred = _MEMORY.get(self.key)
            if cred is not None and not _same(cred, refused):
                return cred
            shared = self._shared()
            if shared is not None and not _same(shared, refused) and shared.fresh(self.clock()):
                _MEMORY[self.key] = shared
                return shared
            cred = self._obtain()
            return None if _same(cred, refused) else cred

    # ------------------------------------------------------------------ the plugin

    def _obtain(self):
        self.runs += 1
        started = self.clock()
        output = self.runner(self._argv(), self._environment(), self.timeout, self)
        cred = self._parse(output)
        cred.obtained = started
        _MEMORY[self.key] = cred
        self._share(cred)
        return cred

    def _argv(self):
        return [self.config.command] + list(self.config.args)

    def _environment(self):
        env = dict(os.environ)
        env.update(self.config.env)
        spec = {"interactive": False}
        if self.config.provide_cluster_info:
            t = self.target
            cluster = {"server": t.server}
            if t.tls_server_name:
                cluster["tls-server-name"] = t.tls_server_name
            if t.insecure_skip_tls_verify:
                cluster["insecure-skip-tls-verify"] = True
            ca = t.ca_data
            if not ca and t.ca_file:
                with open(t.ca_file, "r", encoding="utf-8") as handle:
                    ca = handle.read()
            if ca:
                cluster["certificate-authority-data"] = base64.b64encode(ca.encode()).decode()
            if t.proxy_url:
                cluster["proxy-url"] = t.proxy_url
            if t.cluster_config is not None:
                cluster["config"] = t.cluster_config
            spec["cluster"] = cluster
        env["KUBERNETES_EXEC_INFO"] = json.dumps({"apiVersion": self.config.api_version, "kind": "ExecCredential",
                                                  "spec": spec}, separators=(",", ":"))
        return env

    def failure(self, what):
        """The InputError of a plugin that did not give a credential: the command, the context, the installHint."""
        hint = self.config.install_hint.strip() or "check that the command works for this user on the controller"
        return InputError("the exec credential plugin %r of %s %s" % (self.config.command, self.target.where(), what),
                          subject="kubeconfig", hint=hint)

    def _parse(self, output):
        try:
            doc = json.loads(output)
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise self.failure("printed something that is not an ExecCredential (not shown: it may hold secrets)")
        if doc.get("apiVersion") != self.config.api_version:
            raise self.failure("answered with apiVersion %r, not the configured %r"
                               % (str(doc.get("apiVersion"))[:80], self.config.api_version))
        status = doc.get("status")
        if not isinstance(status, dict):
            raise self.failure("answered an ExecCredential without status")
        cred = Credential(token=str(status.get("token") or ""), client_cert=str(status.get("clientCertificateData") or ""),
                          client_key=str(status.get("clientKeyData") or ""))
        if bool(cred.client_cert) != bool(cred.client_key):
            raise self.failure("answered a client certificate without its key, or a key without its certificate")
        if not cred.token and not cred.client_cert:
            raise self.failure("answered an ExecCredential with neither a token nor a client certificate")
        stamp = status.get("expirationTimestamp")
        if stamp:
            try:
                cred.expires = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
            except ValueError:
                raise self.failure("answered an expirationTimestamp that is not RFC 3339: %r"
                                   % str(stamp)[:40]) from None
        return cred

    # ------------------------------------------------------------------ the workers' cache

    def _path(self):
        return os.path.join(self.cache_dir, "exec-" + self.key[:32]) if self.cache_dir and _SHARED["key"] else ""

    def _shared(self):
        path = self._path()
        if not path:
            return None
        try:
            with open(path, "rb") as handle:
                blob = handle.read()
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            data = json.loads(AESGCM(_SHARED["key"]).decrypt(blob[:12], blob[12:], self.key.encode()))
            return Credential(**data)
        except Exception:  # pylint: disable=broad-except
            return None  # missing, another run's, damaged: the plugin runs

    def _share(self, cred):
        path = self._path()
        if not path:
            return
        try:
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            os.makedirs(self.cache_dir, mode=0o700, exist_ok=True)
            nonce = os.urandom(12)
            blob = nonce + AESGCM(_SHARED["key"]).encrypt(nonce, json.dumps(cred.__dict__).encode(), self.key.encode())
            fd, tmp = tempfile.mkstemp(prefix=".exec-", dir=self.cache_dir)  # 0600
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
            os.replace(tmp, path)
        except (OSError, ImportError):  # no cryptography package: each worker keeps its own
            return  # the others run the plugin themselves


def _same(cred, other):
    return other is not None and cred.token == other.token and cred.client_cert == other.client_cert


def _run(argv, env, timeout, auth):
    """The plugin's stdout; raises the plugin's InputError when it cannot run, fails or times out."""
    try:
        proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,  # nosec B603 pylint: disable=ansible-bad-function
                              stderr=subprocess.PIPE, timeout=timeout, check=False, start_new_session=True)
    except FileNotFoundError:
        raise auth.failure("was not found") from None
    except PermissionError:
        raise auth.failure("cannot be run (permission denied)") from None
    except subprocess.TimeoutExpired:
        raise auth.failure("did not answer within %.0fs" % timeout) from None
    except OSError as exc:
        raise auth.failure("cannot be run: %s" % exc.strerror) from None
    if proc.returncode != 0:
        raise auth.failure("exited with status %d (its output is not shown: it may hold secrets; run the command "
                           "by hand as the controller user to see its error)" % proc.returncode)
    return proc.stdout.decode("utf-8", errors="replace")
