# -*- coding: utf-8 -*-
# Copyright: manent developers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Variable substitution in plain manifests (docs/requirements.md §2).

Substitution works on the manifest *text*, before YAML parsing, so a value can become any YAML
scalar (``replicas: ${REPLICAS}`` gives the number 3 with ``var.REPLICAS: "3"``). Values are inserted
verbatim: they come from the environment configuration, which is trusted like the manifests.

Rules:

- exactly ``${NAME}`` is replaced, and only when NAME is one of the known values;
- every other ``${...}`` is left untouched: unknown names, shell forms such as ``${VAR:-default}``,
  ``${#x}``, ``${x[1]}``, and anything that is not a plain name;
- ``$${NAME}`` is left untouched as literal text, byte for byte (it is *not* unescaped to
  ``${NAME}``): a ``$`` directly before ``${`` disables substitution.

Charts do not use these variables; they use values (docs/requirements.md §4).
"""

from __future__ import annotations

import re

from ansible_collections.manent.kubernetes.plugins.module_utils.base.errors import InputError

NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED_PREFIX = "MANENT_"
VAR_PREFIX = "var."

_REFERENCE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def substitute(text, values):
    """Replace ``${NAME}`` by ``values[NAME]`` for every NAME in ``values``; leave everything else."""
    if not values or "${" not in text:
        return text

    def _replace(match):
        name = match.group(1)
        if name in values:
            return values[name]
        return match.group(0)

    return _REFERENCE.sub(_replace, text)


def value_to_str(value, field):
    """Convert a parameter value to the text inserted in the manifest.

    Booleans become ``true``/``false`` (as written in YAML), numbers their usual text. Mappings, lists and
    nulls are rejected: a variable is one scalar.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    if value is None:
        raise InputError("has no value", subject=field,
                         hint='give it a value, e.g. %s: "3", or remove the parameter' % field)
    raise InputError("must be a single value (string or number), got %s" % type(value).__name__,
                     subject=field, hint="variables are inserted as text; pass structured data through a "
                                         "ConfigMap or use a Helm chart with values")


def builtin_values(application, environment, version, namespace, deployment, extra=None):
    """The mapping of docs/requirements.md §2: the ``MANENT_*`` values plus each ``var.NAME`` parameter as ``NAME``.

    ``extra`` maps names to values; keys may be given as ``NAME`` or ``var.NAME``. Names must match
    ``[A-Za-z_][A-Za-z0-9_]*`` and may not start with ``MANENT_`` (reserved for the built-in values).
    """
    values = {
        "MANENT_APPLICATION": _text(application),
        "MANENT_ENVIRONMENT": _text(environment),
        "MANENT_VERSION": _text(version),
        "MANENT_NAMESPACE": _text(namespace),
        "MANENT_DEPLOYMENT": _text(deployment),
    }
    for key in sorted((extra or {}), key=str):
        name = key[len(VAR_PREFIX):] if isinstance(key, str) and key.startswith(VAR_PREFIX) else key
        field = "%s%s" % (VAR_PREFIX, name)
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise InputError("is not a valid variable name", subject=field,
                             hint="use letters, digits and underscores, not starting with a digit "
                                  "(e.g. var.REPLICAS)")
        if name.upper().startswith(RESERVED_PREFIX):
            raise InputError("cannot be set: names starting with %s are reserved for the built-in "
                             "variables" % RESERVED_PREFIX, subject=field,
                             hint="rename the variable (e.g. var.APP_VERSION) and its ${...} references")
        if name in values:
            raise InputError("is given twice (as %s and %s%s)" % (name, VAR_PREFIX, name), subject=field,
                             hint="keep one of them")
        values[name] = value_to_str(extra[key], field)
    return values


def _text(value):
    return "" if value is None else str(value)
