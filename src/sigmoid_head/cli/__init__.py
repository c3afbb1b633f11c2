"""The ``sigmoid-head`` command: an explicit command table in front of the library.

Each command is a module of this package with ``DESCRIPTION`` (the paragraph of its
``--help``), ``add_arguments(parser)`` and ``run(args) -> int``, a thin call into the
library; its one-line help is its entry in :data:`COMMANDS`. Its options are generated from
settings dataclasses (:mod:`.options`). Only the module of the command being run is
imported (``sigmoid-head evaluate`` never loads torch).

Every command takes ``--threads N`` and ``--config FILE``: option values from a YAML or
JSON file, each checked as its flag would be, overridden by the flags given
(:func:`.options.apply_config`).

One error convention for every command: a user error (a ``ValueError`` such as a
malformed input, a missing or unreadable file) prints ``sigmoid-head <command>: error:
<message>`` on one line of stderr and exits with code 2, without a traceback; argparse's
own usage errors exit with code 2 too. A fault of the machine rather than the input (a
full disk: :class:`sigmoid_head.safe.files.WriteError`, another ``OSError``, a diverging
loss) prints the same one line and exits with code 1, and so does a missing optional
dependency (an ``ImportError``: the line names the extra that installs it).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from collections.abc import Callable
from importlib import import_module
from types import ModuleType

from .._version import __version__
from ..safe import outputs as output_safety
from ..safe.files import names_stdout
from . import threads
from .options import apply_config, config_path, read_config

COMMANDS: dict[str, str] = {
    "train": "train a Sigmoid Head on a frozen model",
    "score": "Eval Other: score given outputs (force-decoding)",
    "generate": "Eval Self: generate, then score the outputs",
    "rerank": "best-of-N: draw several outputs per source, score them, pick one",
    "self-label": "decode training sources and tag the outputs good/bad against references",
    "evaluate": "correlate QE scores with gold quality",
    "calibrate": "fit calibrated probabilities and error-span settings on a dev set",
    "demo": "train a head on SmolLM2 and compare it with softmax and BoostedProb",
    "push": "upload a trained head with a generated model card to the Hugging Face Hub",
}
"""Command name -> one-line help; the command's code is the module ``cli/<name>.py`` (a dash
in the name is an underscore there)."""


class UsageError(ValueError):
    """The command line asks for something impossible (reported as a one-line error)."""


def command_module(name: str) -> ModuleType:
    """The module implementing command ``name`` (see :data:`COMMANDS`)."""
    return import_module(f"{__name__}.{name.replace('-', '_')}")


def _chosen(argv: list[str]) -> str | None:
    """The command named on the command line (the first non-option argument), if any."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; the options of a command are added only when it is the one chosen
    (every command with ``argv=None``)."""
    parser = argparse.ArgumentParser(
        prog="sigmoid-head",
        description="Train and use a Sigmoid Head: a quality-estimation head on a frozen language model.",
    )
    parser.add_argument("--version", action="version", version=f"sigmoid-head {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = None if argv is None else _chosen(argv)
    for name, help_text in COMMANDS.items():
        if argv is not None and name != chosen:
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        module = command_module(name)
        p = sub.add_parser(name, help=help_text, description=module.DESCRIPTION)
        module.add_arguments(p)
        p.add_argument("--threads", type=_thread_count, default=None, metavar="N",
                       help="CPU threads for torch (default: the CPUs this process may use "
                       "less those the machine's load keeps busy, at least 1; or "
                       "OMP_NUM_THREADS if set). Idle threads sleep (OMP_WAIT_POLICY=PASSIVE "
                       "unless set), so a shared machine is not slowed down")
        p.add_argument("--config", metavar="FILE",
                       help="option values from a YAML (.yaml, .yml) or JSON file: a mapping of "
                       "option names (batch-size or batch_size) to values; the options given "
                       "on the command line override it")
        p.set_defaults(func=module.run)
    return parser


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of ``command`` inside the parser of :func:`build_parser`."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


MAX_THREADS = 4096
"""The most threads ``--threads`` accepts (more than any CPU this runs on; a larger count
would be refused by the OpenMP runtime, which then falls back to its default)."""


def _thread_count(text: str) -> int:
    """``--threads N``: a positive integer up to :data:`MAX_THREADS`."""
    text = str(text)
    digits = text.strip()
    value = (int(digits) if len(digits) <= 12 else MAX_THREADS + 1) if digits.isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a positive integer")
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"{text[:40]} threads: at most {MAX_THREADS}")
    return value


def _threads_option(argv: list[str]) -> int | None:
    """``--threads N`` of the command line before it is parsed: the last one given, as
    argparse reads it (None if absent or not a valid count: the parser then says what is
    wrong, or the config file's value applies)."""
    text = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg.startswith("--threads="):
            text = arg.partition("=")[2]
        elif arg == "--threads" and i + 1 < len(argv):
            text = argv[i + 1]
    try:
        return None if text is None else _thread_count(text)
    except argparse.ArgumentTypeError:
        return None


def _config_threads(values: dict) -> int | None:
    """The ``threads`` of a config file's values, when it is a valid count (else None: the
    option's own check refuses it with the file's name)."""
    value = values.get("threads")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    try:
        return _thread_count(str(value)) if isinstance(value, str) or value < 10**6 else None
    except argparse.ArgumentTypeError:
        return None


STREAM_OUTPUTS = ("to_json", "output", "html")
"""Output options that may name the standard output (``--to-json /dev/stdout``)."""


_RESTORE: list[Callable[[], None]] = []


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit code (2 for a user error, 130 when interrupted)."""
    from_command_line = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv, from_command_line)
    except KeyboardInterrupt as err:  # Ctrl-C, or a plugin raising it (named by the message)
        return _report(_chosen(argv) or "", KeyboardInterrupt(str(err) or "interrupted"), 130)
    finally:
        output_safety.run_inputs({})  # the run's --config is no input of a later call
        while _RESTORE:  # --quiet's switches of the libraries' bars, undone
            _RESTORE.pop()()


def _main(argv: list[str], from_command_line: bool) -> int:
    """:func:`main` of a command line."""
    # the thread policy before the parser, whose options of train/generate import torch:
    # OpenMP reads its variables once, when torch is first imported
    command, path = _chosen(argv), config_path(argv)
    try:
        values = read_config(path) if path is not None else {}
    except ValueError as err:
        return _report(command or "", err, 2)
    output_safety.run_inputs({"--config": path})
    count = _threads_option(argv) or _config_threads(values)
    chosen = threads.apply(count)
    parser = build_parser(argv)
    if path is not None and command in COMMANDS:
        try:  # before parsing: the file's values are the defaults the flags override
            apply_config(_subparser(parser, command), path, values, command)
        except ValueError as err:
            return _report(command, err, 2)
    args = parser.parse_args(argv)
    if from_command_line:  # no source line echoed under a warning (a caller's own format stays)
        warnings.formatwarning = one_line_warning
    if getattr(args, "quiet", False):
        _RESTORE.append(quiet_libraries())
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    if getattr(args, "threads", None) not in (None, count):  # an abbreviation (--thread 2)
        chosen = threads.apply(args.threads)
    logging.getLogger(__name__).debug(threads.describe(chosen))
    try:
        if hasattr(args, "dtype") or hasattr(args, "mixed_precision"):
            from .precision import preflight

            preflight(args, may_reexec=from_command_line)
        to_stdout = [k for k in STREAM_OUTPUTS if names_stdout(getattr(args, k, None))]
        if to_stdout:  # stdout holds the output alone: all else (plugins' writes) to stderr
            with output_safety.stdout_to_stderr() as real:
                for k in to_stdout if real is not None else ():
                    setattr(args, k, f"/dev/fd/{real}")
                return int(args.func(args) or 0)
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, PermissionError, IsADirectoryError,
            NotADirectoryError) as err:
        return _report(args.command, err, 2)
    except (OSError, FloatingPointError, OverflowError) as err:
        return _report(args.command, err, 1)
    except (MemoryError, RuntimeError) as err:  # torch.OutOfMemoryError is a RuntimeError
        if not _out_of_memory(err):
            raise
        return _report(args.command, MemoryError(
            f"out of memory ({_first_line(err)}); lower --batch-size, --samples, "
            "--max-new-tokens or --num-beams"), 1)
    except ImportError as err:
        return _report(args.command, ImportError(missing_dependency(err)), 1)


def one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                     line: str | None = None) -> str:
    """A warning as one line, ``warning: <message> (<category>, <file>:<line>)``: Python's
    default format echoes the source line that warned, which reads like a crash."""
    text = " ".join(str(message).split())
    return f"warning: {text} ({category.__name__}, {os.path.basename(filename)}:{lineno})\n"


_BARS = "HF_HUB_DISABLE_PROGRESS_BARS"
_BAR_SWITCHES = (("huggingface_hub.utils", "progress_bars"), ("transformers.utils.logging", "progress_bar"),
                 ("datasets.utils.logging", "progress_bar"))


def quiet_libraries() -> Callable[[], None]:
    """``--quiet``: the libraries' progress bars off too (transformers' "Loading weights",
    the Hub's and datasets' downloads): through the environment for a library not yet
    imported, through its switch for one that is. Returns what puts them back as they
    were, so that a command run from Python leaves the caller's process as it found it."""
    before_env = os.environ.get(_BARS)
    before_on = {name: _bars_on(name, kind) for name, kind in _BAR_SWITCHES}
    os.environ[_BARS] = "1"
    for name, kind in _BAR_SWITCHES:
        module = sys.modules.get(name)
        if module is not None:
            getattr(module, f"disable_{kind}")()

    def restore() -> None:
        if before_env is None:
            os.environ.pop(_BARS, None)
        else:
            os.environ[_BARS] = before_env
        if before_on[_BAR_SWITCHES[0][0]] is None:  # the Hub imported under our variable
            _unpin_hub(before_env)
        with warnings.catch_warnings():  # a caller's own variable keeps priority, silently
            warnings.simplefilter("ignore")
            for name, kind in _BAR_SWITCHES:
                module = sys.modules.get(name)
                if module is not None and before_on[name] is not False:
                    getattr(module, f"enable_{kind}")()

    return restore


def _unpin_hub(before_env: str | None) -> None:
    """The Hub reads ``HF_HUB_DISABLE_PROGRESS_BARS`` once, at import, into a constant that
    then outranks every switch (and warns at each). Imported while ``--quiet`` had set it,
    the constant is put back to what the caller's own environment gives."""
    value = None if before_env is None else before_env.strip().upper() in {"1", "ON", "YES", "TRUE"}
    for name in ("huggingface_hub.constants", "huggingface_hub.utils.tqdm"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, _BARS):
            setattr(module, _BARS, value)


def _bars_on(name: str, kind: str) -> bool | None:
    """Whether an imported library's bars are on (None: not imported yet)."""
    module = sys.modules.get(name)
    if module is None:
        return None
    check = getattr(module, f"are_{kind}_disabled", None) or getattr(module, f"is_{kind}_enabled", None)
    if check is None:
        return None
    on = check()
    return not on if check.__name__.startswith("are_") else bool(on)


EXTRAS = {"matplotlib": "plots", "scipy": "eval", "sklearn": "eval", "sacrebleu": "eval",
          "pysword": "bible", "comet": "comet", "lm_polygraph": "polygraph"}
"""Top-level module -> the extra of pyproject.toml that installs it."""


def missing_dependency(err: ImportError) -> str:
    """One line for a missing module: what is missing and the install line that brings it
    (the error's own message when it already says how)."""
    text = " ".join(str(err).split())
    if "pip install" in text:
        return text
    top = (getattr(err, "name", None) or "").split(".")[0]
    extra = EXTRAS.get(top)
    how = f"pip install 'sigmoid-head[{extra}]'" if extra else "reinstall sigmoid-head"
    return f"{text or type(err).__name__} (install it with: {how})"


def _first_line(err: BaseException) -> str:
    text = str(err)
    i = text.find("can't allocate")
    text = text[i:] if i >= 0 else text
    return (text.strip().splitlines() or [type(err).__name__])[0][:160]


def _out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is an allocator's refusal (CPU or GPU), not a bug."""
    text = str(err)
    return isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError" or any(
        s in text for s in ("can't allocate memory", "CUDA out of memory", "out of memory"))


def _report(command: str, err: BaseException, code: int) -> int:
    """Print ``err`` as the one-line error of ``command``; return the exit code."""
    message = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, OSError) and err.filename and str(err.filename) not in message:
        message = f"{err.filename}: {message}"
    print(f"sigmoid-head {command}: error: {message}", file=sys.stderr)
    return code
