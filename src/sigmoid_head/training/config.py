"""Training settings, split by concern, each field documented once.

:class:`TrainConfig` groups five dataclasses: :class:`DataConfig` (what is trained on and
how it is rendered), the sampling settings (:class:`~sigmoid_head.training.negatives.SamplerConfig`
and :class:`~sigmoid_head.lm.dominant.DominantConfig`, documented where they are used),
:class:`OptimConfig` (optimizer, schedule, batches) and :class:`LoopConfig` (model, loop,
evaluation, checkpoints, devices, I/O). The docstring under each field is the only
description of a setting: the ``sigmoid-head train`` options and their help are generated
from it.

Every setting also has a flat name (the field name; ``negatives`` for the sampler's
``strategy`` and ``dominant_cut`` for the dominant rule's ``cut``), so
``TrainConfig(train_file=..., lr=...)``, ``config.lr``, the CLI's ``--lr`` and the flat
``training`` dict saved in every head (:meth:`TrainConfig.to_dict`, read back by
:meth:`TrainConfig.from_dict`) keep working across versions.
"""

from __future__ import annotations

import math
import random
from dataclasses import MISSING, dataclass, fields, replace
from typing import Any, ClassVar

from ..data.prompt_format import PromptFormat
from ..data.templates import check_template
from ..lm.dominant import DominantConfig
from ..safe.config_types import check_types, field_types
from ..safe.finite import SEED_MAX, check_number
from .negatives import SamplerConfig

OPTIMIZERS = ("adamw", "sparse_adam", "sparse_adamw", "deferred_adamw")
ROW_OPTIMIZERS = ("sparse_adamw", "deferred_adamw")
"""The optimizers that read the rows with a gradient (sparse row gradients in one process)."""
MIXED_PRECISION = ("auto", "no", "bf16", "fp16")
CACHE_DTYPES = ("float32", "bfloat16", "float16")
ENGINES = ("memory", "datasets", "streaming")


def _check(checks: list[tuple[bool, str]]) -> None:
    for ok, message in checks:
        if not ok:
            raise ValueError(message)


MIXED_REFERENCE_WEIGHT = 0.5
"""reference_weight's default when train_file and labelled_file are mixed: chosen on the WMT ro-en
dev tags among 0.5, 1 and 2 by a rule declared before the runs (issue 58,
recipes/human_qe/dev_choices.py); its dev word MCC was 0.0001 above weight 1's best seed."""
LOSS_WEIGHT_MAX = 1e4
"""The largest loss weight (bad_weight, reference_weight, self_weight, rank_loss_weight):
weights only set ratios, and one near float32's limit overflows the loss (issue 59)."""
LABEL_FORMATS = ("wmt-tags", "esa", "mqm", "google-mqm")
"""The gold formats labelled training reads (training/labelled.py)."""

@dataclass
class DataConfig:
    """What the head is trained on, and how examples are rendered and cut."""

    train_file: str | None = None
    """Training data: .jsonl (pairs {source,target}, chat {messages}, or {text}), .tsv, or .txt (may be left out with labelled_file)."""
    validation_file: str | None = None
    """Validation data in the same format; without it a split of the training data is held out."""
    validation_fraction: float = 0.05
    """Fraction of training examples held out when no validation file is given (0 = none)."""
    max_validation_examples: int = 1000
    """Cap on validation examples (keeps each evaluation cheap)."""
    task: str = "auto"
    """Data kind: auto, pairs, chat or text."""
    prompt_template: str = "{source}\n"
    """How a causal model sees a pair's source (must contain {source})."""
    use_chat_template: bool = False
    """Render pairs as a user/assistant chat with the tokenizer's chat template."""
    max_length: int = 512
    """Truncate examples to this many tokens (with a warning and a count)."""
    data_engine: str = "memory"
    """memory (examples as Python lists), datasets (Hugging Face datasets: Arrow on disk, tokenized in num_proc workers; also .parquet/.arrow/hub ids) or streaming (datasets' IterableDataset, tokenized as it streams)."""
    num_proc: int | None = None
    """Worker processes that tokenize with data_engine=datasets (None = this process)."""
    data_cache_dir: str | None = None
    """Where data_engine=datasets keeps its Arrow files (None = output_dir/data_cache)."""
    self_generated: str | None = None
    """Self-labelled outputs of the model (a .jsonl that `sigmoid-head self-label` writes: source, target = the model's output, word_labels OK/BAD): the head is also trained to score their tokens good or bad, with weight self_weight (memory data engine only)."""
    self_validation_file: str | None = None
    """Self-labelled validation outputs; without it validation_fraction of self_generated is held out."""
    labelled_file: str | None = None
    """Human-labelled translations to learn from, in a gold format `evaluate` reads (wmt-tags with the .mt and .src files beside it, google-mqm TSV, esa or mqm span JSONL): the tokens of BAD words or of words inside an error span are negatives (weight bad_weight), the other tokens positives with sampled negatives (the paper's objective); the sources are the prompts. Alone (no train_file) or mixed with train_file's reference data (reference_weight). Memory data engine only."""
    labelled_format: str | None = None
    """Gold format of labelled_file and labelled_validation_file: wmt-tags, google-mqm, esa or mqm (empty = detected from the file)."""
    labelled_validation_file: str | None = None
    """Held-out human-labelled translations (same format) for the validation loss; without it validation_fraction of labelled_file is held out."""

    def __post_init__(self) -> None:
        check_template(self.prompt_template)
        self._check_labelled()
        if self.data_engine not in ENGINES:
            raise ValueError(f"data_engine must be one of {ENGINES}")
        _check([(self.num_proc is None or self.num_proc >= 1, "num_proc must be >= 1")])
        if (self.self_generated or self.self_validation_file) and self.data_engine != "memory":
            raise ValueError("self_generated works with data_engine=memory only")
        if self.self_validation_file and not self.self_generated:
            raise ValueError("self_validation_file needs self_generated")
        _check([(self.max_length > 1, "max_length must be > 1"),
                (0 <= self.validation_fraction < 1, "validation_fraction must be in [0, 1)"),
                (self.max_validation_examples >= 1, "max_validation_examples must be >= 1 "
                 "(set validation_fraction 0 for no validation)")])

    def _check_labelled(self) -> None:
        if not self.train_file and not self.labelled_file:
            raise ValueError("set train_file (reference data) or labelled_file (human labels), or both")
        if self.validation_file and not self.train_file:
            raise ValueError("validation_file needs train_file (labelled validation data: "
                             "labelled_validation_file)")
        if (self.labelled_validation_file or self.labelled_format) and not self.labelled_file:
            raise ValueError("labelled_validation_file and labelled_format need labelled_file")
        if self.labelled_format is not None and self.labelled_format not in LABEL_FORMATS:
            raise ValueError(f"labelled_format must be one of {LABEL_FORMATS}")
        if self.labelled_file and self.data_engine != "memory":
            raise ValueError("labelled_file works with data_engine=memory only")


@dataclass
class OptimConfig:
    """The optimizer, its schedule and the batches it steps on."""

    optimizer: str = "adamw"
    """adamw (dense, works with any number of processes), sparse_adam (lazy row updates, one process only), sparse_adamw (AdamW on the rows with a gradient only, per-row bias correction; any number of processes; trains a worse head, issue 60) or deferred_adamw (dense AdamW's result computed on the rows with a gradient: the other rows' decay and momentum applied when they are next touched or before validation; any number of processes)."""
    lr: float = 1e-4
    """Peak learning rate (cosine decay after warmup)."""
    weight_decay: float = 0.0
    """AdamW weight decay (0 keeps rows that are rarely drawn from decaying)."""
    warmup_ratio: float = 0.03
    """Fraction of the optimizer steps spent warming the learning rate up linearly."""
    batch_size: int | None = 8
    """Sequences per micro-batch (set 0 or None to batch by max_tokens instead)."""
    max_tokens: int | None = None
    """Padded tokens per micro-batch; overrides batch_size when set."""
    grad_accum: int = 1
    """Micro-batches per process per optimizer step."""
    epochs: float = 3.0
    """Passes over the training data."""
    max_steps: int | None = None
    """Stop after this many optimizer steps (overrides epochs when reached first)."""
    rank_loss_weight: float = 0.0
    """Weight of the authors' ranking loss (their newest research code): a hinge on head logits, averaged over all (reference, other dominant token) pairs of a batch, that ranks the reference above the dominant tokens of its position; needs avoid_dominant (0 = the paper's loss only)."""
    rank_margin: float = 0.0
    """Logit margin of that ranking loss (0, the authors' default: only a dominant token above the reference is penalised)."""
    self_weight: float = 1.0
    """Weight of the self-generated term (with self_generated): each step adds this times the mean BCE of the head's scores of one micro-batch of self-labelled outputs against their good/bad labels."""

    bad_weight: float = 1.0
    """Weight of a human-labelled error token's BCE against its positions' mean BCE (with labelled_file; the authors' weight_for_negative_mqm)."""
    reference_weight: float | None = None
    """Weight of each reference position's loss beside a labelled position's (with both train_file and labelled_file; one step's loss is the weighted sum over its positions divided by their number). Default: 0.5 with both files (chosen on dev among 0.5, 1 and 2: recipes/human_qe/dev_choices.py), 1 otherwise (no effect)."""

    def __post_init__(self) -> None:
        _check([(self.batch_size is None or self.batch_size >= 0, "batch_size must be >= 0"),
                (self.max_tokens is None or self.max_tokens >= 0, "max_tokens must be >= 0")])
        if not self.batch_size and not self.max_tokens:
            raise ValueError("set batch_size or max_tokens")
        if self.max_tokens:
            self.batch_size = None
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}")
        _check([(self.lr > 0, "lr must be > 0"), (self.grad_accum >= 1, "grad_accum must be >= 1"),
                (self.epochs > 0, "epochs must be > 0"),
                (self.weight_decay >= 0, "weight_decay must be >= 0"),
                (0 <= self.warmup_ratio < 1, "warmup_ratio must be in [0, 1)"),
                (self.max_steps is None or self.max_steps > 0, "max_steps must be > 0"),
                (self.rank_loss_weight >= 0, "rank_loss_weight must be >= 0"),
                (self.self_weight > 0, "self_weight must be > 0"),
                (self.bad_weight > 0, "bad_weight must be > 0"),
                (self.reference_weight is None or self.reference_weight > 0, "reference_weight must be > 0")])
        _check([(getattr(self, name) <= LOSS_WEIGHT_MAX,
                 f"{name} must be at most {LOSS_WEIGHT_MAX:g}, got {getattr(self, name):g}: "
                 "a loss weight sets a ratio between kinds of positions (lower the others "
                 "instead); a larger one overflows the loss")
                for name in ("rank_loss_weight", "self_weight", "bad_weight", "reference_weight")
                if getattr(self, name) is not None])  # reference_weight None: set by TrainConfig


@dataclass
class LoopConfig:
    """The model, the loop around the optimizer steps, and where things are written."""

    output_dir: str
    """Where the trained head, the best head and the resumable checkpoint are written."""
    model: str | None = None
    """Base model: hub id or local path; empty = the embedded SmolLM2-135M-Instruct."""
    bias: bool = False
    """Give the head a per-token bias."""
    head_rank: int = 0
    """0 = a full trainable (V, d) head (the paper); r > 0 = the LM head, frozen, plus a trainable
    rank-r update (r * (V + d) parameters)."""
    eval_every: int | None = 200
    """Evaluate the validation loss every N optimizer steps (None = once per epoch)."""
    patience: int = 3
    """Stop after this many evaluations without improvement (0 = never stop early)."""
    save_every: int | None = None
    """Write the resumable checkpoint every N steps (None = at every evaluation)."""
    cache_hidden: bool = False
    """Run the frozen model once and keep its hidden states (and dominant sets) in memory, so
    later epochs and evaluations skip the backbone."""
    cache_dtype: str = "float32"
    """Storage dtype of the hidden-state cache in memory: float32, bfloat16 or float16."""
    cache_dir: str | None = None
    """With cache_hidden: keep the cache on disk here (memory-mapped shards, resumable) instead of in memory;
    an existing train/ or validation/ folder here that is not a cache is refused, never deleted."""
    disk_cache_dtype: str = "bfloat16"
    """Storage dtype of the cache on disk (with cache_dir): bfloat16, float32 or float16."""
    cache_from: str | None = None
    """With cache_dir: a folder of other runs' caches over the same model and settings; every
    example with the same token ids is copied from them instead of run through the frozen
    model (another seed, validation split or subset of the same data). It may hold cache_dir
    (skipped), but not be it or lie inside it."""
    seed: int = 0
    """Seed of data order, negatives and validation negatives."""
    dtype: str = "auto"
    """Backbone dtype: auto (float32 on the CPU, the checkpoint's own on CUDA), float32,
    bfloat16 or float16 (half precision on the CPU is first probed in a child process)."""
    mixed_precision: str = "auto"
    """Autocast of the backbone forward: auto (bf16 on a capable GPU, none on CPU), no, bf16,
    fp16 (on the CPU, bf16/fp16 are first probed in a child process)."""
    device: str | None = None
    """cpu or cuda; empty = what Accelerate picks."""
    resume: bool = True
    """Continue from output_dir's checkpoint when one exists (same command, same data)."""
    keep_checkpoints: bool = False
    """Keep output_dir's checkpoint/ and best/ once training has finished (the optimizer
    state: about 4x the head's size), e.g. to continue later with more epochs; an
    interrupted run keeps them either way."""
    progress: bool = True
    """Show a progress bar with loss and tokens/s."""

    def __post_init__(self) -> None:
        if self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(f"mixed_precision must be one of {MIXED_PRECISION}")
        for name in ("cache_dtype", "disk_cache_dtype"):
            if getattr(self, name) not in CACHE_DTYPES:
                raise ValueError(f"{name} must be float32, bfloat16 or float16")
        _check([(self.patience >= 0, "patience must be >= 0"),
                (self.eval_every is None or self.eval_every >= 0, "eval_every must be >= 0"),
                (self.save_every is None or self.save_every >= 0, "save_every must be >= 0"),
                (self.seed >= 0, "seed must be >= 0"),
                (self.seed <= SEED_MAX, f"seed must be at most {SEED_MAX} (63 bits)"),
                (self.head_rank >= 0, "head_rank must be >= 0"),
                (self.cache_from is None or (self.cache_hidden and self.cache_dir is not None),
                 "cache_from needs cache_hidden and cache_dir (it fills a disk cache)")])


GROUPS: dict[str, type] = {"data": DataConfig, "sampler": SamplerConfig,
                           "dominant": DominantConfig, "optim": OptimConfig, "loop": LoopConfig}
"""TrainConfig's groups, in the order of the flat dict and the CLI's option groups."""
RENAMED = {("sampler", "strategy"): "negatives", ("dominant", "cut"): "dominant_cut"}
"""Group fields whose flat name differs from the field name."""


def flat_names() -> dict[str, tuple[str, str]]:
    """Flat setting name -> (group, field), in group order."""
    return {RENAMED.get((g, f.name), f.name): (g, f.name)
            for g, cls in GROUPS.items() for f in fields(cls)}


_FLAT = flat_names()


def _check_number(name: str, value: Any) -> None:
    """Every numeric setting must be a finite number float32 can hold (inf/nan/1e39
    silently ruin a run): :func:`sigmoid_head.safe.finite.check_number`."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if isinstance(value, float):
        check_number(name, value)


_TYPES = field_types(groups=GROUPS, renamed=RENAMED)
"""Flat setting name -> its declared basic types (checked on every value given)."""


_RESUME_FREE = {"output_dir", "resume", "keep_checkpoints", "progress", "device", "eval_every", "save_every",
                "patience", "max_steps", "epochs", "cache_hidden",
                "cache_dir", "cache_from", "num_proc", "data_cache_dir"}


@dataclass(init=False)
class TrainConfig:
    """Settings of one head-training run, by concern (see the module docstring).

    Build it from groups, ``TrainConfig(data=DataConfig(...), loop=LoopConfig(...))``, or
    from flat settings, ``TrainConfig(train_file=..., output_dir=..., lr=1e-3)``; read any
    setting flat (``config.lr``) or by group (``config.optim.lr``).
    """

    data: DataConfig
    sampler: SamplerConfig
    dominant: DominantConfig
    optim: OptimConfig
    loop: LoopConfig

    GROUPS: ClassVar[dict[str, type]] = GROUPS

    def __init__(self, *, data: DataConfig | None = None, sampler: SamplerConfig | None = None,
                 dominant: DominantConfig | None = None, optim: OptimConfig | None = None,
                 loop: LoopConfig | None = None, **flat: Any) -> None:
        unknown = sorted(set(flat) - set(_FLAT))
        if unknown:
            raise TypeError(f"TrainConfig got unknown settings {unknown}")
        given = {"data": data, "sampler": sampler, "dominant": dominant, "optim": optim, "loop": loop}
        per_group: dict[str, dict[str, Any]] = {g: {} for g in GROUPS}
        for name, value in flat.items():
            group, field = _FLAT[name]
            if given[group] is not None:
                raise TypeError(f"{name!r} given both flat and inside {group}")
            per_group[group][field] = value
        check_types(flat, _TYPES, "training settings")  # "false" is not false
        for values in per_group.values():
            for name, value in values.items():
                _check_number(name, value)
        for group, cls in GROUPS.items():
            setattr(self, group, given[group] if given[group] is not None else cls(**per_group[group]))
        if self.optim.reference_weight is None:  # the default depends on what is mixed
            mixed = bool(self.data.train_file and self.data.labelled_file)
            self.optim = replace(self.optim, reference_weight=MIXED_REFERENCE_WEIGHT if mixed else 1.0)
        for group in GROUPS:
            for f in fields(getattr(self, group)):
                _check_number(f.name, getattr(getattr(self, group), f.name))
        if self.optim.bad_weight != 1.0 and not self.data.labelled_file:
            raise ValueError("bad_weight weighs human-labelled error tokens: it needs labelled_file")
        if self.optim.reference_weight != 1.0 and not (self.data.train_file and self.data.labelled_file):
            raise ValueError("reference_weight mixes train_file's reference data with "
                             "labelled_file's human labels: it needs both")
        if self.optim.rank_loss_weight > 0 and not self.sampler.avoid_dominant:
            raise ValueError("rank_loss_weight > 0 needs avoid_dominant: the authors apply the "
                             "ranking loss only with avoid-dominant sampling")

    def __getattr__(self, name: str) -> Any:
        if name in _FLAT and _FLAT[name][0] in self.__dict__:
            group, field = _FLAT[name]
            return getattr(self.__dict__[group], field)
        raise AttributeError(f"'TrainConfig' object has no attribute {name!r}")

    def sampler_config(self) -> SamplerConfig:
        return self.sampler

    def dominant_config(self) -> DominantConfig:
        return self.dominant

    def prompt_format(self, is_encoder_decoder: bool) -> PromptFormat:
        """How this run renders its records (:class:`~sigmoid_head.data.prompt_format.PromptFormat`)
        for a model of that kind."""
        data = self.data
        return PromptFormat(is_encoder_decoder, data.prompt_template, data.use_chat_template,
                            data.max_length)

    def to_dict(self) -> dict:
        """Every setting under its flat name (the ``training`` dict saved in a head)."""
        return {name: getattr(getattr(self, g), f) for name, (g, f) in _FLAT.items()}

    @classmethod
    def from_dict(cls, record: dict) -> TrainConfig:
        """The config of a flat dict as :meth:`to_dict` (or any earlier version) wrote it;
        keys that are not settings (history, steps, ...) are ignored. A record without
        ``untrained_prior`` was trained before the prior existed, without it (0), whatever
        today's default."""
        return cls(**{"untrained_prior": 0.0, **{k: v for k, v in record.items() if k in _FLAT}})

    @classmethod
    def defaults(cls) -> dict:
        """Flat name -> default value of every setting that has one."""
        out = {}
        for name, (group, field) in _FLAT.items():
            f = GROUPS[group].__dataclass_fields__[field]
            if f.default is not MISSING:
                out[name] = f.default
        return out

    def resume_key(self) -> dict:
        """Settings that must match for a checkpoint to be resumed."""
        return {k: v for k, v in self.to_dict().items() if k not in _RESUME_FREE}


def split_validation(config: TrainConfig, train: list[dict]) -> tuple[list[dict], list[dict]]:
    """``train`` less a held-out share (``validation_fraction``, at most
    ``max_validation_examples``, drawn with the run's seed) and that share."""
    if config.validation_fraction <= 0 or len(train) < 2:
        return train, []
    order = list(range(len(train)))
    random.Random(config.seed).shuffle(order)
    n_val = min(config.max_validation_examples, max(1, int(len(train) * config.validation_fraction)))
    held = set(order[:n_val])
    return [e for i, e in enumerate(train) if i not in held], [train[i] for i in order[:n_val]]
