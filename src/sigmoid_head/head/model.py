"""SigmoidHeadModel: a frozen backbone plus its Sigmoid Head, with PEFT-style save/load, and
the constant prior of the head rows that training never reaches (:func:`apply_untrained_prior`)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import torch

from ..lm.backbone import Backbone, load_backbone
from .folder import HeadConfig, fingerprint, save_head_folder
from .layer import HeadMismatchError, SigmoidHead
from .reader import read_head_folder


def check_compatible(config: HeadConfig, backbone: Backbone) -> None:
    """Raise HeadMismatchError unless the head was trained on this backbone."""
    weight = backbone.output_weight()
    problems = []
    if weight.shape[0] != config.vocab_size:
        problems.append(f"vocabulary {weight.shape[0]} != head's {config.vocab_size}")
    if weight.shape[1] != config.hidden_size:
        problems.append(f"hidden size {weight.shape[1]} != head's {config.hidden_size}")
    if not problems and fingerprint(weight) != config.fingerprint:
        problems.append("its output matrix differs from the one the head was trained on "
                        f"(fingerprint {fingerprint(weight)} != {config.fingerprint})")
    if problems:
        raise HeadMismatchError(
            f"this head was trained on {config.base_model!r} and does not fit base model "
            f"{backbone.name_or_path!r}: " + "; ".join(problems)
            + ". Load it onto the model it was trained on (or pass strict=False at your own risk)."
        )


class SigmoidHeadModel:
    """A frozen language model with a Sigmoid Head beside its softmax head.

    Attributes:
        backbone: the frozen LM and tokenizer.
        head: the trainable SigmoidHead (V, d).
        config: the head's HeadConfig.
        token_counts: (V,) target-token counts of the training data, if known.
        extras: what ``sigmoid-head calibrate`` fitted for this head, as the JSON objects of
            its files (``{"calibration.json": {...}, "error_spans.json": {...},
            "combination.json": {...}}``, each only when present; see
            :mod:`sigmoid_head.head.files`). Saved, pushed and loaded with the head;
            :func:`sigmoid_head.evaluation.extras.head_extras` makes objects of them.
        source: where the head was loaded from, as given (a folder or a Hub id; None for a
            new head): what a scoring run records and names in its errors.
    """

    def __init__(self, backbone: Backbone, head: SigmoidHead, config: HeadConfig,
                 token_counts: torch.Tensor | None = None,
                 extras: dict[str, dict] | None = None, source: str | None = None) -> None:
        self.backbone, self.head, self.config, self.token_counts = backbone, head, config, token_counts
        self.extras: dict[str, dict] = dict(extras or {})
        self.source = source

    @property
    def tokenizer(self) -> object:
        return self.backbone.tokenizer

    @classmethod
    def from_base(cls, model: str | Backbone | None = None, *, bias: bool = False,
                  dtype: str = "auto", device: str | None = None, revision: str | None = None,
                  head_dtype: torch.dtype = torch.float32, rank: int = 0) -> SigmoidHeadModel:
        """A new head initialised from a base model's output layer.

        Args:
            model: hub id, local path, an already loaded Backbone, or None for the
                embedded SmolLM2-135M-Instruct.
            bias: give the head a per-token bias (initialised from the LM's, or zeros).
            dtype: backbone dtype ("auto", "float32", "bfloat16", "float16").
            device: None = CUDA if available, else CPU.
            revision: hub revision of the base model.
            head_dtype: dtype of the head's parameters.
            rank: 0 = a full head (the paper); r > 0 = the LM head plus a rank-r update.
        """
        backbone = model if isinstance(model, Backbone) else load_backbone(
            model, dtype=dtype, device=device, revision=revision)
        weight = backbone.output_weight()
        head = SigmoidHead.from_lm_head(weight, backbone.output_bias(), use_bias=bias,
                                        dtype=head_dtype, rank=rank)
        config = HeadConfig(
            base_model=backbone.name_or_path, base_revision=backbone.revision,
            vocab_size=weight.shape[0], hidden_size=weight.shape[1],
            fingerprint=fingerprint(weight), is_encoder_decoder=backbone.is_encoder_decoder,
            bias=bias, rank=rank,
        )
        return cls(backbone, head, config)

    @classmethod
    def from_pretrained(cls, head_path: str | Path, model: str | Backbone | None = None, *,
                        dtype: str = "auto", device: str | None = None, strict: bool = True,
                        revision: str | None = None, token: str | bool | None = None,
                        base_revision: str | None = None) -> SigmoidHeadModel:
        """Load a saved head onto its base model.

        Args:
            head_path: directory written by :meth:`save_pretrained`, or a Hugging Face Hub
                repository id holding one (downloaded into the Hub cache; with
                ``HF_HUB_OFFLINE=1`` loaded from it), with the extras beside the weights
                (:attr:`extras`). A folder in the paper authors'
                released format is recognised and loaded without running its code
                (see :mod:`sigmoid_head.head.released`).
            model: base model (id, path or Backbone); None = the one named in the head's config.
            dtype: backbone dtype.
            device: None = CUDA if available, else CPU.
            strict: refuse a base model whose output matrix does not match the fingerprint.
            revision: Hub revision (branch, tag, commit) of the head repository.
            token: Hub token for the head repository (None: the stored one).
            base_revision: Hub revision of the base model (default: the one the head records).
        """
        folder = read_head_folder(head_path, revision=revision, token=token)
        model = folder.base(model)
        backbone = model if isinstance(model, Backbone) else load_backbone(
            model, dtype=dtype, device=device, revision=base_revision or folder.base_revision)
        config, state = folder.load(backbone)
        strict = strict and not folder.released  # a released head is checked as it loads
        if strict:
            check_compatible(config, backbone)
        if config.rank:  # the frozen part is the base model's own output matrix
            head = SigmoidHead.from_lm_head(backbone.output_weight(), use_bias=config.bias,
                                            dtype=state["lora_a"].dtype, rank=config.rank)
        else:
            head = SigmoidHead(config.vocab_size, config.hidden_size, bias=config.bias,
                               dtype=state["weight"].dtype)
        head.load_saved_state(state)
        return cls(backbone, head.to(backbone.device), config, state.get("token_counts"),
                   folder.extras, source=folder.source)

    def save_pretrained(self, directory: str | Path, training: dict | None = None) -> Path:
        """Write the head folder: head_config.json, head.safetensors (with token counts when
        known) and the :attr:`extras` (extras files already there that the model does not
        carry are removed: they belonged to another head).

        Args:
            directory: where to write (created if needed).
            training: the training record to save in the config; ``self.config`` itself
                is left unchanged.
        """
        config = self.config if training is None else replace(self.config, training=training)
        extra = {"token_counts": self.token_counts} if self.token_counts is not None else None
        return save_head_folder(directory, config, self.head, extra, self.extras)

    def push_to_hub(self, repo_id: str, *, private: bool | None = None,
                    token: str | bool | None = None, commit_message: str | None = None,
                    evaluation: object = None) -> object:
        """Upload the head with a generated model card to a Hub repository.

        See :func:`sigmoid_head.head.hub.push_to_hub`; returns its ``CommitInfo``.
        """
        from .hub import push_to_hub

        return push_to_hub(self, repo_id, private=private, token=token,
                           commit_message=commit_message, evaluation=evaluation)

    def to(self, device: str | torch.device) -> SigmoidHeadModel:
        """Move the backbone and the head to ``device`` (in place); returns self."""
        self.backbone.model.to(device)
        self.head.to(device)
        return self

    def eval(self) -> SigmoidHeadModel:
        """Put the backbone and the head in eval mode; returns self."""
        self.backbone.model.eval()
        self.head.eval()
        return self


DEFAULT_UNTRAINED_PRIOR = 0.01
"""The untrained prior a full head gets when none is set (``untrained_prior=None``)."""


def resolve_untrained_prior(prior: float | None, head_rank: int) -> float:
    """The prior a run applies: ``prior`` when set (0 = off, the paper's setting), else
    :data:`DEFAULT_UNTRAINED_PRIOR` on a full head and 0 on a low-rank one."""
    if prior is not None:
        return prior
    return 0.0 if head_rank else DEFAULT_UNTRAINED_PRIOR


def apply_untrained_prior(model: SigmoidHeadModel, prior: float) -> int:
    """Set the head rows of tokens that never occur as training targets to a constant prior.

    Row ``v`` with ``model.token_counts[v] == 0`` gets weight 0 and bias ``logit(prior)``,
    so ``sigmoid(W_qe[v] . h + b[v]) = prior`` whatever the context: the head has no
    evidence about such a token, and token_freq sampling never trains its row. A head
    without a bias gets one (zeros elsewhere, trained like the rest; ``model.config.bias``
    is set), so the prior is saved and loaded with the head.

    Args:
        model: a SigmoidHeadModel with a full-rank head and ``token_counts`` set.
        prior: p in (0, 1).

    Returns:
        How many rows were set.
    """
    head, counts = model.head, model.token_counts
    if counts is None:
        raise ValueError("untrained_prior needs the training data's token counts")
    if head.rank:
        raise ValueError("untrained_prior needs a full head (head_rank 0): a low-rank head "
                         "cannot hold a row of its own")
    if not 0 < prior < 1:
        raise ValueError(f"untrained_prior must be in (0, 1), got {prior}")
    weight = head.weight
    if head.bias is None:
        head.bias = torch.nn.Parameter(torch.zeros(weight.shape[0], 1, dtype=weight.dtype,
                                                   device=weight.device))
        model.config = replace(model.config, bias=True)
    rows = (counts == 0).to(weight.device)  # (V,)
    with torch.no_grad():
        weight[rows] = 0.0
        head.bias[rows] = math.log(prior / (1 - prior))
    return int(rows.sum())
