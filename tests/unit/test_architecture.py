# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The map of the code cannot drift from the code: docs/architecture.md's file map is what hack/architecture.py
writes from the docstrings, every file the page names exists, every file of plugins/module_utils is on it, and
each package imports only the packages its __init__.py allows."""

from __future__ import annotations

import ast
import importlib.util
import os
import re

import pytest

from tests.helpers import ROOT

MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
PREFIX = "ansible_collections.manent.kubernetes.plugins.module_utils."
PY_PATH = re.compile(r"(?<![\w*/.<>-])((?:[\w-]+/)*[\w-]+\.py)\b")


def _architecture():
    spec = importlib.util.spec_from_file_location("architecture", os.path.join(ROOT, "hack", "architecture.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _page():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as handle:
        return handle.read()


def _exists(name):
    """Whether a file the page names exists: a path from the repository, plugins/ or plugins/module_utils/, or a
    bare name of a folder of plugins/ or of a package of plugins/module_utils."""
    bases = [ROOT, os.path.join(ROOT, "plugins"), MODULE_UTILS]
    if "/" not in name:
        bases += [os.path.join(ROOT, "plugins", folder) for folder in os.listdir(os.path.join(ROOT, "plugins"))]
        bases += [os.path.join(MODULE_UTILS, package) for package in os.listdir(MODULE_UTILS)]
    return any(os.path.isfile(os.path.join(base, name)) for base in bases)


def test_the_file_map_is_what_the_docstrings_say():
    architecture = _architecture()
    page = _page()
    assert architecture.page_with(page, architecture.generated()) == page, \
        "docs/architecture.md is out of date: run python3 hack/architecture.py"


def test_every_file_the_page_names_exists():
    missing = sorted({name for name in PY_PATH.findall(_page()) if not _exists(name)})
    assert missing == [], "docs/architecture.md names files that do not exist: %s" % missing


def test_every_module_utils_file_is_on_the_page():
    page = _page()
    absent = []
    for package in sorted(os.listdir(MODULE_UTILS)):
        folder = os.path.join(MODULE_UTILS, package)
        if not os.path.isdir(folder) or package.startswith("__"):
            continue
        assert os.path.isfile(os.path.join(folder, "__init__.py")), "%s has no __init__.py docstring" % package
        for name in os.listdir(folder):
            if name.endswith(".py") and name != "__init__.py" and \
                    "(../plugins/module_utils/%s/%s)" % (package, name) not in page:
                absent.append("%s/%s" % (package, name))
    loose = [name for name in os.listdir(MODULE_UTILS) if name.endswith(".py") and name != "__init__.py"]
    assert loose == [], "files of plugins/module_utils belong in a package: %s" % loose
    assert absent == []


def _packages():
    return sorted(p for p in os.listdir(MODULE_UTILS) if os.path.isfile(os.path.join(MODULE_UTILS, p, "__init__.py")))


def allowed_imports(package):
    """The packages ``package`` may import, from the sentence of its __init__.py docstring: "May import: a, b." or
    "May import every other package." (besides itself); "Imports nothing else" allows none."""
    with open(os.path.join(MODULE_UTILS, package, "__init__.py"), encoding="utf-8") as handle:
        text = " ".join((ast.get_docstring(ast.parse(handle.read())) or "").split())
    if "May import every other package" in text:
        return set(_packages())
    found = re.search(r"May import: ([^.]*)", text)
    if not found:
        assert "Imports nothing else" in text, "%s/__init__.py says neither what it may import nor that it imports " \
                                               "nothing else" % package
        return {package}
    allowed = re.sub(r"\([^)]*\)", "", found.group(1))  # "render (the bundle)": the package is what counts
    return {word for word in re.split(r"[,\s]+", allowed) if word in _packages()} | {package}


def imported_packages(path):
    """{package of plugins/module_utils} that the Python file ``path`` imports."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    out = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module + "." + alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        out.update(name[len(PREFIX):].split(".")[0] for name in names if name.startswith(PREFIX))
    return out


@pytest.mark.parametrize("package", _packages())
def test_a_package_imports_only_what_its_docstring_allows(package):
    allowed = allowed_imports(package)
    wrong = {}
    folder = os.path.join(MODULE_UTILS, package)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            extra = imported_packages(os.path.join(folder, name)) - allowed
            if extra:
                wrong[name] = sorted(extra)
    assert wrong == {}, "%s may import %s only" % (package, sorted(allowed))


def test_the_import_rules_are_read():
    """The parser of the sentences above, on the packages whose rules are plain."""
    assert allowed_imports("base") == {"base"}
    assert allowed_imports("rules") == {"base", "rules"}
    assert allowed_imports("tasks") == set(_packages())


@pytest.mark.parametrize("folder", ["modules", "action"])
def test_modules_and_action_plugins_call_only_the_tasks_entry_points(folder):
    """A module is its documentation and a call to its entry point in tasks/; an action plugin hands the same entry
    point to plugin_utils: no orchestration of their own."""
    path = os.path.join(ROOT, "plugins", folder)
    wrong = {name: sorted(imported_packages(os.path.join(path, name)) - {"tasks"})
             for name in sorted(os.listdir(path)) if name.endswith(".py")}
    assert {name: found for name, found in wrong.items() if found} == {}
