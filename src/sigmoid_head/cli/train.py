"""``sigmoid-head train``: one option per training setting, then :func:`sigmoid_head.train`.

The options and their help come from the TrainConfig dataclasses (each field's docstring).
"""

from __future__ import annotations

import argparse
import dataclasses

from ..training.config import TrainConfig
from .options import add_dataclass_options

DESCRIPTION = ("Train a Sigmoid Head on a frozen model's own training data. Rerun the same "
               "command after an interruption to continue from the last checkpoint.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_dataclass_options(p, TrainConfig)


def run(args: argparse.Namespace) -> int:
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
