# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sha256 helpers: of a file (the artifact, the helm binary), of a text (deployment ids, the discovery cache key,
Secret fingerprints in diffs), and digests as people write them (``sha256:`` prefix, any case)."""

from __future__ import annotations

import hashlib
import re

SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1024 * 1024


def sha256_file(path):
    """Hex sha256 of a file, read in chunks; OSError when it cannot be read."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_text(text):
    """Hex sha256 of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def bare_sha256(text):
    """A written digest trimmed, lower-cased and without its ``sha256:`` prefix; not checked (see SHA256_HEX)."""
    text = text.strip().lower()
    return text[len("sha256:"):] if text.startswith("sha256:") else text
