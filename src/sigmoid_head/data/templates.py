"""Prompt templates checked once, the same way for ``train``, ``score`` and ``generate``.

A template is a :meth:`str.format` string. It must use every required field (a prompt
template without ``{source}`` would ignore every source) and no other field (``{lang}``
would fail later with a bare KeyError).
"""

from __future__ import annotations

import string
from collections.abc import Sequence


def check_template(template: str, fields: Sequence[str] = ("source",),
                   name: str = "prompt_template") -> str:
    """Return ``template`` if it uses exactly ``fields``; else raise a ValueError saying why."""
    if not isinstance(template, str):
        raise ValueError(f"{name} must be a string, got {type(template).__name__}")
    allowed = ", ".join("{" + f + "}" for f in fields)
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise ValueError(f"{name} {template!r} is not a valid template ({err}); write a literal "
                         "brace as {{ or }}") from err
    used = set()
    for _text, field, spec, conversion in parsed:
        if field is None:
            continue
        base = field.split(".")[0].split("[")[0]
        if base not in fields or base != field:
            what = "a positional field {}" if field == "" else "{" + field + "}"
            raise ValueError(f"{name} {template!r} uses {what}; only {allowed} may be used "
                             "(write a literal brace as {{ or }})")
        if spec or conversion:
            raise ValueError(f"{name} {template!r}: format specs and conversions are not allowed")
        used.add(base)
    missing = [f for f in fields if f not in used]
    if missing:
        raise ValueError(f"{name} {template!r} must contain " + ", ".join(
            "{" + f + "}" for f in missing) + " (otherwise that input is ignored)")
    return template
