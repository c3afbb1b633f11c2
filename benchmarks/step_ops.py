"""Operators and host syncs of one training step, at 256, 1,024 and 4,096 trained positions.

On a GPU the step's speed is set by kernel launches and host-device syncs, not by
arithmetic, so this counts them instead of timing anything, and runs on a CPU too:

* every operator the step dispatches (a ``TorchDispatchMode`` counter, below autograd,
  so the backward's operators count as well);
* every operator that makes the host wait for the device: ``_local_scalar_dense``
  (``.item()``, ``int()``, ``bool()`` of a tensor), ``nonzero``, ``masked_select``,
  ``unique``, boolean-mask indexing, copies to the CPU, and the Python calls
  ``.item()``, ``.tolist()``, ``.cpu()``, ``.numpy()``, ``.nonzero()``, ``bool()``,
  ``int()``, ``float()`` of a tensor, counted where they are made.

One step is what ``sigmoid-head train`` does per micro-batch and optimizer step: the
frozen forward of a tiny random-init Llama-style model (hidden states and LM logits at
the trained positions), dominant sets, negatives (token_freq + avoid-dominant, and the
token_freq + softmax t=2 mixture), the BCE over gathered head rows, backward, the fused
AdamW step, and the one loss readout per optimizer step (counted on its own). The
batch is on the device before the step starts, as after the training loop's copy
(which computes the trained positions' index on the host, ``Backbone.trained_index``).
Syncs inside the Hugging Face model's own forward (transformers' check whether the
attention mask has padding, once per micro-batch whatever its size) are shown in their
own column and are not the step's: the library cannot remove them.

With ``--device-profile cuda`` (the default) the library takes its accelerator path
(fixed shapes, memory-budget slices) even on a CPU, which is what the counts are for.
The verdict: operators(4,096) / operators(256) <= 1.1 and zero syncs inside the step,
for every sampler; the exit status is 1 when either fails (checked for the cuda profile).
The verdict's counts make each micro-batch's LM logits in one block; by default the
token_freq step makes them :data:`~sigmoid_head.lm.profiles.LOGIT_BYTES` of float32 at a
time (its memory), so its operators grow by one block's per further block: a last line
counts the largest size's step with the default and prints that cost.

    python benchmarks/step_ops.py [--quick] [--device-profile cuda|cpu] [--vocab 16384]
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections import Counter
from contextlib import ExitStack, contextmanager, nullcontext

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm import profiles
from sigmoid_head.lm.dominant import DominantConfig
from sigmoid_head.lm.profiles import device_profile, logit_rows
from sigmoid_head.training.negatives import NegativeSampler, SamplerConfig
from sigmoid_head.training.optim import make_optimizer
from sigmoid_head.training.step import StepContext, batch_loss

train_mod = importlib.import_module("sigmoid_head.training.step")  # where the step looks these up
POSITIONS = (256, 1024, 4096)
TRAINED_PER_SEQUENCE = 128
PROMPT = 32
SYNC_OPS = {"_local_scalar_dense", "nonzero", "masked_select", "unique_consecutive",
            "_unique", "_unique2", "unique_dim", "is_nonzero", "equal", "allclose"}
PY_SYNCS = ("item", "tolist", "cpu", "numpy", "nonzero", "__bool__", "__int__", "__float__")


class Counting(TorchDispatchMode):
    """Counts dispatched operators, and the syncing ones, per phase."""

    def __init__(self) -> None:
        super().__init__()
        self.phase = "other"
        self.ops: Counter[str] = Counter()  # phase -> operators
        self.syncs: Counter[tuple[str, str]] = Counter()  # (phase, what) -> count

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops[self.phase] += 1
        name = func.overloadpacket.__name__
        if name in SYNC_OPS or _bool_index(name, args) or _to_host(name, args, kwargs):
            self.syncs[(self.phase, f"aten::{name}")] += 1
        return func(*args, **kwargs)


def _bool_index(name: str, args: tuple) -> bool:
    """Indexing with a boolean mask (its size depends on the data)."""
    if name not in ("index", "index_put", "index_put_") or len(args) < 2:
        return False
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)
               for i in args[1] or ())


def _to_host(name: str, args: tuple, kwargs: dict) -> bool:
    """A copy from an accelerator to the CPU."""
    if name == "_to_copy" and args and isinstance(args[0], torch.Tensor):
        return args[0].device.type != "cpu" and str(kwargs.get("device", "")) == "cpu"
    if name == "copy_" and len(args) > 1:
        return args[0].device.type == "cpu" and args[1].device.type != "cpu"
    return False


@contextmanager
def python_syncs(counter: Counting):
    """Count the Python-level syncing calls on tensors while the block runs."""
    originals = {m: getattr(torch.Tensor, m) for m in PY_SYNCS}

    def wrap(method: str):
        original = originals[method]

        def call(self, *a, **kw):
            counter.syncs[(counter.phase, f"Tensor.{method}")] += 1
            return original(self, *a, **kw)
        return call

    try:
        for m in PY_SYNCS:
            setattr(torch.Tensor, m, wrap(m))
        yield
    finally:
        for m, f in originals.items():
            setattr(torch.Tensor, m, f)


@contextmanager
def phase(counter: Counting, name: str):
    before, counter.phase = counter.phase, name
    try:
        yield
    finally:
        counter.phase = before


class PhasedSampler:
    """The step's sampler, with its calls counted as the "negatives" phase."""

    def __init__(self, sampler: NegativeSampler, counter: Counting) -> None:
        self.sampler, self.counter, self.config = sampler, counter, sampler.config

    def __call__(self, *args, **kwargs):
        with phase(self.counter, "negatives"):
            return self.sampler(*args, **kwargs)


def tiny_model(vocab: int, device: str) -> SigmoidHeadModel:
    """A random-init Llama-style model (hidden 64, 2 layers) with a fresh head."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from sigmoid_head.lm.backbone import Backbone

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab, hidden_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
                         max_position_embeddings=512, tie_word_embeddings=True)
    lm = LlamaForCausalLM(config).eval().to(device)
    return SigmoidHeadModel.from_base(Backbone(lm, tokenizer=None, name_or_path="tiny-llama"))


def make_batch(n_positions: int, vocab: int, device: str, seed: int = 0) -> dict[str, torch.Tensor]:
    """Sequences of a 32-token prompt and 128 trained tokens: ``n_positions`` in all."""
    gen = torch.Generator().manual_seed(seed)
    b, t = n_positions // TRAINED_PER_SEQUENCE, PROMPT + TRAINED_PER_SEQUENCE
    ids = torch.randint(4, vocab, (b, t), generator=gen)
    labels = ids.clone()
    labels[:, :PROMPT] = -100
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    batch["trained_index"] = (labels[:, 1:] != -100).nonzero().T  # on the host, as micro_loss
    return {k: v.to(device) for k, v in batch.items()}


def count_step(model: SigmoidHeadModel, strategy: str, batch: dict, counts: torch.Tensor,
               device: str) -> tuple[Counter, Counter]:
    """(operators per phase, syncs per (phase, what)) of one full training step."""
    counter = Counting()
    sampler = NegativeSampler(SamplerConfig(strategy), model.config.vocab_size, counts.to(device))
    ctx = StepContext(model, model.head, PhasedSampler(sampler, counter), DominantConfig(),
                      nullcontext())
    from sigmoid_head.training.config import TrainConfig

    opt = make_optimizer(TrainConfig(train_file="-", output_dir="-"), list(model.head.parameters()))
    bb = model.backbone
    positions, lsd, bce = bb.positions, train_mod.log_softmax_and_dominant, train_mod.sigmoid_bce
    dfh = train_mod.dominant_from_hidden

    def phased(fn, name):
        def call(*a, **kw):
            with phase(counter, name):
                return fn(*a, **kw)
        return call

    def step(gen):
        loss_sum, n = batch_loss(ctx, batch, gen)
        with phase(counter, "backward"):
            loss_sum.backward()
        with phase(counter, "optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        return loss_sum

    with ExitStack() as stack:
        bb.positions = phased(positions, "forward")
        bb.model.forward = phased(bb.model.forward, "hf_model")  # the frozen HF model itself
        stack.callback(delattr, bb.model, "forward")
        train_mod.log_softmax_and_dominant = phased(lsd, "dominant")
        train_mod.dominant_from_hidden = phased(dfh, "dominant")
        stack.callback(setattr, train_mod, "dominant_from_hidden", dfh)
        train_mod.sigmoid_bce = phased(bce, "loss")
        stack.callback(setattr, train_mod, "sigmoid_bce", bce)
        stack.callback(setattr, train_mod, "log_softmax_and_dominant", lsd)
        stack.callback(delattr, bb, "positions")
        step(torch.Generator(device=device).manual_seed(0))  # warm-up: lazy state, optimizer
        gen = torch.Generator(device=device).manual_seed(1)
        with counter, python_syncs(counter):
            loss_sum = step(gen)
            with phase(counter, "readout"):
                float(loss_sum.detach())  # the one loss readout per optimizer step
    return counter.ops, counter.syncs


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="a smaller vocabulary (4,096)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--device-profile", choices=("cuda", "cpu"), default="cuda",
                   help="the library path to count (cuda: fixed shapes, budget-sized slices)")
    p.add_argument("--vocab", type=int, default=16384)
    p.add_argument("--positions", type=int, nargs="+", default=list(POSITIONS))
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0 = default)")
    args = p.parse_args(argv)
    if args.quick:
        args.vocab = 4096
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = tiny_model(args.vocab, args.device)
    counts = torch.rand(args.vocab, generator=torch.Generator().manual_seed(0)).double() + 0.1
    print(f"torch={torch.__version__} device={args.device} profile={args.device_profile} "
          f"vocab={args.vocab} (tiny random-init Llama, hidden 64, 2 layers)")
    ok = True
    for strategy in ("token_freq", "token_freq+softmax"):
        rows = {}
        with device_profile(args.device_profile), one_logit_block():
            for n in args.positions:
                rows[n] = count_step(model, strategy, make_batch(n, args.vocab, args.device),
                                     counts, args.device)
        ok &= report(strategy, rows, args)
        if strategy == "token_freq":
            report_blocks(model, rows, counts, args)
    verdict = "PASS" if ok else "FAIL"
    enforced = args.device_profile == "cuda"
    print(f"\nverdict: {verdict}" + ("" if enforced else " (not enforced for the cpu profile)"))
    return 0 if ok or not enforced else 1


@contextmanager
def one_logit_block():
    """Every micro-batch's LM logits made in one block (the verdict's counts)."""
    saved = profiles.LOGIT_ROWS, profiles.LOGIT_BYTES
    profiles.LOGIT_ROWS = profiles.LOGIT_BYTES = 1 << 62
    try:
        yield
    finally:
        profiles.LOGIT_ROWS, profiles.LOGIT_BYTES = saved


def report_blocks(model, rows: dict[int, tuple[Counter, Counter]], counts, args) -> None:
    """The largest size's token_freq step again with the default block budget."""
    n = max(rows)
    with device_profile(args.device_profile):
        ops, _ = count_step(model, "token_freq", make_batch(n, args.vocab, args.device), counts,
                            args.device)
        blocks = -(-n // logit_rows(args.vocab, args.device))
    one = sum(c for ph, c in rows[n][0].items() if ph != "readout")
    total = sum(c for ph, c in ops.items() if ph != "readout")
    per = (total - one) / (blocks - 1) if blocks > 1 else 0.0
    print(f"    with the default LOGIT_BYTES ({profiles.LOGIT_BYTES >> 20} MiB of float32 logits "
          f"per block) the {n:,} positions take {blocks} block(s): {total} operators, "
          f"{per:.0f} per further block")


def report(strategy: str, rows: dict[int, tuple[Counter, Counter]], args) -> bool:
    """Print one sampler's table; True when the ratio and sync checks pass."""
    phases = ["hf_model", "forward", "dominant", "negatives", "loss", "backward", "optimizer"]
    print(f"\n== {strategy} + avoid-dominant: operators per phase, syncing calls")
    print(f"{'positions':>9s} " + " ".join(f"{p:>9s}" for p in phases)
          + f" {'total':>6s} {'syncs':>5s} {'in HF':>5s} {'readout':>7s}")
    total, inside = {}, {}
    for n, (ops, syncs) in rows.items():
        total[n] = sum(c for ph, c in ops.items() if ph != "readout")
        by = Counter()
        for (ph, _), c in syncs.items():
            by[ph if ph in ("hf_model", "readout") else "step"] += c
        inside[n] = by["step"]
        print(f"{n:9d} " + " ".join(f"{ops[p]:9d}" for p in phases)
              + f" {total[n]:6d} {by['step']:5d} {by['hf_model']:5d} {by['readout']:7d}")
    lo, hi = min(rows), max(rows)
    for (ph, what), c in sorted(rows[hi][1].items()):
        print(f"    at {hi} positions, {ph}: {what} x{c}")
    ratio = total[hi] / total[lo]
    worst = max(inside.values())
    print(f"ops({hi}) / ops({lo}) = {ratio:.3f} (must be <= 1.1); "
          f"syncing calls inside the step: {worst} (must be 0)")
    return ratio <= 1.1 and worst == 0


if __name__ == "__main__":
    sys.exit(main())
