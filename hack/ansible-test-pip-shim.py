# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in for ansible-test's pip bootstrap script (normally downloaded from a host this machine cannot reach).

ansible-test runs it with the sanity venv's Python: bootstrap pip from the standard library's ensurepip, then
install the pip version ansible-test asked for from the package index (PyPI is reachable).
"""
import subprocess
import sys

subprocess.run([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"], check=True,
               stdout=subprocess.DEVNULL)
args = [a for a in sys.argv[1:] if not a.startswith("--")] or ["pip"]
subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--quiet"] + args, check=True)
