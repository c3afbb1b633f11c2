"""Where the time of one training step and one scoring batch goes (torch.profiler).

Profiles a token_freq + softmax t=2 + avoid-dominant training step and a full scoring
pass (sigmoid, softmax, BoostedProb, entropy) on one real micro-batch, and prints the
operators with the most self CPU time (on CUDA: the most self device time, CUDA kernels
profiled too). ``--model`` / ``--device`` / ``--dtype`` choose the model as in every
benchmark (common.py: a random-init shape needs no embedded weights); ``--optimizer``
the update profiled.

    python benchmarks/profile_step.py [--threads 1] [--batch-size 16] [--rows 12]
        [--model olmo2-1b --device cuda] [--optimizer sparse_adamw]
"""

from __future__ import annotations

from contextlib import nullcontext

import common
import torch
from torch.profiler import ProfilerActivity, profile

from sigmoid_head.data.batching import Collator
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm.dominant import DominantConfig
from sigmoid_head.scoring.force_decode import score_examples
from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig, count_target_tokens
from sigmoid_head.training.optim import RowSparseAdamW
from sigmoid_head.training.step import StepContext, batch_loss


def main(argv: list[str] | None = None) -> None:
    p = common.parser(__doc__)
    p.add_argument("--rows", type=int, default=12, help="operators listed per profile")
    p.add_argument("--optimizer", choices=("adamw", "sparse_adamw"), default="adamw",
                   help="the step's update: dense fused AdamW (the default) or row-sparse AdamW")
    args = p.parse_args(argv)
    common.setup_threads(args)
    backbone, examples = common.load(None, args)  # --model: the embedded one or a random-init shape
    model = SigmoidHeadModel.from_base(backbone)
    counts = count_target_tokens([e["labels"] for e in examples], model.config.vocab_size)
    idx = common.fixed_batches(examples, 1, args.batch_size)[0]
    batch = Collator(backbone.tokenizer.pad_token_id, False)([examples[i] for i in idx])
    batch["trained_index"] = backbone.trained_index(batch["labels"])  # as the training loop does
    batch = common.to_device(batch, args.device)
    sampler = NegativeSampler(SamplerConfig("token_freq+softmax"), model.config.vocab_size, counts)
    ctx = StepContext(model, model.head, sampler, DominantConfig(), nullcontext())
    model.head.sparse = args.optimizer == "sparse_adamw"
    opt = (RowSparseAdamW(model.head.parameters(), lr=1e-4) if model.head.sparse else
           torch.optim.AdamW(model.head.parameters(), lr=1e-4, weight_decay=0.0, fused=True))

    def step():
        loss, n = batch_loss(ctx, batch, torch.Generator(device=backbone.device).manual_seed(0))
        (loss / n).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def score():
        score_examples(model, [examples[i] for i in idx], batch_size=args.batch_size,
                       progress=False)

    cuda = args.device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    key = "self_device_time_total" if cuda else "self_cpu_time_total"
    common.header(args, f"sequences={len(idx)} tokens={int(batch['attention_mask'].sum())} "
                        f"optimizer={args.optimizer}")
    for name, fn in ((f"training step (token_freq+softmax, avoid-dominant, {args.optimizer})", step),
                     ("full scoring", score)):
        fn()  # warm-up
        common.sync(args.device)
        with profile(activities=activities) as prof:
            fn()
            common.sync(args.device)
        print(f"\n== {name}")
        print(prof.key_averages().table(sort_by=key, row_limit=args.rows))


if __name__ == "__main__":
    main()
