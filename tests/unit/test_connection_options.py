# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many requests a task sends at once, and the connections kept for them."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import apply_task
from ansible_collections.manent.kubernetes.plugins.module_utils.tasks import common
from ansible_collections.manent.kubernetes.plugins.module_utils.engine.apply import ApplyOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.base.client import ConnectionOptions
from ansible_collections.manent.kubernetes.plugins.module_utils.base.concurrency import CONCURRENCY
from ansible_collections.manent.kubernetes.plugins.module_utils.cluster.live import LiveReader

PARAMS = {"api_server": "https://127.0.0.1", "port": 6443, "token": "t", "insecure_skip_tls_verify": False,
          "request_timeout": 30}


def test_one_default_for_requests_at_once():
    assert apply_task.argument_spec()["concurrency"]["default"] == CONCURRENCY
    assert ConnectionOptions(server="https://127.0.0.1").pool_size == CONCURRENCY  # a connection kept for each
    assert ApplyOptions().concurrency == CONCURRENCY
    assert LiveReader(None, None).concurrency == CONCURRENCY


@pytest.mark.parametrize("concurrency,pool", [(None, ConnectionOptions.pool_size), (1, ConnectionOptions.pool_size),
                                              (CONCURRENCY, max(CONCURRENCY, ConnectionOptions.pool_size)),
                                              (40, 40)])
def test_a_connection_is_kept_for_each_request_sent_at_once(concurrency, pool):
    params = dict(PARAMS, concurrency=concurrency) if concurrency is not None else dict(PARAMS)
    assert common.connection(params).pool_size == pool
