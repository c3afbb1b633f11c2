"""The settings of ``sigmoid-head self-label``, by concern: which data, which model, how its
outputs are decoded and how their words are tagged against the references
(:mod:`sigmoid_head.training.self_generated` does the work).

The docstring under each field is the option's help (:mod:`sigmoid_head.cli.options`);
ranges are declared with :func:`sigmoid_head.safe.finite.bounds`. Needs no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..data.self_labels import RULES
from ..safe.finite import bounds, check_fields

_POSITIVE = bounds(low=1, integer=True)


@dataclass
class SelfLabelData:
    """The training pairs read and the labelled outputs written."""

    TITLE: ClassVar[str] = "data"
    train_file: str
    """Pairs {source, target} (.jsonl/.tsv); every target of a source is a reference."""
    output: str = field(metadata={"aliases": ("-o",), "metavar": "OUT.jsonl"})
    """The self-labelled outputs (written whole at the end, atomically)."""
    max_sources: int | None = field(default=None, metadata=_POSITIVE)
    """Decode only the first N distinct sources (default: all)."""


@dataclass
class SelfLabelModel:
    """The frozen model that writes the outputs."""

    TITLE: ClassVar[str] = "model"
    model: str | None = None
    """Base model id/path (default: the embedded SmolLM2-135M-Instruct)."""
    dtype: str = "auto"
    """Model dtype."""
    device: str | None = None
    """cpu or cuda (default: cuda if available)."""


@dataclass
class SelfLabelDecoding:
    """How each source's outputs are decoded: the greedy one and seeded samples."""

    TITLE: ClassVar[str] = "decoding"
    samples: int = field(default=2, metadata=bounds("samples"))
    """Sampled outputs per source, beside the greedy one."""
    temperature: float = field(default=0.8, metadata=bounds("temperature"))
    """Sampling temperature."""
    max_new_tokens: int = field(default=96, metadata=_POSITIVE)
    """Most tokens per output."""
    seed: int = field(default=0, metadata=bounds("seed"))
    """Seed of the samples."""
    batch_size: int = field(default=16, metadata=_POSITIVE)
    """Sources per generate call."""
    prompt_template: str | None = None
    """How a causal model sees a source (must contain {source}; default '{source}\\n')."""
    use_chat_template: bool = False
    """Prompt a causal model with its chat template."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class SelfLabelTagging:
    """How output words are tagged OK/BAD against the references."""

    TITLE: ClassVar[str] = "labelling"
    max_refs: int | None = field(default=None, metadata=_POSITIVE)
    """Tag against the first N references of each source (default: all)."""
    rule: str = field(default="union", metadata={"choices": RULES})
    """union: a word is OK when any reference's alignment matches it; best: only the closest
    reference's."""
    case_sensitive: bool = False
    """Compare words with case."""


@dataclass
class SelfLabelConfig:
    """The settings of ``sigmoid-head self-label``."""

    data: SelfLabelData
    model: SelfLabelModel = field(default_factory=SelfLabelModel)
    decoding: SelfLabelDecoding = field(default_factory=SelfLabelDecoding)
    tagging: SelfLabelTagging = field(default_factory=SelfLabelTagging)
