"""TrainConfig: every training setting, with a docstring per field and validation.

The CLI builds its ``sigmoid-head train`` options from these fields, so the help text
and the Python API can never drift apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ..dominant import CUT_MODES, DominantConfig
from ..negatives import SamplerConfig

OPTIMIZERS = ("adamw", "sparse_adam")
MIXED_PRECISION = ("auto", "no", "bf16", "fp16")


@dataclass
class TrainConfig:
    """Settings of one head-training run."""

    train_file: str
    """Training data: .jsonl (pairs {source,target}, chat {messages}, or {text}), .tsv, or .txt."""
    output_dir: str
    """Where the trained head, the best head and the resumable checkpoint are written."""
    model: str | None = None
    """Base model: hub id or local path; empty = the embedded SmolLM2-135M-Instruct."""
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
    negatives: str = "token_freq"
    """Negative sampler(s): random, token_freq, softmax, or a mixture like token_freq+softmax."""
    num_negatives: int = 10
    """k, negatives per position."""
    avoid_dominant: bool = True
    """Never draw the LM's dominant tokens at a position as its negatives."""
    softmax_temperature: float = 2.0
    """Temperature of the softmax sampler."""
    freq_power: float = 1.0
    """token_freq draws proportionally to count ** power."""
    freq_smoothing: float = 0.0
    """Added to every token count before token_freq sampling (0 = the paper)."""
    p_jump: float = 0.3
    """Dominant tokens: relative size of a significant drop."""
    epsilon: float = 0.005
    """Dominant tokens: absolute size of a significant drop."""
    dominant_cut: str = "last"
    """Dominant tokens: cut at the last significant drop (the paper's code) or the first."""
    bias: bool = False
    """Give the head a per-token bias."""
    optimizer: str = "adamw"
    """adamw (dense, works with any number of processes) or sparse_adam (lazy row updates, one process only)."""
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
    """Storage dtype of cached hidden states: float32, bfloat16 or float16."""
    seed: int = 0
    """Seed of data order, negatives and validation negatives."""
    dtype: str = "auto"
    """Backbone dtype: auto, float32, bfloat16 or float16."""
    mixed_precision: str = "auto"
    """Autocast of the backbone forward: auto (bf16 on a capable GPU, none on CPU), no, bf16, fp16."""
    device: str | None = None
    """cpu or cuda; empty = what Accelerate picks."""
    resume: bool = True
    """Continue from output_dir's checkpoint when one exists (same command, same data)."""
    progress: bool = True
    """Show a progress bar with loss and tokens/s."""

    def __post_init__(self) -> None:
        if not self.batch_size and not self.max_tokens:
            raise ValueError("set batch_size or max_tokens")
        if self.max_tokens:
            self.batch_size = None
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}")
        if self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(f"mixed_precision must be one of {MIXED_PRECISION}")
        if self.dominant_cut not in CUT_MODES:
            raise ValueError(f"dominant_cut must be one of {CUT_MODES}")
        if self.cache_dtype not in ("float32", "bfloat16", "float16"):
            raise ValueError("cache_dtype must be float32, bfloat16 or float16")
        if "{source}" not in self.prompt_template:
            raise ValueError("prompt_template must contain {source}")
        checks = [(self.lr > 0, "lr must be > 0"), (self.grad_accum >= 1, "grad_accum must be >= 1"),
                  (self.epochs > 0, "epochs must be > 0"), (self.max_length > 1, "max_length must be > 1"),
                  (0 <= self.validation_fraction < 1, "validation_fraction must be in [0, 1)"),
                  (0 <= self.warmup_ratio < 1, "warmup_ratio must be in [0, 1)"),
                  (self.patience >= 0, "patience must be >= 0"),
                  (self.max_steps is None or self.max_steps > 0, "max_steps must be > 0")]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        self.sampler_config()  # validates the sampler settings
        self.dominant_config()

    def sampler_config(self) -> SamplerConfig:
        return SamplerConfig(
            strategy=self.negatives, num_negatives=self.num_negatives,
            avoid_dominant=self.avoid_dominant, softmax_temperature=self.softmax_temperature,
            freq_power=self.freq_power, freq_smoothing=self.freq_smoothing,
        )

    def dominant_config(self) -> DominantConfig:
        return DominantConfig(p_jump=self.p_jump, epsilon=self.epsilon, cut=self.dominant_cut)

    def to_dict(self) -> dict:
        return asdict(self)

    def resume_key(self) -> dict:
        """Settings that must match for a checkpoint to be resumed."""
        skip = {"output_dir", "resume", "progress", "device", "eval_every", "save_every", "patience",
                "max_steps", "epochs", "cache_hidden"}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
