# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""durations: the one reader of duration parameters ("90s", "2m", "1m30s", seconds) and its writer for messages."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base.durations import format_duration, parse_duration
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError


@pytest.mark.parametrize("text, seconds", [
    ("2m", 120.0), ("90s", 90.0), ("1h", 3600.0), ("1m30s", 90.0), ("1h2m3s", 3723.0), ("500ms", 0.5),
    ("1.5h", 5400.0), (" 2m ", 120.0), ("120", 120.0), ("0", 0.0), ("2.5", 2.5), (45, 45.0), (1.5, 1.5),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "  ", "abc", "2x", "m", "-1", "1m-", "1 m", "inf", "nan", "1e3", None, True,
                                  -3, float("inf")])
def test_parse_duration_rejects(text):
    with pytest.raises(InputError, match="invalid duration") as err:
        parse_duration(text, name="helm_timeout")
    assert err.value.subject == "helm_timeout"
    assert "1m30s" in err.value.hint


@pytest.mark.parametrize("seconds, text", [(120.0, "2m"), (90, "1m30s"), (3600, "1h"), (3723, "1h2m3s"), (5, "5s"),
                                           (0.5, "0.5s"), (1.5, "1.5s"), (0, "0s")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text
