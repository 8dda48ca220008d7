# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The user's API mapping file (``api_mappings``): pure renames of stored apiVersions that add to or override
the table of :mod:`apiversions`, in the spirit of helm-mapkubeapis' ``Map.yaml`` but in manent's own, shorter
format (documented in docs/history.md, "The mapping file")::

    mappings:
      - from: batch/v2alpha1
        to: batch/v1
        kind: CronJob          # or kinds: [...]; none: every kind of `from`
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

MAPPINGS_OPTION = "api_mappings"


@dataclass(frozen=True)
class Mapping:
    """One pure rename from a user mapping file: stored ``source`` (apiVersion) of ``kind`` (None: every kind)
    becomes ``target``. ``origin`` names the file and entry, for messages."""

    source: str
    target: str
    kind: Optional[str]
    origin: str

    def matches(self, api_version, kind):
        return self.source == api_version and self.kind in (None, kind)


_MAPPING_KEYS = {"from", "to", "kind", "kinds"}


def parse_mappings(data, origin):
    """The :class:`Mapping` list of a mapping document ``data`` (``{"mappings": [...]}``) read from ``origin``.

    Each entry: ``from`` and ``to`` (apiVersions), and ``kind`` or ``kinds`` (default every kind of ``from``).
    InputError names the file, the entry and the field."""
    if data is None:
        return ()
    if not isinstance(data, dict) or set(data) - {"mappings"}:
        raise InputError("expected a mapping with one key, mappings (a list of {from, to, kind})", subject=origin,
                         hint="see docs/history.md, 'The mapping file'")
    entries = data.get("mappings") or []
    if not isinstance(entries, list):
        raise InputError("mappings: expected a list of {from, to, kind}", subject=origin)
    out, seen = [], {}
    for i, item in enumerate(entries):
        where = "%s: mappings[%d]" % (origin, i)
        if not isinstance(item, dict):
            raise InputError("expected a mapping with from, to and kind", subject=where)
        unknown = sorted(set(item) - _MAPPING_KEYS)
        if unknown:
            raise InputError("unknown key(s) %s (allowed: from, to, kind, kinds)" % ", ".join(unknown), subject=where)
        source, target = item.get("from"), item.get("to")
        for name, value in (("from", source), ("to", target)):
            if not isinstance(value, str) or not value.strip() or " " in value.strip() or value.count("/") > 1:
                raise InputError("%s: expected an apiVersion such as networking.k8s.io/v1, got %r" % (name, value),
                                 subject=where)
        if source.strip() == target.strip():
            raise InputError("from and to are the same apiVersion %s" % source, subject=where)
        kinds = item.get("kinds", item.get("kind"))
        if "kind" in item and "kinds" in item:
            raise InputError("give kind or kinds, not both", subject=where)
        if kinds is None:
            kinds = [None]
        elif isinstance(kinds, str):
            kinds = [kinds]
        if not isinstance(kinds, list) or not all(k is None or (isinstance(k, str) and k) for k in kinds):
            raise InputError("kind/kinds: expected a kind name or a list of them", subject=where)
        for kind in kinds:
            key = (source.strip(), kind)
            if key in seen:
                raise InputError("%s%s is already mapped by %s" % (source, " " + kind if kind else "", seen[key]),
                                 subject=where)
            seen[key] = where
            out.append(Mapping(source.strip(), target.strip(), kind, where))
    return tuple(out)


def load_mappings(path):
    """The mappings of the YAML file at ``path`` (empty or None: none)."""
    if not path:
        return ()
    try:
        import yaml  # PyYAML (requirements.txt), needed only when a mapping file is given
    except ImportError as err:
        raise InputError("reading the API mapping file needs the PyYAML package", subject=path,
                         hint="pip install PyYAML in the Python that runs the module") from err

    if not os.path.isfile(path):
        raise InputError("the API mapping file does not exist or is not a file", subject=path,
                         hint="give the path of a YAML file as %s (see docs/history.md)" % MAPPINGS_OPTION)
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise InputError("cannot read the API mapping file: %s" % err, subject=path) from err
    return parse_mappings(data, path)
