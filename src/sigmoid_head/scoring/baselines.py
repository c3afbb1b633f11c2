"""QE baselines beyond the per-token ones of :mod:`.token_scores` (softmax, BoostedProb, entropy).

* Monte Carlo sequence entropy (Malinin & Gales 2021; Kuhn et al. 2023): sample n
  outputs per input at temperature 1 and estimate ``H = -mean_s log P(y_s | x)``, with
  ``log P`` from the softmax head and, as in the paper's comparison table, from the
  Sigmoid Head. Returned as *quality* = ``-H`` (higher = better).
* LLM self-judge: ask the model whether an output is correct and read
  ``P(yes) / (P(yes) + P(no))`` off its next-token distribution.
* Supervised QE (CometKiwi): needs a checkpoint and the ``unbabel-comet`` package, so
  scores computed elsewhere can be merged by row instead
  (:func:`sigmoid_head.evaluation.readers.read_external_scores`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.batching import pad_id, pad_with_mask
from ..data.prompts import ScoreInputError
from ..registry import methods as registry
from .decoding import GENERATION_MAX_PROMPT, DecodingConfig
from .generate import generate_outputs
from .token_scores import unpack_model

JUDGE_TEMPLATE = (
    "Here is a request and a response to it.\n\nRequest:\n{source}\n\nResponse:\n{candidate}"
    "\n\nIs the response correct and of good quality? Answer with Yes or No."
)
"""Default self-judge prompt; must contain {source} and {candidate}."""
YES_WORDS = ("Yes", "yes", " Yes", " yes", "YES", " YES")
NO_WORDS = ("No", "no", " No", " no", "NO", " NO")
COMET_HINT = (
    "CometKiwi needs the unbabel-comet package: pip install 'sigmoid-head[comet]' "
    "(or pip install unbabel-comet) and a local checkpoint path (--comet-model). "
    "Without them, compute the scores elsewhere and pass them with --extra-scores."
)


# ------------------------------------------------------------------ Monte Carlo entropy


def mc_sequence_entropy(
    model: Any,
    prompts: Sequence[list[int]],
    n_samples: int = 10,
    *,
    seed: int = 0,
    max_new_tokens: int = 128,
    batch_size: int = 8,
    progress: bool = True,
) -> list[dict[str, float]]:
    """Monte Carlo sequence entropy, as quality (negated entropy).

    Samples ``n_samples`` outputs per prompt (temperature 1, no top-k/top-p) and
    computes ``-H = mean_s sum_t log p(y_s,t)`` with each head. Deterministic for a seed.

    Args:
        model: a SigmoidHeadModel (both variants) or a Backbone (softmax only).
        prompts: prompt ids per input (see :func:`sigmoid_head.data.prompts.prompt_ids`).
        n_samples: samples per input.
        seed: sampling seed.
        max_new_tokens: longest sample.
        batch_size: inputs per ``generate`` call.
        progress: show a progress bar.

    Returns:
        Per input ``{"mc_<method>": -H_<method>}`` for every registered method whose
        ``monte_carlo`` is set (``mc_sigmoid`` only with a head); each ``<= 0``, higher =
        more certain = better.
    """
    if n_samples < 1:
        raise ValueError("n_samples must be >= 1")
    cfg = DecodingConfig(
        max_new_tokens=max_new_tokens,
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        num_return_sequences=n_samples,
        seed=seed,
    )
    outs = generate_outputs(model, prompts, cfg, batch_size=batch_size, progress=progress)
    sums: dict[int, dict[str, list[float]]] = {}
    for g in outs:
        per = sums.setdefault(g.input_index, {})
        for name, lp in g.scores.log_probs().items():
            if registry.METHODS[name].monte_carlo:  # the registry's mc_<method> columns
                per.setdefault(f"mc_{name}", []).append(float(np.sum(lp)))
    return [{k: float(np.mean(v)) for k, v in sums[i].items()} for i in range(len(prompts))]


# ------------------------------------------------------------------ LLM self-judge


def yes_no_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """Token ids counted as "yes" and as "no".

    The first token of each spelling in :data:`YES_WORDS` / :data:`NO_WORDS`
    (tokenized without special tokens); an id claimed by both sides is dropped.
    """

    def first_ids(words: Sequence[str]) -> set[int]:
        ids = (tokenizer(w, add_special_tokens=False)["input_ids"] for w in words)
        return {int(t[0]) for t in ids if t}

    yes, no = first_ids(YES_WORDS), first_ids(NO_WORDS)
    both = yes & no
    yes, no = sorted(yes - both), sorted(no - both)
    if not yes or not no:
        raise ValueError("the tokenizer cannot tell 'yes' from 'no' at the first token")
    return yes, no


def judge_prompts(
    tokenizer: Any,
    sources: Sequence[str],
    candidates: Sequence[str],
    *,
    template: str = JUDGE_TEMPLATE,
    use_chat_template: bool | None = None,
    is_encoder_decoder: bool = False,
) -> list[list[int]]:
    """Token ids of the self-judge question for each (source, candidate).

    Causal models with a chat template get it as a user turn followed by the
    assistant's generation prompt (``use_chat_template=None`` = whenever the tokenizer
    has one); otherwise the plain text, then ``"\\nAnswer:"``, with the tokenizer's
    special tokens.
    """
    if len(sources) != len(candidates):
        raise ScoreInputError(f"{len(sources)} sources but {len(candidates)} candidates")
    from ..data.templates import check_template

    check_template(template, ("source", "candidate"), "judge template")
    chat = getattr(tokenizer, "chat_template", None) is not None and not is_encoder_decoder
    chat = chat if use_chat_template is None else use_chat_template
    out = []
    for s, c in zip(sources, candidates, strict=True):
        text = template.format(source=s, candidate=c)
        if chat:
            rendered = tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
            )
            out.append(list(tokenizer(rendered, add_special_tokens=False)["input_ids"]))
        else:
            suffix = "" if is_encoder_decoder else "\nAnswer:"
            out.append(list(tokenizer(text + suffix)["input_ids"]))
    return out


@torch.no_grad()
def next_token_log_probs(
    model: Any, prompts: Sequence[list[int]], batch_size: int = 8
) -> torch.Tensor:
    """(B, V) float32 log-softmax of the next token after each prompt.

    Causal: after the prompt's last token. Seq2seq: the first decoder step.
    """
    backbone, _ = unpack_model(model)
    pid, rows = pad_id(backbone.tokenizer), []
    for s in range(0, len(prompts), batch_size):
        chunk = [list(p) for p in prompts[s : s + batch_size]]
        ids, mask = (t.to(backbone.device) for t in pad_with_mask(chunk, pid, "right"))
        labels = ids[:, :1] if backbone.is_encoder_decoder else ids  # only the shape matters
        hidden, _ = backbone.final_hidden(
            {"input_ids": ids, "attention_mask": mask, "labels": labels}
        )
        last = torch.zeros(len(chunk), dtype=torch.long, device=ids.device)
        if not backbone.is_encoder_decoder:
            last = mask.sum(1) - 1
        h = hidden[torch.arange(len(chunk), device=ids.device), last]  # (b, d)
        rows.append(torch.log_softmax(backbone.lm_logits(h), -1))
    return torch.cat(rows)


def self_judge(
    model: Any,
    sources: Sequence[str],
    candidates: Sequence[str],
    *,
    template: str = JUDGE_TEMPLATE,
    use_chat_template: bool | None = None,
    batch_size: int = 8,
) -> list[float]:
    """LLM self-judge scores ``P(yes) / (P(yes) + P(no))`` in [0, 1], one per candidate.

    ``P(yes)`` sums the next-token probabilities of every id of :func:`yes_no_ids`.
    """
    backbone, _ = unpack_model(model)
    tok = backbone.tokenizer
    prompts = judge_prompts(
        tok,
        sources,
        candidates,
        template=template,
        use_chat_template=use_chat_template,
        is_encoder_decoder=backbone.is_encoder_decoder,
    )
    logp = next_token_log_probs(model, prompts, batch_size)  # (B, V)
    yes, no = yes_no_ids(tok)
    ly = torch.logsumexp(logp[:, yes], -1)
    ln = torch.logsumexp(logp[:, no], -1)
    return torch.sigmoid(ly - ln).double().cpu().tolist()  # p_y / (p_y + p_n)


# ------------------------------------------------------------------ external / supervised QE


def comet_kiwi(
    sources: Sequence[str],
    candidates: Sequence[str],
    checkpoint: str | Path,
    *,
    batch_size: int = 16,
    gpus: int = 0,
) -> list[float]:
    """CometKiwi (reference-free COMET) scores from a local checkpoint file.

    Raises:
        ImportError: ``unbabel-comet`` is not installed (the message says how).
        FileNotFoundError: the checkpoint does not exist (no hub download is tried).
    """
    try:
        from comet import load_from_checkpoint
    except ImportError as err:
        raise ImportError(COMET_HINT) from err
    if not Path(checkpoint).exists():
        raise FileNotFoundError(f"{checkpoint}: no such CometKiwi checkpoint. {COMET_HINT}")
    if len(sources) != len(candidates):
        raise ScoreInputError(f"{len(sources)} sources but {len(candidates)} candidates")
    model = load_from_checkpoint(str(checkpoint))
    data = [{"src": s, "mt": c} for s, c in zip(sources, candidates, strict=True)]
    return [float(x) for x in model.predict(data, batch_size=batch_size, gpus=gpus).scores]


# ------------------------------------------------------------------ the registry's hooks
# (sigmoid_head.registry.columns: each gets a BaselineInputs, returns one value or dict per row)


def self_judge_column(b: Any) -> list[float]:
    """``self_judge`` of every row."""
    return self_judge(b.model, b.sources, b.candidates,
                      template=b.settings.judge_template or JUDGE_TEMPLATE,
                      batch_size=b.corpus.batch_size if b.corpus is not None else 8)


def comet_kiwi_column(b: Any) -> list[float]:
    """``comet_kiwi`` of every row."""
    return comet_kiwi(b.sources, b.candidates, b.settings.comet_model)


def mc_columns(b: Any) -> list[dict[str, float]] | None:
    """``mc_<method>`` of every row (generate only: None without a decoding)."""
    if b.decoding is None:
        return None
    from ..data.prompts import PromptFormat, prompt_ids

    backbone, _ = unpack_model(b.model)
    corpus = b.corpus
    prompts = prompt_ids(b.inputs, backbone.tokenizer, PromptFormat.for_model(
        b.model, corpus.prompt_template, corpus.chat, max_length=GENERATION_MAX_PROMPT))
    mc = mc_sequence_entropy(b.model, prompts, b.settings.mc_samples, seed=b.decoding.seed,
                             max_new_tokens=b.decoding.max_new_tokens, progress=not corpus.quiet)
    return [mc[i // b.per_input] for i in range(len(b.rows))]
