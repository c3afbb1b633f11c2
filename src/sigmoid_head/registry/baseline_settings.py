"""The settings of the built-in opt-in baselines, one small dataclass each.

Each is the ``settings`` of its registry entry (:mod:`sigmoid_head.registry.columns` for the
sequence baselines, :mod:`sigmoid_head.registry.methods` for RAUQ) and one part of the baselines
group of :class:`sigmoid_head.scoring.corpus.CorpusConfig`; the docstring under each field
is its ``score`` / ``generate`` option's help, and its range is declared on the field
(:func:`sigmoid_head.safe.finite.bounds`, or a ``parse`` function). ``active()`` says whether
the baseline is asked for. Pure Python, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..safe.finite import PARSE_KEY, bounds

TEMPLATE_KEY = "template"
"""Field metadata of a prompt template setting: (the fields it must use, its name);
:class:`sigmoid_head.scoring.corpus_config.CorpusConfig` checks it with
:func:`sigmoid_head.data.templates.check_template`."""


def layer_list(text: str) -> tuple[int, ...]:
    """``"3,4,5"`` -> (3, 4, 5): 0-based layer indices (ValueError with the reason)."""
    try:
        layers = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"{text!r} is not a comma-separated list of layers") from None
    if not layers or min(layers) < 0:
        raise ValueError(f"{text!r}: layers are 0-based indices")
    return layers


@dataclass
class RauqSettings:
    """RAUQ from the scoring pass's attention weights (:mod:`sigmoid_head.scoring.rauq`)."""

    TITLE: ClassVar[str] = "RAUQ from the scoring pass's attention weights"
    """Its option group's title in ``--help``."""

    rauq: bool = False
    """Add RAUQ (attention-based, causal LMs) from the same pass; it runs with eager attention."""
    rauq_alpha: float | None = field(default=None, metadata=bounds(low=0.0, high=1.0))
    """RAUQ's weight of the token probability (default 0.2, LM-Polygraph's; it uses 0.5 for
    instruction-tuned models)."""
    rauq_layers: tuple[int, ...] | None = field(default=None, metadata={PARSE_KEY: layer_list})
    """RAUQ's layers, comma-separated 0-based (default: the middle third)."""

    def __post_init__(self) -> None:
        if not self.rauq and (self.rauq_alpha is not None or self.rauq_layers is not None):
            raise ValueError("--rauq-alpha and --rauq-layers need --rauq")

    def active(self) -> bool:
        return self.rauq


@dataclass
class SelfJudgeSettings:
    """The LLM self-judge (:func:`sigmoid_head.scoring.baselines.self_judge`)."""

    TITLE: ClassVar[str] = "the LLM self-judge"
    """Its option group's title in ``--help``."""

    self_judge: bool = False
    """Add the LLM self-judge score."""
    judge_template: str | None = field(default=None, metadata={
        TEMPLATE_KEY: (("source", "candidate"), "judge template")})
    """Self-judge prompt with {source} and {candidate}."""

    def active(self) -> bool:
        return self.self_judge


@dataclass
class CometKiwiSettings:
    """CometKiwi, reference-free COMET (:func:`sigmoid_head.scoring.baselines.comet_kiwi`)."""

    TITLE: ClassVar[str] = "CometKiwi, reference-free COMET"
    """Its option group's title in ``--help``."""

    comet_model: str | None = None
    """Local CometKiwi checkpoint (needs unbabel-comet)."""

    def active(self) -> bool:
        return bool(self.comet_model)


@dataclass
class MonteCarloSettings:
    """Monte Carlo sequence entropy (:func:`sigmoid_head.scoring.baselines.mc_sequence_entropy`)."""

    TITLE: ClassVar[str] = "Monte Carlo sequence entropy"
    """Its option group's title in ``--help``."""

    mc_samples: int = field(default=0, metadata=bounds(low=0, integer=True))
    """Add Monte Carlo sequence entropy from N samples (paper: 10; generate only)."""

    def __post_init__(self) -> None:
        if self.mc_samples < 0:
            raise ValueError("mc_samples must be >= 0")

    def active(self) -> bool:
        return self.mc_samples > 0
