"""``sigmoid-head demo``: parses the options (generated from
:class:`sigmoid_head.demo.config.DemoConfig`) and calls :func:`sigmoid_head.demo.run.run_demo`."""

from __future__ import annotations

import argparse

from ..demo.config import SMOKE, DemoConfig  # noqa: F401 - SMOKE: the sizes of --smoke, as before
from .options import add_settings, settings_from

DESCRIPTION = (
    "Train a Sigmoid Head on SmolLM2-135M-Instruct and compare it with the softmax and "
    "BoostedProb. The task: rewriting King James verses into modern English (World English "
    "Bible), from the public-domain sample shipped inside the package. Held-out verses from "
    "books never seen in training are force-decoded with three candidates each (the "
    "reference, the next verse, the reference with one word swapped), and every score is "
    "compared with those labels (ROC-AUC, BCE, Pearson, bootstrap CIs). Then calibration "
    "and error spans fitted on dev verses, figures (with the plots extra), a token page "
    "(tokens.html) and two generations streamed with their token scores. One line per "
    "stage says what runs; the head folder keeps the head only (no training checkpoints)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_settings(p, DemoConfig)


def run(args: argparse.Namespace) -> int:
    from ..demo import run as demo

    config = settings_from(DemoConfig, vars(args))
    demo.run_demo(**config.run_kwargs())  # type: ignore[attr-defined]
    return 0
