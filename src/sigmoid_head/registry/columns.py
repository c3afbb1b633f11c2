"""The one registry of output columns: every key a ``score`` / ``generate`` / ``rerank`` row holds.

Each column is declared once here (:data:`COLUMNS`) with its level (token, word, span,
sequence, pass statistic, row), its direction (higher = better / worse), its range and
meaning, whether the CLI summary shows it, whether ``evaluate`` evaluates it by default,
and, for a sequence baseline, the hook that computes it and its settings dataclass. Every
consumer reads it: ``--describe`` (:mod:`sigmoid_head.scoring.fields`), the CLI summary
(:mod:`sigmoid_head.scoring.corpus_output`), ``evaluate``'s defaults and orientation,
rerank's selectable scores, the corpus scoring (which runs every active baseline's hook)
and the LM-Polygraph plugin.

A name may stand for several columns: ``<m>`` for every registered scoring method
(:mod:`sigmoid_head.registry.methods`, and ``sigmoid:<name>`` for a further head), ``<mc>`` for the
methods Monte Carlo entropy applies to (``Method.monte_carlo``), and ``"a, b"`` for two
columns described together. Adding a sequence baseline is its compute function (one file)
plus one :func:`register` line, e.g.::

    register(Column("my_judge", SEQUENCE, HIGHER_BETTER, "[0, 1]", "my judge's score",
                    summary=True, evaluate=True, compute="my_pkg.judge:scores",
                    settings=MyJudgeSettings))

A pass statistic (level :data:`PASS`, ``entropy_mean``) has a hook too: it gets one
sequence's :class:`~sigmoid_head.scoring.token_scores.TokenScores` and returns the value
(None: not available). A baseline's
``compute`` (a ``"module:function"`` path or the function) gets a :class:`BaselineInputs`
and returns one value per row (stored under the column's name) or one dict of columns per
row, or None when it has nothing to add (not asked for). ``settings`` is a dataclass whose
fields become settings of :class:`sigmoid_head.scoring.corpus.CorpusConfig` (and options of
``score`` / ``generate``); the hook runs when its ``active()`` is true (without settings:
always). Pure Python, no torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from . import baseline_settings
from . import methods as registry

TOKEN, WORD, SPAN, SEQUENCE, PASS, ROW, RERANK = (
    "token", "word", "span", "sequence", "pass statistic", "row", "rerank row")
LEVELS = (TOKEN, WORD, SPAN, SEQUENCE, PASS, ROW, RERANK)
"""Levels: per token, per word, per error span, a sequence score (a method's aggregation,
a baseline, the combined or calibrated score), a statistic of the scoring pass, a field of
the row (text, flags), a field of a rerank row."""
HIGHER_BETTER, HIGHER_WORSE, NEITHER = "higher = better", "higher = worse", "-"
COMMANDS = ("score", "generate", "rerank")


@dataclass(frozen=True)
class Column:
    """One output column (or a family of them, see the module docstring)."""

    name: str
    """The key (``<m>`` / ``<mc>``: each method; ``tokens[].x``: inside each token)."""
    level: str
    """One of :data:`LEVELS`."""
    direction: str
    """:data:`HIGHER_BETTER`, :data:`HIGHER_WORSE` or :data:`NEITHER` (a count, a label)."""
    range: str
    """Its range, as the ``--describe`` table shows it."""
    meaning: str
    """What it is, in one line."""
    summary: bool = False
    """The CLI summary shows its mean."""
    evaluate: bool = False
    """``evaluate`` evaluates it when no methods are named."""
    compute: str | Callable[[Any], Any] | None = None
    """A sequence baseline's hook (``"module:function"`` or the function), see the module
    docstring; None for columns the scoring pass or the head folder fill."""
    settings: type | None = None
    """The hook's settings dataclass (its fields are settings of ``CorpusConfig``)."""
    commands: tuple[str, ...] = ("score", "generate")
    """The commands that compute it (a baseline outside them is not offered there)."""
    polygraph: bool = False
    """The LM-Polygraph plugin's calculator computes it (statistic
    ``sigmoid_head_<name>``) and offers it as an estimator."""
    from_head: bool = False
    """Filled from the head folder (the combined score, the calibration): only with a head."""
    derived: bool = False
    """Not a key of score rows: ``evaluate`` derives it from them when it reads a score file
    (``<m>_geo_mean``, from ``<m>_mean_log``)."""

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"{self.name}: level must be one of {LEVELS}, got {self.level!r}")
        if self.direction not in (HIGHER_BETTER, HIGHER_WORSE, NEITHER):
            raise ValueError(f"{self.name}: unknown direction {self.direction!r}")
        if self.settings is not None and self.compute is None:
            raise ValueError(f"{self.name}: settings need a compute hook")
        if not set(self.commands) <= set(COMMANDS):
            raise ValueError(f"{self.name}: commands must be among {COMMANDS}")

    @property
    def names(self) -> list[str]:
        """The names (and name patterns) the entry covers: ``"tokens[].start, .end"`` ->
        ``tokens[].start``, ``tokens[].end``."""
        parts = [p.strip() for p in self.name.split(",")]
        root = parts[0].rsplit(".", 1)[0] if "." in parts[0] else ""
        return [root + p if p.startswith(".") else p for p in parts]

    def expand(self) -> list[str]:
        """Every concrete column name it stands for today (``<m>`` / ``<mc>`` expanded over
        the registered methods)."""
        out = []
        for n in self.names:
            if "<mc>" in n:
                out += [n.replace("<mc>", m.name) for m in registry.methods() if m.monte_carlo]
            elif "<m>" in n:
                out += [n.replace("<m>", m) for m in registry.names()]
            else:
                out.append(n)
        return out

    def hook(self) -> Callable[[Any], Any]:
        """The compute hook, imported on first use."""
        if self.compute is None:
            raise ValueError(f"{self.name}: no compute hook")
        if callable(self.compute):
            return self.compute
        module, _, name = self.compute.partition(":")
        return getattr(import_module(module), name)

    def is_baseline(self) -> bool:
        """A sequence baseline computed by its hook (a pass statistic's hook reads the
        pass's TokenScores instead)."""
        return self.compute is not None and self.level == SEQUENCE


@dataclass
class BaselineInputs:
    """What a baseline's hook gets: the batch being scored and the settings."""

    model: Any
    """The SigmoidHeadModel (or bare Backbone) scoring."""
    inputs: list[dict]
    """The batch's input records (``per_input`` rows each)."""
    rows: list[dict]
    """The batch's rows so far, in order."""
    sources: list[str]
    """Each row's source text."""
    candidates: list[str]
    """Each row's candidate text."""
    settings: Any
    """This baseline's settings (an instance of its ``settings`` dataclass), or None."""
    corpus: Any = None
    """The run's CorpusConfig (batch size, prompts, quiet)."""
    decoding: Any = None
    """The DecodingConfig of ``generate`` (None when scoring given candidates)."""
    per_input: int = 1
    """Rows per input."""


COLUMNS: dict[str, Column] = {}
"""Column name -> its declaration, in the order ``--describe`` and the summary list them."""


def register(column: Column) -> Column:
    """Add a column to :data:`COLUMNS` (a name may be registered once; after the built-in
    ones, a column's names follow :mod:`sigmoid_head.registry.contract` and none may be a key
    a method or another column writes)."""
    if column.name not in COLUMNS and _BUILTINS_DONE:
        from .contract import check_keys, check_name

        for name in column.names:
            check_name(name.removeprefix("tokens[].").removeprefix("words[]."), "column")
        check_keys(f"column {column.name!r}", column.names, taken_keys())
    return registry.add_once(COLUMNS, column.name, column, "column")


def taken_keys() -> dict[str, str]:
    """Every key a registered method or column writes -> who writes it (``<m>`` patterns
    expanded over the methods registered so far; plugins are not loaded for it)."""
    taken: dict[str, str] = {}
    for m in registry.METHODS.values():
        taken.update(dict.fromkeys(m.written_keys(), f"the method {m.name!r}"))
    for c in COLUMNS.values():
        for n in c.names:
            for m in registry.METHODS.values() if "<m" in n else [None]:
                key = n if m is None else n.replace("<mc>", m.name).replace("<m>", m.name)
                taken.setdefault(key, f"the column {c.name!r}")
    return taken


def unregister(name: str) -> None:
    """Remove a column (tests and plugins that register one for a while)."""
    COLUMNS.pop(name)


def columns(level: str | None = None, command: str | None = None) -> list[Column]:
    """The registered columns (of ``level`` / computed by ``command`` only, when given)."""
    registry.load_plugins()
    return [c for c in COLUMNS.values() if (level is None or c.level == level)
            and (command is None or c.level != SEQUENCE or not c.is_baseline()
                 or command in c.commands)]


def baselines(command: str | None = None) -> list[Column]:
    """The sequence baselines computed by a hook (of ``command``), in registry order."""
    return [c for c in columns(command=command) if c.is_baseline()]


def pass_statistics() -> list[Column]:
    """The pass statistics computed from a sequence's TokenScores by their hook
    (``hook(scores) -> value or None``), in registry order."""
    return [c for c in columns(PASS) if c.compute is not None]


def method_pattern(only: str = "<m>") -> str:
    """What ``<m>`` (or ``<mc>``) stands for, as a regular expression: a registered method
    (or one Monte Carlo entropy applies to), or ``sigmoid:<name>`` for a further head."""
    chosen = [m.name for m in registry.methods() if only == "<m>" or m.monte_carlo]
    names = "|".join(re.escape(n) for n in sorted(chosen, key=len, reverse=True))
    return rf"(?:{names}|sigmoid:[^_]+)" if only == "<m>" else rf"(?:{names})"


def column_for(name: str) -> Column | None:
    """The entry describing the output key ``name`` (``softmax_mean_log``,
    ``tokens[].start``, ``mc_softmax``), else None."""
    registry.load_plugins()
    pats = {p: method_pattern(p) for p in ("<m>", "<mc>")}
    for c in COLUMNS.values():
        for n in c.names:
            pattern = re.escape(n)
            for p, regex in pats.items():
                pattern = pattern.replace(re.escape(p), regex)
            if re.fullmatch(pattern, name):
                return c
    return None


def derived_keys() -> list[str]:
    """The columns ``evaluate`` derives from score rows (not keys of them), every ``<m>``
    expanded."""
    registry.load_plugins()
    return [k for c in COLUMNS.values() if c.derived for k in c.expand()]


def summary_keys() -> list[str]:
    """The single columns of the CLI summary (beyond the methods and the combined score),
    in order."""
    registry.load_plugins()
    return [k for c in COLUMNS.values() if c.summary for k in c.expand()]


def evaluated_keys() -> list[str]:
    """The columns beside the methods' aggregations, the combined score and the calibrated
    probabilities that ``evaluate`` evaluates by default, in order."""
    registry.load_plugins()
    return [k for c in COLUMNS.values() if c.evaluate and c.level in (SEQUENCE, PASS)
            and "<m>" not in c.name for k in c.expand() if k != "combined"]


def uncertainties() -> dict[str, float]:
    """Sequence columns where higher = worse -> -1 (``evaluate`` negates them)."""
    registry.load_plugins()
    return {k: -1.0 for c in COLUMNS.values() if c.direction == HIGHER_WORSE
            and c.level in (SEQUENCE, PASS) for k in c.expand()}


def selectable_keys(command: str = "rerank") -> list[str]:
    """Concrete sequence-level columns with a direction that ``command`` computes (a
    baseline of another command left out), beside the methods' aggregations."""
    return [k for c in columns(command=command) if c.level in (SEQUENCE, PASS)
            and c.direction != NEITHER and "<m>" not in c.name
            and (not c.is_baseline() or command in c.commands) for k in c.expand()]


def active(settings: Any) -> bool:
    """Whether a baseline (or opt-in method) runs with these settings: their ``active()``,
    else their first field (no settings: always)."""
    if settings is None:
        return True
    return bool(settings.active()) if hasattr(settings, "active") else bool(
        getattr(settings, first_field(settings)))


def first_field(settings: Any) -> str:
    """The name of a settings dataclass's first real field (class variables such as
    ``TITLE`` are not fields)."""
    import dataclasses

    return dataclasses.fields(settings)[0].name


def describe_rows(level_filter: Callable[[Column], bool] | None = None) -> Iterator[tuple]:
    """(names shown, direction, range, meaning) of each column, ``<mc>`` expanded."""
    registry.load_plugins()
    for c in COLUMNS.values():
        if level_filter is not None and not level_filter(c):
            continue
        shown = ", ".join(c.expand()) if "<mc>" in c.name else c.name
        yield shown, c.direction, c.range, c.meaning


def _builtin() -> None:
    """The columns of the built-in methods, pass statistics, baselines and the head folder."""
    add = register
    add(Column("source, messages, target", ROW, NEITHER, "text",
               "the input (copied from it), and a reference when it has one"))
    add(Column("candidate", ROW, NEITHER, "text", "the scored (or generated) output"))
    add(Column("<m>", SEQUENCE, HIGHER_BETTER, "[0, 1]", "product of the token probabilities"))
    add(Column("<m>_logprob", SEQUENCE, HIGHER_BETTER, "(-inf, 0]",
               "sum of the token log-probabilities"))
    add(Column("<m>_mean_log", SEQUENCE, HIGHER_BETTER, "(-inf, 0]", "mean token log-probability"))
    add(Column(f"<m>_{registry.GEO_MEAN}", SEQUENCE, HIGHER_BETTER, "[0, 1]",
               "exp(<m>_mean_log), the geometric mean of the token probabilities: evaluate "
               "only (derived from the row, not a key of it)", evaluate=True, derived=True))
    add(Column("<m>_min", SEQUENCE, HIGHER_BETTER, "[0, 1]", "lowest token probability"))
    add(Column("<m>_platt, <m>_isotonic", SEQUENCE, HIGHER_BETTER, "[0, 1]",
               "calibrated probability that the output is good (calibrate --gold)", evaluate=True,
               from_head=True))
    add(Column("combined", SEQUENCE, HIGHER_BETTER, "[0, 1]", "exp(combined_log)", evaluate=True,
               from_head=True))
    add(Column("combined_log", SEQUENCE, HIGHER_BETTER, "(-inf, 0]",
               "w * head mean log + (1 - w) * baseline log, nats per token", from_head=True))
    add(Column("entropy_mean", PASS, HIGHER_WORSE, "[0, ln |V|]",
               "mean softmax entropy in nats: an uncertainty (evaluate shows -entropy_mean)",
               summary=True, evaluate=True, commands=COMMANDS,
               compute="sigmoid_head.scoring.aggregate:entropy_mean"))
    add(Column("self_judge", SEQUENCE, HIGHER_BETTER, "[0, 1]",
               "P(yes) / (P(yes) + P(no)) of the LM judging its output", summary=True,
               evaluate=True, compute="sigmoid_head.scoring.baselines:self_judge_column",
               settings=baseline_settings.SelfJudgeSettings))
    add(Column("comet_kiwi", SEQUENCE, HIGHER_BETTER, "about [0, 1]", "CometKiwi quality score",
               summary=True, compute="sigmoid_head.scoring.baselines:comet_kiwi_column",
               settings=baseline_settings.CometKiwiSettings))
    add(Column("mc_<mc>", SEQUENCE, HIGHER_BETTER, "(-inf, 0]",
               "minus the Monte Carlo sequence entropy (generate --mc-samples)", summary=True,
               evaluate=True, compute="sigmoid_head.scoring.baselines:mc_columns",
               settings=baseline_settings.MonteCarloSettings, commands=("generate",)))
    add(Column("dominant_mean", PASS, NEITHER, "[0, 200]", "mean size of the dominant token set",
               compute="sigmoid_head.scoring.aggregate:dominant_mean"))
    add(Column("n_tokens", PASS, NEITHER, "[1, inf)", "scored tokens, special tokens included",
               summary=True, compute="sigmoid_head.scoring.aggregate:n_tokens"))
    add(Column("finished, truncated", ROW, NEITHER, "true/false", "generation ended with EOS / "
               "the prompt or the candidate was cut to fit the model (a warning names the "
               "input's file:line)"))
    add(Column("tokens, words", ROW, NEITHER, "lists", "one item per token / per word "
               "(--with-tokens, --html, or error spans to find): the fields below"))
    add(Column("errors", ROW, NEITHER, "list", "error spans of a calibrated head: the fields below"))
    add(Column("tokens[].token", TOKEN, NEITHER, "text", "the token as the tokenizer spells it "
               "(--with-tokens)"))
    add(Column("tokens[].<m>", TOKEN, HIGHER_BETTER, "[0, 1]",
               "probability of the token (--with-tokens)"))
    add(Column("tokens[].entropy", TOKEN, HIGHER_WORSE, "[0, ln |V|]",
               "softmax entropy at the token, nats"))
    add(Column("tokens[].n_dominant", TOKEN, NEITHER, "[0, 200]", "dominant-set size at the token"))
    add(Column("tokens[].start, .end", TOKEN, NEITHER, "[0, len(candidate)]",
               "character offsets of the token in the candidate, end exclusive"))
    add(Column("words[].word", WORD, NEITHER, "text", "the word, whitespace stripped"))
    add(Column("words[].<m>", WORD, HIGHER_BETTER, "[0, 1]",
               "product of the word's token probabilities"))
    add(Column("words[].start, .end", WORD, NEITHER, "[0, len(candidate)]",
               "character offsets of the word (whitespace stripped), end exclusive"))
    add(Column("errors[].text", SPAN, NEITHER, "text", "the error span's text"))
    add(Column("errors[].start, .end", SPAN, NEITHER, "[0, len(candidate)]",
               "character offsets of an error span, end exclusive (same as words')"))
    add(Column("errors[].confidence", SPAN, HIGHER_WORSE, "[0, 1]",
               "1 - the span's lowest word score: higher = more surely an error"))
    add(Column("errors[].severity", SPAN, NEITHER, "minor/major",
               "major below the saved major_below"))
    for name, rng, meaning in (
            ("picked", "text", "the picked candidate's text"),
            ("pick", "[0, candidates)", "the picked candidate's index"),
            ("select", "a score name", "the score that picked it"),
            ("picked_score", "the score's", "the pick's value of that score"),
            ("candidates", "list", "every candidate drawn, in order: the fields below"),
            ("candidates[].candidate", "text", "a candidate"),
            ("candidates[].origin", "greedy/beam/sample", "how it was drawn"),
            ("candidates[].sample", "[0, samples)", "which sample (sampled candidates only)"),
            ("candidates[].<score>", "see below",
             "every score of a generate row (finished, n_tokens and the table below)")):
        add(Column(name, RERANK, NEITHER, rng, meaning))


_BUILTINS_DONE = False
_builtin()
_BUILTINS_DONE = True


registry.KEY_SOURCES.append(taken_keys)  # the method registry checks a new name against these
