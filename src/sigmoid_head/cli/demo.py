"""``sigmoid-head demo``: parses the options and calls :func:`sigmoid_head.demo.run_demo`."""

from __future__ import annotations

import argparse

from .. import demo

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
    p.add_argument("--out-dir", default="demo-output", help="where results go (default: demo-output)")
    p.add_argument("--n-train", type=int, default=600, help="training verse pairs (default: 600)")
    p.add_argument("--n-test", type=int, default=100, help="held-out verses to score (default: 100)")
    p.add_argument("--epochs", type=float, default=12.0,
                   help="training epochs; after the first they run from the hidden-state cache (default: 12)")
    p.add_argument("--lr", type=float, default=1e-3, help="learning rate (default: 1e-3)")
    p.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    p.add_argument("--model", default=None, help="base model (default: the embedded SmolLM2)")
    p.add_argument("--smoke", action="store_true",
                   help="a check that the installation works, not a result: 24 training verses, "
                   "1 epoch, 8 validation, 6 test and 6 dev verses (overrides --n-train, "
                   "--n-test, --epochs); about a minute on SmolLM2 once it is cached, seconds "
                   "with --model a tiny model")
    p.add_argument("--freq-smoothing", type=float, default=0.0,
                   help="added to every token count of the token_freq sampler (default: 0, the paper)")


SMOKE = {"n_train": 24, "n_test": 6, "epochs": 1.0, "n_dev": 6, "n_val": 8}
"""The sizes of ``--smoke``."""


def run(args: argparse.Namespace) -> int:
    sizes = dict(SMOKE) if args.smoke else {"n_train": args.n_train, "n_test": args.n_test,
                                            "epochs": args.epochs}
    demo.run_demo(args.out_dir, lr=args.lr, seed=args.seed, model=args.model,
                  freq_smoothing=args.freq_smoothing, **sizes)
    return 0
