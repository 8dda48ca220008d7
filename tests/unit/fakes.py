# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-ins for the API server side of unit tests, in one place: a :class:`FakeKube` that records every request
and answers through :meth:`FakeKube.answer` (a test overrides it), the :class:`Response` it gives, and a
:class:`FakeDiscovery` of paths in namespaces; a :class:`FakeClock`. Integration tests use the real clusters instead."""

from __future__ import annotations

import copy


class Response:
    """What base/client.py's Kube.request answers: ``data`` (the parsed body), ``status``, ``warnings``."""

    def __init__(self, data, status=200, warnings=()):
        self.data = data
        self.status = status
        self.headers = {}
        self.warnings = list(warnings)


class FakeKube:
    """Records each request as (method, path, keyword arguments) in ``calls`` and answers with
    ``answer(method, path, **kwargs)`` (give a copy where the code under test may change it), which raises to
    answer with an error."""

    url = "https://api.example:6443"

    def __init__(self):
        self.calls = []

    def answer(self, method, path, **kwargs):  # pylint: disable=unused-argument
        return {}

    def request(self, method, path, **kwargs):
        self.calls.append((method, path, copy.deepcopy(kwargs)))  # as sent: callers may change a query later
        return Response(self.answer(method, path, **kwargs))

    def get_json(self, path, **kwargs):
        return self.request("GET", path, **kwargs).data

    def sent(self, *fields):
        """The requests so far as (method, path, and the keyword arguments named by ``fields``, None if absent)."""
        return [(method, path) + tuple(kwargs.get(f) for f in fields) for method, path, kwargs in self.calls]


class FakeDiscovery:
    """Serves every kind but those in ``unserved``; a kind's path is /api/v1/namespaces/<ns>/<kind>s[/<name>]."""

    def __init__(self, unserved=()):
        self.unserved = set(unserved)

    def served(self, _api_version, kind):
        return kind not in self.unserved

    def path(self, _api_version, kind, namespace, name, subject=None):  # pylint: disable=unused-argument
        base = "/api/v1/namespaces/%s/%ss" % (namespace, kind.lower())
        return base + "/" + name if name else base


class FakeClock:
    """A clock that sleeps by counting: ``clock()`` (or calling it) is ``now``; ``sleep`` moves ``now`` on and
    records each sleep in ``sleeps``."""

    def __init__(self, start=1000.0):
        self.start = start
        self.now = start
        self.sleeps = []

    def __call__(self):
        return self.now

    def clock(self):
        return self.now

    def sleep(self, seconds):
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds

    @property
    def elapsed(self):
        return self.now - self.start
