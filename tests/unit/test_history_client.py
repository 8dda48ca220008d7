# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HistoryClient's memory of the last version of each ConfigMap when a listing and a write overlap (a deploy lists
its history while it writes its own record): the copy a write returned is never replaced by an older listed one."""

from __future__ import annotations

import threading

from ansible_collections.manent.kubernetes.plugins.module_utils.history.naming import (
    HISTORY_RECORD, LABEL_HISTORY, locator_name)
from ansible_collections.manent.kubernetes.plugins.module_utils.history.client import HistoryClient
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey

KEY = ReleaseKey(application="shop", artifact="shop-api", environment="prod")
NAME = locator_name(KEY) + "-1-0-0"


def _record(version):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": NAME, "resourceVersion": version, "labels": {LABEL_HISTORY: HISTORY_RECORD}}}


class _Answer:
    def __init__(self, data):
        self.data = data


class _Kube:
    """Answers the listing with ``listed`` once ``release`` is set (``listing`` is set when it was sent), and a PUT
    with the body it got, resourceVersion ``written``."""

    def __init__(self, listed, written):
        self.listed, self.written = listed, written
        self.listing, self.release = threading.Event(), threading.Event()

    def request(self, method, _path, **kw):
        if method == "GET":
            self.listing.set()
            assert self.release.wait(5)
            return _Answer({"items": [self.listed]})
        body = dict(kw["body"], metadata=dict(kw["body"]["metadata"], resourceVersion=self.written))
        return _Answer(body)


def _overlap(kube, write_first):
    client = HistoryClient(kube, "ns", KEY)
    if write_first:  # answered before the listing is sent
        client.put(_record("1"), "write the record")
        kube.release.set()
        client.histories(HISTORY_RECORD)
        return client
    lister = threading.Thread(target=client.histories, args=(HISTORY_RECORD,))
    lister.start()
    assert kube.listing.wait(5)
    client.put(_record("1"), "write the record")  # answered while the listing is on its way
    kube.release.set()
    lister.join(5)
    return client


def test_a_write_answered_after_the_listing_was_sent_keeps_its_copy():
    client = _overlap(_Kube(listed=_record("1"), written="2"), write_first=False)
    assert client.remembered(NAME)["metadata"]["resourceVersion"] == "2"


def test_a_listing_sent_after_the_write_was_answered_is_remembered():
    client = _overlap(_Kube(listed=_record("3"), written="2"), write_first=True)
    assert client.remembered(NAME)["metadata"]["resourceVersion"] == "3"
