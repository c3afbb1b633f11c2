"""``sigmoid-head train``: one option per training setting, then :func:`sigmoid_head.train`.

The options and their help come from the TrainConfig dataclasses (each field's docstring).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..training.config import RENAMED, TrainConfig, flat_names
from .options import add_dataclass_options

DESCRIPTION = ("Train a Sigmoid Head on a frozen model's own training data (--train-file), on "
               "human-labelled translations (--labelled-file: WMT word tags, Google MQM, ESA/MQM "
               "spans), or on both. Rerun the same command after an interruption to continue "
               "from the last checkpoint.")


GROUP_TITLES = {"data": "data", "sampler": "negative sampling", "dominant": "dominant tokens",
                "optim": "optimisation", "loop": "model, loop and output"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    for group, cls in TrainConfig.GROUPS.items():
        names = {field: flat for (g, field), flat in RENAMED.items() if g == group}
        add_dataclass_options(p.add_argument_group(GROUP_TITLES[group]), cls, names=names)


def run(args: argparse.Namespace) -> int:
    from ..head.folder import CONFIG_NAME, WEIGHTS_NAME
    from ..safe.outputs import refuse_overlaps
    from ..training.loop import train

    names = flat_names()
    config = TrainConfig(**{k: v for k, v in vars(args).items() if k in names})
    refuse_overlaps({f"--output-dir {n}": Path(args.output_dir) / n for n in (CONFIG_NAME, WEIGHTS_NAME)},
                    {"--train-file": getattr(args, "train_file", None),
                     "--validation-file": getattr(args, "validation_file", None),
                     "--self-generated": getattr(args, "self_generated", None),
                     "--self-validation-file": getattr(args, "self_validation_file", None),
                     "--labelled-file": getattr(args, "labelled_file", None),
                     "--labelled-validation-file": getattr(args, "labelled_validation_file", None)},
                    {"--model": getattr(args, "model", None)})
    model = train(config)
    hist = model.config.training.get("history", [])
    if hist:
        print(f"validation loss {hist[0]['val_loss']:.4f} -> best "
              f"{model.config.training['best_val_loss']:.4f} (step {model.config.training['best_step']})")
    print(f"head saved to {config.output_dir}")
    return 0
