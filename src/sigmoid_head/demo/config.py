"""The settings of ``sigmoid-head demo`` (:func:`sigmoid_head.demo.run.run_demo`); the docstring
under each field is the option's help (:mod:`sigmoid_head.cli.options`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..safe.finite import bounds, check_fields

SMOKE = {"n_train": 24, "n_test": 6, "epochs": 1.0, "n_dev": 6, "n_val": 8}
"""The sizes of ``--smoke``."""


@dataclass
class DemoConfig:
    """What the demo trains on, for how long, and where its results go."""

    out_dir: str = "demo-output"
    """Where results go."""
    n_train: int = field(default=600, metadata=bounds(low=1, integer=True))
    """Training verse pairs."""
    n_test: int = field(default=100, metadata=bounds(low=1, integer=True))
    """Held-out verses to score."""
    epochs: float = field(default=12.0, metadata=bounds(low=0, low_open=True))
    """Training epochs; after the first they run from the hidden-state cache."""
    lr: float = field(default=1e-3, metadata=bounds(low=0, low_open=True))
    """Learning rate."""
    seed: int = field(default=0, metadata=bounds("seed"))
    """Seed."""
    model: str | None = None
    """Base model (default: the embedded SmolLM2)."""
    smoke: bool = False
    """A check that the installation works, not a result: 24 training verses, 1 epoch, 8
    validation, 6 test and 6 dev verses (overrides --n-train, --n-test, --epochs); about a
    minute on SmolLM2 once it is cached, seconds with --model a tiny model."""
    freq_smoothing: float = field(default=0.0, metadata=bounds(low=0))
    """Added to every token count of the token_freq sampler (default: 0, the paper)."""

    def __post_init__(self) -> None:
        check_fields(self)

    def run_kwargs(self) -> dict[str, Any]:
        """The keywords of :func:`sigmoid_head.demo.run.run_demo` (the ``--smoke`` sizes with
        ``smoke``)."""
        sizes = dict(SMOKE) if self.smoke else {"n_train": self.n_train, "n_test": self.n_test,
                                                "epochs": self.epochs}
        return {"out_dir": self.out_dir, "lr": self.lr, "seed": self.seed, "model": self.model,
                "freq_smoothing": self.freq_smoothing, **sizes}
