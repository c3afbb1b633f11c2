"""Train a small Marian-style Spanish->English MT model from scratch on the Bible corpus.

This is the paper's "Transformer Base" setting (an encoder-decoder trained from scratch,
whose own training data then trains the Sigmoid Head) scaled down to what a 2-core CPU
trains in an hour: a randomly initialised ``MarianMTModel`` (d_model 256, 3+3 layers,
4 heads, ffn 1024, ~7.7M parameters) on Reina-Valera 1909 -> KJV and -> WEB together,
so every Spanish source has two valid references.

Phases, in the order :func:`run` calls them:

1. read ``mt_{train,dev,test}`` pairs (``.jsonl`` or ``.jsonl.gz``) from ``--data``;
2. train a joint BPE tokenizer (or reuse ``--out/tokenizer``);
3. build a randomly initialised model (or resume ``--out/checkpoint``);
4. train a fixed number of steps (``--max-steps``, seeded by ``--seed``): label smoothing,
   AdamW, warmup + cosine over those steps, token-budget batches;
5. save a plain Hugging Face model + tokenizer into ``--out/model``;
6. translate the unique test (and dev) sources, score BLEU/chrF against both references,
   write ``--out/eval.json`` and ``--out/test_hyps.jsonl``.

Usage::

    python -m recipes.bible.train_mt --data data/bible --out runs/mt_bible           # 3,708 steps
    python -m recipes.bible.train_mt --data data/bible --out runs/mt_quick --quick   # ~3 min

The model is defined by its steps and seed, not by a wall-clock budget: the learning-rate
schedule spans ``--max-steps`` and the batches, initialisation and dropout come from
``--seed``. An optional ``--minutes`` budget (summed over runs, evaluation included) may
stop training early; the run then says so, marks eval.json ``"complete": false`` and prints
how to resume to the fixed step. Rerunning the same command resumes from the last
checkpoint. See ``recipes/bible/README_MT.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

# Let idle OpenMP threads sleep instead of spinning: with 2 threads on a busy 2-core
# machine, spinning made training 2-4x slower (README_MT.md). Read when torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers.trainers import BpeTrainer
from tqdm.auto import tqdm
from transformers import GenerationConfig, MarianConfig, MarianMTModel, PreTrainedTokenizerFast

from sigmoid_head.data.batching import IGNORE_INDEX, Collator, example_length, make_batches
from sigmoid_head.data.tokenize import tokenize_records
from sigmoid_head.head.folder import file_sha256

from .mt_eval import evaluate_split, find_split, group_references, read_pairs

SPECIAL_TOKENS = ["<pad>", "</s>", "<unk>", "<s>"]  # ids 0, 1, 2, 3


# --------------------------------------------------------------------------- config


def _opt(default: Any, help_text: str) -> Any:
    """A dataclass field whose help text becomes the ``--flag``'s help."""
    return field(default=default, metadata={"help": help_text})


@dataclass
class MTConfig:
    """Every setting of the recipe; each field is a ``--flag`` (underscores -> dashes)."""

    data: str = _opt("data/bible", "folder with mt_{train,dev,test}.jsonl or .jsonl.gz")
    out: str = _opt("runs/mt_bible", "output folder (checkpoint/, model/, eval.json, ...)")
    max_steps: int = _opt(
        3708, "optimizer steps to train (two epochs of data/bible); the LR schedule spans them"
    )
    minutes: float | None = _opt(
        None, "optional wall-time budget summed over reruns, evaluation included; "
        "reaching it before --max-steps stops early (reported, resumable)"
    )
    eval_minutes: float = _opt(3.0, "part of --minutes kept for export and evaluation")
    stop_after_steps: int | None = _opt(None, "leave this run after N steps; a rerun resumes")
    checkpoint_minutes: float = _opt(5.0, "save a resumable checkpoint this often")
    vocab_size: int = _opt(8000, "joint BPE vocabulary size")
    d_model: int = _opt(256, "model width")
    layers: int = _opt(3, "encoder layers = decoder layers")
    heads: int = _opt(4, "attention heads")
    ffn_dim: int = _opt(1024, "feed-forward width")
    dropout: float = _opt(0.1, "dropout")
    max_length: int = _opt(256, "truncate sources and targets to this many tokens")
    lr: float = _opt(1e-3, "peak learning rate (AdamW)")
    warmup_steps: int = _opt(400, "linear warmup steps")
    weight_decay: float = _opt(1e-4, "AdamW weight decay")
    label_smoothing: float = _opt(0.1, "label smoothing")
    clip_norm: float = _opt(1.0, "gradient clipping norm")
    batch_tokens: int = _opt(2048, "padded source+target tokens per batch (~half are target)")
    seed: int = _opt(0, "seed of init, dropout and batch order")
    bf16: bool | None = _opt(None, "bfloat16 autocast (default: on for CUDA, off for CPU)")
    threads: int = _opt(0, "CPU threads for torch (0: torch's default, one per core)")
    device: str = _opt("auto", "'auto' (cuda if available), 'cpu', 'cuda', ...")
    beams: int = _opt(1, "also decode with beam search of this width when > 1")
    eval_dev: bool = _opt(True, "also score the dev split if it fits in the budget left")
    eval_limit: int | None = _opt(None, "translate only the first N unique sources per split")
    eval_batch_size: int = _opt(32, "sentences per generate() call")
    log_seconds: float = _opt(30.0, "append a line to train_log.jsonl this often")


#: ``--quick``: the whole pipeline in at most four minutes (a smoke test, BLEU ~0).
QUICK: dict[str, Any] = {
    "max_steps": 200,
    "minutes": 4.0,
    "eval_minutes": 1.0,
    "checkpoint_minutes": 1.0,
    "warmup_steps": 100,
    "eval_dev": False,
    "eval_limit": 100,
    "log_seconds": 10.0,
}
#: Fields that must not change between a checkpoint and the run that resumes it.
RESUME_KEYS = ("vocab_size", "d_model", "layers", "heads", "ffn_dim", "max_length")
RESUME_KEYS += ("batch_tokens", "seed", "max_steps")


@dataclass
class TrainState:
    """Where training stands; saved in every checkpoint.

    Attributes:
        step: Optimizer steps done.
        epoch: Current pass over the training data.
        batch_index: Next batch of this epoch's order.
        elapsed: Recipe wall seconds, summed over runs, up to the checkpoint.
        target_tokens: Target tokens trained on, summed over runs.
        train_seconds: Seconds spent in training steps, summed over runs.
    """

    step: int = 0
    epoch: int = 0
    batch_index: int = 0
    elapsed: float = 0.0
    target_tokens: int = 0
    train_seconds: float = 0.0


class Clock:
    """Recipe wall time summed over runs: seconds before this run + seconds since start."""

    def __init__(self, before: float = 0.0) -> None:
        self.start = time.monotonic()
        self.before = before

    def elapsed(self) -> float:
        """Total seconds so far."""
        return self.before + time.monotonic() - self.start


# ------------------------------------------------------------------------ tokenizer


def train_tokenizer(texts: list[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Train a joint BPE tokenizer that appends ``</s>`` to every text.

    SentencePiece-style: NFC, words marked with a leading ``▁`` (Metaspace), so decoding
    restores the spaces. ``tokenizer(source)`` and ``tokenizer(text_target=target)`` both
    give ids ending in ``</s>``; ``add_special_tokens=False`` gives the bare pieces.
    """
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Metaspace()
    bpe.decoder = decoders.Metaspace()
    trainer = BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False)
    bpe.train_from_iterator(texts, trainer)
    eos = bpe.token_to_id("</s>")
    bpe.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A $B </s>", special_tokens=[("</s>", eos)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        pad_token="<pad>",
        eos_token="</s>",
        unk_token="<unk>",
        bos_token="<s>",
        model_max_length=512,
    )


def load_or_train_tokenizer(out: Path, train: list[dict], vocab_size: int) -> Any:
    """Reuse ``out/tokenizer`` if a previous run saved one, else train and save it."""
    path = out / "tokenizer"
    if (path / "tokenizer.json").is_file():
        return PreTrainedTokenizerFast.from_pretrained(path)
    sources, targets = group_references(train)
    texts = sources + [t for group in targets for t in group]
    tokenizer = train_tokenizer(texts, vocab_size)
    tokenizer.save_pretrained(path)
    return tokenizer


# ---------------------------------------------------------------------------- model


def build_model(cfg: MTConfig, tokenizer: Any) -> MarianMTModel:
    """A randomly initialised Marian model: shared embeddings, tied output layer."""
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    config = MarianConfig(
        vocab_size=len(tokenizer),
        d_model=cfg.d_model,
        encoder_layers=cfg.layers,
        decoder_layers=cfg.layers,
        encoder_attention_heads=cfg.heads,
        decoder_attention_heads=cfg.heads,
        encoder_ffn_dim=cfg.ffn_dim,
        decoder_ffn_dim=cfg.ffn_dim,
        activation_function="relu",  # fairseq's Transformer Base
        dropout=cfg.dropout,
        max_position_embeddings=512,
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        pad_token_id=pad,
        eos_token_id=eos,
        forced_eos_token_id=eos,
        decoder_start_token_id=pad,
    )
    torch.manual_seed(cfg.seed)
    model = MarianMTModel(config)
    model.generation_config = generation_config(tokenizer)
    return model


def generation_config(tokenizer: Any, max_new_tokens: int = 256, num_beams: int = 4) -> Any:
    """Marian-style decoding defaults saved with the model (beam 4, never emit pad)."""
    pad, eos = tokenizer.pad_token_id, tokenizer.eos_token_id
    return GenerationConfig(
        decoder_start_token_id=pad,
        pad_token_id=pad,
        eos_token_id=eos,
        forced_eos_token_id=eos,
        bad_words_ids=[[pad]],
        max_new_tokens=max_new_tokens,
        num_beams=num_beams,
    )


def count_parameters(model: torch.nn.Module) -> int:
    """Trainable parameters, tied ones counted once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# ------------------------------------------------------------------------- training


def learning_rate(cfg: MTConfig, step: int, progress: float) -> float:
    """Linear warmup over ``warmup_steps``, then cosine from ``lr`` to 0 as progress -> 1."""
    warm = min(1.0, (step + 1) / max(1, cfg.warmup_steps))
    return cfg.lr * warm * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def schedule_progress(cfg: MTConfig, state: TrainState) -> float:
    """Fraction of training done for the LR schedule: by steps only, never by time."""
    return state.step / cfg.max_steps


def train_seconds_budget(cfg: MTConfig) -> float:
    """Recipe seconds after which training stops (the rest is for evaluation); inf: none."""
    return math.inf if cfg.minutes is None else 60.0 * (cfg.minutes - cfg.eval_minutes)


def stopped_early(cfg: MTConfig, state: TrainState) -> str | None:
    """What to tell the user when the time budget ended training before ``max_steps``."""
    if state.step >= cfg.max_steps:
        return None
    need = state.elapsed * cfg.max_steps / max(1, state.step) / 60.0 + cfg.eval_minutes
    return (f"STOPPED EARLY at step {state.step} of {cfg.max_steps}: the --minutes {cfg.minutes} "
            f"budget ran out, so this is not the fixed-step model. To resume to step {cfg.max_steps}, "
            f"rerun the same command without --minutes (or with --minutes {math.ceil(need)} or more).")


def make_optimizer(cfg: MTConfig, model: torch.nn.Module) -> torch.optim.Optimizer:
    """AdamW with fairseq's Transformer betas; the LR is set before every step."""
    return torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), eps=1e-8, weight_decay=cfg.weight_decay
    )


def train_step(
    model: MarianMTModel,
    batch: dict[str, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    lr: float,
    cfg: MTConfig,
) -> tuple[float, int]:
    """One optimizer step on a collated batch; returns (loss per target token, target tokens)."""
    model.train()
    labels = batch["labels"]  # (B, L), -100 = padding
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels=labels)  # (B, L)
    bf16 = labels.is_cuda if cfg.bf16 is None else cfg.bf16
    autocast = torch.autocast(labels.device.type, dtype=torch.bfloat16, enabled=bf16)
    with autocast:
        logits = model(
            input_ids=batch["input_ids"],  # (B, S)
            attention_mask=batch["attention_mask"],  # (B, S)
            decoder_input_ids=decoder_input_ids,
        ).logits  # (B, L, V)
    n_tokens = int((labels != IGNORE_INDEX).sum())
    loss = F.cross_entropy(
        logits.float().flatten(0, 1),  # (B*L, V)
        labels.flatten(),  # (B*L,)
        ignore_index=IGNORE_INDEX,
        label_smoothing=cfg.label_smoothing,
        reduction="sum",
    ) / max(1, n_tokens)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.step()
    return loss.item(), n_tokens


class BatchStream:
    """Token-budget batches of example indices, epoch after epoch, from a saved position.

    Each epoch's order comes from :func:`sigmoid_head.data.tokenize.make_batches` (length buckets,
    shuffled by ``seed`` and epoch), so ``(epoch, batch_index)`` pins down the position.
    """

    def __init__(self, lengths: list[int], max_tokens: int, seed: int) -> None:
        self.lengths, self.max_tokens, self.seed = lengths, max_tokens, seed
        self._epoch, self._batches = -1, []

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """All batches of one epoch (cached for the current epoch)."""
        if epoch != self._epoch:
            self._batches = make_batches(
                self.lengths, max_tokens=self.max_tokens, seed=self.seed, epoch=epoch
            )
            self._epoch = epoch
        return self._batches

    def take(self, state: TrainState) -> list[int]:
        """The next batch; advances ``state.epoch`` / ``state.batch_index``."""
        if state.batch_index >= len(self.epoch_batches(state.epoch)):
            state.epoch, state.batch_index = state.epoch + 1, 0
        state.batch_index += 1
        return self.epoch_batches(state.epoch)[state.batch_index - 1]


def training_done(cfg: MTConfig, state: TrainState, clock: Clock) -> bool:
    """True when ``max_steps`` or the time budget is used up."""
    return state.step >= cfg.max_steps or clock.elapsed() >= train_seconds_budget(cfg)


def progress_fraction(cfg: MTConfig, state: TrainState, clock: Clock) -> float:
    """How far towards stopping (whichever of steps and time comes first), in [0, 1]."""
    by_time = clock.elapsed() / max(1e-9, train_seconds_budget(cfg))
    return min(1.0, max(by_time, state.step / cfg.max_steps))


# ---------------------------------------------------------------------- checkpoints


def save_checkpoint(
    out: Path, model: torch.nn.Module, optimizer: Any, state: TrainState, cfg: MTConfig
) -> None:
    """Write ``out/checkpoint/state.pt`` atomically (model, optimizer, position, clock, RNG)."""
    folder = out / "checkpoint"
    folder.mkdir(parents=True, exist_ok=True)
    payload = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "schedule": {"lr": cfg.lr, "warmup_steps": cfg.warmup_steps, "kind": "warmup_cosine"},
        "state": asdict(state),
        "config": asdict(cfg),
        "rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    torch.save(payload, folder / "state.pt.tmp")
    os.replace(folder / "state.pt.tmp", folder / "state.pt")


def load_checkpoint(
    out: Path, model: torch.nn.Module, optimizer: Any, cfg: MTConfig
) -> TrainState | None:
    """Restore a checkpoint into ``model`` and ``optimizer``; ``None`` if there is none."""
    path = out / "checkpoint" / "state.pt"
    if not path.is_file():
        return None
    payload = torch.load(path, map_location=next(model.parameters()).device, weights_only=True)
    changed = [k for k in RESUME_KEYS if payload["config"].get(k) != getattr(cfg, k)]
    if changed:
        raise SystemExit(f"{path} was made with other {changed}; use another --out to start anew")
    model.load_state_dict(payload["model"])
    optimizer.load_state_dict(payload["optimizer"])
    torch.set_rng_state(payload["rng"].cpu())
    if payload["cuda_rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in payload["cuda_rng"]])
    return TrainState(**payload["state"])


# ----------------------------------------------------------------------- train loop


#: Set by SIGINT/SIGTERM (see :func:`main`): training stops after the current step.
STOP = threading.Event()


def train(
    cfg: MTConfig,
    model: MarianMTModel,
    optimizer: torch.optim.Optimizer,
    examples: list[dict],
    state: TrainState,
    clock: Clock,
) -> TrainState:
    """Train until the budget, ``max_steps``, ``stop_after_steps`` or :data:`STOP`.

    Saves a checkpoint every ``checkpoint_minutes`` and when the loop ends. An exception
    in the middle of a step leaves the last checkpoint as it was.
    """
    out, device = Path(cfg.out), next(model.parameters()).device
    collate = Collator(model.config.pad_token_id, is_encoder_decoder=True)
    stream = BatchStream([example_length(ex) for ex in examples], cfg.batch_tokens, cfg.seed)
    bar = ProgressBar(cfg, state, clock)
    last_save, run_steps = clock.elapsed(), 0
    while not (training_done(cfg, state, clock) or STOP.is_set()):
        if cfg.stop_after_steps is not None and run_steps >= cfg.stop_after_steps:
            break
        # one step: batch -> device -> loss -> update
        batch = collate([examples[i] for i in stream.take(state)])
        batch = {k: v.to(device) for k, v in batch.items()}  # input_ids (B, S), labels (B, L)
        lr = learning_rate(cfg, state.step, schedule_progress(cfg, state))
        started = time.monotonic()
        loss, n_tokens = train_step(model, batch, optimizer, lr, cfg)
        state.train_seconds += time.monotonic() - started
        state.step += 1
        state.target_tokens += n_tokens
        run_steps += 1
        bar.update(state, loss, n_tokens, lr)
        # checkpoint every few minutes
        if clock.elapsed() - last_save >= 60.0 * cfg.checkpoint_minutes:
            state.elapsed = clock.elapsed()
            save_checkpoint(out, model, optimizer, state, cfg)
            last_save = clock.elapsed()
    bar.close()
    state.elapsed = clock.elapsed()
    save_checkpoint(out, model, optimizer, state, cfg)
    return state


class ProgressBar:
    """tqdm bar over the fraction of the budget (time or steps) with loss, tokens/s, LR.

    Also appends ``{"step", "elapsed", "loss", "tokens_per_s", "lr", "epoch"}`` lines
    to ``out/train_log.jsonl`` every ``log_seconds``.
    """

    def __init__(self, cfg: MTConfig, state: TrainState, clock: Clock) -> None:
        self.cfg, self.clock = cfg, clock
        self.log_path = Path(cfg.out) / "train_log.jsonl"
        self.window: list[tuple[float, int]] = []  # (time, target tokens) of recent steps
        self.last_log = clock.elapsed()
        start = int(1000 * progress_fraction(cfg, state, clock))
        fmt = "{percentage:3.0f}%|{bar:20}| {elapsed}<{remaining}{postfix}"
        self.bar = tqdm(total=1000, initial=start, bar_format=fmt, mininterval=1.0, file=sys.stderr)

    def update(self, state: TrainState, loss: float, n_tokens: int, lr: float) -> None:
        """Record one step and refresh the bar (and the log file when due)."""
        now = time.monotonic()
        self.window = [*self.window[-49:], (now, n_tokens)]
        span = now - self.window[0][0]
        rate = sum(n for _, n in self.window[1:]) / span if span > 0 else 0.0
        self.bar.set_postfix_str(
            f"step {state.step} ep {state.epoch} loss {loss:.3f} tok/s {rate:,.0f} lr {lr:.2e}",
            refresh=False,
        )
        self.bar.update(int(1000 * progress_fraction(self.cfg, state, self.clock)) - self.bar.n)
        if self.clock.elapsed() - self.last_log >= self.cfg.log_seconds:
            self.last_log = self.clock.elapsed()
            line = {"step": state.step, "epoch": state.epoch, "elapsed": round(self.last_log, 1)}
            line |= {"loss": round(loss, 4), "tokens_per_s": round(rate, 1), "lr": lr}
            with self.log_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")

    def close(self) -> None:
        """Close the tqdm bar."""
        self.bar.close()


# --------------------------------------------------------------------------- export


def export_model(model: MarianMTModel, tokenizer: Any, path: Path) -> None:
    """Save a plain Hugging Face checkpoint (model, tokenizer, generation config)."""
    model.generation_config = generation_config(tokenizer)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)


# ------------------------------------------------------------------------------ run


def setup(cfg: MTConfig) -> tuple[Any, list[dict], MarianMTModel, Any, torch.device]:
    """Tokenizer, tokenized training examples, model and optimizer on the chosen device."""
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    train_records = read_pairs(cfg.data, "train")
    tokenizer = load_or_train_tokenizer(out, train_records, cfg.vocab_size)
    examples, stats = tokenize_records(
        train_records, tokenizer, is_encoder_decoder=True, max_length=cfg.max_length
    )
    auto = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(auto if cfg.device == "auto" else cfg.device)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    model = build_model(cfg, tokenizer).to(device)
    print(
        f"train: {len(examples):,} pairs ({stats.truncated} truncated), vocab {len(tokenizer):,}, "
        f"{count_parameters(model):,} parameters, device {device}, {torch.get_num_threads()} threads"
    )
    return tokenizer, examples, model, make_optimizer(cfg, model), device


def run(cfg: MTConfig) -> dict[str, Any]:
    """The whole recipe: train (or resume), export, evaluate; returns eval.json's content."""
    if cfg.max_steps < 1:
        raise SystemExit("--max-steps must be >= 1")
    if cfg.minutes is not None and cfg.minutes <= cfg.eval_minutes:
        raise SystemExit("--minutes must exceed --eval-minutes")
    clock, out = Clock(), Path(cfg.out)
    tokenizer, examples, model, optimizer, device = setup(cfg)
    state = load_checkpoint(out, model, optimizer, cfg)
    if state is not None:
        clock.before = state.elapsed
        print(
            f"resuming at step {state.step}, epoch {state.epoch}, {state.elapsed / 60:.1f} min used"
        )
    state = train(cfg, model, optimizer, examples, state or TrainState(), clock)
    if STOP.is_set() or (cfg.stop_after_steps is not None and not training_done(cfg, state, clock)):
        print(f"stopped at step {state.step}, checkpoint saved; rerun the same command to resume")
        return {}
    early = stopped_early(cfg, state)
    if early:
        print(early, flush=True)
    export_model(model, tokenizer, out / "model")
    evaluated = clock.elapsed()
    report = {"device": str(device), "threads": torch.get_num_threads()}
    report["training"] = training_summary(state, examples) | {
        "max_steps": cfg.max_steps, "complete": early is None, **({"stopped_early": early} if early else {})}
    report["model"] = {"parameters": count_parameters(model)}
    report["settings"] = settings_summary(cfg)
    report["fingerprint"] = fingerprint(cfg, out)
    report |= evaluate(cfg, model, tokenizer, clock)
    report = {
        "bleu": report["test"]["greedy"]["bleu"],
        "chrf": report["test"]["greedy"]["chrf"],
    } | report
    report["wall_seconds"] = {
        "eval": round(clock.elapsed() - evaluated, 1),
        "total": round(clock.elapsed(), 1),
    }
    (out / "eval.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"done in {clock.elapsed() / 60:.1f} min (all runs); results in {out / 'eval.json'}")
    if early:
        print(early)
    return report


def evaluate(cfg: MTConfig, model: MarianMTModel, tokenizer: Any, clock: Clock) -> dict[str, Any]:
    """Test always; dev if asked and if, at the test split's pace, it fits the budget left."""
    opts = {"out": cfg.out, "beams": cfg.beams, "limit": cfg.eval_limit}
    opts["batch_size"] = cfg.eval_batch_size
    report = {
        "test": evaluate_split(model, tokenizer, read_pairs(cfg.data, "test"), "test", **opts)
    }
    if not cfg.eval_dev:
        return report
    dev = read_pairs(cfg.data, "dev")
    n_dev = len(group_references(dev)[0][: cfg.eval_limit])
    need = n_dev * report["test"]["seconds"] / max(1, report["test"]["sources"])
    left = math.inf if cfg.minutes is None else 60.0 * cfg.minutes - clock.elapsed()
    if need <= left:
        report["dev"] = evaluate_split(model, tokenizer, dev, "dev", **opts)
    else:
        report["dev"] = {
            "skipped": f"needs ~{need:.0f} s, {max(0.0, left):.0f} s of the budget left"
        }
        print(f"dev: skipped ({report['dev']['skipped']})")
    return report


def _cpu_name() -> str:
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fingerprint(cfg: MTConfig, out: Path) -> dict[str, Any]:
    """What a rebuild must match to give the same weights, and the weights' own hash.

    Within one thread count, machine and set of library versions the training is
    bit-for-bit repeatable; across them it is not (docs/results.md, "MT model"). Two
    runs whose ``weights_sha256`` differ can be traced here to their data, tokenizer,
    libraries, CPU or thread count.
    """
    import numpy
    import tokenizers
    import transformers

    return {
        "weights_sha256": file_sha256(out / "model" / "model.safetensors"),
        "train_data_sha256": file_sha256(find_split(cfg.data, "train")),
        "tokenizer_sha256": file_sha256(out / "model" / "tokenizer.json"),
        "threads": torch.get_num_threads(),
        "cpu": _cpu_name(),
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__,
                     "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                     "numpy": numpy.__version__},
    }


def training_summary(state: TrainState, examples: list[dict]) -> dict[str, Any]:
    """Steps, epochs and throughput of training (summed over runs) for eval.json."""
    tokens_per_epoch = sum(len(ex["labels"]) for ex in examples)
    return {
        "steps": state.step,
        "epochs": round(state.target_tokens / max(1, tokens_per_epoch), 2),
        "train_pairs": len(examples),
        "target_tokens": state.target_tokens,
        "train_seconds": round(state.train_seconds, 1),
        "target_tokens_per_s": round(state.target_tokens / max(1e-9, state.train_seconds), 1),
        "elapsed_seconds_at_end": round(state.elapsed, 1),
    }


def settings_summary(cfg: MTConfig) -> dict[str, Any]:
    """The settings of the model, its training and the budget, for eval.json."""
    keys = ("vocab_size", "d_model", "layers", "heads", "ffn_dim", "dropout", "lr")
    keys += ("warmup_steps", "label_smoothing", "batch_tokens", "seed", "minutes")
    keys += ("eval_minutes", "max_steps", "data")
    return {k: getattr(cfg, k) for k in keys}


# ------------------------------------------------------------------------------ CLI


_FLAG_TYPES = {"int": int, "int | None": int, "float": float, "float | None": float, "str": str}


def parse_args(argv: list[str] | None = None) -> MTConfig:
    """Flags from :class:`MTConfig`; ``--quick`` applies :data:`QUICK` under explicit flags."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"smoke test: {QUICK}")
    for f in fields(MTConfig):
        flag = "--" + f.name.replace("_", "-")
        extra: dict[str, Any] = {"help": f"{f.metadata['help']} (default {f.default})"}
        if f.type in ("bool", "bool | None"):
            extra["action"] = argparse.BooleanOptionalAction
        else:
            extra["type"] = _FLAG_TYPES[str(f.type)]
        parser.add_argument(flag, default=argparse.SUPPRESS, **extra)
    given = vars(parser.parse_args(argv))
    quick = given.pop("quick")
    return MTConfig(**((QUICK if quick else {}) | given))


def _request_stop(signum: int, frame: Any) -> None:
    """SIGINT/SIGTERM: finish the current step, save a checkpoint and exit; twice: abort."""
    if STOP.is_set():
        raise KeyboardInterrupt
    STOP.set()
    print("\nstopping after this step (signal again to abort)", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Command line entry point; Ctrl-C or SIGTERM stops cleanly with exit status 130."""
    signal.signal(signal.SIGINT, _request_stop)
    signal.signal(signal.SIGTERM, _request_stop)
    run(parse_args(argv))
    if STOP.is_set():
        raise SystemExit(130)


if __name__ == "__main__":
    main()
