# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Observing live objects instead of sampling them: per kind and namespace one LIST, then one WATCH from the LIST's
resourceVersion (a :class:`Collection`), so that every change in between is seen: a Job that completes and is
deleted right after is seen complete, and its DELETED event keeps that last state.

- A WATCH that the server ends (``timeoutSeconds``) or that breaks (a dropped connection, an API server that
  restarts) is resumed from the last resourceVersion it delivered (an object's or a BOOKMARK's); connecting again
  follows the retry policy of base/client.py (a restarting server is waited for up to ``retry_time``).
- ``410 Gone`` (the server no longer holds that resourceVersion) re-lists. An object seen before and missing from
  the new LIST went away during the gap: its last state is kept, marked :data:`VANISHED`, never taken for an object
  not created yet.
- Where the API offers no watch (a kind without the verb, credentials without it) the collection is LISTed every
  ``interval`` seconds; without LIST either, each of its objects is read with a GET. Polled objects that go away are
  :data:`VANISHED` too: their last changes may not have been seen.

An :class:`Observer` holds the collections of the objects one wait reads, follows each on a thread of its own and
wakes the waiter when one of them changed (:meth:`Observer.wait`)."""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import error_from_status
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import concurrently
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import ApiError, NotFoundError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.objects import (
    key_of, metadata, name_of, namespace_of)
from ansible_collections.manent.kubernetes.plugins.module_utils.base.pages import list_items

DELETED = "deleted"  # a DELETED event was seen: the last state is the object's final one
VANISHED = "vanished"  # missing from a re-list or a poll: its last changes may not have been seen
WATCH_SECONDS = 60  # the server ends each WATCH after this (timeoutSeconds); it is resumed at once
READ_MARGIN = 15.0  # a WATCH silent this long after the server should have ended it counts as broken
MAX_COLLECTIONS = 32  # one thread and one connection each; a wait of more is polled (engine/wait.py)
BACKOFF_MAX = 5.0
SETTLE = 0.05  # after a change, the waiter takes the changes of this much longer with it (one evaluation, not 50)
_RELIST = {410}  # Gone / Expired: the resourceVersion is too old to resume from
_REFUSED = {403, 405}  # not allowed (RBAC), or the kind offers no such verb


class Seen(NamedTuple):
    """What the observer knows of one object: ``live`` (None while it does not exist), ``last`` (the last state seen,
    kept after it went away; None: never seen), ``gone`` ("" while it exists or was never seen, else DELETED or
    VANISHED) and ``listed`` (its collection has been read)."""

    live: dict = None
    last: dict = None
    gone: str = ""
    listed: bool = False


class Collection:
    """The objects of one collection (``path``, with ``query``'s label or field selector), kept current by a WATCH
    (``mode`` "watch"), a LIST (``"list"``) or GETs of ``names`` (``"get"``) every ``interval`` seconds. ``names``:
    only these are kept (None: all). ``notify()`` is called after each change. Counts in ``counts``."""

    def __init__(self, kube, path, subject, api_version, kind, query=None, names=None, mode="watch", notify=None,
                 interval=1.0):
        self.kube, self.path, self.subject = kube, path, subject
        self.api_version, self.kind = api_version, kind
        self.query = dict(query or {})
        self.names = None if names is None else set(names)
        self.mode = mode
        self.interval = interval
        self._notify = notify or (lambda: None)
        self._lock = threading.Lock()
        self._live, self._last, self._gone, self._settled = {}, {}, {}, {}
        self._changed = set()  # names whose state changed since the last changed()
        self.version = None  # the resourceVersion to resume from; None: LIST first
        self.listed = False
        self.trouble = ""  # why it cannot be read now (a transient error); "" once it can
        self.error = None  # an error that ended it: the waiter raises it
        self.counts = {"lists": 0, "watches": 0, "resumed": 0, "relisted": 0, "polls": 0}
        self._stop = threading.Event()
        self._stream = None
        self._thread = None

    # ------------------------------------------------------------------ state

    def seen(self, name):
        with self._lock:
            return Seen(self._live.get(name), self._last.get(name), self._gone.get(name, ""), self.listed)

    def objects(self):
        """The objects that exist now."""
        with self._lock:
            return list(self._live.values())

    def departed(self):
        """The last state before their deletion began of the objects that went away or are going away (pods a Job
        controller deletes still explain why the Job failed)."""
        with self._lock:
            names = set(self._gone) | {n for n, o in self._live.items() if metadata(o).get("deletionTimestamp")}
            return [self._settled[name] for name in sorted(names) if name in self._settled]

    def changed(self):
        """The names whose state changed since the last call."""
        with self._lock:
            out, self._changed = self._changed, set()
        return out

    def _wanted(self, name):
        return self.names is None or name in self.names

    def _put(self, obj):
        obj.setdefault("apiVersion", self.api_version)
        obj.setdefault("kind", self.kind)
        name = name_of(obj)
        self._live[name] = self._last[name] = obj
        self._gone.pop(name, None)
        self._changed.add(name)
        if not metadata(obj).get("deletionTimestamp"):
            self._settled[name] = obj

    def _went(self, name, how, last):
        self._live.pop(name, None)
        self._last[name] = last
        self._gone[name] = how
        self._changed.add(name)

    def replace(self, items, version):
        """The answer of a LIST (or of the GETs): what is missing from it and existed before went away."""
        with self._lock:
            present = {name_of(i): i for i in items if self._wanted(name_of(i))}
            for name in [n for n in self._live if n not in present]:
                self._went(name, VANISHED, self._live[name])
            for obj in present.values():
                self._put(obj)
            self.version, self.listed, self.trouble = version, True, ""
        self._notify()

    def handle(self, event):
        """One WATCH event; False when the watch must re-list (410). An ERROR of another code raises it."""
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") in _RELIST:
                return False
            raise error_from_status(obj.get("code") or 500, obj, subject=self.subject)
        version = metadata(obj).get("resourceVersion") or self.version
        with self._lock:
            if kind in ("ADDED", "MODIFIED") and self._wanted(name_of(obj)):
                self._put(obj)
            elif kind == "DELETED" and self._wanted(name_of(obj)):
                obj.setdefault("apiVersion", self.api_version)
                obj.setdefault("kind", self.kind)
                self._went(name_of(obj), DELETED, obj)
            self.version, self.trouble = version, ""
        if kind != "BOOKMARK":
            self._notify()
        return True

    # ------------------------------------------------------------------ reading

    def relist(self):
        """One paged LIST; a continue token that expired meanwhile (410) starts it again, a few times."""
        for attempt in range(3):
            meta = {}
            try:
                items = list(list_items(self.kube, self.path, self.query, subject=self.subject, meta=meta))
            except ApiError as exc:
                if exc.status in _RELIST and attempt < 2:
                    continue
                raise
            self.counts["lists"] += 1
            self.replace(items, meta.get("resourceVersion"))
            return

    def _get_each(self):
        found = []
        for name in sorted(self.names or ()):
            try:
                found.append(self.kube.get_json("%s/%s" % (self.path, name), subject=self.subject))
            except NotFoundError:
                continue
        self.replace(found, None)

    def watch_once(self):
        """One WATCH from ``version`` until the server ends it; the LIST first when there is no version to resume
        from. A 410 (as the answer, or as an ERROR event) leaves no version: the next call re-lists. Returns the
        number of events received."""
        if self.version is None:
            if self.listed:
                self.counts["relisted"] += 1
            self.relist()
        elif self.counts["watches"]:
            self.counts["resumed"] += 1
        query = dict(self.query, watch="1", resourceVersion=self.version, allowWatchBookmarks="true",
                     timeoutSeconds=str(WATCH_SECONDS))
        self.counts["watches"] += 1
        try:
            stream = self.kube.stream(self.path, query=query, subject=self.subject, timeout=WATCH_SECONDS + READ_MARGIN)
        except ApiError as exc:
            if exc.status in _RELIST:
                self.version = None
                return 0
            raise
        self._stream = stream
        if self._stop.is_set():
            stream.close()
        if self.trouble:  # connected again: what it shows is current
            self.trouble = ""
            self._notify()
        events = 0
        for event in stream.events():
            events += 1
            if not self.handle(event):
                self.version = None
                stream.close()
                return events
        return events

    def read_once(self):
        """Read the whole collection once (LIST, or GETs in mode "get"); a LIST not allowed turns to GETs."""
        if self.mode != "get":
            try:
                self.relist()
                return
            except ApiError as exc:
                if exc.status not in _REFUSED or self.names is None:
                    raise
                self.mode = "get"
        self._get_each()

    def poll_once(self):
        self.counts["polls"] += 1
        self.read_once()

    # ------------------------------------------------------------------ the thread

    def start(self):
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True, name="manent-watch %s" % self.subject)
            self._thread.start()

    def stop(self):
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def join(self, timeout=None):
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self):
        failures = 0
        while not self._stop.is_set():
            try:
                if self.mode != "watch":
                    if not self._stop.wait(self.interval):
                        self.poll_once()
                else:
                    started = time.monotonic()
                    if not self.watch_once() and time.monotonic() - started < 1.0:
                        self._stop.wait(self.interval)  # a server that ends watches at once is not asked in a loop
                failures = 0
            except ApiError as exc:
                if exc.status in _REFUSED and self.mode == "watch":
                    self.mode = "list"  # no WATCH allowed or served: polled
                    continue
                if not exc.transient:
                    self._fail(exc)
                    return
                failures += 1
                self.trouble = str(exc)
                self._notify()
                self._stop.wait(min(BACKOFF_MAX, 0.2 * 2 ** failures))
            except Exception as exc:  # pylint: disable=broad-except  # raised in the waiter, not lost in a thread
                self._fail(exc)
                return

    def _fail(self, exc):
        self.error = exc
        self._notify()


class Observer:
    """The collections of the objects one wait reads (``reader``: cluster/live.py's LiveReader, for their paths and
    the kinds' verbs). :meth:`open` lists them once; :meth:`follow` keeps those of the objects still awaited current
    on their threads; :meth:`wait` returns when one of them changed. Always :meth:`close` it."""

    def __init__(self, reader, interval=1.0, concurrency=8, max_collections=MAX_COLLECTIONS):
        self.reader = reader
        self.interval = interval
        self.concurrency = concurrency
        self.max_collections = max_collections
        self._changed = threading.Condition()
        self._version = 0
        self._read = 0
        self._collections = {}  # (path, selector) -> Collection
        self._of = {}  # key_of(obj) -> Collection
        self._members = {}  # id(Collection) -> {name: key_of(obj)} of the opened objects
        self._troubles = {}  # id(Collection) -> its trouble when changed() last looked
        self._pods = []  # (namespace, {label: value}, Collection) of the pods of Jobs

    def _notify(self):
        with self._changed:
            self._version += 1
            self._changed.notify_all()

    def _mode(self, api_version, kind):
        found = self.reader.discovery.find(api_version, kind)
        verbs = set(getattr(found, "verbs", None) or ("list", "watch"))
        return "watch" if {"list", "watch"} <= verbs else "list" if "list" in verbs else "get"

    def _collection(self, first, query, names):
        path = self.reader.path(first, with_name=False)
        key = (path, tuple(sorted(query.items())))
        if key not in self._collections:
            subject = "/".join(p for p in (first["kind"], namespace_of(first)) if p)
            self._collections[key] = Collection(
                self.reader.kube, path, subject, first["apiVersion"], first["kind"], query=query, names=names,
                mode=self._mode(first["apiVersion"], first["kind"]), notify=self._notify, interval=self.interval)
        return self._collections[key]

    def open(self, objects):
        """Group ``objects`` into collections and LIST each once (concurrently); False, with nothing read, when
        that takes more than ``max_collections`` collections (the caller then polls)."""
        groups = {}
        for obj in objects:
            groups.setdefault((obj["apiVersion"], obj["kind"], namespace_of(obj)), []).append(obj)
        units = []
        for (_api_version, _kind, namespace), members in groups.items():
            if len(members) > 1 and namespace:  # the whole collection, as one LIST per round read it
                units.append((members, {}, {name_of(o) for o in members}))
            else:  # one object, or cluster-scoped kinds (all CRDs of a cluster are no small LIST): by name
                units.extend(([o], {"fieldSelector": "metadata.name=%s" % name_of(o)}, {name_of(o)}) for o in members)
        if len(units) > self.max_collections:
            return False
        for members, query, names in units:
            collection = self._collection(members[0], query, names)
            self._of.update((key_of(o), collection) for o in members)
            self._members.setdefault(id(collection), {}).update((name_of(o), key_of(o)) for o in members)
        concurrently(_first_read, list(self._collections.values()), self.concurrency)
        return True

    def seen(self, key):
        """What is known of the opened object of ``key`` (base/objects.py key_of)."""
        return self._of[key].seen(key.name)

    def trouble(self, key):
        """Why the collection of ``key``'s object cannot be read right now, or ""."""
        return self._of[key].trouble

    def changed(self):
        """The keys of the opened objects whose state changed since the last call (all those of a collection whose
        readability changed)."""
        out = set()
        for collection in set(self._of.values()):
            names, members = collection.changed(), self._members[id(collection)]
            if collection.trouble != self._troubles.get(id(collection), ""):
                self._troubles[id(collection)] = collection.trouble
                out.update(members.values())
            else:
                out.update(members[name] for name in names if name in members)
        return out

    def follow(self, pending):
        """Keep the collections of the objects of the keys ``pending`` current (their threads started) and stop
        the others; the pods of pending live Jobs are followed too (:meth:`pods`)."""
        wanted = {id(self._of[key]) for key in pending}
        wanted.update(id(c) for c in self._job_pods([self.seen(key).live for key in pending if key.kind == "Job"]))
        for collection in list(self._collections.values()):
            if id(collection) in wanted and collection.error is None:
                collection.start()
            else:
                collection.stop()

    def _job_pods(self, lives):
        """The pod collections of the live Jobs among ``lives`` (one per namespace and selector label, ``in`` the
        values of those Jobs), created for the Jobs no existing one covers."""
        out, uncovered = [], {}
        for live in lives:
            labels = ((live or {}).get("spec") or {}).get("selector", {}).get("matchLabels") or {}
            if (live or {}).get("kind") != "Job" or len(labels) != 1:
                continue
            ((label, value),) = labels.items()
            covering = [c for ns, want, c in self._pods if ns == namespace_of(live) and want.get(label) and
                        value in want[label]]
            if covering:
                out.extend(covering)
            else:
                uncovered.setdefault((namespace_of(live), label), set()).add(value)
        for (namespace, label), values in uncovered.items():
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": namespace, "name": ""}}
            query = {"labelSelector": "%s in (%s)" % (label, ",".join(sorted(values)))}
            collection = self._collection(pod, query, None)
            try:
                _first_read(collection)  # listed before the next round can find a Job failed
            except ApiError as exc:  # pods only explain: the waiter lists them its own way (pods() is None)
                collection.error = exc
            self._pods.append((namespace, {label: values}, collection))
            out.append(collection)
        return out

    def pods(self, job, departed=False):
        """The pods of live Job ``job`` as followed (and, with ``departed``, the last state of those deleted since,
        before their deletion began); None when no followed collection has listed them yet."""
        labels = ((job or {}).get("spec") or {}).get("selector", {}).get("matchLabels") or {}
        for namespace, want, collection in self._pods:
            if namespace != namespace_of(job) or not collection.listed or collection.error or len(labels) != 1:
                continue
            ((label, value),) = labels.items()
            if value in want.get(label, ()):
                pods = collection.objects() + (collection.departed() if departed else [])
                return [p for p in pods if (metadata(p).get("labels") or {}).get(label) == value]
        return None

    def wait(self, seconds):
        """Return once a collection changed since the last :meth:`wait` (and SETTLE more), or after ``seconds``; a
        collection that ended on an error raises it."""
        deadline = time.monotonic() + max(0.0, seconds)
        with self._changed:
            while self._version == self._read:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
        time.sleep(max(0.0, min(SETTLE, deadline - time.monotonic())))
        with self._changed:
            self._read = self._version
        for collection in set(self._of.values()):  # pods only explain: their errors are not the wait's
            if collection.error is not None:
                raise collection.error

    def counts(self):
        """The requests of every collection so far: {lists, watches, resumed, relisted, polls}."""
        out = {}
        for collection in self._collections.values():
            for name, value in collection.counts.items():
                out[name] = out.get(name, 0) + value
        return out

    def close(self):
        """Stop every thread; one still retrying a connection (base/client.py's policy) ends when it gives up."""
        for collection in self._collections.values():
            collection.stop()
        deadline = time.monotonic() + 2.0
        for collection in self._collections.values():
            collection.join(max(0.0, deadline - time.monotonic()))


def _first_read(collection):
    """The LIST of an Observer's collection before anything is waited for; a transient error leaves it for its
    thread to read (the wait shows it Unknown meanwhile)."""
    try:
        collection.read_once()
    except ApiError as exc:
        if not exc.transient:
            raise
        collection.trouble = str(exc)
