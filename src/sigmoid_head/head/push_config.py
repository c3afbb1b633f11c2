"""The settings of ``sigmoid-head push`` (an upload by :func:`sigmoid_head.head.hub.push_folder`,
or the model card alone); the docstring under each field is the option's help
(:mod:`sigmoid_head.cli.options`). The head folder and the repository are the command's
positional arguments."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PushConfig:
    """How a head is uploaded, and what its model card says."""

    private: bool | None = None
    """Create the repository as private (--no-private: public; an existing repository keeps
    its visibility; default: the Hub's default)."""
    token: str | None = None
    """Hub token (default: HF_TOKEN or the stored login)."""
    revision: str | None = None
    """Branch to commit to (default: main)."""
    commit_message: str | None = None
    """Commit message (default: "Upload sigmoid head")."""
    evaluation: str | None = None
    """Evaluation table for the card: results.csv from `evaluate --out-dir`, a .json
    ({method: {metric: value}} or rows) or a .md file (default: none)."""
    license: str | None = None
    """The card's license id, e.g. apache-2.0, mit, other (default: the base model's where it
    is known: the embedded model's, a local checkpoint's README.md, the Hub card; else the
    card has none)."""
    card_only: bool = False
    """Print the model card and upload nothing."""
