"""Training throughput and peak memory: ours vs forward-only vs the published approach.

All variants process the same real micro-batches (KJV -> WEB chat examples on the
embedded SmolLM2-135M-Instruct), interleaved and repeated in one run:

* ``body``: the frozen body alone (no LM head), no_grad;
* ``fwd_trained``: body + LM head at the trained positions only, no_grad (the floor
  the targets are measured against);
* ``fwd_all``: a plain Hugging Face forward, LM head at every position, no_grad;
* ``ours_tf``: a full training step, token_freq + avoid-dominant (dense fused AdamW, the
  shipped default; the LM logits for the dominant sets made a block at a time,
  ``profiles.LOGIT_BYTES``);
* ``ours_tf_onepass``: the same step with the logits of the whole micro-batch made at once
  (the step before issue 60's memory change: a (positions x V) float32 tensor);
* ``ours_tf_sparse``: the same step updating only the rows with a gradient
  (``--optimizer sparse_adamw``: sparse row gradients, :class:`RowSparseAdamW`);
* ``ours_tf_deferred``: the same step with ``--optimizer deferred_adamw`` (dense AdamW's
  head from the rows with a gradient: :class:`DeferredAdamW` and its read hook; its flush
  before each validation is not part of a step);
* ``ours_tf_no_update``: the same step without any optimizer update (loss and backward
  only: the bound for the head's own work);
* ``ours_mixed``: a full training step, token_freq + softmax t=2 + avoid-dominant;
* ``published_mixed``: the published approach re-implemented with its described
  faults (inputs padded to max length, LM logits at every padded position, a
  full-vocabulary top-1024 for dominant tokens, one [positions x vocab] distribution
  per strategy drawn with torch.multinomial), same loss and optimizer as ours.

``--memory`` runs each variant in its own child process and reports its peak RSS (on
CUDA: ``torch.cuda.max_memory_allocated``); the reference is a process holding the
model, the head and its AdamW state running the forward-only pass.

On another ``--model`` / ``--device`` (see common.py) the published variant is left out
(its [positions x vocab] tensors are what it is there to show, on the CPU).

    python benchmarks/train_throughput.py [--quick] [--threads 1] [--memory]
        [--model olmo2-1b --device cuda]
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import nullcontext

import common
import torch

from sigmoid_head.data.batching import Collator
from sigmoid_head.head.layer import sigmoid_bce
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm import profiles
from sigmoid_head.lm.dominant import DominantConfig
from sigmoid_head.training.deferred_adamw import DeferredAdamW
from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig, count_target_tokens
from sigmoid_head.training.optim import RowSparseAdamW
from sigmoid_head.training.step import StepContext, batch_loss

VARIANTS = ("body", "fwd_trained", "fwd_all", "ours_tf", "ours_tf_onepass", "ours_tf_sparse",
            "ours_tf_deferred",
            "ours_tf_no_update", "ours_mixed", "published_mixed")
UPDATES = ("adamw", "sparse_adamw", "deferred_adamw", "none")
"""How a step of ours updates the head: dense fused AdamW, row-sparse AdamW, deferred AdamW,
or not at all."""


def published_step(model: SigmoidHeadModel, opt, batch: dict, freq: torch.Tensor,
                   gen: torch.Generator, k: int = 10) -> None:
    """One step the published way (see the module docstring). freq: (V,) token_freq weights."""
    bb = model.backbone
    ids = torch.full((batch["input_ids"].shape[0], common.MAX_LENGTH), bb.tokenizer.pad_token_id)
    width = batch["input_ids"].shape[1]
    ids[:, :width] = batch["input_ids"]
    mask = torch.zeros_like(ids)
    mask[:, :width] = batch["attention_mask"]
    labels = torch.full_like(ids, -100)
    labels[:, :width] = batch["labels"]
    hidden, aligned = bb.final_hidden({"input_ids": ids, "attention_mask": mask, "labels": labels})
    with torch.no_grad():
        probs = torch.softmax(bb.lm_logits(hidden.flatten(0, 1)), -1)  # (B * T_max, V)
        keep = aligned.flatten() != -100
        p, targets, h = probs[keep], aligned.flatten()[keep], hidden.flatten(0, 1)[keep]  # (N, V)
        top_p, top_i = torch.topk(p, 1024, -1)  # full-vocabulary top-1024
        diff = top_p[:, :-1] - top_p[:, 1:]
        drop = (diff > 0.3 * top_p[:, :-1]) & (diff > 0.005)
        cut = torch.where(drop, torch.arange(1023), -1).amax(-1)  # (N,)
        dominant = torch.where(torch.arange(1024) <= cut[:, None], top_i, targets[:, None])
        dist_f = freq.float().expand(p.shape[0], -1).clone()  # (N, V) per strategy
        dist_f.scatter_(1, dominant, 0.0).scatter_(1, targets[:, None], 0.0)
        neg_f = torch.multinomial(dist_f, k // 2, generator=gen)  # (N, k/2)
        dist_s = torch.softmax(torch.log(p) / 2.0, -1)  # (N, V)
        dist_s.scatter_(1, dominant, 0.0).scatter_(1, targets[:, None], 0.0)
        dist_s.scatter_(1, neg_f, 0.0)
        neg_s = torch.multinomial(dist_s, k - k // 2, generator=gen)
    loss = sigmoid_bce(model.head, h, targets, torch.cat([neg_f, neg_s], 1)).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def build(args, n_examples=None):
    backbone, examples = common.load(n_examples, args)
    model = SigmoidHeadModel.from_base(backbone)
    counts = count_target_tokens([e["labels"] for e in examples], model.config.vocab_size)
    collate = Collator(backbone.tokenizer.pad_token_id, False)
    batches = [collate([examples[i] for i in b]) for b in
               common.fixed_batches(examples, args.batches, args.batch_size)]
    for b in batches:  # as the training loop does: the trained positions found on the host
        b["trained_index"] = backbone.trained_index(b["labels"])
    batches = [common.to_device(b, args.device) for b in batches]
    opt = torch.optim.AdamW(model.head.parameters(), lr=1e-4, weight_decay=0.0, fused=True)
    samplers = {s: NegativeSampler(SamplerConfig(s), model.config.vocab_size, counts)
                for s in ("token_freq", "token_freq+softmax")}
    return model, batches, opt, samplers, counts


def with_published(args) -> bool:
    """The published variant runs on the embedded model on the CPU only (module docstring)."""
    return args.model == "smollm2" and args.device == "cpu"


def step_fns(model, batches, opt, samplers, counts, published: bool) -> dict:
    """Variant name -> function of a batch index (one step or one forward pass); the
    published variant only with ``published`` (:func:`with_published`)."""
    bb = model.backbone
    dev = bb.device

    def ours(strategy, update="adamw"):
        ctx = StepContext(model, model.head, samplers[strategy], DominantConfig(), nullcontext())
        sparse = update in ("sparse_adamw", "deferred_adamw")
        # its own state (made on its first step), freed with the functions
        row_opt = (RowSparseAdamW(model.head.parameters(), lr=1e-4) if update == "sparse_adamw"
                   else DeferredAdamW(model.head.parameters(), lr=1e-4) if update == "deferred_adamw" else None)
        hook = row_opt.read_hook(model.head.row_parameters()) if update == "deferred_adamw" else None

        def run(i):
            model.head.sparse = sparse  # sparse row gradients for the row updates only
            model.head.before_read = hook  # deferred_adamw: rows brought up to date as they are read
            try:
                loss, n = batch_loss(ctx, batches[i], torch.Generator(device=dev).manual_seed(i))
                (loss / n).backward()
                if update != "none":
                    (row_opt or opt).step()
                opt.zero_grad(set_to_none=True)  # the same parameters: drops every variant's grads
            finally:
                model.head.sparse = False
                model.head.before_read = None
        return run

    def published_fn(i):
        published_step(model, opt, batches[i], counts, torch.Generator().manual_seed(i))

    def one_block(fn):
        """``fn`` with every micro-batch's LM logits made in one block."""
        def run(i):
            saved = profiles.LOGIT_ROWS, profiles.LOGIT_BYTES
            profiles.LOGIT_ROWS = profiles.LOGIT_BYTES = 1 << 62
            try:
                fn(i)
            finally:
                profiles.LOGIT_ROWS, profiles.LOGIT_BYTES = saved
        return run

    @torch.no_grad()
    def body(i):
        bb.final_hidden(batches[i])

    @torch.no_grad()
    def fwd_trained(i):
        bb.positions(batches[i], with_logits=True)

    @torch.no_grad()
    def fwd_all(i):
        b = batches[i]
        bb.model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], use_cache=False)

    fns = {"body": body, "fwd_trained": fwd_trained, "fwd_all": fwd_all,
           "ours_tf": ours("token_freq"),
           "ours_tf_onepass": one_block(ours("token_freq")),
           "ours_tf_sparse": ours("token_freq", "sparse_adamw"),
           "ours_tf_deferred": ours("token_freq", "deferred_adamw"),
           "ours_tf_no_update": ours("token_freq", "none"),
           "ours_mixed": ours("token_freq+softmax"), "published_mixed": published_fn}
    if not published:
        del fns["published_mixed"]
    return fns


def child(args) -> None:
    """Run one variant twice in this fresh process and print its peak RSS."""
    model, batches, opt, samplers, counts = build(args)
    for p in model.head.parameters():  # materialise the optimizer state up front
        p.grad = torch.zeros_like(p)
    opt.step()
    opt.zero_grad(set_to_none=True)
    fn = step_fns(model, batches, opt, samplers, counts, with_published(args))[
        "fwd_trained" if args.child == "fwd_head_opt" else args.child]
    import gc

    gc.collect()
    cuda = args.device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    elif not common.reset_peak_rss():
        print("warning: peak RSS could not be reset; it includes model loading", flush=True)
    for _ in range(2):
        for i in range(len(batches)):
            fn(i)
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else common.peak_rss_mib()
    print(f"PEAK {peak:.0f}", flush=True)


def memory_in_process(args, model, batches, opt, samplers, counts) -> None:
    """Peak memory of each variant in this process (CUDA: max allocated; CPU: peak RSS).

    The optimizer state already exists (the timed steps made it), so the reference
    ``fwd_head_opt`` is the forward pass next to the model, the head and that state.
    """
    import gc

    fns = step_fns(model, batches, opt, samplers, counts, published=False)  # not among its variants
    cuda = args.device.startswith("cuda")
    peaks = {}
    for variant in ("fwd_head_opt", "ours_tf", "ours_tf_onepass", "ours_mixed"):
        gc.collect()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        elif not common.reset_peak_rss():
            print("warning: peak RSS could not be reset", flush=True)
        for i in range(len(batches)):
            fns["fwd_trained" if variant == "fwd_head_opt" else variant](i)
        peaks[variant] = torch.cuda.max_memory_allocated() / 2**20 if cuda else common.peak_rss_mib()
    what = "CUDA max allocated" if cuda else "peak RSS (in one process)"
    print(f"\n{what} (MiB):")
    for name, mib in peaks.items():
        print(f"  {name:16s} {mib:8.0f}  {mib / peaks['fwd_head_opt']:5.2f}x "
              "forward+head+optimizer state")


def memory(args) -> None:
    base = [sys.executable, __file__, "--batches", str(args.batches), "--batch-size",
            str(args.batch_size), "--threads", str(args.threads), "--model", args.model,
            "--device", args.device, "--dtype", args.dtype]
    peaks = {}
    variants = ["fwd_head_opt", "ours_tf", "ours_tf_onepass", "ours_mixed"]
    if with_published(args):
        variants.append("published_mixed")
    for variant in variants:
        out = subprocess.run([*base, "--child", variant], capture_output=True, text=True, check=True)
        peaks[variant] = float(out.stdout.split("PEAK")[-1])
    ref = peaks["fwd_head_opt"]
    what = "CUDA max allocated" if args.device.startswith("cuda") else "peak RSS"
    print(f"\n{what} (MiB), each variant in a fresh process:")
    for name, mib in peaks.items():
        print(f"  {name:16s} {mib:8.0f}  {mib / ref:5.2f}x forward+head+optimizer state")


def main(argv: list[str] | None = None) -> None:
    p = common.parser(__doc__)
    p.add_argument("--memory", action="store_true", help="also measure peak RSS per variant")
    p.add_argument("--memory-in-process", action="store_true",
                   help="measure memory in this process (always on CUDA) instead of children")
    p.add_argument("--child", help="(internal) run one variant for --memory")
    args = p.parse_args(argv)
    if args.quick:
        args.batches, args.repeats, args.batch_size = 2, 1, 8
    common.setup_threads(args)
    if args.child:
        return child(args)
    model, batches, opt, samplers, counts = build(args)
    tokens = sum(int(b["attention_mask"].sum()) for b in batches)
    positions = sum(int((b["labels"][:, 1:] != -100).sum()) for b in batches)
    common.header(args, f"batches={len(batches)} tokens={tokens} trained_positions={positions}")
    times = common.interleaved_items(step_fns(model, batches, opt, samplers, counts, with_published(args)),
                                     len(batches), args.repeats, device=args.device)
    med = {k: common.median(v) for k, v in times.items()}
    print(f"\n{'variant':16s} {'tokens/s':>9s} {'vs fwd_trained':>15s} {'vs fwd_all':>11s}")
    for name in (v for v in VARIANTS if v in med):
        print(f"{name:16s} {tokens / med[name]:9.1f} {med['fwd_trained'] / med[name]:14.3f}x "
              f"{med['fwd_all'] / med[name]:10.3f}x")
    if "published_mixed" in med:
        print(f"\nours_mixed is {med['published_mixed'] / med['ours_mixed']:.2f}x faster than "
              "published_mixed end to end")
    if args.memory and (args.memory_in_process or args.device.startswith("cuda")):
        memory_in_process(args, model, batches, opt, samplers, counts)
    elif args.memory:
        memory(args)


if __name__ == "__main__":
    main()
