# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The molecule scenario (delegated driver) converges, is idempotent, verifies and tears down on the local clusters."""

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_molecule_default_scenario(inventory_path):
    env = dict(os.environ)
    env["MANENT_CLUSTERS_DIR"] = os.path.dirname(os.path.abspath(inventory_path))
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(ROOT, ".build", "collections")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["NO_COLOR"] = "1"
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), "molecule"), "test", "-s", "default"],
                         cwd=os.path.join(ROOT, "extensions"), env=env, capture_output=True, text=True,
                         timeout=900, check=False)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    for step in ("converge", "idempotence", "verify", "destroy"):
        assert "%s: Executed: Successful" % step in out.replace("➜ ", "").replace("default ", ""), step
