# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Variable substitution in plain manifests (docs/requirements.md §2)."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.render.manifests import parse
from ansible_collections.manent.kubernetes.plugins.module_utils.render.variables import (
    builtin_values, substitute)

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "artifact")
VALUES = {"A": "1", "B": "two", "REPLICAS": "3"}


def _cases(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("case", _cases("substitute.yaml"), ids=lambda case: case["id"])
def test_substitute(case):
    assert substitute(case["text"], VALUES) == case["expected"]


def test_substitute_without_values_returns_text_unchanged():
    assert substitute("x: ${A}", {}) == "x: ${A}"


def test_substitution_happens_before_yaml_so_values_become_numbers():
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: shop}\nspec:\n  replicas: ${REPLICAS}\n"
    docs = parse(substitute(text, VALUES), "app.yaml")
    assert docs[0].obj["spec"]["replicas"] == 3


def test_value_is_inserted_verbatim_once():
    # a value that itself looks like a reference is not expanded again
    assert substitute("${A}", {"A": "${B}", "B": "no"}) == "${B}"


def test_builtin_values():
    values = builtin_values("shop", "prod", "1.4.0", "shop-prod", "d-42",
                            {"var.REPLICAS": "3", "DEBUG": True, "RATIO": 0.5, "COUNT": 7, "OFF": False})
    assert values == {
        "MANENT_APPLICATION": "shop",
        "MANENT_ENVIRONMENT": "prod",
        "MANENT_VERSION": "1.4.0",
        "MANENT_NAMESPACE": "shop-prod",
        "MANENT_DEPLOYMENT": "d-42",
        "REPLICAS": "3",
        "DEBUG": "true",
        "OFF": "false",
        "RATIO": "0.5",
        "COUNT": "7",
    }


def test_builtin_values_without_extra():
    assert builtin_values("a", "e", "1", "ns", None) == {
        "MANENT_APPLICATION": "a", "MANENT_ENVIRONMENT": "e", "MANENT_VERSION": "1",
        "MANENT_NAMESPACE": "ns", "MANENT_DEPLOYMENT": ""}


def test_builtin_values_substitute_into_manifest():
    values = builtin_values("shop", "prod", "1.4.0", "shop-prod", "d-42", {"var.REPLICAS": "3"})
    text = "ns: ${MANENT_NAMESPACE}\nv: ${MANENT_VERSION}\nr: ${REPLICAS}\nkeep: ${OTHER}\n"
    assert substitute(text, values) == "ns: shop-prod\nv: 1.4.0\nr: 3\nkeep: ${OTHER}\n"


@pytest.mark.parametrize("extra, message", [
    ({"var.1ABC": "x"}, "var.1ABC: is not a valid variable name"),
    ({"MY-VAR": "x"}, "var.MY-VAR: is not a valid variable name"),
    ({"var.": "x"}, "var.: is not a valid variable name"),
    ({"A B": "x"}, "var.A B: is not a valid variable name"),
    ({"var.MANENT_VERSION": "9"}, "var.MANENT_VERSION: cannot be set: names starting with MANENT_ are reserved"),
    ({"MANENT_NEW": "9"}, "var.MANENT_NEW: cannot be set: names starting with MANENT_ are reserved"),
    ({"X": "1", "var.X": "2"}, "var.X: is given twice (as X and var.X)"),
    ({"var.X": None}, "var.X: has no value"),
    ({"var.X": {"a": 1}}, "var.X: must be a single value (string or number), got dict"),
    ({"var.X": [1]}, "var.X: must be a single value (string or number), got list"),
])
def test_builtin_values_rejects(extra, message):
    with pytest.raises(InputError) as info:
        builtin_values("shop", "prod", "1", "ns", "d", extra)
    assert str(info.value).startswith(message)
    assert info.value.hint
