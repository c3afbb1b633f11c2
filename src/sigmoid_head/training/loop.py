"""Train a Sigmoid Head on a frozen LM: one readable loop on Accelerate, in phases.

The same code runs on CPU, one GPU, or many GPUs/nodes (``accelerate launch`` or
``torchrun``). Determinism does not depend on the number of processes: every process
computes the same global list of micro-batches per epoch (from the seed), an optimizer
step consumes ``grad_accum x world_size`` of them, and the loss is normalised by the
number of trained positions in the whole step. Negatives are drawn from a generator
seeded by (seed, step, micro-batch), so a resumed run and a run on another number of
processes draw exactly the same negatives.

Phases of :func:`train`: :func:`_setup` (processes, frozen model, data, sampler, schedule,
resume), the untrained head's validation loss, :func:`_run_epochs` (each optimizer step in
:func:`_optimizer_step`, validation and checkpoints in :func:`_after_step`), and
:func:`_finish` (select the best head and save it). The per-step loss is in :mod:`.step`,
the data loading in :mod:`.data_loading` (human labels: :mod:`.labelled`), the
self-generated term in :mod:`.self_term`.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import time
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from ..data import datasets_io
from ..data.batching import Collator, pad_id
from ..head.model import SigmoidHeadModel, apply_untrained_prior, resolve_untrained_prior
from ..lm.backbone import DTYPES
from ..lm.cpu_precision import check_cpu_dtype
from ..safe import files as io_utils
from .cache import PositionCache
from .checkpoint import TrainState, load_checkpoint, recover_checkpoint, save_checkpoint
from .config import ROW_OPTIMIZERS, TrainConfig
from .data_loading import load_data
from .negatives import NegativeSampler, count_target_tokens
from .optim import attach_read_hook, cosine_with_warmup, flush_rows, make_optimizer
from .self_term import SelfData, load_self_data, self_step, self_validation
from .step import StepContext, _seeded, evaluate, loss_positions, micro_loss, trained_positions

logger = logging.getLogger(__name__)


def _batches(config: TrainConfig, examples: list[dict], shuffle: bool, epoch: int) -> list[list[int]]:
    """Micro-batches: a list of lists, or a numpy BatchIndex for Arrow examples."""
    return datasets_io.batches_of(examples, batch_size=config.batch_size,
                                  max_tokens=config.max_tokens, shuffle=shuffle,
                                  seed=config.seed, epoch=epoch)


def _per_example(examples: Any, is_encoder_decoder: bool, in_loss: bool = False) -> tuple[Any, Any]:
    """(trained positions, input tokens) of every example: numpy arrays for Arrow examples.
    With ``in_loss``, the positions that count in the loss (a labelled example's labelled
    ones) instead of every trained position."""
    if isinstance(examples, datasets_io.ArrowExamples):
        return examples.n_trained, examples.n_input
    count = loss_positions if in_loss else trained_positions
    return ([count(e, is_encoder_decoder) for e in examples], [len(e["input_ids"]) for e in examples])


def _caches(config: TrainConfig, model: SigmoidHeadModel, collate: Collator, train_ex=(),
            val_ex=(), autocast: object = None) -> tuple[PositionCache | None, PositionCache | None]:
    """Train and validation hidden-state caches, when asked for: in memory, or on disk
    (memory-mapped shards, :mod:`.disk_cache`, recording what made them: ``autocast`` is
    the forward pass's) with ``cache_dir``."""
    if not config.cache_hidden:
        return None, None
    dominant = config.dominant_config() if config.avoid_dominant or config.rank_loss_weight > 0 else None
    if not config.cache_dir:
        dtype = DTYPES[config.cache_dtype]
        return (PositionCache(model.backbone, collate, dominant, dtype),
                PositionCache(model.backbone, collate, dominant, dtype))
    from .disk_cache import disk_caches

    n_pos = [_per_example(ex, model.backbone.is_encoder_decoder)[0] for ex in (train_ex, val_ex)]
    return disk_caches(config, model.backbone, collate, dominant, n_pos, autocast)


def _autocast(accelerator, mode: str):
    if mode == "auto":
        mode = "bf16" if accelerator.device.type == "cuda" and torch.cuda.is_bf16_supported() else "no"
    if mode == "no":
        return torch.autocast(accelerator.device.type, enabled=False)
    dtype = torch.bfloat16 if mode == "bf16" else torch.float16
    if accelerator.device.type == "cpu":  # never reach a CPU that faults on half precision
        check_cpu_dtype(str(dtype).removeprefix("torch."))
    return torch.autocast(accelerator.device.type, dtype=dtype)


@dataclass
class Run:
    """Everything the phases of one training run share."""

    config: TrainConfig
    accelerator: Any
    model: SigmoidHeadModel
    ctx: StepContext
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    state: TrainState
    collate: Collator
    train_ex: list[dict]
    val_ex: list[dict]
    val_batches: list[list[int]]
    train_cache: PositionCache | None
    val_cache: PositionCache | None
    total: int
    """Optimizer steps of the whole run."""
    per_step: int
    """Micro-batches per optimizer step, over all processes."""
    eval_every: int
    save_every: int
    n_input: Any = None
    """Input tokens of every training example (for the tokens/s figure)."""
    self_data: SelfData | None = None
    """The self-labelled outputs (with ``self_generated``)."""

    @property
    def out(self) -> Path:
        return Path(self.config.output_dir)


def train(config: TrainConfig, model: SigmoidHeadModel | None = None,
          caches: tuple[PositionCache | None, PositionCache | None] | None = None
          ) -> SigmoidHeadModel:
    """Train a Sigmoid Head and save it under ``config.output_dir`` (with its resumable
    checkpoint and best head only while training, or with ``keep_checkpoints``).

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
    from ..data.records import read_records_with_lines
    from ..safe.files import DirectoryLock
    from .leakage import refuse_same_files

    refuse_same_files(config)  # a validation file that is a training file, one file twice
    # read (and so check) the data before the model is loaded; the datasets engines read
    # theirs as a stream into Arrow files instead (never every record in memory)
    parsed = {path: read_records_with_lines(path)
              for path in (config.train_file, config.validation_file)
              if path and config.data_engine == "memory"}
    if config.labelled_file:  # human labels: a malformed gold file fails here, with file:line
        from .labelled import labelled_records

        for path in (config.labelled_file, config.labelled_validation_file):
            if path:
                labelled_records(path, config.labelled_format)
    out = Path(config.output_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"output_dir {out} is a file, not a directory")
    # one lock per run: taken by its first process only (torchrun / accelerate set RANK)
    lock = DirectoryLock(out, what="training run") if int(os.environ.get("RANK", "0")) == 0 \
        else nullcontext()
    with lock:
        run = _setup(config, model, caches, parsed)
        try:
            if run.val_batches and run.state.step == 0 and not run.state.history:
                _validate(run)  # the untrained head's loss
            _run_epochs(run)
            copied = sum(getattr(c, "reused", 0) for c in (run.train_cache, run.val_cache))
            if config.cache_from:
                run.accelerator.print(f"--cache-from: {copied} examples copied from {config.cache_from} "
                                      "(the others ran through the frozen model)")
            return _finish(run)
        finally:
            run.model.head.before_read = None  # the optimizer's hook leaves with the run


def _cap_max_length(config: TrainConfig, model: SigmoidHeadModel) -> TrainConfig:
    """``config`` with max_length cut to the model's position limit (with a warning)."""
    limit = model.backbone.max_positions()
    if limit is None or config.max_length <= limit:
        return config
    logger.warning("max_length %d exceeds the model's %d positions; using %d",
                   config.max_length, limit, limit)
    return TrainConfig(**{**config.to_dict(), "max_length": limit})


def _setup(config: TrainConfig, model: SigmoidHeadModel | None,
           caches: tuple[PositionCache | None, PositionCache | None] | None,
           parsed: dict | None = None) -> Run:
    """Processes, frozen model and fresh head, data, sampler, schedule, and a resumed state."""
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=config.device == "cpu" or not torch.cuda.is_available())
    if config.optimizer == "sparse_adam" and accelerator.num_processes > 1:
        raise ValueError("sparse_adam works in a single process only (DistributedDataParallel "
                         "cannot all-reduce sparse gradients); use --optimizer adamw")
    torch.manual_seed(config.seed)
    if model is None:
        model = SigmoidHeadModel.from_base(config.model, bias=config.bias, dtype=config.dtype,
                                           device=str(accelerator.device), rank=config.head_rank)
    # sparse row gradients in one process; DDP all-reduces dense ones (sparse_adamw then
    # finds the rows in the all-reduced gradient, the same on every process)
    model.head.sparse = (config.optimizer == "sparse_adam"
                         or config.optimizer in ROW_OPTIMIZERS and accelerator.num_processes == 1)
    config = _cap_max_length(config, model)
    train_ex, val_ex = load_data(config, model, parsed)
    if isinstance(train_ex, datasets_io.ArrowExamples):
        model.token_counts = torch.from_numpy(train_ex.token_counts(model.config.vocab_size))
    else:
        model.token_counts = count_target_tokens([e["labels"] for e in train_ex],
                                                 model.config.vocab_size)
    # the prior the run applies, saved with the head: None means 0.01 on a full head
    config.sampler.untrained_prior = resolve_untrained_prior(config.untrained_prior, model.head.rank)
    if config.untrained_prior:  # before the optimizer is made: the head may get a bias
        apply_untrained_prior(model, config.untrained_prior)
    sampler = NegativeSampler(config.sampler_config(), model.config.vocab_size, model.token_counts)
    collate = Collator(pad_id(model.tokenizer), model.backbone.is_encoder_decoder)

    # schedule: optimizer steps per epoch, total steps, warmup
    per_step = config.grad_accum * accelerator.num_processes
    steps_per_epoch = max(1, len(_batches(config, train_ex, True, 0)) // per_step)
    total = math.ceil(steps_per_epoch * config.epochs)
    if config.max_steps:
        total = min(total, config.max_steps)
    optimizer = make_optimizer(config, [p for p in model.head.parameters()])
    scheduler = cosine_with_warmup(optimizer, int(config.warmup_ratio * total), total)
    head, optimizer = accelerator.prepare(model.head, optimizer)
    attach_read_hook(optimizer, model.head)  # deferred_adamw: rows up to date before they are read
    ctx = StepContext(model, head, sampler, config.dominant_config(),
                      _autocast(accelerator, config.mixed_precision), config.rank_loss_weight,
                      config.rank_margin, config.bad_weight, config.reference_weight)

    state = TrainState()
    checkpoint = Path(config.output_dir) / "checkpoint"
    if config.resume and recover_checkpoint(checkpoint):
        state = load_checkpoint(checkpoint, config, model.head, optimizer, scheduler)
        accelerator.print(f"resuming from step {state.step} (epoch {state.epoch})")
    train_cache, val_cache = (caches if caches is not None
                              else _caches(config, model, collate, train_ex, val_ex, ctx.autocast))
    eval_every = config.eval_every or steps_per_epoch
    return Run(config, accelerator, model, ctx, optimizer, scheduler, state, collate, train_ex,
               val_ex, _batches(config, val_ex, False, 0) if len(val_ex) else [], train_cache, val_cache,
               total, per_step, eval_every, config.save_every or eval_every,
               self_data=load_self_data(config, model, collate))


def _run_epochs(run: Run) -> None:
    """Optimizer steps until the total is reached or early stopping, epoch after epoch."""
    from tqdm.auto import tqdm

    from .progress import CACHED, FILL, StepClock

    config, state = run.config, run.state
    # with the hidden-state cache, the first epoch's steps fill it and the later ones read
    # it, far faster: the time left is estimated per kind (.progress), not by tqdm's rate
    cached = run.train_cache is not None
    fmt = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]" if cached else None
    bar = tqdm(total=run.total, initial=state.step, desc="train", dynamic_ncols=True,
               bar_format=fmt, disable=not (config.progress and run.accelerator.is_main_process))
    n_pos, run.n_input = _per_example(run.train_ex, run.model.backbone.is_encoder_decoder, in_loss=True)
    meter = {"t0": time.perf_counter(), "tokens": 0, "ema": None}
    clock, first_epoch = StepClock(), state.epoch
    all_batches = None
    while state.step < run.total and not state.stopped:
        del all_batches  # the last epoch's batch index goes before the next one is made
        all_batches = _batches(config, run.train_ex, True, state.epoch)
        n_groups = len(all_batches) // run.per_step
        for g in range(state.batch_in_epoch, n_groups):
            t_step = time.perf_counter()
            group = [all_batches[g * run.per_step + k] for k in range(run.per_step)]
            _optimizer_step(run, g, group, n_pos, meter)
            state.step, state.batch_in_epoch = state.step + 1, g + 1
            ends = _after_step(run)
            filling = cached and state.epoch == first_epoch
            clock.add(FILL if filling else CACHED, time.perf_counter() - t_step)
            fill_left = min(n_groups - g - 1, run.total - state.step) if filling else 0
            _show(bar, state, meter, clock.left(fill_left, run.total - state.step - fill_left)
                  if cached else None)
            if ends:
                break
        else:
            state.epoch, state.batch_in_epoch = state.epoch + 1, 0
    bar.close()


def _optimizer_step(run: Run, g: int, group: list[list[int]], n_pos: list[int], meter: dict) -> None:
    """One optimizer step over the micro-batches ``group`` (index ``g`` in the epoch)."""
    acc, state = run.accelerator, run.state
    # the global number of trained positions of this step (no communication)
    norm = sum(int(n_pos[j]) for mb in group for j in mb)
    # this process's micro-batches, gradients accumulated locally
    mine = group[acc.process_index :: acc.num_processes]
    step_loss = torch.zeros((), dtype=torch.float64, device=acc.device)
    if run.self_data is not None:  # first, so the last paper micro-batch syncs the gradients
        step_loss += self_step(run.self_data, run.ctx, run.collate, acc, state.step, bool(mine))
    for a, mb in enumerate(mine):
        meter["tokens"] += sum(int(run.n_input[j]) for j in mb)
        gen = _seeded(run.config.seed, state.epoch, g, a * acc.num_processes + acc.process_index,
                      device=acc.device)
        sync = acc.no_sync(run.ctx.head) if a < len(mine) - 1 else nullcontext()
        with sync:
            loss_sum, _ = micro_loss(run.ctx, mb, run.train_ex, run.collate, gen, run.train_cache)
            acc.backward(loss_sum * acc.num_processes / norm)
        step_loss += loss_sum.detach().double() / norm  # stays on the device
    step_loss = float(step_loss)  # the step's one loss readout (host sync)
    if not math.isfinite(step_loss):
        raise FloatingPointError(
            f"the training loss became {step_loss} at step {state.step + 1} (lr={run.config.lr}); "
            "lower --lr (nothing was saved from this step)")
    # update and schedule
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    meter["ema"] = step_loss if meter["ema"] is None else 0.95 * meter["ema"] + 0.05 * step_loss
    state.last_loss = step_loss


def _show(bar: Any, state: TrainState, meter: dict, left: str | None = None) -> None:
    bar.update(1)
    bar.set_postfix(loss=f"{meter['ema']:.4f}",
                    tok_s=f"{meter['tokens'] / (time.perf_counter() - meter['t0']):.0f}",
                    best=f"{state.best_val:.4f}" if state.best_val < math.inf else "-",
                    **({"left": left} if left is not None else {}))


def _after_step(run: Run) -> bool:
    """Validation, best head, early stopping, resumable checkpoint; True when training ends."""
    state = run.state
    done = state.step >= run.total
    validate = bool(run.val_batches) and (state.step % run.eval_every == 0 or done)
    if validate or state.step % run.save_every == 0 or done:
        flush_rows(run.optimizer)  # deferred_adamw: every row up to date before the weights are read
    if validate:
        _validate(run)
    if state.step % run.save_every == 0 or done or state.stopped:
        if run.accelerator.is_main_process:
            save_checkpoint(run.out / "checkpoint", run.config, state, run.model.head,
                            run.optimizer, run.scheduler)
        run.accelerator.wait_for_everyone()
    return done or state.stopped


def _validate(run: Run) -> None:
    """Validation loss; keeps the best head, counts evaluations without improvement."""
    state, acc = run.state, run.accelerator
    val = evaluate(run.ctx, run.val_batches, run.val_ex, run.collate, run.config.seed, acc,
                   run.val_cache)
    entry = {"step": state.step, "val_loss": val, "train_loss": state.last_loss}
    if run.self_data is not None:  # selection by the objective trained: both parts
        val_self = self_validation(run.model.head, run.model, run.self_data, run.collate,
                                   run.ctx.autocast)
        entry.update(val_paper=val, val_self=val_self)
        if val_self is not None:
            val = entry["val_loss"] = val + run.self_data.weight * val_self
    state.history.append(entry)
    acc.print(f"step {state.step}: validation loss {val:.5f}")
    if val < state.best_val:
        state.best_val, state.best_step, state.bad_evals = val, state.step, 0
        if acc.is_main_process:
            best = io_utils.own_dir(run.out / "best")  # never through a planted link
            run.model.save_pretrained(best, training=_record(run.config, state))
    else:
        state.bad_evals += 1
        if run.config.patience and state.bad_evals >= run.config.patience:
            state.stopped = True
            acc.print(f"early stopping: no improvement for {state.bad_evals} evaluations")
    acc.wait_for_everyone()


def _record(config: TrainConfig, state: TrainState) -> dict:
    return {**config.to_dict(), "steps": state.step, "best_step": state.best_step,
            "best_val_loss": state.best_val if state.best_val < math.inf else None,
            "history": state.history}


def _finish(run: Run) -> SigmoidHeadModel:
    """Select the best head (or the last) and write it to output_dir.

    The best head is read back with :meth:`SigmoidHeadModel.from_pretrained` onto the same
    backbone: the same load path (and fingerprint check) users go through.
    """
    model, best = run.model, run.out / "best"
    if run.state.best_step is not None and best.is_dir() and not best.is_symlink():
        saved = SigmoidHeadModel.from_pretrained(best, model.backbone)
        model.head.load_saved_state(saved.head.state_for_saving())
    model.config = replace(model.config, training=_record(run.config, run.state))
    if run.accelerator.is_main_process:
        model.save_pretrained(run.out)
        if not run.config.keep_checkpoints:  # the head is saved: only it stays
            for name in ("checkpoint", "best"):
                shutil.rmtree(run.out / name, ignore_errors=True)
    run.accelerator.wait_for_everyone()
    return model
