"""Where the time of one training step and one scoring batch goes (torch.profiler).

Profiles a token_freq + softmax t=2 + avoid-dominant training step and a full scoring
pass (sigmoid, softmax, BoostedProb, entropy) on one real micro-batch, and prints the
operators with the most self CPU time.

    python benchmarks/profile_step.py [--threads 1] [--batch-size 16] [--rows 12]
"""

from __future__ import annotations

from contextlib import nullcontext

import common
import torch
from torch.profiler import profile

from sigmoid_head.data.batching import Collator
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm.dominant import DominantConfig
from sigmoid_head.scoring.force_decode import score_examples
from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig, count_target_tokens
from sigmoid_head.training.step import StepContext, batch_loss


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--rows", type=int, default=12, help="operators listed per profile")
    args = p.parse_args()
    common.setup_threads(args)
    backbone, examples = common.load()
    model = SigmoidHeadModel.from_base(backbone)
    counts = count_target_tokens([e["labels"] for e in examples], model.config.vocab_size)
    idx = common.fixed_batches(examples, 1, args.batch_size)[0]
    batch = Collator(backbone.tokenizer.pad_token_id, False)([examples[i] for i in idx])
    sampler = NegativeSampler(SamplerConfig("token_freq+softmax"), model.config.vocab_size, counts)
    ctx = StepContext(model, model.head, sampler, DominantConfig(), nullcontext())
    opt = torch.optim.AdamW(model.head.parameters(), lr=1e-4, weight_decay=0.0, fused=True)

    def step():
        loss, n = batch_loss(ctx, batch, torch.Generator().manual_seed(0))
        (loss / n).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def score():
        score_examples(model, [examples[i] for i in idx], batch_size=args.batch_size,
                       progress=False)

    common.header(args, f"sequences={len(idx)} tokens={int(batch['attention_mask'].sum())}")
    for name, fn in (("training step (token_freq+softmax, avoid-dominant)", step),
                     ("full scoring", score)):
        fn()  # warm-up
        with profile() as prof:
            fn()
        print(f"\n== {name}")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))


if __name__ == "__main__":
    main()
