# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The versions the collection promises are the versions its tests run.

README.md promises a range of ansible-core minors ("ansible-core 2.16 to 2.21") and of Pythons ("Python 3.11 to
3.13"); meta/runtime.yml's requires_ansible and the example execution environment's ansible-core requirement must
say the same. Every promised minor and Python must be run: by the main virtualenv (requirements-dev.txt's pin on the
Makefile's PYTHON_VERSION) or by a line of hack/test-matrix.txt (the main venv's pins with that line's overrides on
the line's Python, as hack/test-matrix.sh builds them). A `prerelease` line runs a minor newer than the promise.
Both ends of requirements.txt's `kubernetes` range must be pinned in that set too. Nothing is hard-coded here:
change the promise, the pins or the matrix, and this test says which of them no longer agree.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.helpers import ROOT

INPUTS = ("README.md", "meta/runtime.yml", "requirements.txt", "requirements-dev.txt", "hack/test-matrix.txt",
          "examples/execution-environment/execution-environment.yml", "Makefile")
PROMISE = re.compile(r"ansible-core (\d+)\.(\d+) to (\d+)\.(\d+)")
PYTHONS = re.compile(r"Python (\d+)\.(\d+) to (\d+)\.(\d+)")
MAIN_PYTHON = re.compile(r"^PYTHON_VERSION := (\d+)\.(\d+)\s*$", re.MULTILINE)
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==(\S+)$")


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as handle:
        return handle.read()


def promised_minors(root):
    """README.md's "ansible-core X.Y to X.Z" as the list of (major, minor) it covers."""
    match = PROMISE.search(read(root, "README.md"))
    if not match:
        raise AssertionError("README.md: no 'ansible-core X.Y to X.Z' sentence states the supported ansible-core versions")
    low, high = (int(match.group(1)), int(match.group(2))), (int(match.group(3)), int(match.group(4)))
    if low[0] != high[0] or low > high:
        raise AssertionError("README.md: 'ansible-core %d.%d to %d.%d' is not a range of minors of one major" % (low + high))
    return [(low[0], minor) for minor in range(low[1], high[1] + 1)]


def pins(text):
    """{package: version} of the `name==version` lines of a requirements file."""
    found = {}
    for line in text.splitlines():
        match = PIN.match(line.split("#", 1)[0].strip())
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def promised_pythons(root):
    """README.md's "Python X.Y to X.Z" as the list of (major, minor) it covers."""
    match = PYTHONS.search(read(root, "README.md"))
    if not match:
        raise AssertionError("README.md: no 'Python X.Y to X.Z' sentence states the supported Python versions")
    low, high = (int(match.group(1)), int(match.group(2))), (int(match.group(3)), int(match.group(4)))
    return [(low[0], minor) for minor in range(low[1], high[1] + 1)]


def matrix_sets(root):
    """[(where, {package: version}, python (major, minor) or None, prerelease)]: the main venv, then each
    hack/test-matrix.txt entry (main pins + overrides)."""
    main = pins(read(root, "requirements-dev.txt"))
    found = MAIN_PYTHON.search(read(root, "Makefile"))
    sets = [("requirements-dev.txt", main, (int(found.group(1)), int(found.group(2))) if found else None, False)]
    for number, line in enumerate(read(root, "hack/test-matrix.txt").splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        python = [w for w in words[1:] if w.startswith("python=")]
        prerelease = "prerelease" in words[1:]
        rest = [w for w in words[1:] if w not in python and w != "prerelease"]
        overrides = pins("\n".join(rest))
        if len(overrides) != len(rest):
            raise AssertionError("hack/test-matrix.txt line %d: every word after the name must be python=X.Y, prerelease "
                                 "or package==version: %r" % (number, line))
        version = tuple(int(p) for p in python[0][len("python="):].split(".")[:2]) if python else None
        sets.append(("hack/test-matrix.txt %s" % words[0], dict(main, **overrides), version, prerelease))
    return sets


def kubernetes_range(root):
    for line in read(root, "requirements.txt").splitlines():
        match = re.match(r"^kubernetes\s*([<>=!~][^#]*)", line.strip())
        if match:
            return SpecifierSet(match.group(1).replace(" ", ""))
    raise AssertionError("requirements.txt: no `kubernetes` requirement with a version range")


def highest_allowed(specifiers):
    """(kind, version) of the top of a range: ("exact", V) for <=V or ==V, ("below", V) for <V."""
    for spec in specifiers:
        if spec.operator in ("<=", "=="):
            return "exact", Version(spec.version)
        if spec.operator == "<":
            return "below", Version(spec.version)
    return None, None


def problems(root=ROOT):
    """What no longer agrees between the promised versions and the tested ones (empty: all agree)."""
    found = []
    minors = promised_minors(root)
    low = "%d.%d" % minors[0]
    high = "%d.%d" % minors[-1]

    requires = yaml.safe_load(read(root, "meta/runtime.yml")).get("requires_ansible", "")
    if Version(low + ".0") not in SpecifierSet(requires) or Version("%d.%d.0" % (minors[0][0], minors[0][1] - 1)) in SpecifierSet(requires):
        found.append("meta/runtime.yml: requires_ansible %r does not start at README.md's ansible-core %s" % (requires, low))

    ee = yaml.safe_load(read(root, "examples/execution-environment/execution-environment.yml"))
    ee_core = ee["dependencies"]["ansible_core"]["package_pip"]
    ee_spec = SpecifierSet(ee_core.replace("ansible-core", "", 1).strip())
    outside = [m for m in minors if Version("%d.%d.0" % m) not in ee_spec]
    beyond = [m for m in (minors[0][:1] + (minors[0][1] - 1,), minors[-1][:1] + (minors[-1][1] + 1,)) if Version("%d.%d.0" % m) in ee_spec]
    if outside or beyond:
        found.append("examples/execution-environment/execution-environment.yml: ansible_core %r is not README.md's ansible-core %s to %s"
                     % (ee_core, low, high))

    sets = matrix_sets(root)
    run = {}
    pythons = set()
    for where, versions, python, prerelease in sets:
        if python is None:
            found.append("%s: no Python named (Makefile PYTHON_VERSION := X.Y, or a python=X.Y word on the matrix line)"
                         % where)
        pythons.add(python)
        if "ansible-core" not in versions:
            found.append("%s: no ansible-core==X.Y.Z pin" % where)
            continue
        version = Version(versions["ansible-core"])
        if prerelease:
            if (version.major, version.minor) <= minors[-1] or not version.is_prerelease:
                found.append("%s: a prerelease line must pin an unreleased ansible-core newer than README.md's %s, "
                             "not %s" % (where, high, version))
            continue
        run.setdefault((version.major, version.minor), []).append(where)
    for python in promised_pythons(root):
        if python not in pythons:
            found.append("Python %d.%d is promised by README.md but neither the Makefile's PYTHON_VERSION nor a line of "
                         "hack/test-matrix.txt runs it" % python)
    for minor in minors:
        if minor not in run:
            found.append("ansible-core %d.%d is promised by README.md but neither requirements-dev.txt nor a line of "
                         "hack/test-matrix.txt pins it: add a matrix line `core-%d.%d ansible-core==%d.%d.N`" % (minor + minor + minor))
    for minor, where in sorted(run.items()):
        if minor not in minors:
            found.append("%s: ansible-core %d.%d is outside README.md's ansible-core %s to %s" % (", ".join(where), minor[0], minor[1], low, high))

    allowed = kubernetes_range(root)
    clients = {}
    for where, versions, _python, _prerelease in sets:
        if "kubernetes" in versions:
            clients.setdefault(Version(versions["kubernetes"]), []).append(where)
    for version, where in sorted(clients.items()):
        if version not in allowed:
            found.append("%s: kubernetes==%s is outside requirements.txt's kubernetes%s" % (", ".join(where), version, allowed))
    lows = [Version(spec.version) for spec in allowed if spec.operator in (">=", "==")]
    if not lows:
        found.append("requirements.txt: the kubernetes range %s has no lower bound (>=)" % allowed)
    elif lows[0] not in clients:
        found.append("the lowest kubernetes client requirements.txt allows, %s, is pinned neither in requirements-dev.txt nor in "
                     "hack/test-matrix.txt" % lows[0])
    kind, top = highest_allowed(allowed)
    if kind is None:
        found.append("requirements.txt: the kubernetes range %s has no upper bound (< or <=)" % allowed)
    elif kind == "exact" and top not in clients:
        found.append("the highest kubernetes client requirements.txt allows, %s, is not pinned in requirements-dev.txt or "
                     "hack/test-matrix.txt" % top)
    elif kind == "below" and not any(v in allowed and v.major == _last_major_below(top) for v in clients):
        found.append("requirements.txt allows kubernetes up to below %s, but no pin of requirements-dev.txt or hack/test-matrix.txt "
                     "is a %d.x release: pin the newest one" % (top, _last_major_below(top)))
    return found


def _last_major_below(bound):
    """The major whose releases are the highest below an exclusive bound (<38 -> 37, <38.2 -> 38)."""
    return bound.major - 1 if bound.release[1:] in ((), (0,), (0, 0)) else bound.major


def copy_inputs(tmp_path):
    for path in INPUTS:
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(os.path.join(ROOT, path), target)
    return tmp_path


def edit(root, path, old, new):
    target = root / path
    text = target.read_text(encoding="utf-8")
    assert old in text, "the drift case no longer applies to %s: %r not found" % (path, old)
    target.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_promised_versions_are_the_tested_ones():
    assert problems() == []


def test_the_promise_is_found():
    minors = promised_minors(ROOT)
    assert len(minors) >= 1
    assert len(matrix_sets(ROOT)) >= 1


def _matrix_line_of(root, minor):
    for line in (root / "hack/test-matrix.txt").read_text(encoding="utf-8").splitlines():
        if re.search(r"\bansible-core==%d\.%d\." % minor, line) and not line.startswith("#"):
            return line
    return None


def _drop_a_matrix_minor(root):
    minors = promised_minors(root)
    main = Version(pins((root / "requirements-dev.txt").read_text(encoding="utf-8"))["ansible-core"])
    tested = [m for m in minors if _matrix_line_of(root, m) and m != (main.major, main.minor)]
    assert tested, "no promised minor is run by a matrix line only"
    edit(root, "hack/test-matrix.txt", _matrix_line_of(root, tested[-1]), "")
    return "ansible-core %d.%d is promised" % tested[-1]


def _widen_the_promise(root):
    minors = promised_minors(root)
    old = "ansible-core %d.%d to" % minors[0]
    edit(root, "README.md", old, "ansible-core %d.%d to" % (minors[0][0], minors[0][1] - 1))
    return "ansible-core %d.%d is promised" % (minors[0][0], minors[0][1] - 1)


def _lower_the_kubernetes_floor(root):
    low = [s for s in kubernetes_range(root) if s.operator == ">="][0].version
    lower = "%d.0.0" % (Version(low).major - 1)
    edit(root, "requirements.txt", ">=" + low, ">=" + lower)
    return "the lowest kubernetes client requirements.txt allows, %s" % lower


def _raise_the_kubernetes_ceiling(root):
    top = [s for s in kubernetes_range(root) if s.operator == "<"][0].version
    higher = str(Version(top).major + 1)
    edit(root, "requirements.txt", "<" + top, "<" + higher)
    return "no pin of requirements-dev.txt or hack/test-matrix.txt is a %s.x release" % Version(top).major


def _runtime_starts_later(root):
    low = "%d.%d" % promised_minors(root)[0]
    text = (root / "meta/runtime.yml").read_text(encoding="utf-8")
    match = re.search(r'requires_ansible: "([^"]+)"', text)
    edit(root, "meta/runtime.yml", match.group(0), 'requires_ansible: ">=%s.%d.0"' % (low.split(".")[0], int(low.split(".")[1]) + 1))
    return "meta/runtime.yml: requires_ansible"


def _matrix_pins_out_of_range(root):
    minors = promised_minors(root)
    beyond = (minors[-1][0], minors[-1][1] + 1)
    with open(root / "hack/test-matrix.txt", "a", encoding="utf-8") as handle:
        handle.write("core-next     python=3.13 ansible-core==%d.%d.0\n" % beyond)
    return "ansible-core %d.%d is outside README.md's" % beyond


def _drop_a_python(root):
    pythons = promised_pythons(root)
    main = MAIN_PYTHON.search((root / "Makefile").read_text(encoding="utf-8"))
    main = (int(main.group(1)), int(main.group(2)))
    lowest = [p for p in pythons if p != main][0]
    text = (root / "hack/test-matrix.txt").read_text(encoding="utf-8")
    text = text.replace("python=%d.%d " % lowest, "python=%d.%d " % main)
    (root / "hack/test-matrix.txt").write_text(text, encoding="utf-8")
    return "Python %d.%d is promised by README.md" % lowest


def _released_line_marked_prerelease(root):
    minors = promised_minors(root)
    line = _matrix_line_of(root, minors[-1]) or ""
    assert line, "no matrix line runs the highest promised minor"
    edit(root, "hack/test-matrix.txt", line, line.replace("python=", "prerelease python=", 1))
    return "a prerelease line must pin an unreleased ansible-core"


@pytest.mark.parametrize("drift", [_drop_a_matrix_minor, _widen_the_promise, _lower_the_kubernetes_floor,
                                   _raise_the_kubernetes_ceiling, _runtime_starts_later, _matrix_pins_out_of_range,
                                   _drop_a_python, _released_line_marked_prerelease],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_drift_is_reported(tmp_path, drift):
    root = copy_inputs(tmp_path)
    assert problems(str(root)) == [], "the copied inputs must agree before the drift"
    expected = drift(root)
    found = problems(str(root))
    assert any(expected in problem for problem in found), found
