"""Hidden-state cache: time of epoch 1 (backbone runs, cache filled) vs later epochs.

Trains the head for three epochs over the same real micro-batches with
``PositionCache`` (what ``TrainConfig.cache_hidden`` uses), each step a full one
(loss, backward, fused AdamW step), for token_freq + avoid-dominant and for
token_freq + softmax t=2 + avoid-dominant. Each repetition starts from an empty cache;
the strategies alternate. Also reports the cache's memory.

    python benchmarks/cache_epochs.py [--quick] [--threads 1] [--epochs 3]
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import common
import torch

from sigmoid_head.data.batching import Collator
from sigmoid_head.dominant import DominantConfig
from sigmoid_head.model import SigmoidHeadModel
from sigmoid_head.negatives import NegativeSampler, SamplerConfig, count_target_tokens
from sigmoid_head.training.cache import PositionCache
from sigmoid_head.training.step import StepContext, micro_loss


def run_epochs(model, examples, batches, strategy, counts, epochs: int
               ) -> tuple[list[float], PositionCache]:
    """Seconds per epoch of cached training, from an empty cache."""
    bb = model.backbone
    sampler = NegativeSampler(SamplerConfig(strategy), model.config.vocab_size, counts)
    ctx = StepContext(model, model.head, sampler, DominantConfig(), nullcontext())
    collate = Collator(bb.tokenizer.pad_token_id, False)
    cache = PositionCache(bb, collate, DominantConfig())
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
    args = p.parse_args()
    if args.quick:
        args.batches, args.repeats, args.batch_size, args.epochs = 2, 1, 8, 2
    common.setup_threads(args)
    backbone, examples = common.load()
    model = SigmoidHeadModel.from_base(backbone)
    counts = count_target_tokens([e["labels"] for e in examples], model.config.vocab_size)
    batches = common.fixed_batches(examples, args.batches, args.batch_size)
    common.header(args, f"batches={len(batches)} epochs={args.epochs}")
    strategies = ("token_freq", "token_freq+softmax")
    results = {s: [] for s in strategies}
    cache = None
    for _ in range(args.repeats):
        for s in strategies:
            times, cache = run_epochs(model, examples, batches, s, counts, args.epochs)
            results[s].append(times)
    for s in strategies:
        per_epoch = [common.median([r[e] for r in results[s]]) for e in range(args.epochs)]
        later = common.median(per_epoch[1:])
        print(f"{s:20s} epoch seconds " + " ".join(f"{t:7.3f}" for t in per_epoch)
              + f"   epoch1 / later = {per_epoch[0] / later:6.1f}x")
    n_pos = sum(it.targets.numel() for it in cache.items.values())
    mib = cache.nbytes() / 2**20
    print(f"cache: {n_pos} positions, {mib:.2f} MiB in memory ({cache.nbytes() / n_pos:.0f} B per "
          f"position, hidden float32 {backbone.output_weight().shape[1] * 4} B); nothing on disk")


if __name__ == "__main__":
    main()
