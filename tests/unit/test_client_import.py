# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""client.py imports the kubernetes client's REST layer without running the package's __init__ (issue 13):
each case runs in a fresh interpreter, since the point is what an import leaves in sys.modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
CLIENT = "from ansible_collections.manent.kubernetes.plugins.module_utils.base import client\n"


def _run(first, code):
    """The JSON printed by ``first`` and then ``code`` (indented), run by this interpreter with the collection on
    the path."""
    if not os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections", "manent", "kubernetes")):
        pytest.fail("the collection is not linked into %s: run make collection-link" % COLLECTIONS)
    env = dict(os.environ, PYTHONPATH=COLLECTIONS)
    out = subprocess.run([sys.executable, "-c", first + textwrap.dedent(code)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_rest_layer_is_imported_without_the_rest_of_the_package():
    found = _run(CLIENT, """
        import json, sys
        print(json.dumps({"has": client.HAS_KUBERNETES,
                          "loaded": sorted(m for m in sys.modules if m.split(".")[0] == "kubernetes"),
                          "heavy": sorted(m for m in ("kubernetes.config", "kubernetes.watch", "kubernetes.stream",
                                                      "kubernetes.dynamic", "pydantic", "requests_oauthlib")
                                          if m in sys.modules)}))
    """)
    assert found["has"] is True
    assert "kubernetes.client.rest" in found["loaded"]
    assert found["heavy"] == []


def test_the_package_is_whole_for_code_that_reads_more_of_it():
    found = _run(CLIENT, """
        import importlib.metadata, json
        import kubernetes
        from kubernetes import config, watch
        from kubernetes.dynamic import DynamicClient
        print(json.dumps({
            "version": kubernetes.__version__ == importlib.metadata.version("kubernetes"),
            "config": callable(config.load_kube_config) and kubernetes.config is config,
            "watch": kubernetes.watch is watch and DynamicClient.__name__ == "DynamicClient",
            "client": kubernetes.client.CoreV1Api.__name__,
            "same_rest": kubernetes.client.rest.RESTClientObject is client.RESTClientObject,
            "missing": not hasattr(kubernetes, "no_such_attribute"),
        }))
    """)
    assert found == {"version": True, "config": True, "watch": True, "client": "CoreV1Api", "same_rest": True,
                     "missing": True}


def test_a_package_imported_before_is_used_as_it_is():
    found = _run("import kubernetes\n" + CLIENT, """
        import json, sys
        print(json.dumps({"same": sys.modules["kubernetes"] is kubernetes,
                          "getattr_hook": "__getattr__" in vars(kubernetes),
                          "config": "kubernetes.config" in sys.modules}))
    """)
    assert found == {"same": True, "getattr_hook": False, "config": True}
