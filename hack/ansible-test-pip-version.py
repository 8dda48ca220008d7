# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print the pip version ansible-test bootstraps into its sanity virtualenvs, as its cache file names it (25_2).

ansible-test downloads a pip bootstrap script named after that version from a host this machine cannot reach;
`make sanity` puts hack/ansible-test-pip-shim.py in its cache under that name instead."""
import os
import re

import ansible_test

SOURCE = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
with open(SOURCE, encoding="utf-8") as handle:
    found = re.search(r"\bpip='([0-9.]+)'", handle.read())
if not found:
    raise SystemExit("no default pip version found in %s" % SOURCE)
print(found.group(1).replace(".", "_"))
