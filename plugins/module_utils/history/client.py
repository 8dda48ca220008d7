# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The requests of one release key's history: ConfigMaps (and Secrets) of one namespace.

Every answer goes through one mapping (:meth:`HistoryClient.call`), which turns API errors into HistoryError
keeping the server's text and saying what to do; the writes are sent by cluster/writes.py, the one write path.
Writes that depend on what was read are PUTs carrying the read ``resourceVersion`` (:meth:`HistoryClient.update`
re-reads on 409, base/conflicts.py); deletes carry the read uid.

The client remembers the last version of each ConfigMap it read or wrote. :meth:`HistoryClient.update` starts
from that version instead of reading it again (one round trip less per write: a deploy reads the locator before
it locks it, and writes each record right after creating it); this is safe because the PUT carries the
remembered ``resourceVersion``: if anything changed meanwhile, the server answers 409 and the update re-reads.
A decision not to write ("nothing to do", "locked by another deploy") is only taken on a fresh read.
The client also holds what the history's parts share: the release key, the clock and the notes.
"""

from __future__ import annotations

import threading

from ansible_collections.manent.kubernetes.plugins.module_utils.history import naming, times
from ansible_collections.manent.kubernetes.plugins.module_utils.base.conflicts import retry_on_conflict
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster import writes
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import (
    ApiError, ConflictError, HistoryError, ManentError, NotFoundError)

# What to do when the conditioned writes of one history kept being refused.
WRITERS_HINT = "another process is writing this release history; stop it and deploy again"


class _Stale(Exception):
    """An attempt of :meth:`HistoryClient.update` decided nothing or was refused: read the ConfigMap again."""


class HistoryClient:
    """HTTP over the history ConfigMaps and Secrets of ``release_key`` in ``namespace``."""

    def __init__(self, kube, namespace, release_key, now=None):
        self.kube = kube
        self.namespace = namespace
        self.key = release_key
        self.now = now or times.utcnow
        self.notes = []
        self.namespace_object = None  # the release Namespace as the deploy read it (history_anchor.write)
        self.anchoring = True  # False: record writes leave the anchors alone (rollback of a record not vouched for)
        self.locator_name = naming.locator_name(release_key)
        self._seen = {}  # name -> the last ConfigMap read or written (see the module docstring)
        self._absent = set()  # names of ConfigMaps whose last read found none (and none written since)
        # A listing may be sent while this client writes (a deploy lists the records while it writes its own): the
        # copy a write returned after the listing was sent is never replaced by the listed one (older or the same).
        self._writes = 0  # writes answered so far
        self._written = {}  # name -> the number of its last answered write
        self._lock = threading.Lock()

    def _remember(self, cm, resource="configmaps", written=False, listed_after=None):
        """Remember ``cm`` as the last version of its name; ``written``: the answer to this client's write;
        ``listed_after``: from a listing sent when that many writes had been answered."""
        if resource == "configmaps" and isinstance(cm, dict) and (cm.get("metadata") or {}).get("name"):
            name = cm["metadata"]["name"]
            with self._lock:
                if listed_after is not None and self._written.get(name, 0) > listed_after:
                    return cm
                if written:
                    self._writes += 1
                    self._written[name] = self._writes
                self._seen[name] = cm
                self._absent.discard(name)
        return cm

    def remembered(self, name):
        """The last version of ConfigMap ``name`` this client read or wrote; None when it has none."""
        return self._seen.get(name)

    def seen_absent(self, name):
        """True when this client's last read of ConfigMap ``name`` found none, and it wrote none since."""
        return name in self._absent

    def known(self, name, action="read the release history"):
        """The last version of ConfigMap ``name`` this client read or wrote, else read now (None: absent)."""
        cm = self._seen.get(name)
        return cm if cm is not None else self.get(name, action)

    def path(self, name=None, resource="configmaps"):
        path = "/api/v1/namespaces/%s/%s" % (self.namespace, resource)
        return path + "/" + name if name else path

    def subject(self, name, kind="ConfigMap"):
        return "%s/%s/%s" % (kind, self.namespace, name)

    def call(self, method, path, subject, action, passthrough=(), **kw):
        """One request; API errors other than ``passthrough`` become HistoryError keeping the server's text."""
        return self._sent(lambda: self.kube.request(method, path, subject=subject, **kw), subject, action,
                          passthrough)

    def _sent(self, send, subject, action, passthrough=()):
        """The data of the answer to ``send()`` (one request); its API errors as :meth:`call` maps them."""
        try:
            return send().data
        except passthrough:
            raise
        except ApiError as err:
            return self._history_error(err, subject, action)

    def _history_error(self, err, subject, action):
        """Raise the HistoryError of API error ``err`` (keeping the server's text, saying what to do)."""
        if err.status == 403:
            hint = ("the deploy credentials need get, list, create, update, patch and delete on configmaps "
                    "(and on secrets for releases that contain Secrets, and to remove Helm releases) in "
                    "namespace %s: grant them in a Role bound to this user" % self.namespace)
        elif err.status == 404:
            hint = "check that namespace %s exists" % self.namespace
        elif err.transient:
            hint = "the API server did not answer in time or is overloaded; run the deploy again"
        else:
            hint = err.hint or "check the object named here, then run the deploy again"
        raise HistoryError("cannot %s: %s" % (action, err.message), subject=subject, hint=hint) from err

    def get(self, name, action="read the release history", resource="configmaps", kind="ConfigMap"):
        """The ConfigMap (or Secret), or None when it does not exist."""
        try:
            return self._remember(self.call("GET", self.path(name, resource), self.subject(name, kind), action,
                                            passthrough=(NotFoundError,)), resource)
        except NotFoundError:
            if resource == "configmaps":
                self._seen.pop(name, None)
                self._absent.add(name)
            return None

    def create(self, body, action, resource="configmaps", kind="ConfigMap"):
        """POST ``body``; ConflictError passes through when an object of its name exists.

        Retried like an idempotent request (a POST whose answer was lost is sent again): every caller reads the
        409 it may then get as "exists already" and re-reads (docs/reliability.md, Retries).
        """
        subject = self.subject(body["metadata"]["name"], kind)
        written = self._sent(lambda: writes.create(self.kube, self.path(resource=resource), body, subject,
                                                   repeatable=True), subject, action, passthrough=(ConflictError,))
        return self._remember(written, resource, written=True)

    def put(self, body, action, resource="configmaps", kind="ConfigMap", passthrough=(ConflictError,)):
        """PUT ``body`` (conditioned on its resourceVersion); ConflictError passes through."""
        name = body["metadata"]["name"]
        subject = self.subject(name, kind)
        written = self._sent(lambda: writes.replace(self.kube, self.path(name, resource), body, subject), subject,
                             action, passthrough=passthrough)
        return self._remember(written, resource, written=True)

    def update(self, name, change, action, missing_hint=None, missing_ok=False):
        """Read ``name``, PUT ``change(cm)`` (None: nothing to do) with its resourceVersion; re-read on 409.

        Returns the written (or unchanged) ConfigMap; None when it does not exist and ``missing_ok``. The first
        attempt starts from the remembered version when there is one; what it decides without writing (None,
        or an error from ``change``) is decided again on a fresh read. Every attempt counts towards the retries.
        """
        remembered = [self._seen.pop(name, None)]

        def attempt(_number):
            cm, remembered[0] = remembered[0], None
            if cm is not None:
                return self._update_remembered(cm, change, action)
            return self._update_read(name, change, action, missing_hint, missing_ok)

        return retry_on_conflict(attempt, lambda tries, _last: HistoryError(
            "cannot %s: the ConfigMap kept changing under us (%d conflicting writes)" % (action, tries),
            subject=self.subject(name), hint=WRITERS_HINT), refused=(_Stale,))

    def _update_remembered(self, cm, change, action):
        """One attempt of :meth:`update` from the remembered ``cm``; _Stale when it decides nothing or the server
        refuses the write (409, 404)."""
        try:
            changed = change(cm)
        except ManentError:
            changed = None
        if changed is None:
            raise _Stale()  # not decided on a remembered version: read it
        try:
            return self.put(changed, action, passthrough=(ConflictError, NotFoundError))
        except (ConflictError, NotFoundError):
            raise _Stale() from None

    def _update_read(self, name, change, action, missing_hint, missing_ok):
        """One attempt of :meth:`update` from a fresh read; _Stale when the server refuses the write (409)."""
        cm = self.get(name, action)
        if cm is None:
            if missing_ok:
                return None
            raise HistoryError("cannot %s: the ConfigMap does not exist" % action, subject=self.subject(name),
                               hint=missing_hint or "it was deleted while the deploy ran; check who else "
                               "manages this history")
        changed = change(cm)
        if changed is None:
            return cm
        try:
            return self.put(changed, action)
        except ConflictError:
            raise _Stale() from None

    def delete(self, obj, action, resource="configmaps", kind="ConfigMap"):
        """Delete exactly the object that was read (uid precondition); False when already gone."""
        name = obj["metadata"]["name"]
        subject = self.subject(name, kind)
        if resource == "configmaps":
            self._seen.pop(name, None)
        try:
            self._sent(lambda: writes.delete(self.kube, self.path(name, resource), subject,
                                             uid=obj["metadata"].get("uid")),
                       subject, action, passthrough=(NotFoundError, ConflictError))
        except NotFoundError:
            return False
        except ConflictError:
            return False  # replaced by a new object of the same name: not the one we meant to delete
        return True

    def history(self, role=naming.HISTORY_RECORD):
        """This key's history ConfigMaps of ``role`` (records by default): selected by the key's labels and
        named ``<locator>-...``."""
        return self.histories(role)[0]

    def histories(self, *roles):
        """One list per role in ``roles`` of this key's history ConfigMaps, from one LIST request."""
        selector = naming.history_selector(self.key, roles[0] if len(roles) == 1 else None)
        sent_after = self._writes
        items = self.call("GET", self.path(), self.subject(self.locator_name + "-*"),
                          "list the release history", query={"labelSelector": selector}).get("items") or []
        prefix = self.locator_name + "-"
        mine = [cm for cm in items if (cm.get("metadata") or {}).get("name", "").startswith(prefix)]
        for cm in mine:
            cm.setdefault("apiVersion", "v1")
            cm.setdefault("kind", "ConfigMap")
            self._remember(cm, listed_after=sent_after)
        return [[cm for cm in mine
                 if ((cm.get("metadata") or {}).get("labels") or {}).get(naming.LABEL_HISTORY) == role]
                for role in roles]
