# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The JSON files of the work directory's caches (discovery.py, schemas.py): read while fresh, written whole."""

from __future__ import annotations

import json
import os
import threading
import time


def read_fresh(path, url, ttl):
    """The document cached at ``path`` for the API server ``url`` when it is younger than ``ttl`` seconds; None
    when there is none, it is stale or another server's, or it cannot be read."""
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            cached = json.load(f)
        if time.time() - cached.get("time", 0) < ttl and cached.get("url") == url:
            return cached
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    return None


def write_json(path, data):
    """Write ``data`` to ``path`` whole: into a file of this process and thread, then renamed over ``path``, so that
    a reader never sees half of it and concurrent writers never mix."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".%d.%d.tmp" % (os.getpid(), threading.get_ident())
    with open(tmp, "w") as f:
        f.write(json.dumps(data))
    os.replace(tmp, path)
