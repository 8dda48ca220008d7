# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How history ConfigMaps hold objects: a list of objects as compact JSON with sorted keys, gzip-compressed with a
fixed header (equal objects, equal bytes) and base64-encoded, at most :data:`RECORD_LIMIT` bytes compressed;
read back from base64 or raw bytes. Also the checked ``data`` mapping of a history ConfigMap."""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import struct
import zlib

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import HistoryError, InputError

RECORD_LIMIT = 900 * 1024  # bytes, compressed: a ConfigMap or Secret holds at most 1 MiB
_TOO_LARGE_HINT = ("split the artifact into smaller artifacts, or take large ConfigMaps/Secrets out of the "
                   "manifests (e.g. create them separately); nothing was written")


def _gzip(raw):
    """gzip with a fixed header (mtime 0, OS 'unknown') so equal input always gives equal bytes."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = compressor.compress(raw) + compressor.flush()
    header = b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + b"\x02\xff"
    trailer = struct.pack("<II", zlib.crc32(raw) & 0xFFFFFFFF, len(raw) & 0xFFFFFFFF)
    return header + body + trailer


def pack(objects, subject, what="objects"):
    """Compressed canonical JSON of ``objects``; HistoryError above RECORD_LIMIT (nothing written yet)."""
    try:
        raw = json.dumps(objects, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as err:
        raise InputError("an object holds a value that cannot be saved as JSON: %s" % err, subject=subject,
                         hint="quote dates and other non-string scalars in the manifests") from err
    packed = _gzip(raw)
    if len(packed) > RECORD_LIMIT:
        raise HistoryError(
            "the %d %s take %d bytes compressed (%.0f KiB), above the history limit of %d bytes (%d KiB)"
            % (len(objects), what, len(packed), len(packed) / 1024.0, RECORD_LIMIT, RECORD_LIMIT // 1024),
            subject=subject, hint=_TOO_LARGE_HINT)
    return base64.b64encode(packed).decode("ascii")


def unpack(packed, subject, what):
    """The list of objects in base64 (or raw bytes) gzip-compressed JSON ``packed``."""
    hint = "this release cannot be rolled back to; delete the record"
    try:
        if isinstance(packed, str):
            packed = base64.b64decode(packed, validate=True)
        return object_list(gzip.decompress(packed).decode("utf-8"), subject, what)
    except (binascii.Error, OSError, EOFError, zlib.error, UnicodeDecodeError, TypeError) as err:
        raise HistoryError("the saved %s are corrupt: %s" % (what, err), subject=subject, hint=hint) from err


def object_list(text, subject, what):
    """The list of objects in JSON ``text``; HistoryError naming ``what`` when it is not one."""
    hint = "this release cannot be rolled back to; delete the record"
    try:
        objects = json.loads(text)
    except (ValueError, TypeError) as err:
        raise HistoryError("the saved %s are corrupt: %s" % (what, err), subject=subject, hint=hint) from err
    if not isinstance(objects, list) or not all(isinstance(obj, dict) for obj in objects):
        raise HistoryError("the saved %s are not a list of objects" % what, subject=subject, hint=hint)
    return objects


def data_of(cm, subject):
    """The ``data`` mapping of history ConfigMap ``cm``; HistoryError when it is not a mapping."""
    if not isinstance(cm, dict):
        raise HistoryError("not a ConfigMap", subject=subject)
    data = cm.get("data") or {}
    if not isinstance(data, dict):
        raise HistoryError("'data' is not a mapping", subject=subject,
                           hint="delete this history ConfigMap or restore it from a backup")
    return data
