"""Make the repository importable as the installed collection ``ansible_collections.manent.kubernetes``.

The collection is exposed under ``.build/collections/ansible_collections/manent/kubernetes`` (a
symlink to the repository root), the layout ansible-test and ansible-playbook expect.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".build", "collections")


def _expose_collection():
    link = os.path.join(COLLECTIONS, "ansible_collections", "manent", "kubernetes")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        try:
            os.symlink(ROOT, link)
        except FileExistsError:
            pass
    if COLLECTIONS not in sys.path:
        sys.path.insert(0, COLLECTIONS)
    os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", COLLECTIONS)


_expose_collection()
