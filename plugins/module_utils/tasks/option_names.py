# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The option ``option_names`` of every module: the names under which the caller sets the module's options (the
deploy role: its variables, ``helm_command`` -> ``deploy_helm_command``), so that an error about an option names what
the user wrote. An engine error names the option it is about as its ``subject`` (``helm_command``,
``provider.url``, ``checks[2].name``); its first part is looked up here. Used by the module (tasks/common.py fail)
and by the controller path (plugin_utils/controller_task.py), one message either way."""

from __future__ import annotations

import re

OPTION_NAMES_SPEC = {
    "option_names": {"type": "dict", "default": {}},
}

_SUBJECT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:[.\[].*)?)$")
_ARGUMENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
# where a validation message goes on to quote a value or to list every option: left as it is
_VALUE = re.compile(r", got: | and we were unable to convert|\. Supported parameters include")


def subject_name(subject, names):
    """``subject`` with its first part (an option: ``helm_command``, ``provider`` of ``provider.url``) named as in
    ``names`` ({option: name}); unchanged when that part is not in ``names`` or the subject is not an option's
    (``Deployment/shop/web``, ``history lock``)."""
    match = _SUBJECT.match(subject or "") if names else None
    if not match or not names.get(match.group(1)):
        return subject
    return "%s%s" % (names[match.group(1)], match.group(2))


def error_message(exc, names):
    """The message of ``exc`` (a ManentError, or any exception) with its subject named as in ``names``."""
    subject = getattr(exc, "subject", None)
    renamed = subject_name(subject, names) if isinstance(subject, str) else subject
    if renamed != subject:
        exc.subject = renamed
    return str(exc)


def validation_message(messages, names):
    """The argument validation errors (ansible's ArgumentSpecValidator: ``argument 'helm_hooks' is of type ...``,
    ``value of strategy must be one of: ...``) as one message, each option named as in ``names``. The option names
    are found as whole words before the value a message quotes (``got: ...``), which is left as given."""
    out = []
    for text in messages:
        text = str(text)
        match = _VALUE.search(text)
        end = match.start() if match else len(text)
        head = _ARGUMENT.sub(lambda m: names.get(m.group(0)) or m.group(0), text[:end]) if names else text[:end]
        out.append(head + text[end:])
    return "; ".join(out)


def names_of(params):
    """The ``option_names`` of validated (or raw) module parameters, {} when none."""
    names = (params or {}).get("option_names") or {}
    return {str(key): str(value) for key, value in names.items() if value} if isinstance(names, dict) else {}
