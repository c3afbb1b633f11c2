"""Scoring on the CPU in float32 against bfloat16 (and float16), side by side in one run.

The same real examples (KJV -> WEB chat candidates) are scored by ``score_examples`` with
the embedded SmolLM2-135M loaded in each dtype; the variants are interleaved and the
median of each reported, with the largest difference of the sequence log-scores against
float32. This is the measurement behind ``--dtype auto`` = float32 on the CPU
(docs/performance.md). A half dtype is run only where the child-process probe of
:mod:`sigmoid_head.lm.cpu_precision` says this CPU runs it; on a CPU that faults unless
``ONEDNN_MAX_CPU_ISA`` is set, run the script again with that variable set.

    python benchmarks/cpu_dtype.py [--quick] [--threads 1] [--dtypes float32,bfloat16,float16]
"""

from __future__ import annotations

import common

from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm.backbone import load_backbone
from sigmoid_head.lm.cpu_precision import probe
from sigmoid_head.scoring.force_decode import length_batches, score_examples


def _models(dtypes: list[str], float32_backbone) -> dict[str, SigmoidHeadModel]:
    """One head model per dtype the CPU runs (the head itself stays float32)."""
    models = {}
    for name in dtypes:
        if name == "float32":
            models[name] = SigmoidHeadModel.from_base(float32_backbone)
        elif not (verdict := probe(name)).ok:
            print(f"{name}: skipped, this CPU cannot run it ({verdict.detail})")
        else:
            models[name] = SigmoidHeadModel.from_base(load_backbone(None, dtype=name, device="cpu"))
    return models


def main(argv: list[str] | None = None) -> None:
    p = common.parser(__doc__)
    p.add_argument("--dtypes", default="float32,bfloat16,float16", help="comma-separated")
    args = p.parse_args(argv)
    if args.quick:
        args.batches, args.repeats, args.batch_size = 2, 1, 8
    common.setup_threads(args)
    args.dtype = "float32"
    backbone, examples = common.load(None, args)
    models = _models(args.dtypes.split(","), backbone)
    examples = examples[: args.batches * args.batch_size]
    groups = length_batches(examples, args.batch_size)
    tokens = sum(len(e["input_ids"]) for e in examples)
    results: dict[str, list] = {}

    def runner(name: str):
        def run(i: int) -> None:
            scored = score_examples(models[name], [examples[j] for j in groups[i]],
                                    batch_size=args.batch_size, progress=False)
            results.setdefault(name, [None] * len(groups))[i] = scored
        return run

    common.header(args, f"examples={len(examples)} tokens={tokens} dtypes={','.join(models)}")
    med = {k: common.median(v) for k, v in common.interleaved_items(
        {name: runner(name) for name in models}, len(groups), args.repeats,
        device="cpu").items()}
    base = med.get("float32")
    print(f"\n{'dtype':10s} {'tokens/s':>9s} {'vs float32':>11s} {'max |d log softmax|':>20s}")
    for name, seconds in med.items():
        diff = _max_diff(results["float32"], results[name]) if "float32" in results else float("nan")
        ratio = base / seconds if base else float("nan")
        print(f"{name:10s} {tokens / seconds:9.0f} {ratio:10.2f}x {diff:20.4f}")


def _max_diff(ref: list, other: list) -> float:
    """Largest |difference| of the per-sequence summed softmax log-probabilities."""
    worst = 0.0
    for a_batch, b_batch in zip(ref, other, strict=True):
        for a, b in zip(a_batch, b_batch, strict=True):
            worst = max(worst, abs(float(sum(a.softmax_log)) - float(sum(b.softmax_log))))
    return worst


if __name__ == "__main__":
    main()
