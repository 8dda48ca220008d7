# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""digests: sha256 of a file and of a text, and digests as people write them."""

from __future__ import annotations

import pytest

from ansible_collections.manent.kubernetes.plugins.module_utils.base import digests

# sha256sum of the empty input and of "abc", as printed by coreutils.
EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_sha256_file(tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert digests.sha256_file(str(empty)) == EMPTY
    abc = tmp_path / "abc"
    abc.write_bytes(b"abc")
    assert digests.sha256_file(str(abc)) == ABC
    with pytest.raises(OSError):
        digests.sha256_file(str(tmp_path / "missing"))


def test_sha256_text_hashes_utf8():
    assert digests.sha256_text("") == EMPTY
    assert digests.sha256_text("abc") == ABC
    # printf '\xc3\xa4' | sha256sum: the UTF-8 bytes of "ä"
    assert digests.sha256_text("\u00e4") == "33e6d73fee82904c8d7afb78de1154d1e8dc2a0edb08120e63df5b9385c2d9cc"


@pytest.mark.parametrize("written, bare", [
    (ABC, ABC), (" sha256:" + ABC.upper() + "\n", ABC), ("SHA256:" + ABC, ABC), ("", ""), ("sha512:ab", "sha512:ab"),
])
def test_bare_sha256(written, bare):
    assert digests.bare_sha256(written) == bare
