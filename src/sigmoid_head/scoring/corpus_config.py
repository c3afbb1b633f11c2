"""How a corpus is scored and written (``score``, ``generate``, ``rerank``), grouped by concern.

:class:`CorpusConfig` groups small dataclasses, as :class:`sigmoid_head.training.config.
TrainConfig` does: :class:`BatchingConfig` (how many sequences per pass), :class:`PromptConfig`
(how an input is rendered), :class:`OutputConfig` (what is written where), and the baselines:
one settings dataclass per opt-in baseline, the ``settings`` of its registry entry
(:mod:`sigmoid_head.registry.methods` for RAUQ, :mod:`sigmoid_head.registry.columns` for self-judge,
CometKiwi, Monte Carlo entropy and any plugin's baseline). The docstring under each field
is its option's help; ranges are declared on the fields (:func:`sigmoid_head.safe.finite.bounds`).

Every setting also has a flat name (the field name), so ``CorpusConfig(batch_size=8,
rauq=True)``, ``config.batch_size`` and ``config.quiet = True`` keep working; a group is
read as ``config.output`` and a baseline's settings as ``config.baseline("self_judge")``.
Pure Python, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..registry import columns as column_registry
from ..registry import methods as registry
from ..safe.finite import bounds, check_fields


@dataclass
class BatchingConfig:
    """How many sequences one forward pass holds."""

    batch_size: int = field(default=16, metadata=bounds(low=1, integer=True))
    """Sequences per forward pass."""
    max_tokens: int | None = field(default=None, metadata={**bounds(low=1, integer=True),
                                                          "commands": ("score",)})
    """Batch by padded tokens instead of sequences (score only)."""

    def __post_init__(self) -> None:
        if self.batch_size < 1 or (self.max_tokens is not None and self.max_tokens < 1):
            raise ValueError("batch_size and max_tokens must be >= 1")


@dataclass
class PromptConfig:
    """How an input is rendered for the model, as the user asks (None: the head's training
    setting); with the model and the head's saved settings it becomes the rendering itself,
    a :class:`~sigmoid_head.data.prompt_format.PromptFormat`."""

    prompt_template: str | None = None
    """Causal pairs: prompt with {source} (default: the head's training setting, else '{source}\\n')."""
    chat: bool | None = None
    """Render source/candidate pairs with the tokenizer's chat template (default: the head's training setting)."""

    def __post_init__(self) -> None:
        if self.prompt_template is not None:
            from ..data.templates import check_template

            check_template(self.prompt_template)


@dataclass
class OutputConfig:
    """What is written, and where."""

    with_tokens: bool = False
    """Add per-token and per-word scores."""
    to_json: str | None = None
    """Write one JSON record per output to this .jsonl file (resumed when rerun after an interruption)."""
    html: str | None = field(default=None, metadata={"commands": ("score", "generate")})
    """Also write one self-contained page of the outputs' tokens coloured by each method's score, numbers
    on hover, error spans marked (keeps the per-token scores in the rows, as with_tokens does, and draws
    the page from them)."""
    quiet: bool = False
    """No progress bars."""


GROUPS: dict[str, type] = {"batching": BatchingConfig, "prompt": PromptConfig,
                           "output": OutputConfig}
"""CorpusConfig's fixed groups, in the order of the flat dict and of the CLI's option groups."""
GROUP_TITLES = {"batching": "batching", "prompt": "prompt", "output": "output"}
"""The ``--help`` title of each group's options."""


def offers(f: Any, command: str) -> bool:
    """Whether ``command`` offers a CorpusConfig group field: every command unless the
    field's ``commands`` metadata names some (a new field reaches score, generate and
    rerank alike)."""
    return command in f.metadata.get("commands", (command,))


def refused_settings(config: Any, command: str) -> list[str]:
    """The group settings of ``config`` that ``command`` does not offer but that are set
    (differ from their default), by name."""
    return [f.name for cls in GROUPS.values() for f in fields(cls)
            if not offers(f, command) and getattr(config, f.name) != f.default]


def baseline_settings() -> dict[str, type]:
    """Registry entry name -> its settings dataclass, for every opt-in method and baseline
    (read when asked, so a plugin's baseline is a setting too)."""
    out = {m.name: m.settings for m in registry.methods() if m.settings is not None}
    out |= {c.name: c.settings for c in column_registry.baselines() if c.settings is not None}
    return out


def flat_names() -> dict[str, tuple[str, str]]:
    """Flat setting name -> (group, field); a baseline's group is ``baselines.<name>``."""
    out = {f.name: (g, f.name) for g, cls in GROUPS.items() for f in fields(cls)}
    for name, cls in baseline_settings().items():
        for f in fields(cls):
            if f.name in out:
                raise ValueError(f"setting {f.name!r} of baseline {name!r} is already a setting "
                                 f"of {out[f.name][0]}")
            out[f.name] = (f"baselines.{name}", f.name)
    return out


def _check(settings: Any) -> None:
    """A baseline's settings: the ranges (:func:`sigmoid_head.safe.finite.check_fields`) and the
    templates (:data:`sigmoid_head.registry.baseline_settings.TEMPLATE_KEY`) their fields declare."""
    from ..data.templates import check_template
    from ..registry.baseline_settings import TEMPLATE_KEY

    check_fields(settings)
    for f in fields(settings):
        value = getattr(settings, f.name)
        if TEMPLATE_KEY in f.metadata and value:
            check_template(value, *f.metadata[TEMPLATE_KEY])


class CorpusConfig:
    """How a corpus is scored and written (``score`` and ``generate``; see the module
    docstring): build it from flat settings, ``CorpusConfig(batch_size=8, rauq=True)``, or
    from groups, ``CorpusConfig(output=OutputConfig(quiet=True))``; read any setting flat
    (``config.batch_size``) or by group (``config.batching.batch_size``)."""

    GROUPS = GROUPS

    def __init__(self, *, batching: BatchingConfig | None = None, prompt: PromptConfig | None = None,
                 output: OutputConfig | None = None, baselines: dict[str, Any] | None = None,
                 **flat: Any) -> None:
        names = flat_names()
        unknown = sorted(set(flat) - set(names))
        if unknown:
            raise TypeError(f"CorpusConfig got unknown settings {unknown}")
        given = {"batching": batching, "prompt": prompt, "output": output}
        per: dict[str, dict[str, Any]] = {}
        for name, value in flat.items():
            group, f = names[name]
            if given.get(group) is not None:
                raise TypeError(f"{name!r} given both flat and inside {group}")
            per.setdefault(group, {})[f] = value
        for group, cls in GROUPS.items():
            obj = given[group] if given[group] is not None else cls(**per.get(group, {}))
            check_fields(obj)
            object.__setattr__(self, group, obj)
        chosen = dict(baselines or {})
        built = {}
        for name, cls in baseline_settings().items():
            obj = chosen.pop(name, None) or cls(**per.get(f"baselines.{name}", {}))
            _check(obj)
            built[name] = obj
        if chosen:
            raise TypeError(f"CorpusConfig got settings of unknown baselines {sorted(chosen)}")
        object.__setattr__(self, "baselines", built)

    def __getattr__(self, name: str) -> Any:
        group = self._group_of(name)
        if group is None:
            raise AttributeError(f"'CorpusConfig' object has no attribute {name!r}")
        return getattr(group, name)

    def __setattr__(self, name: str, value: Any) -> None:
        group = self._group_of(name)
        if group is None:
            raise AttributeError(f"CorpusConfig has no setting {name!r}")
        setattr(group, name, value)

    def _group_of(self, name: str) -> Any:
        where = flat_names().get(name)
        if where is None or "baselines" not in self.__dict__:
            return None
        group = where[0]
        if group.startswith("baselines."):
            return self.__dict__["baselines"].get(group.split(".", 1)[1])
        return self.__dict__[group]

    def __repr__(self) -> str:
        return f"CorpusConfig({', '.join(f'{k}={v!r}' for k, v in self.to_dict().items())})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CorpusConfig) and self.to_dict() == other.to_dict()

    def baseline(self, name: str) -> Any:
        """The settings of the registered baseline ``name`` (None if it has none)."""
        return self.__dict__["baselines"].get(name)

    def to_dict(self) -> dict[str, Any]:
        """Every setting under its flat name, in group order."""
        return {name: getattr(self, name) for name in flat_names()}

    @classmethod
    def field_names(cls) -> list[str]:
        """Every flat setting name (what :func:`sigmoid_head.scoring.corpus.config_from` reads)."""
        return list(flat_names())

    def opt_in(self) -> dict[str, Any]:
        """The methods reading attention asked for (their settings active), name -> those
        settings: the keywords the scoring functions take (``rauq=...``, see
        :mod:`sigmoid_head.scoring.captured`)."""
        asked = {m.name: self.baseline(m.name) for m in registry.methods("attention")}
        return {name: settings for name, settings in asked.items()
                if settings is not None and settings.active()}

    def keep_tokens(self) -> bool:
        """Whether rows keep their per-token scores (the page is drawn from them)."""
        return self.with_tokens or bool(self.html)
