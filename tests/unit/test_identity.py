# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""identity.is_label_value: the one check that a release key part may be a Kubernetes label value, and its use
by the renderer."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError
from ansible_collections.manent.kubernetes.plugins.module_utils.base.identity import ReleaseKey, is_label_value
from ansible_collections.manent.kubernetes.plugins.module_utils.render.pipeline import validate_identity


@pytest.mark.parametrize("text", ["shop", "shop-api", "a", "A.b_c-9", "1", "x" * 63, ""])
def test_valid_label_values(text):
    assert is_label_value(text)


@pytest.mark.parametrize("text", ["-shop", "shop-", "_a", "a.", "x" * 64, "a b", "a/b", "ä", "shop\n"])
def test_invalid_label_values(text):
    assert not is_label_value(text)


def test_render_refuses_a_release_key_part_that_is_no_label_value():
    validate_identity(ReleaseKey(application="shop", artifact="shop-api", environment="prod", tenant="acme"))
    with pytest.raises(InputError) as err:
        validate_identity(ReleaseKey(application="shop", artifact="shop-api", environment="prod-"))
    assert err.value.subject == "environment" and err.value.message == "'prod-' is not a valid label value"
