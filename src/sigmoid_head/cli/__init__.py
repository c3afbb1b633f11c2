"""The ``sigmoid-head`` command: argument parsing in front of plain functions.

``sigmoid-head train`` takes one option per TrainConfig field, with the field's
docstring as help text, so the CLI and the Python API cannot drift apart.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import logging
import sys
import types
import typing
from collections.abc import Callable

from .._version import __version__
from ..training.config import TrainConfig


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


def _optional(kind: Callable) -> Callable[[str], object]:
    def parse(text: str) -> object:
        return None if text.lower() in ("", "none", "null") else kind(text)

    parse.__name__ = kind.__name__
    return parse


def add_dataclass_options(parser: argparse.ArgumentParser, cls: type,
                          positional: tuple[str, ...] = ()) -> None:
    """One option per dataclass field: --snake-case-name, typed, with the field's doc."""
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint, doc = hints[f.name], docs.get(f.name, "")
        args = typing.get_args(hint)
        is_optional = (typing.get_origin(hint) in (typing.Union, types.UnionType)
                       and type(None) in args)
        base = next((a for a in args if a is not type(None)), hint) if is_optional else hint
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        flag = "--" + f.name.replace("_", "-")
        if base is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default,
                                help=f"{doc} (default: {f.default})")
            continue
        kind = _optional(base) if is_optional else base
        default = None if required else f.default
        shown = "required" if required else f"default: {default}"
        parser.add_argument(flag, dest=f.name, type=kind, default=default, required=required,
                            metavar=f.name.upper(), help=f"{doc} ({shown})")


def cmd_train(args: argparse.Namespace) -> int:
    from ..training.loop import train

    names = {f.name for f in dataclasses.fields(TrainConfig)}
    config = TrainConfig(**{k: v for k, v in vars(args).items() if k in names})
    model = train(config)
    hist = model.config.training.get("history", [])
    if hist:
        print(f"validation loss {hist[0]['val_loss']:.4f} -> best "
              f"{model.config.training['best_val_loss']:.4f} (step {model.config.training['best_step']})")
    print(f"head saved to {config.output_dir}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sigmoid-head",
        description="Train and use a Sigmoid Head: a quality-estimation head on a frozen language model.",
    )
    parser.add_argument("--version", action="version", version=f"sigmoid-head {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    train = sub.add_parser(
        "train", help="train a Sigmoid Head on a frozen model",
        description="Train a Sigmoid Head on a frozen model's own training data. Rerun the same "
        "command after an interruption to continue from the last checkpoint.",
    )
    add_dataclass_options(train, TrainConfig)
    train.set_defaults(func=cmd_train)
    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands() -> list[Callable[[argparse._SubParsersAction], None]]:
    """Subcommands defined in other modules (scoring, evaluation, demo)."""
    found = []
    for name in ("sigmoid_head.cli.scoring", "sigmoid_head.demo"):
        try:
            module = __import__(name, fromlist=["register"])
        except ModuleNotFoundError as err:  # that part of the package is not there
            if err.name != name:
                raise
            continue
        if hasattr(module, "register"):
            found.append(module.register)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as err:
        print(f"sigmoid-head {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
