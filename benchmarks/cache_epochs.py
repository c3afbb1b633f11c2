"""Hidden-state cache: time of epoch 1 (backbone runs, cache filled) vs later epochs.

Trains the head for three epochs over the same real micro-batches with
``PositionCache`` (what ``TrainConfig.cache_hidden`` uses), each step a full one
(loss, backward, fused AdamW step), for token_freq + avoid-dominant and for
token_freq + softmax t=2 + avoid-dominant. ``--disk`` adds token_freq + avoid-dominant
with ``DiskPositionCache`` (what ``cache_dir`` uses: memory-mapped shards in a temporary
folder, bfloat16). Each repetition starts from an empty cache; the variants alternate.
Also reports the cache's memory (and bytes on disk).

    python benchmarks/cache_epochs.py [--quick] [--threads 1] [--epochs 3] [--disk]
"""

from __future__ import annotations

import tempfile
import time
from contextlib import nullcontext

import common
import torch

from sigmoid_head.data.batching import Collator
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm.dominant import DominantConfig
from sigmoid_head.training.cache import PositionCache
from sigmoid_head.training.disk_cache import DiskPositionCache
from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig, count_target_tokens
from sigmoid_head.training.step import StepContext, micro_loss, trained_positions


def run_epochs(model, examples, batches, strategy, counts, epochs: int, disk: str | None = None
               ) -> tuple[list[float], PositionCache | DiskPositionCache]:
    """Seconds per epoch of cached training, from an empty cache (on disk in ``disk``)."""
    bb = model.backbone
    sampler = NegativeSampler(SamplerConfig(strategy), model.config.vocab_size, counts)
    ctx = StepContext(model, model.head, sampler, DominantConfig(), nullcontext())
    collate = Collator(bb.tokenizer.pad_token_id, False)
    if disk is None:
        cache = PositionCache(bb, collate, DominantConfig())
    else:
        used = {i for mb in batches for i in mb}  # rows for these examples only
        n_pos = [trained_positions(e, False) if i in used else 0 for i, e in enumerate(examples)]
        cache = DiskPositionCache(bb, collate, DominantConfig(), disk, n_pos)
    opt = torch.optim.AdamW(model.head.parameters(), lr=1e-4, weight_decay=0.0, fused=True)
    out = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        for i, mb in enumerate(batches):
            loss, n = micro_loss(ctx, mb, examples, collate, torch.Generator().manual_seed(i), cache)
            (loss / n).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        out.append(time.perf_counter() - t0)
    return out, cache


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--disk", action="store_true", help="also token_freq with the disk cache")
    args = p.parse_args()
    if args.quick:
        args.batches, args.repeats, args.batch_size, args.epochs = 2, 1, 8, 2
    common.setup_threads(args)
    backbone, examples = common.load()
    model = SigmoidHeadModel.from_base(backbone)
    counts = count_target_tokens([e["labels"] for e in examples], model.config.vocab_size)
    batches = common.fixed_batches(examples, args.batches, args.batch_size)
    common.header(args, f"batches={len(batches)} epochs={args.epochs}")
    variants = ["token_freq", "token_freq+softmax"] + (["token_freq (disk)"] if args.disk else [])
    results = {v: [] for v in variants}
    caches = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for v in variants:
                disk = f"{tmp}/cache{r}" if v.endswith("(disk)") else None
                times, caches[v] = run_epochs(model, examples, batches, v.split()[0], counts,
                                              args.epochs, disk)
                results[v].append(times)
        for v in variants:
            per_epoch = [common.median([r[e] for r in results[v]]) for e in range(args.epochs)]
            later = common.median(per_epoch[1:])
            print(f"{v:20s} epoch seconds " + " ".join(f"{t:7.3f}" for t in per_epoch)
                  + f"   epoch1 / later = {per_epoch[0] / later:6.1f}x")
        cache = caches["token_freq"]
        n_pos = sum(it.targets.numel() for it in cache.items.values())
        mib = cache.nbytes() / 2**20
        print(f"cache: {n_pos} positions, {mib:.2f} MiB in memory ({cache.nbytes() / n_pos:.0f} B "
              f"per position, hidden float32 {backbone.output_weight().shape[1] * 4} B)")
        if args.disk:
            disk = caches["token_freq (disk)"]
            print(f"disk cache: {disk.nbytes() / 2**20:.2f} MiB on disk "
                  f"({disk.nbytes() / n_pos:.0f} B per position, bfloat16 hidden states)")

if __name__ == "__main__":
    main()
