# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""identity.owner_of and identity.other_owner, the one answer to "which release owns this live object", on
objects recorded from a real API server (tests/unit/fixtures/owners/live.yaml; managedFields dropped).

Each case: ``{name, object, owner}``, ``owner`` the release key the object's labels name
(``tenant/application/artifact/environment``) or null.
"""

from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import (
    ReleaseKey, other_owner, owner_of)

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "owners", "live.yaml")
SHOP = ReleaseKey(application="shop", artifact="shop-api", environment="test")
BILLING = ReleaseKey(application="billing", artifact="billing", environment="test", tenant="acme")


def _cases():
    with open(FIXTURE, encoding="utf-8") as handle:
        return [pytest.param(case, id=case["name"]) for case in yaml.safe_load(handle)]


CASES = _cases()


def test_fixture_covers_every_kind_of_owner():
    owners = [case.values[0]["owner"] for case in CASES]
    assert None in owners and "untenanted/shop/shop-api/test" in owners and "acme/billing/billing/test" in owners
    kinds = {case.values[0]["object"].get("kind") for case in CASES}
    assert {"ConfigMap", "PartialObjectMetadata", "Namespace", "Service"} <= kinds


@pytest.mark.parametrize("case", CASES)
def test_owner_of_recorded_objects(case):
    owner = owner_of(case["object"])
    assert (owner.describe() if owner else None) == case["owner"]


@pytest.mark.parametrize("case", CASES)
def test_other_owner_is_none_for_its_own_release_and_for_objects_of_no_release(case):
    obj, expected = case["object"], case["owner"]
    for key in (SHOP, BILLING):
        other = other_owner(obj, key)
        if expected is None or expected == key.describe():
            assert other is None
        else:
            assert other.describe() == expected
    # key None (a stored object without release labels, as prune passes it): any manent release is another one
    anyone = other_owner(obj, None)
    assert (anyone.describe() if anyone else None) == expected


def test_owner_of_absent_or_odd_objects():
    assert owner_of(None) is None
    assert owner_of({}) is None
    assert owner_of({"metadata": {"labels": None}}) is None
    labels = SHOP.labels()
    assert owner_of({"metadata": {"labels": labels}}) == SHOP
    for missing in labels:
        partial = {k: v for k, v in labels.items() if k != missing}
        assert owner_of({"metadata": {"labels": partial}}) is None, missing
    assert owner_of({"metadata": {"labels": dict(labels, **{"app.kubernetes.io/managed-by": "Helm"})}}) is None
    assert other_owner({"metadata": {"labels": labels}}, SHOP) is None
    assert other_owner({"metadata": {"labels": labels}}, BILLING) == SHOP
    assert SHOP.describe() == "untenanted/shop/shop-api/test"
    assert BILLING.to_dict() == {"tenant": "acme", "application": "billing", "artifact": "billing",
                                 "environment": "test"}
