"""Load a frozen causal or encoder-decoder LM and read its final hidden states uniformly.

The hidden states are captured at the input of the model's own output layer (a forward
pre-hook on ``get_output_embeddings()``), so they are exactly what its LM head sees
whatever the architecture does before it (Llama's final norm, T5's d_model ** -0.5
rescaling, ...). The forward pass is stopped right there, and the LM logits are then
computed only at the positions that are trained or scored, instead of over every
position of the batch.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..data.batching import IGNORE_INDEX
from .cpu_precision import check_cpu_dtype
from .hub_access import hub_offline

logger = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}


class _StopForward(Exception):
    """Raised by the capture hook once the LM head's input is known."""


@contextlib.contextmanager
def on_head_input(model: nn.Module, callback: Callable[[torch.Tensor], None]) -> Iterator[None]:
    """Call ``callback(h)`` with the LM head's input (B, T, d) on every forward of ``model``.

    A forward pre-hook on ``get_output_embeddings()``: the one place the output layer is
    hooked (the training/scoring capture here, the generation-time capture in
    :mod:`sigmoid_head.scoring.generate`). The callback may raise to stop the forward.
    """

    def hook(_module: nn.Module, args: tuple) -> None:
        callback(args[0])

    handle = model.get_output_embeddings().register_forward_pre_hook(hook)
    try:
        yield
    finally:
        handle.remove()


@contextlib.contextmanager
def on_head_call(
    model: nn.Module, callback: Callable[[torch.Tensor, torch.Tensor], None]
) -> Iterator[None]:
    """Call ``callback(h, z)`` with the LM head's input (B, T, d) and output (B, T, V) on every
    forward of ``model`` (a forward hook on ``get_output_embeddings()``; streaming reads
    both, so generation needs no second pass). ``z`` is the output layer's own result:
    :meth:`Backbone.finish_logits` turns it into the model's logits."""

    def hook(_module: nn.Module, args: tuple, output: torch.Tensor) -> None:
        callback(args[0], output)

    handle = model.get_output_embeddings().register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


@dataclass
class Positions:
    """The trained/scored positions of a batch, flattened.

    Attributes:
        hidden: (N, d) final hidden states (the LM head's input), backbone dtype.
        targets: (N,) the token each position predicts.
        row: (N,) batch row of each position.
        col: (N,) index of the position in the label sequence (labels[row, col] == targets).
        logits: (N, V) float32 LM logits at these positions, or None when not asked for.
    """

    hidden: torch.Tensor
    targets: torch.Tensor
    row: torch.Tensor
    col: torch.Tensor
    logits: torch.Tensor | None = None


@dataclass
class Backbone:
    """A frozen language model with its tokenizer."""

    model: nn.Module
    tokenizer: object
    name_or_path: str
    revision: str | None = None

    @property
    def is_encoder_decoder(self) -> bool:
        return bool(getattr(self.model.config, "is_encoder_decoder", False))

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return self.output_weight().dtype

    def max_positions(self) -> int | None:
        """How many positions the model can embed (GPT-2's n_positions, ...); None = no limit
        known (rotary and relative-position models)."""
        cfg = self.model.config
        if self.is_encoder_decoder or getattr(cfg, "position_embedding_type", None) == "relative_key":
            return None
        if getattr(cfg, "model_type", "") in ("gpt2", "gpt_neo", "gptj", "opt", "bloom", "codegen",
                                              "gpt_bigcode", "biogpt", "xglm"):
            for name in ("n_positions", "max_position_embeddings", "n_ctx"):
                value = getattr(cfg, name, None)
                if isinstance(value, int) and value > 1:
                    return value - 2 if getattr(cfg, "model_type", "") == "opt" else value
        return None

    def output_weight(self) -> torch.Tensor:
        """(V, d) the LM's output (unembedding) matrix."""
        return self.model.get_output_embeddings().weight

    def vocab_rows(self) -> int:
        """V: how many logits the output layer makes (its weight's rows; may exceed the
        tokenizer's vocabulary)."""
        return int(self.output_weight().shape[0])

    def output_bias(self) -> torch.Tensor | None:
        """(V,) the LM's output bias (its own plus Marian/BART's final_logits_bias), if any."""
        bias = getattr(self.model.get_output_embeddings(), "bias", None)
        extra = getattr(self.model, "final_logits_bias", None)
        if extra is not None:
            extra = extra.reshape(-1)
            bias = extra if bias is None else bias + extra
        return bias

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """LM logits from captured hidden states, as the model's own forward computes them.

        Args:
            hidden: (N, d) LM head inputs.

        Returns:
            (N, V) float32 logits.
        """
        return self.finish_logits(self.model.get_output_embeddings()(hidden))

    def finish_logits(self, logits: torch.Tensor) -> torch.Tensor:
        """(..., V) float32 model logits from the output layer's result: Marian/BART's
        ``final_logits_bias`` added and Gemma-style soft-capping applied, as the model's
        forward does."""
        extra = getattr(self.model, "final_logits_bias", None)
        if extra is not None:
            logits = logits + extra.reshape(-1).to(logits.dtype)
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits.float()

    @torch.no_grad()
    def final_hidden(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the frozen body and capture the LM head's input at every position.

        Args:
            batch: input_ids (B, T), attention_mask (B, T), labels (B, T) for causal
                models or (B, L) for encoder-decoder models.

        Returns:
            hidden: (B, T, d) for causal models or (B, L, d) for encoder-decoder models.
            labels: the label tensor aligned with ``hidden`` (shifted for causal models:
                hidden[:, t] predicts labels[:, t]), IGNORE_INDEX where nothing is predicted.
        """
        captured: dict[str, torch.Tensor] = {}

        def stop(h: torch.Tensor) -> None:
            captured["h"] = h
            raise _StopForward

        labels = batch["labels"]
        kwargs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"],
                  "use_cache": False}
        if self.is_encoder_decoder:
            kwargs["decoder_input_ids"] = self.decoder_inputs(labels)
            aligned = labels
        else:
            aligned = torch.full_like(labels, IGNORE_INDEX)
            aligned[:, :-1] = labels[:, 1:]
        try:
            with on_head_input(self.model, stop):
                self.model(**kwargs)
        except _StopForward:
            pass
        if "h" not in captured:
            raise RuntimeError("the model's forward never reached its output layer")
        return captured["h"], aligned

    def decoder_inputs(self, labels: torch.Tensor) -> torch.Tensor:
        """Teacher-forcing decoder inputs for labels (B, L): shifted right, IGNORE_INDEX -> pad."""
        prepare = getattr(self.model, "prepare_decoder_input_ids_from_labels", None)
        if prepare is not None:
            return prepare(labels=labels)
        cfg = self.model.config
        start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else cfg.pad_token_id
        out = labels.new_full(labels.shape, start)
        out[:, 1:] = labels[:, :-1]
        return out.masked_fill(out == IGNORE_INDEX, cfg.pad_token_id)

    def trained_index(self, labels: torch.Tensor) -> torch.Tensor:
        """(2, N) (row, column) of the trained positions in :meth:`final_hidden`'s alignment.

        Computed where ``labels`` (B, L) live: on the host before the batch is copied, so
        the device never has to report N back.
        """
        aligned = labels if self.is_encoder_decoder else labels[:, 1:]
        return (aligned != IGNORE_INDEX).nonzero().T

    @torch.no_grad()
    def positions(self, batch: dict[str, torch.Tensor], with_logits: bool = True) -> Positions:
        """Hidden states (and LM logits) at every labelled position of a batch.

        Args:
            batch: as for :meth:`final_hidden`, optionally with ``trained_index`` (2, N)
                from :meth:`trained_index` (saves a host-device sync).
            with_logits: also compute the LM logits at these positions.

        Returns:
            Positions with N = number of labels != IGNORE_INDEX.
        """
        hidden, aligned = self.final_hidden(batch)
        index = batch.get("trained_index")
        if index is None:
            row, col = (aligned != IGNORE_INDEX).nonzero(as_tuple=True)  # (N,), (N,)
        else:
            row, col = index[0], index[1]
        h = hidden[row, col]  # (N, d)
        out = Positions(hidden=h, targets=aligned[row, col], row=row, col=col)
        if not self.is_encoder_decoder:
            out.col = col + 1  # index into the original (unshifted) labels
        if with_logits:
            out.logits = self.lm_logits(h)
        return out


def freeze(model: nn.Module) -> nn.Module:
    """Put a model in eval mode with every parameter frozen."""
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def check_device(device: str | None) -> str:
    """``device`` checked (None = CUDA if available, else CPU); a ValueError if unusable."""
    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"unknown device {device!r}; use cpu, cuda or cuda:N") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for but CUDA is not available; use --device cpu")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device {device!r} is not available here")
    return device


def resolve_dtype(dtype: str | torch.dtype, device: str) -> torch.dtype | str:
    """The dtype to load a backbone in on ``device``.

    Off the CPU, "auto" stays "auto" (the checkpoint's own dtype). On the CPU, "auto" is
    float32 (half precision is emulated and slower on most CPUs, and on some it faults:
    :mod:`sigmoid_head.lm.cpu_precision`), and an explicit bfloat16/float16 is probed in a
    child process first.

    Raises:
        ValueError: an unknown dtype; :class:`CpuPrecisionError` (a ValueError) when this
            CPU cannot run the half-precision dtype asked for.
    """
    torch_dtype = DTYPES.get(dtype, dtype) if isinstance(dtype, str) else dtype
    if torch_dtype != "auto" and not isinstance(torch_dtype, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}; use one of auto, {', '.join(DTYPES)}")
    if torch.device(device).type != "cpu":
        return torch_dtype
    if torch_dtype == "auto":
        return torch.float32
    check_cpu_dtype(str(torch_dtype).removeprefix("torch."))
    return torch_dtype


def _load_problem(path: str, err: Exception, offline: bool = False) -> str:
    """One line saying why a model could not be loaded."""
    first = next((ln for ln in str(err).splitlines() if ln.strip()), type(err).__name__)
    local = Path(path)
    if local.is_dir():
        return f"cannot load model from {path}: {first}"
    if path.startswith((".", "/", "~")) or local.suffix:
        return f"model path not found: {path}"
    if offline:
        return (f"cannot load model {path!r}: it is not a local directory, the Hugging Face Hub "
                "cannot be reached from here (HF_HUB_OFFLINE or no connection), and it is not in the "
                "Hub cache")
    return (f"cannot load model {path!r}: it is not a local directory and the Hugging Face Hub "
            f"could not provide it ({first})")


def _pickle_problem(path: str, err: Exception) -> str:
    """One line for a model whose weights file could not be read: torch's safe loader refused
    a pickle (``pytorch_model.bin``; nothing from it was run), or the file is cut or corrupt."""
    if isinstance(err, pickle.UnpicklingError):
        return (f"cannot load model from {path}: its pickle weights file (pytorch_model.bin) holds "
                "something torch's safe loader refuses (nothing in it was run): it is corrupt, or "
                "not plain weights; use a safetensors copy of the model")
    first = next((ln for ln in str(err).splitlines() if ln.strip()), type(err).__name__)
    return f"cannot load model from {path}: its weights file is unreadable ({first})"


def load_backbone(
    name_or_path: str | None = None, *, dtype: str | torch.dtype = "auto", device: str | None = None,
    revision: str | None = None,
) -> Backbone:
    """Load a frozen Hugging Face LM (causal or encoder-decoder) and its tokenizer.

    Args:
        name_or_path: hub id or local path; None = the embedded SmolLM2-135M-Instruct.
        dtype: "auto", "float32", "bfloat16", "float16" or a torch dtype; see
            :func:`resolve_dtype` (on the CPU "auto" is float32, and half precision is
            probed first).
        device: where to put it; None = CUDA if available, else CPU.
        revision: hub revision.

    Returns:
        A Backbone in eval mode with requires_grad off everywhere.
    """
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    from ..embedded.default_model import DEFAULT_MODEL_NAME, resolve_model_name

    device = check_device(device)  # before the default model is prepared: a typo fails at once
    path = resolve_model_name(name_or_path)
    torch_dtype = resolve_dtype(dtype, device)
    # a hub id on a machine that cannot reach the Hub: the cache only, no retried requests
    cached = {"local_files_only": True} if not Path(path).expanduser().is_dir() and hub_offline() else {}
    try:
        config = AutoConfig.from_pretrained(path, revision=revision, **cached)
        auto = AutoModelForSeq2SeqLM if getattr(config, "is_encoder_decoder", False) else AutoModelForCausalLM
        with warnings.catch_warnings():  # a refused pickle is reported in one line below
            warnings.filterwarnings("ignore", message="Detected pickle protocol",
                                    category=UserWarning)
            model = auto.from_pretrained(path, revision=revision, dtype=torch_dtype, **cached)
        tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, **cached)
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(_load_problem(path, err, offline=bool(cached))) from err
    except (pickle.UnpicklingError, EOFError, RuntimeError) as err:  # a pickle weights file
        raise ValueError(_pickle_problem(path, err)) from None
    if model.get_output_embeddings() is None:
        raise ValueError(f"{path} has no output embedding layer to copy a head from")
    name = name_or_path if name_or_path is not None else DEFAULT_MODEL_NAME
    return Backbone(freeze(model.to(device)), tokenizer, str(name), revision)
