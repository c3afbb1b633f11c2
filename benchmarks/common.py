"""Shared set-up of the benchmarks: the embedded SmolLM2-135M, real Bible batches, timing.

Every benchmark measures its variants side by side in one process run: the variants
are interleaved, repeated, and the median of each is reported, so that the ratios stay
meaningful on a machine whose cores are shared with other work. Absolute figures from
different runs are not comparable; the ratios are what the benchmarks are for.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "bible_sample" / "para_train.jsonl.gz"
PROMPT = "Rewrite this verse in modern English:\n{source}"
MAX_LENGTH = 192


def parser(doc: str) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark shares."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="few batches and repeats (a smoke run)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads (0 = torch's default)")
    p.add_argument("--repeats", type=int, default=3, help="interleaved repetitions per variant")
    p.add_argument("--batches", type=int, default=6, help="micro-batches per timed pass")
    p.add_argument("--batch-size", type=int, default=16, help="sequences per micro-batch")
    return p


def setup_threads(args: argparse.Namespace) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)


def load(n_examples: int | None = None):
    """(backbone, examples): the embedded model and tokenized KJV -> WEB chat examples."""
    from sigmoid_head import load_backbone
    from sigmoid_head.data.tokenize import load_examples

    backbone = load_backbone(None, device="cpu")
    examples = load_examples(DATA, backbone.tokenizer, is_encoder_decoder=False,
                             use_chat_template=True, prompt_template=PROMPT,
                             max_length=MAX_LENGTH)
    return backbone, examples[:n_examples] if n_examples else examples


def fixed_batches(examples: list[dict], n_batches: int, batch_size: int, seed: int = 0
                  ) -> list[list[int]]:
    """The first ``n_batches`` length-bucketed training micro-batches (as train.py builds them)."""
    from sigmoid_head.data.batching import example_length, make_batches

    lengths = [example_length(e) for e in examples]
    return make_batches(lengths, batch_size=batch_size, shuffle=True, seed=seed)[:n_batches]


def interleaved(variants: dict[str, Callable[[], object]], repeats: int, warmup: bool = True
                ) -> dict[str, list[float]]:
    """Wall time of each variant, run in turn ``repeats`` times (after one untimed warm-up)."""
    if warmup:
        for fn in variants.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def interleaved_items(variants: dict[str, Callable[[int], object]], n_items: int, repeats: int
                      ) -> dict[str, list[float]]:
    """Per-repeat total wall time of each variant, interleaved at the finest grain.

    Each variant is a function of an item (a batch) index; for every item all variants
    run back to back, in an order that rotates from item to item, so that they all see
    the same load on a shared machine. One untimed warm-up pass over item 0 first.
    """
    names = list(variants)
    for name in names:
        variants[name](0)
    totals: dict[str, list[float]] = {k: [] for k in names}
    for rep in range(repeats):
        acc = dict.fromkeys(names, 0.0)
        for i in range(n_items):
            shift = (rep * n_items + i) % len(names)
            for name in names[shift:] + names[:shift]:
                t0 = time.perf_counter()
                variants[name](i)
                acc[name] += time.perf_counter() - t0
        for name in names:
            totals[name].append(acc[name])
    return totals


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (Linux ``clear_refs``); False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mib() -> float:
    """Peak resident set size since the last reset (or process start), MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def header(args: argparse.Namespace, extra: str = "") -> None:
    print(f"threads={torch.get_num_threads()} torch={torch.__version__} quick={args.quick} "
          f"repeats={args.repeats} {extra}".rstrip(), flush=True)
