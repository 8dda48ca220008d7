# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The placeholders of a check's queries and their rendering for one measurement.

Placeholders are written ``${name}`` so that Ansible's Jinja (``{{ }}``) leaves them alone; ``$${`` writes a
literal ``${``. An unknown name is refused before any query is sent (:func:`check`), as is a name whose context
value is not set. The values:

- ``namespace``; ``candidate_slot``, ``stable_slot``, ``candidate_service``, ``stable_service``;
- ``slot`` and ``service``: the side the query is about, the candidate's in a check's query and traffic floor,
  the stable slot's in a baseline query (a baseline without a query of its own is the check's query rendered
  for the stable side);
- ``window``: the seconds from the step's start to the evaluation time, as a PromQL duration (``95s``), never
  less than the analysis' ``min_window``; ``window_seconds``: the same number alone (``95``);
- ``start``: the step's start in seconds since the epoch (``1733306400`` or ``1733306400.5``), e.g. for ``@``.
"""

from __future__ import annotations

import re

from ansible_collections.manent.kubernetes.plugins.module_utils.analysis import text
from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

_PLACEHOLDER = re.compile(r"\$(\$?)\{([^{}]*)\}")
CANDIDATE, STABLE = "candidate", "stable"
CONTEXT_NAMES = ("namespace", "candidate_slot", "stable_slot", "candidate_service", "stable_service")
TIME_NAMES = ("window", "window_seconds", "start")
SIDE_NAMES = ("slot", "service")
NAMES = CONTEXT_NAMES + SIDE_NAMES + TIME_NAMES


def used(query):
    """The placeholder names ``query`` uses, in order of first use (escaped ones excluded)."""
    out = []
    for match in _PLACEHOLDER.finditer(query):
        if not match.group(1) and match.group(2) not in out:
            out.append(match.group(2))
    return out


def context_field(name, side):
    """The context option a placeholder reads on ``side``: ``slot`` on the stable side is ``stable_slot``."""
    if name in SIDE_NAMES:
        return "%s_%s" % (side, name)
    return name


def check(query, context, side, subject):
    """InputError naming ``subject`` (``checks[0] (errors).query``) when ``query`` uses an unknown placeholder,
    or one whose context value (a :class:`model.Context`) is empty."""
    for name in used(query):
        if name not in NAMES:
            raise InputError("unknown placeholder ${%s}" % name, subject=subject,
                             hint="use one of %s, or write $${ for a literal ${" %
                             ", ".join("${%s}" % known for known in NAMES))
        if name in TIME_NAMES:
            continue
        field = context_field(name, side)
        if not getattr(context, field):
            raise InputError("uses ${%s} but context.%s is not set" % (name, field), subject=subject,
                             hint="set context.%s, or leave the placeholder out of the query" % field)


def values(context, side, at, min_window):
    """Every placeholder's text for a query about ``side`` evaluated at ``at`` (seconds since the epoch)."""
    window = window_seconds(context.start, at, min_window)
    out = {name: getattr(context, name) for name in CONTEXT_NAMES}
    out.update(slot=getattr(context, "%s_slot" % side), service=getattr(context, "%s_service" % side),
               window="%ds" % window, window_seconds="%d" % window, start=text.epoch_text(context.start))
    return out


def window_seconds(start, at, min_window):
    """Whole seconds from ``start`` to ``at``, at least ``min_window``."""
    return max(int(at - start), int(min_window))


def render(query, placeholder_values):
    """``query`` with its placeholders replaced; ``$${`` becomes ``${``. Names were checked by :func:`check`."""

    def replace(match):
        if match.group(1):
            return "${%s}" % match.group(2)
        return placeholder_values[match.group(2)]
    return _PLACEHOLDER.sub(replace, query)
