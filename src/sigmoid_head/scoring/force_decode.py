"""Eval Other: force-decode given outputs and score every token in one forward pass.

Inputs are source + candidate pairs (seq2seq models, or causal models with a prompt
template / the chat template) or chat messages + a candidate response (causal models).
They are tokenized by :func:`sigmoid_head.data.tokenize_records`, so the scored tokens
and their label masks are exactly those the head was trained on (candidate tokens plus
the end-of-sequence / end-of-turn token).

Per scored token, from one frozen forward pass:

* ``sigmoid``: the Sigmoid Head's probability of the token (one gathered row of W_qe,
  never a full-vocabulary sigmoid); omitted when scoring with a bare Backbone;
* ``softmax``: the LM's own probability of the token;
* ``boostedprob``: BoostedProb (the dominant set's mass if the token is dominant);
* ``entropy``: ``H = -sum_v p(v) log p(v)`` of the LM's softmax, in nats: an
  *uncertainty* (higher = less confident);
* ``n_dominant``: size of the dominant set at that position.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..backbone import Backbone
from ..data.prompts import (  # noqa: F401  (re-exported: the public scoring API)
    ScoreInputError,
    candidate_text,
    make_examples,
    render_settings,
    to_data_record,
    training_defaults,
)
from ..data.tokenize import Collator, example_length, make_batches
from ..dominant import DominantConfig, boosted_prob, find_dominant
from ..head import SigmoidHead
from .aggregate import safe_log, sequence_record

logger = logging.getLogger(__name__)

PROB_METHODS = ("sigmoid", "softmax", "boostedprob")
"""Token-probability methods aggregated into sequence scores (see aggregate.py)."""
LOGIT_CHUNK = 2048
"""Positions whose (chunk, V) LM logits are held in memory at once."""
STATS_ROWS = 16
"""Rows per softmax-statistics slice: a (16, V) float32 slice fits a core's cache, so the
several passes over it (log-softmax, screening, entropy) do not each go to memory
(2.3x faster than whole-chunk passes on this CPU)."""


@dataclass
class TokenScores:
    """Scores of one scored sequence, one value per scored token (shape (T,) each).

    Attributes:
        ids: token ids.
        softmax_log: log softmax probability.
        boostedprob: BoostedProb score.
        entropy: softmax entropy in nats (uncertainty).
        n_dominant: dominant-set size.
        sigmoid_log: log sigmoid probability, or None without a head.
    """

    ids: np.ndarray
    softmax_log: np.ndarray
    boostedprob: np.ndarray
    entropy: np.ndarray
    n_dominant: np.ndarray
    sigmoid_log: np.ndarray | None = None

    def log_probs(self) -> dict[str, np.ndarray]:
        """Method -> (T,) token log-probabilities, for every available method."""
        out = {"softmax": self.softmax_log, "boostedprob": safe_log(self.boostedprob)}
        if self.sigmoid_log is not None:
            out = {"sigmoid": self.sigmoid_log, **out}
        return out


def unpack_model(model: Any) -> tuple[Backbone, SigmoidHead | None]:
    """(backbone, head or None) of a SigmoidHeadModel or a bare Backbone."""
    if isinstance(model, Backbone):
        return model, None
    backbone, head = getattr(model, "backbone", None), getattr(model, "head", None)
    if not isinstance(backbone, Backbone):
        raise TypeError(f"expected a SigmoidHeadModel or a Backbone, got {type(model).__name__}")
    return backbone, head


@torch.no_grad()
def position_scores(
    backbone: Backbone,
    head: SigmoidHead | None,
    hidden: torch.Tensor,
    targets: torch.Tensor,
    logits: torch.Tensor | None = None,
    dominant: DominantConfig | None = None,
) -> dict[str, torch.Tensor]:
    """Every token-level score at N positions.

    Args:
        backbone: the frozen LM (computes logits from ``hidden`` when not given).
        head: the Sigmoid Head, or None.
        hidden: (N, d) LM-head inputs.
        targets: (N,) the scored token at each position.
        logits: (N, V) raw LM logits, if already known (e.g. from generation).
        dominant: dominant-token rule (default: the paper's).

    Returns:
        ``softmax_log``, ``boostedprob``, ``entropy`` (float32, (N,)), ``n_dominant``
        (long, (N,)) and, with a head, ``sigmoid_log`` (float32, (N,)).
    """
    parts: dict[str, list[torch.Tensor]] = {}
    for s in range(0, targets.shape[0], LOGIT_CHUNK):
        h, t = hidden[s : s + LOGIT_CHUNK], targets[s : s + LOGIT_CHUNK]  # (C, d), (C,)
        z = logits[s : s + LOGIT_CHUNK].float() if logits is not None else backbone.lm_logits(h)
        if head is not None:
            out = F.logsigmoid(head.logits(h, t.unsqueeze(-1)).squeeze(-1).float())  # (C,)
            parts.setdefault("sigmoid_log", []).append(out)
        for r in range(0, z.shape[0], STATS_ROWS):  # (STATS_ROWS, V) slices stay in cache
            for k, v in _softmax_stats(
                z[r : r + STATS_ROWS], t[r : r + STATS_ROWS], dominant
            ).items():
                parts.setdefault(k, []).append(v)
    return {k: torch.cat(v) for k, v in parts.items()}


def _softmax_stats(
    z: torch.Tensor, t: torch.Tensor, dominant: DominantConfig | None
) -> dict[str, torch.Tensor]:
    """softmax_log, boostedprob, entropy, n_dominant (each (R,)) from logits z (R, V)."""
    logp = torch.log_softmax(z, dim=-1)  # (R, V)
    dom = find_dominant(logp, dominant)
    return {
        "softmax_log": logp.gather(-1, t.unsqueeze(-1)).squeeze(-1),
        "boostedprob": boosted_prob(logp, t, dominant=dom),
        "entropy": entropy(logp),
        "n_dominant": dom.n_dominant,
    }


def entropy(logp: torch.Tensor) -> torch.Tensor:
    """(C,) softmax entropy in nats from (C, V) log-probabilities, as one fused dot per row.

    Rows holding ``-inf`` log-probabilities (masked tokens: ``0 * -inf``) are redone
    with the explicit ``p log p = 0 where p = 0`` rule.
    """
    p = logp.exp()  # (C, V)
    ent = -torch.linalg.vecdot(p, logp)  # (C,)
    bad = ent.isnan()
    if bool(bad.any()):
        pb, lb = p[bad], logp[bad]
        ent[bad] = -torch.where(pb > 0, pb * lb, torch.zeros_like(pb)).sum(-1)
    return ent


def split_rows(
    values: dict[str, torch.Tensor], ids: torch.Tensor, row: torch.Tensor, n_rows: int
) -> list[TokenScores]:
    """Cut flat (N,) position scores into one TokenScores per batch row (positions in order)."""
    cpu = {k: v.detach().cpu() for k, v in values.items()}
    ids, row = ids.cpu(), row.cpu()
    out = []
    for b in range(n_rows):
        sel = row == b
        get = {
            k: v[sel].double().numpy() if k != "n_dominant" else v[sel].numpy()
            for k, v in cpu.items()
        }
        out.append(
            TokenScores(
                ids=ids[sel].numpy(),
                sigmoid_log=get.get("sigmoid_log"),
                softmax_log=get["softmax_log"],
                boostedprob=get["boostedprob"],
                entropy=get["entropy"],
                n_dominant=get["n_dominant"],
            )
        )
    return out


def length_batches(
    examples: Sequence[dict], batch_size: int | None = 16, max_tokens: int | None = None
) -> list[list[int]]:
    """Batches of example indices, longest first (cuts padding); every index once."""
    lengths = [example_length(e) for e in examples]
    order = sorted(range(len(examples)), key=lambda i: -lengths[i])
    if max_tokens:
        batch_size = None
    groups = make_batches(
        [lengths[i] for i in order], batch_size=batch_size, max_tokens=max_tokens, shuffle=False
    )
    return [[order[j] for j in g] for g in groups]


def pad_id(tokenizer: Any) -> int:
    """The tokenizer's pad id, else its eos id."""
    pid = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pid is None:
        raise ScoreInputError("the tokenizer has neither a pad nor an eos token")
    return int(pid)


@torch.no_grad()
def score_examples(
    model: Any,
    examples: Sequence[dict],
    *,
    batch_size: int | None = 16,
    max_tokens: int | None = None,
    dominant: DominantConfig | None = None,
    progress: bool = True,
) -> list[TokenScores]:
    """Force-decode tokenized examples and score their labelled tokens.

    Args:
        model: a SigmoidHeadModel, or a Backbone (no sigmoid scores).
        examples: ``{"input_ids", "labels"}`` dicts as from ``tokenize_records``.
        batch_size: sequences per forward pass (ignored when ``max_tokens`` is set).
        max_tokens: padded tokens per forward pass.
        dominant: dominant-token rule.
        progress: show a tqdm progress bar.

    Returns:
        One TokenScores per example, in input order.
    """
    from tqdm.auto import tqdm

    backbone, head = unpack_model(model)
    seq2seq = backbone.is_encoder_decoder
    collate = Collator(pad_id(backbone.tokenizer), seq2seq)
    results: list[TokenScores | None] = [None] * len(examples)
    for idx in tqdm(
        length_batches(examples, batch_size, max_tokens),
        desc="score",
        disable=not progress,
        dynamic_ncols=True,
    ):
        batch = collate([examples[i] for i in idx])
        batch = {k: v.to(backbone.device) for k, v in batch.items()}
        pos = backbone.positions(batch, with_logits=False)
        values = position_scores(backbone, head, pos.hidden, pos.targets, dominant=dominant)
        for i, ts in zip(idx, split_rows(values, pos.targets, pos.row, len(idx)), strict=True):
            results[i] = ts
    return results  # type: ignore[return-value]


@torch.no_grad()
def sigmoid_scores(
    model: Any,
    examples: Sequence[dict],
    *,
    batch_size: int | None = 16,
    max_tokens: int | None = None,
) -> list[np.ndarray]:
    """Sigmoid-head-only force-decoding: the body's forward pass and one gathered head row
    per token, no LM logits at all (the cheapest quality estimate).

    Args:
        model: a SigmoidHeadModel.
        examples: tokenized examples, as for :func:`score_examples`.
        batch_size, max_tokens: batching.

    Returns:
        Per example, (T,) float64 log sigmoid probabilities of its scored tokens.
    """
    backbone, head = unpack_model(model)
    if head is None:
        raise TypeError("sigmoid_scores needs a SigmoidHeadModel (a Backbone has no head)")
    collate = Collator(pad_id(backbone.tokenizer), backbone.is_encoder_decoder)
    results: list[np.ndarray | None] = [None] * len(examples)
    for idx in length_batches(examples, batch_size, max_tokens):
        batch = {k: v.to(backbone.device) for k, v in collate([examples[i] for i in idx]).items()}
        pos = backbone.positions(batch, with_logits=False)
        logs = F.logsigmoid(head.logits(pos.hidden, pos.targets.unsqueeze(-1)).squeeze(-1).float())
        logs, row = logs.cpu().double(), pos.row.cpu()
        for r, i in enumerate(idx):
            results[i] = logs[row == r].numpy()
    return results  # type: ignore[return-value]


# ------------------------------------------------------------------ inputs -> examples


def score_records(
    model: Any,
    records: Sequence[dict],
    *,
    prompt_template: str | None = None,
    use_chat_template: bool | None = None,
    max_length: int | None = None,
    batch_size: int | None = 16,
    max_tokens: int | None = None,
    with_tokens: bool = False,
    dominant: DominantConfig | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Eval Other on ``{source, candidate}`` / ``{messages, candidate}`` records.

    Args:
        model: a SigmoidHeadModel, or a Backbone for the baselines only.
        records: the inputs; ``target`` is accepted as an alias of ``candidate``.
        prompt_template, use_chat_template, max_length: how causal pairs are rendered;
            None = what the head was trained with (else ``"{source}\\n"``, False, 2048).
        batch_size, max_tokens: batching (see :func:`score_examples`).
        with_tokens: add per-token and per-word scores.
        dominant: dominant-token rule.
        progress: show a progress bar.

    Returns:
        One flat score record per input, in input order (see :func:`sequence_record`).
    """
    backbone, _ = unpack_model(model)
    if not records:
        raise ScoreInputError("nothing to score: no records")
    examples = make_examples(
        records,
        backbone.tokenizer,
        is_encoder_decoder=backbone.is_encoder_decoder,
        max_length=max_length or max(2048, training_defaults(model).get("max_length", 0)),
        **render_settings(model, prompt_template, use_chat_template),
    )
    scored = score_examples(
        model,
        examples,
        batch_size=batch_size,
        max_tokens=max_tokens,
        dominant=dominant,
        progress=progress,
    )
    return [
        sequence_record(ts, backbone.tokenizer, candidate_text(r, 0), with_tokens)
        for ts, r in zip(scored, records, strict=True)
    ]


def score_pairs(
    model: Any, sources: Sequence[str], candidates: Sequence[str], **kwargs: Any
) -> list[dict[str, Any]]:
    """Eval Other on parallel lists of sources and candidates (see :func:`score_records`)."""
    if len(sources) != len(candidates):
        raise ScoreInputError(f"{len(sources)} sources but {len(candidates)} candidates")
    records = [{"source": s, "candidate": c} for s, c in zip(sources, candidates, strict=True)]
    return score_records(model, records, **kwargs)
