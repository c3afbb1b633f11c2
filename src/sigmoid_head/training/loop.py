"""Train a Sigmoid Head on a frozen LM: one readable loop on Accelerate.

The same code runs on CPU, one GPU, or many GPUs/nodes (``accelerate launch`` or
``torchrun``). Determinism does not depend on the number of processes: every process
computes the same global list of micro-batches per epoch (from the seed), an optimizer
step consumes ``grad_accum x world_size`` of them, and the loss is normalised by the
number of trained positions in the whole step. Negatives are drawn from a generator
seeded by (seed, step, micro-batch), so a resumed run and a run on another number of
processes draw exactly the same negatives.
"""

from __future__ import annotations

import logging
import math
import random
import time
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from ..backbone import DTYPES, Positions
from ..data.batching import IGNORE_INDEX, Collator, example_length, make_batches
from ..data.tokenize import load_examples
from ..dominant import DominantConfig, log_softmax_and_dominant
from ..head import sigmoid_bce
from ..model import SigmoidHeadModel
from ..negatives import NegativeSampler, count_target_tokens
from .cache import PositionCache
from .checkpoint import TrainState, load_checkpoint, save_checkpoint
from .config import TrainConfig

logger = logging.getLogger(__name__)


@dataclass
class StepContext:
    """What a loss computation needs besides the batch."""

    model: SigmoidHeadModel
    head: torch.nn.Module  # the (possibly DDP-wrapped) head
    sampler: NegativeSampler
    dominant: DominantConfig
    autocast: object


def _seeded(seed: int, *parts: int, device: torch.device) -> torch.Generator:
    """A generator whose state depends only on (seed, parts)."""
    value = seed
    for p in parts:
        value = (value * 1_000_003 + p + 1) % (2**62)
    return torch.Generator(device=device).manual_seed(value)


def batch_loss(ctx: StepContext, batch: dict[str, torch.Tensor], gen: torch.Generator
               ) -> tuple[torch.Tensor, int]:
    """Summed per-position loss of one collated micro-batch and its number of trained positions.

    Phases: frozen forward (hidden states + LM logits at trained positions only) ->
    dominant sets -> negatives -> BCE over gathered head rows.
    """
    cfg = ctx.sampler.config
    with ctx.autocast:
        pos = ctx.model.backbone.positions(batch, with_logits=cfg.avoid_dominant or cfg.needs_logits)
    dominant_ids = None
    if pos.logits is not None:
        # one log-softmax serves both the dominant sets and (shift-invariant) softmax sampling
        pos.logits, dominant_ids = log_softmax_and_dominant(  # (N, V), (N, M)
            pos.logits, ctx.dominant, with_dominant=cfg.avoid_dominant)
    return head_loss(ctx, pos, dominant_ids, gen)


def head_loss(ctx: StepContext, pos: Positions, dominant_ids: torch.Tensor | None,
              gen: torch.Generator) -> tuple[torch.Tensor, int]:
    """Negatives, then the summed BCE over gathered head rows, for N positions."""
    if ctx.sampler.config.needs_logits and pos.logits is None:  # cached positions
        with ctx.autocast:
            pos.logits, _ = log_softmax_and_dominant(ctx.model.backbone.lm_logits(pos.hidden),
                                                     with_dominant=False)  # (N, V)
    negatives = ctx.sampler(pos.targets, gen, dominant_ids, pos.logits)  # (N, k)
    loss = sigmoid_bce(ctx.head, pos.hidden, pos.targets, negatives)  # (N,)
    return loss.sum(), int(pos.targets.numel())


def micro_loss(ctx: StepContext, indices: list[int], examples: list[dict], collate: Collator,
               gen: torch.Generator, cache: PositionCache | None) -> tuple[torch.Tensor, int]:
    """Loss of the micro-batch ``indices``: from the hidden-state cache when there is one."""
    if cache is None:
        batch = collate([examples[j] for j in indices])
        return batch_loss(ctx, {k: v.to(ctx.model.backbone.device) for k, v in batch.items()}, gen)
    cache.fill(indices, examples, ctx.autocast)
    pos, dominant_ids = cache.positions(indices)
    return head_loss(ctx, pos, dominant_ids if ctx.sampler.config.avoid_dominant else None, gen)


@torch.no_grad()
def evaluate(ctx: StepContext, batches: list[list[int]], examples: list[dict], collate: Collator,
             seed: int, accelerator, cache: PositionCache | None = None) -> float:
    """Mean validation loss; negatives come from fixed seeds, so every evaluation is comparable."""
    total = torch.zeros(2, dtype=torch.float64, device=accelerator.device)
    rank, world = accelerator.process_index, accelerator.num_processes
    for i in range(rank, len(batches), world):
        gen = _seeded(seed, -1, i, device=accelerator.device)
        loss, n = micro_loss(ctx, batches[i], examples, collate, gen, cache)
        total += torch.tensor([loss.item(), n], dtype=torch.float64, device=accelerator.device)
    total = accelerator.reduce(total, reduction="sum")
    return float(total[0] / total[1].clamp(min=1))


def trained_positions(example: dict, is_encoder_decoder: bool) -> int:
    """How many positions of an example are trained (a causal model never predicts token 0)."""
    labels = example["labels"] if is_encoder_decoder else example["labels"][1:]
    return sum(1 for t in labels if t != IGNORE_INDEX)


def make_optimizer(config: TrainConfig, params: list[torch.nn.Parameter]) -> torch.optim.Optimizer:
    """SparseAdam, or AdamW with its fused kernel where the parameters allow it.

    The head is a dense (V, d) matrix, so every AdamW step touches all V rows; the fused
    kernel does that in one pass per tensor (about 6x faster than the default on CPU).
    """
    if config.optimizer == "sparse_adam":
        return torch.optim.SparseAdam(params, lr=config.lr)
    fused = all(p.device.type in ("cpu", "cuda") and p.dtype in (torch.float32, torch.bfloat16,
                                                                   torch.float16) for p in params)
    return torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay,
                             fused=fused or None)


def cosine_with_warmup(optimizer: torch.optim.Optimizer, warmup: int, total: int
                       ) -> torch.optim.lr_scheduler.LambdaLR:
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _split_validation(config: TrainConfig, train: list[dict]) -> tuple[list[dict], list[dict]]:
    if config.validation_fraction <= 0 or len(train) < 2:
        return train, []
    order = list(range(len(train)))
    random.Random(config.seed).shuffle(order)
    n_val = min(config.max_validation_examples, max(1, int(len(train) * config.validation_fraction)))
    held = set(order[:n_val])
    return [e for i, e in enumerate(train) if i not in held], [train[i] for i in order[:n_val]]


def _load_data(config: TrainConfig, model: SigmoidHeadModel) -> tuple[list[dict], list[dict]]:
    kw = {"is_encoder_decoder": model.backbone.is_encoder_decoder, "task": config.task,
          "max_length": config.max_length, "prompt_template": config.prompt_template,
          "use_chat_template": config.use_chat_template}
    train = load_examples(config.train_file, model.tokenizer, **kw)
    if config.validation_file:
        val = load_examples(config.validation_file, model.tokenizer, **kw)
    else:
        train, val = _split_validation(config, train)
    if not train:
        raise ValueError(f"{config.train_file} yielded no trainable examples")
    return train, val[: config.max_validation_examples]


def _batches(config: TrainConfig, examples: list[dict], shuffle: bool, epoch: int) -> list[list[int]]:
    lengths = [example_length(e) for e in examples]
    return make_batches(lengths, batch_size=config.batch_size, max_tokens=config.max_tokens,
                        shuffle=shuffle, seed=config.seed, epoch=epoch)


def _caches(config: TrainConfig, model: SigmoidHeadModel, collate: Collator
            ) -> tuple[PositionCache | None, PositionCache | None]:
    """Train and validation hidden-state caches, when asked for."""
    if not config.cache_hidden:
        return None, None
    dominant = config.dominant_config() if config.avoid_dominant else None
    dtype = DTYPES[config.cache_dtype]
    return (PositionCache(model.backbone, collate, dominant, dtype),
            PositionCache(model.backbone, collate, dominant, dtype))


def _autocast(accelerator, mode: str):
    if mode == "auto":
        mode = "bf16" if accelerator.device.type == "cuda" and torch.cuda.is_bf16_supported() else "no"
    if mode == "no":
        return torch.autocast(accelerator.device.type, enabled=False)
    dtype = torch.bfloat16 if mode == "bf16" else torch.float16
    return torch.autocast(accelerator.device.type, dtype=dtype)


def train(config: TrainConfig, model: SigmoidHeadModel | None = None,
          caches: tuple[PositionCache | None, PositionCache | None] | None = None
          ) -> SigmoidHeadModel:
    """Train a Sigmoid Head and save it (and its best checkpoint) under ``config.output_dir``.

    Args:
        config: every training setting.
        model: an already loaded base model with a fresh head (default: load
            ``config.model``); lets experiments train several heads on one loaded backbone.
        caches: (train, validation) hidden-state caches to reuse across runs on the same
            data and backbone (with ``cache_hidden``); filled on first use.

    Returns:
        The SigmoidHeadModel holding the selected head (best validation loss when
        validation data exists, else the last one).
    """
    from accelerate import Accelerator
    from tqdm.auto import tqdm

    # -- setup: processes, frozen model, fresh head, data, sampler --------------------
    accelerator = Accelerator(cpu=config.device == "cpu" or not torch.cuda.is_available())
    if config.optimizer == "sparse_adam" and accelerator.num_processes > 1:
        raise ValueError("sparse_adam works in a single process only (DistributedDataParallel "
                         "cannot all-reduce sparse gradients); use --optimizer adamw")
    torch.manual_seed(config.seed)
    if model is None:
        model = SigmoidHeadModel.from_base(config.model, bias=config.bias, dtype=config.dtype,
                                           device=str(accelerator.device))
    model.head.sparse = config.optimizer == "sparse_adam"
    train_ex, val_ex = _load_data(config, model)
    model.token_counts = count_target_tokens([e["labels"] for e in train_ex], model.config.vocab_size)
    sampler = NegativeSampler(config.sampler_config(), model.config.vocab_size, model.token_counts)
    collate = Collator(model.tokenizer.pad_token_id if model.tokenizer.pad_token_id is not None
                       else model.tokenizer.eos_token_id, model.backbone.is_encoder_decoder)

    # -- schedule: optimizer steps per epoch, total steps, warmup ------------------------
    per_step = config.grad_accum * accelerator.num_processes
    steps_per_epoch = max(1, len(_batches(config, train_ex, True, 0)) // per_step)
    total = math.ceil(steps_per_epoch * config.epochs)
    if config.max_steps:
        total = min(total, config.max_steps)
    optimizer = make_optimizer(config, [p for p in model.head.parameters()])
    scheduler = cosine_with_warmup(optimizer, int(config.warmup_ratio * total), total)
    head, optimizer = accelerator.prepare(model.head, optimizer)
    ctx = StepContext(model, head, sampler, config.dominant_config(),
                      _autocast(accelerator, config.mixed_precision))

    out = Path(config.output_dir)
    state = TrainState()
    if config.resume and (out / "checkpoint").is_dir():
        state = load_checkpoint(out / "checkpoint", config, model.head, optimizer, scheduler)
        accelerator.print(f"resuming from step {state.step} (epoch {state.epoch})")
    val_batches = _batches(config, val_ex, False, 0) if val_ex else []
    train_cache, val_cache = caches if caches is not None else _caches(config, model, collate)
    eval_every = config.eval_every or steps_per_epoch
    save_every = config.save_every or eval_every

    if val_batches and state.step == 0 and not state.history:  # the untrained head's loss
        _validate(ctx, config, state, val_batches, val_ex, collate, accelerator, model,
                          val_cache)

    # -- the loop -----------------------------------------------------------------------
    bar = tqdm(total=total, initial=state.step, disable=not (config.progress and accelerator.is_main_process),
               desc="train", dynamic_ncols=True)
    n_pos = [trained_positions(e, model.backbone.is_encoder_decoder) for e in train_ex]
    t0, tokens, ema = time.perf_counter(), 0, None
    while state.step < total and not state.stopped:
        all_batches = _batches(config, train_ex, True, state.epoch)
        groups = [all_batches[i : i + per_step] for i in range(0, len(all_batches) - per_step + 1, per_step)]
        for g in range(state.batch_in_epoch, len(groups)):
            group = groups[g]
            # phase 1: the global number of trained positions of this step (no communication)
            norm = sum(n_pos[j] for mb in group for j in mb)
            # phase 2: this process's micro-batches, gradients accumulated locally
            mine = group[accelerator.process_index :: accelerator.num_processes]
            step_loss = 0.0
            for a, mb in enumerate(mine):
                tokens += sum(len(train_ex[j]["input_ids"]) for j in mb)
                gen = _seeded(config.seed, state.epoch, g, a * accelerator.num_processes
                              + accelerator.process_index, device=accelerator.device)
                sync = accelerator.no_sync(head) if a < len(mine) - 1 else nullcontext()
                with sync:
                    loss_sum, _ = micro_loss(ctx, mb, train_ex, collate, gen, train_cache)
                    accelerator.backward(loss_sum * accelerator.num_processes / norm)
                step_loss += loss_sum.item() / norm
            # phase 3: update, schedule, bookkeeping
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state.step, state.batch_in_epoch = state.step + 1, g + 1
            ema = step_loss if ema is None else 0.95 * ema + 0.05 * step_loss
            state.last_loss = step_loss
            bar.update(1)
            bar.set_postfix(loss=f"{ema:.4f}", tok_s=f"{tokens / (time.perf_counter() - t0):.0f}",
                            best=f"{state.best_val:.4f}" if state.best_val < math.inf else "-")
            # phase 4: validation, best head, early stopping, resumable checkpoint
            done = state.step >= total
            if val_batches and (state.step % eval_every == 0 or done):
                _validate(ctx, config, state, val_batches, val_ex, collate, accelerator, model,
                          val_cache)
            if state.step % save_every == 0 or done or state.stopped:
                if accelerator.is_main_process:
                    save_checkpoint(out / "checkpoint", config, state, model.head, optimizer, scheduler)
                accelerator.wait_for_everyone()
            if done or state.stopped:
                break
        else:
            state.epoch, state.batch_in_epoch = state.epoch + 1, 0
    bar.close()
    return _finish(config, state, model, accelerator)


def _validate(ctx, config, state, val_batches, val_ex, collate, accelerator, model, val_cache
              ) -> None:
    val = evaluate(ctx, val_batches, val_ex, collate, config.seed, accelerator, val_cache)
    state.history.append({"step": state.step, "val_loss": val, "train_loss": state.last_loss})
    accelerator.print(f"step {state.step}: validation loss {val:.5f}")
    if val < state.best_val:
        state.best_val, state.best_step, state.bad_evals = val, state.step, 0
        if accelerator.is_main_process:
            model.save_pretrained(Path(config.output_dir) / "best", training=_record(config, state))
    else:
        state.bad_evals += 1
        if config.patience and state.bad_evals >= config.patience:
            state.stopped = True
            accelerator.print(f"early stopping: no improvement for {state.bad_evals} evaluations")
    accelerator.wait_for_everyone()


def _record(config: TrainConfig, state: TrainState) -> dict:
    return {**config.to_dict(), "steps": state.step, "best_step": state.best_step,
            "best_val_loss": state.best_val if state.best_val < math.inf else None,
            "history": state.history}


def _finish(config: TrainConfig, state: TrainState, model: SigmoidHeadModel, accelerator
            ) -> SigmoidHeadModel:
    """Select the best head (or the last) and write it to output_dir.

    The best head is read back with :meth:`SigmoidHeadModel.from_pretrained` onto the same
    backbone: the same load path (and fingerprint check) users go through.
    """
    best = Path(config.output_dir) / "best"
    if state.best_step is not None and best.is_dir():
        saved = SigmoidHeadModel.from_pretrained(best, model.backbone)
        model.head.load_saved_state(saved.head.state_for_saving())
    model.config = replace(model.config, training=_record(config, state))
    if accelerator.is_main_process:
        model.save_pretrained(config.output_dir)
    accelerator.wait_for_everyone()
    return model
