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


def digest_problem(value, what="the artifact's SHA-256 (sha256sum FILE)", prefix=True):
    """What is wrong with a written sha256 digest (``value`` as the YAML or the task gave it), or "" when it is one.
    A digest of digits only, unquoted, is read by YAML as a number: the message says so, as the number no longer
    reads as the digest (leading zeros gone, or 0-7 only read as octal). ``what``: whose digest it is; ``prefix``:
    whether a ``sha256:`` prefix and upper case are allowed (bare_sha256), else only the 64 lower-case digits."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, int) and SHA256_HEX.fullmatch(str(value)):
            return ""  # 64 digits that YAML read as a number: still the digest as written
        return ("was read by YAML as the number %s, not as text (a digest of digits only, unquoted, is one): quote "
                "it, e.g. sha256: \"<the 64 hex digits>\"" % (value,))
    if not isinstance(value, str) or not SHA256_HEX.fullmatch(bare_sha256(value) if prefix else value):
        return "must be the 64 hex digits of %s" % what
    return ""
