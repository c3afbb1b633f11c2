"""Command-line options generated from dataclass fields: one ``--option`` per field.

The help text of each option is the docstring written under the field, so a setting is
documented once, in its dataclass, and the CLI and the Python API cannot drift apart.
Besides its range (:func:`sigmoid_head.safe.finite.bounds`) or ``parse`` function, a field's
metadata may give ``choices`` (the values allowed), ``aliases`` (short flags, ``("-o",)``)
and ``metavar``; a ``list[...]`` field takes any number of values. A settings class whose
fields are dataclasses (one per concern, each with a ``TITLE``) gets one option group per
concern (:func:`add_settings`) and is built back from the parsed options by
:func:`settings_from`.

Every command also takes its option values from ``--config FILE`` (YAML or JSON, keyed by
option name): :func:`read_config` reads the file, :func:`apply_config` checks each value as
the flag's own type would and makes it the option's default, so a flag on the command line
overrides it.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any


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
    :func:`sigmoid_head.safe.finite.number_problem`), refused in one line otherwise."""
    from ..safe.finite import number_problem

    integer = integer or kind is int
    what = what or ("an integer" if integer else "a number")

    def parse(text: str) -> object:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not {what}") from None
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
    number check from its :func:`sigmoid_head.safe.finite.bounds` range; None when it declares
    neither."""
    from ..safe.finite import PARSE_KEY, field_bounds

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
        flags = [*f.metadata.get("aliases", ()), "--" + name.replace("_", "-")]
        default = None if required else f.default if f.default_factory is dataclasses.MISSING \
            else f.default_factory()
        if base is bool:
            parser.add_argument(*flags, dest=name, action=argparse.BooleanOptionalAction,
                                default=default, help=_help(doc, f"default: {default}"))
            continue
        extra: dict[str, object] = {"metavar": f.metadata.get("metavar", name.upper())}
        kind = (parsers or {}).get(f.name)
        if typing.get_origin(base) is list and kind is None and not field_parser(f, base):
            base, extra["nargs"] = (typing.get_args(base) or (str,))[0], "*"  # any number of values
        if f.metadata.get("choices"):
            extra = {"choices": f.metadata["choices"], "metavar": f.metadata.get("metavar")}
            kind = kind or field_parser(f, base) or base
        if kind is None:
            kind = field_parser(f, base) or base
            kind = _optional(kind) if is_optional else kind
        # strings as Python literals, so that a space or a newline shows ('{source}\n')
        shown = "required" if required else f"default: {default!r}" if isinstance(default, str) \
            else f"default: {default}"
        parser.add_argument(*flags, dest=name, type=kind, default=default, required=required,
                            help=_help(doc, shown), **extra)  # type: ignore[arg-type]


def setting_groups(cls: type) -> dict[str, type]:
    """The groups of a settings dataclass by concern: field name -> dataclass, when every
    field of ``cls`` is a dataclass (its ``GROUPS`` if it declares them); else none."""
    if getattr(cls, "GROUPS", None):
        return dict(cls.GROUPS)  # type: ignore[attr-defined]
    hints = typing.get_type_hints(cls)
    groups = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    return groups if all(dataclasses.is_dataclass(g) for g in groups.values()) else {}


def add_settings(parser: argparse.ArgumentParser, cls: type, **kw: object) -> None:
    """The options of a settings class: one option group per group of
    :func:`setting_groups` (titled by the group class's ``TITLE``), else every field in the
    parser's own options. ``kw`` go to :func:`add_dataclass_options`."""
    groups = setting_groups(cls)
    if not groups:
        add_dataclass_options(parser, cls, **kw)  # type: ignore[arg-type]
        return
    for group in groups.values():
        add_dataclass_options(parser.add_argument_group(group.TITLE), group, **kw)  # type: ignore[arg-type]


def settings_from(cls: type, values: dict[str, object]) -> object:
    """``cls`` built from parsed option values (``vars(args)``): each of its groups
    (:func:`setting_groups`) from the values named like its fields, the others ignored; a
    field without a value keeps its default."""
    groups = setting_groups(cls)
    if groups:
        return cls(**{g: settings_from(group, values) for g, group in groups.items()})
    return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls) if f.name in values})


def _help(doc: str, shown: str) -> str:
    """The field's doc and its default, unless the doc already says what the default is."""
    return doc if "default" in doc.lower() and shown.startswith("default") else f"{doc} ({shown})"


CONFIG_FORMATS = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML"}
"""File suffix of a ``--config`` file -> its format."""


def config_path(argv: list[str]) -> str | None:
    """The ``--config FILE`` given after the command in ``argv`` (None if absent, or
    malformed: the command's parser then says what is wrong)."""
    p = _Quiet(add_help=False)
    p.add_argument("--config")
    rest = argv[next((i + 1 for i, a in enumerate(argv) if not a.startswith("-")), len(argv)):]
    try:
        return p.parse_known_args(rest)[0].config
    except ValueError:
        return None


class _Quiet(argparse.ArgumentParser):
    """A parser whose errors are raised (ValueError), not printed."""

    def error(self, message: str) -> typing.NoReturn:
        raise ValueError(message)


def read_config(path: str) -> dict[str, Any]:
    """The option values of a ``--config`` file, read by
    :func:`sigmoid_head.safe.config.read_options` (regular files only, bounded, YAML 1.2
    JSON-schema typing, duplicate keys refused); an empty YAML file gives none.

    Raises:
        ValueError: one line naming the file.
    """
    from ..safe.config import read_options

    return read_options(path)


def apply_config(parser: argparse.ArgumentParser, path: str, values: dict[str, Any],
                 command: str) -> None:
    """Make each value of a ``--config`` file the default of its option in ``parser`` (the
    command's), checked as the flag would be; a required option it gives is no longer
    required on the command line.

    Raises:
        ValueError: one line naming the file and the key: not an option of ``command``,
            the same option twice, or a value the option refuses.
    """
    options, positional = {}, {a.dest for a in parser._actions if not a.option_strings}
    for action in parser._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag not in ("--help", "--config"):
                options[flag[2:]] = action
    seen: dict[str, str] = {}
    for key, value in values.items():
        name = key.replace("_", "-")
        action = options.get(name)
        if action is None:
            why = ("a positional argument: give it on the command line" if key in positional
                   else f"not an option of sigmoid-head {command}")
            raise ValueError(f"{path}: unknown key {_shown(key)} ({why})")
        if name in seen:
            raise ValueError(f"{path}: {_shown(seen[name])} and {_shown(key)} are the same option")
        seen[name] = key
        try:
            parsed = _config_value(action, value)
        except ValueError as err:
            raise ValueError(f"{path}: {key}: {err}") from None
        parser.set_defaults(**{action.dest: parsed})
        action.required = False


_SWITCHES = (argparse._StoreTrueAction, argparse.BooleanOptionalAction)


def _config_value(action: argparse.Action, value: Any) -> Any:
    """A config file's ``value`` for ``action``, through the option's own type and choices."""
    if isinstance(action, _SWITCHES):
        if isinstance(value, bool) or (value is None and action.default is None):
            return value
        raise ValueError(f"expected true or false, got {_shown(value)}")
    if type(action) is not argparse._StoreAction:
        raise ValueError("cannot be set in a --config file")
    if value is None:
        if action.default is not None and not _takes_null(action):
            raise ValueError("null is not a value of this option")
        return None
    if action.nargs in ("*", "+"):
        if not isinstance(value, list):
            raise ValueError(f"expected a list, got {_shown(value)}")
        return [_parsed(action, _text(v)) for v in value]
    return _parsed(action, _text(value))


def _takes_null(action: argparse.Action) -> bool:
    """Whether the option's type reads ``null`` as None (an optional setting)."""
    try:
        return _parsed(action, "null") is None
    except ValueError:
        return False


def _shown(value: Any) -> str:
    from ..safe.config import shown

    return shown(value)


def _text(value: Any) -> str:
    """A scalar config value as it would be written on the command line."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"expected a single number or string, got {_shown(value)}")
    return value if isinstance(value, str) else str(value)


def _parsed(action: argparse.Action, text: str) -> Any:
    """``text`` through the option's type and choices, refused with argparse's words."""
    kind = action.type or str
    try:
        value = kind(text)  # type: ignore[operator]
    except argparse.ArgumentTypeError as err:
        raise ValueError(str(err)) from None
    except (TypeError, ValueError):
        raise ValueError(f"invalid {getattr(kind, '__name__', repr(kind))} value: {_shown(text)}") from None
    if action.choices is not None and value not in action.choices:
        raise ValueError(f"invalid choice: {_shown(value)} (choose from "
                         f"{', '.join(map(repr, action.choices))})")
    return value
