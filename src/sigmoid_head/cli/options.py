"""Command-line options generated from dataclass fields: one ``--option`` per field.

The help text of each option is the docstring written under the field, so a setting is
documented once, in its dataclass, and the CLI and the Python API cannot drift apart.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import types
import typing
from collections.abc import Callable, Iterable


def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of a dataclass."""
    tree = ast.parse(inspect.getsource(cls))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) \
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
            docs[node.target.id] = " ".join(nxt.value.value.split())  # type: ignore[attr-defined]
    return docs


def number_type(kind: type, *, low: float | None = None, high: float | None = None,
                low_open: bool = False, high_open: bool = False, integer: bool = False,
                what: str = "") -> Callable[[str], object]:
    """An argparse type: a finite, representable ``kind`` number in the range (keywords of
    :func:`sigmoid_head.finite.number_problem`), refused in one line otherwise."""
    from ..finite import number_problem

    integer = integer or kind is int
    what = what or ("an integer" if integer else "a number")

    def parse(text: str) -> object:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        problem = number_problem(value, low=low, high=high, low_open=low_open,
                                 high_open=high_open, integer=integer)
        if problem:
            shown = text if len(text) <= 30 else text[:27] + "..."
            raise argparse.ArgumentTypeError(f"{shown}: {problem}")
        return value

    parse.__name__ = kind.__name__
    return parse


def _checked(parse: Callable[[str], object]) -> Callable[[str], object]:
    """A field's own ``parse`` function, its ValueError shown as argparse's one-line error."""
    def wrapped(text: str) -> object:
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    wrapped.__name__ = getattr(parse, "__name__", "value")
    return wrapped


def field_parser(f: dataclasses.Field, base: type) -> Callable[[str], object] | None:
    """The argparse type a field declares in its metadata: its own ``parse`` function, or a
    number check from its :func:`sigmoid_head.finite.bounds` range; None when it declares
    neither."""
    from ..finite import PARSE_KEY, field_bounds

    if f.metadata.get(PARSE_KEY):
        return _checked(f.metadata[PARSE_KEY])
    lim = field_bounds(f)
    if lim is not None and base in (int, float):
        return number_type(base, **lim)
    return None


def _optional(kind: Callable) -> Callable[[str], object]:
    def parse(text: str) -> object:
        return None if text.lower() in ("", "none", "null") else kind(text)

    parse.__name__ = kind.__name__
    return parse


def add_dataclass_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type,
                          names: dict[str, str] | None = None, *,
                          only: Iterable[str] | None = None, skip: Iterable[str] = (),
                          parsers: dict[str, Callable[[str], object]] | None = None) -> None:
    """One option per dataclass field: --snake-case-name, typed, with the field's doc.

    Args:
        parser: the parser or option group to add to.
        cls: the dataclass.
        names: renames fields (field -> option name, e.g. ``strategy`` -> ``negatives``).
        only: add these fields only, in this order (default: every field).
        skip: leave these fields out.
        parsers: field -> the argparse type that parses (and checks) its value, instead of
            the one the field declares (:func:`field_parser`) or its annotation.
    """
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    by_name = {f.name: f for f in dataclasses.fields(cls)}
    chosen = [by_name[n] for n in only] if only is not None else list(by_name.values())
    for f in (f for f in chosen if f.name not in set(skip)):
        hint, doc = hints[f.name], docs.get(f.name, "")
        name = (names or {}).get(f.name, f.name)
        args = typing.get_args(hint)
        is_optional = (typing.get_origin(hint) in (typing.Union, types.UnionType)
                       and type(None) in args)
        base = next((a for a in args if a is not type(None)), hint) if is_optional else hint
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        flag = "--" + name.replace("_", "-")
        if base is bool:
            parser.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=f.default,
                                help=_help(doc, f"default: {f.default}"))
            continue
        kind = (parsers or {}).get(f.name)
        if kind is None:
            kind = field_parser(f, base) or base
            kind = _optional(kind) if is_optional else kind
        default = None if required else f.default
        # strings as Python literals, so that a space or a newline shows ('{source}\n')
        shown = "required" if required else f"default: {default!r}" if isinstance(default, str) \
            else f"default: {default}"
        parser.add_argument(flag, dest=name, type=kind, default=default, required=required,
                            metavar=name.upper(), help=_help(doc, shown))


def _help(doc: str, shown: str) -> str:
    """The field's doc and its default, unless the doc already says what the default is."""
    return doc if "default" in doc.lower() and shown.startswith("default") else f"{doc} ({shown})"
