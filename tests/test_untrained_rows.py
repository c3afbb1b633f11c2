"""Rows of tokens that never occur as training targets (issue 25, the pilot's finding).

token_freq sampling draws a negative only among training targets, so the row of a token
that never is one keeps the LM head's initial values; where the LM head rates such a
token as plausible (SmolLM2 rates Hebrew letters after Hebrew letters highly) the sigmoid
reads text made of them as valid. ``uniform_negative_share`` mixes a uniform draw over the
whole vocabulary into the negatives, so those rows are trained too; ``untrained_prior``
gives them a constant low probability in every context.

The setup: the tiny causal LM, with every head row first shifted along the mean hidden
state so that the untrained head rates every token as likely valid (sigmoid ~0.9), as a
real LM head does for plausible tokens. Trained on the tiny pairs, the head is then asked
about held-out sources with two kinds of output: the reference, and gibberish of the same
length made only of tokens that never occur as training targets.
"""

import json
import random

import numpy as np
import pytest
import torch

from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.lm.backbone import on_head_input
from sigmoid_head.scoring.force_decode import score_examples
from sigmoid_head.training.loop import train

SHARE = 0.5
PRIOR = 0.05


def _head_rating_every_token_valid(path, tokenizer, pairs) -> SigmoidHeadModel:
    """A fresh head whose rows are shifted so that every token starts at sigmoid ~0.9."""
    model = SigmoidHeadModel.from_base(str(path), device="cpu")
    seen: list[torch.Tensor] = []
    with torch.no_grad(), on_head_input(model.backbone.model,
                                        lambda h: seen.append(h.reshape(-1, h.shape[-1]))):
        for p in pairs:
            model.backbone.model(**tokenizer(p["source"] + "\n" + p["target"], return_tensors="pt"))
    mean = torch.cat(seen).mean(0)  # (d,)
    with torch.no_grad():
        model.head.weight += 4.0 * mean / (mean @ mean)  # logit + ~4 at a typical position
    return model


def _mean_probs(model, tokenizer, pairs, untrained: list[int]) -> tuple[float, float]:
    """(mean head probability of the reference tokens, of same-length gibberish made of
    ``untrained`` tokens), over the held-out ``pairs``."""
    rng = random.Random(0)
    refs, gibberish = [], []
    for p in pairs:
        prompt = tokenizer(p["source"] + "\n")["input_ids"]
        ref = tokenizer(p["target"], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        junk = [rng.choice(untrained) for _ in ref]
        refs.append({"input_ids": prompt + ref, "labels": [-100] * len(prompt) + ref})
        gibberish.append({"input_ids": prompt + junk, "labels": [-100] * len(prompt) + junk})

    def mean_p(examples):
        scores = score_examples(model, examples, progress=False)
        return float(np.mean(np.concatenate([np.exp(s.sigmoid_log) for s in scores])))

    return mean_p(refs), mean_p(gibberish)


@pytest.fixture(scope="module")
def runs(train_config, tiny_causal_path, tiny_tokenizer, tiny_pairs_jsonl, pairs_maker,
         tmp_path_factory):
    """(initial head, paper's head, remedied head) trained on the same data and seed."""
    shift_on = pairs_maker(20, seed=9)
    out = {"initial": _head_rating_every_token_valid(tiny_causal_path, tiny_tokenizer, shift_on)}
    for name, kw in (("paper", {"untrained_prior": 0.0}), ("uniform", {"uniform_negative_share": SHARE}),
                     ("prior", {"untrained_prior": PRIOR})):
        out_dir = tmp_path_factory.mktemp(name)
        cfg = train_config(tiny_causal_path, tiny_pairs_jsonl, out_dir, epochs=16, **kw)
        out[name] = train(cfg, model=_head_rating_every_token_valid(tiny_causal_path, tiny_tokenizer,
                                                                    shift_on))
        out[name].out_dir = out_dir
    return out


def _untrained_ids(model) -> list[int]:
    special = set(model.tokenizer.all_special_ids)
    return [i for i, c in enumerate(model.token_counts.tolist()) if c == 0 and i not in special]


def test_paper_setting_leaves_untrained_rows_reading_gibberish_as_valid(runs, tiny_tokenizer,
                                                                       pairs_maker):
    paper, initial = runs["paper"], runs["initial"]
    untrained = _untrained_ids(paper)
    assert len(untrained) > 500  # most of the tiny vocabulary is never a target
    # token_freq never draws them: their rows are exactly the initial ones
    assert torch.equal(paper.head.weight[untrained], initial.head.weight[untrained])
    ref, junk = _mean_probs(paper, tiny_tokenizer, pairs_maker(30, seed=5), untrained)
    assert junk > 0.75 and junk > ref + 0.2, (ref, junk)  # the failure: gibberish above references


@pytest.mark.parametrize("remedy", ["uniform", "prior"])
def test_each_remedy_gives_gibberish_of_untrained_tokens_low_scores(runs, remedy, tiny_tokenizer,
                                                                   pairs_maker):
    model = runs[remedy]
    untrained = _untrained_ids(model)
    assert untrained == _untrained_ids(runs["paper"])
    ref, junk = _mean_probs(model, tiny_tokenizer, pairs_maker(30, seed=5), untrained)
    assert junk < 0.45 and junk < ref - 0.15, (ref, junk)  # the fix: gibberish below references


def test_the_prior_is_a_constant_probability_saved_with_the_head(runs, tiny_tokenizer, pairs_maker):
    model = runs["prior"]
    untrained = _untrained_ids(model)
    ref, junk = _mean_probs(model, tiny_tokenizer, pairs_maker(30, seed=5), untrained)
    assert junk == pytest.approx(PRIOR, rel=1e-5)  # the same in every context
    assert model.config.bias and not runs["paper"].config.bias
    loaded = SigmoidHeadModel.from_pretrained(model.out_dir, model.backbone)
    assert loaded.config.bias and loaded.config.training["untrained_prior"] == PRIOR
    assert torch.equal(loaded.head.weight, model.head.weight)
    assert torch.equal(loaded.head.bias, model.head.bias)
    seen = [i for i, c in enumerate(model.token_counts.tolist()) if c > 0]
    assert bool((loaded.head.weight[seen] != 0).any(1).all())  # trained rows kept their weights


def test_the_prior_needs_a_full_head(train_config, tiny_causal_path, tiny_pairs_jsonl, tmp_path):
    with pytest.raises(ValueError, match="full head"):
        train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, max_steps=1, head_rank=2,
                           untrained_prior=0.1))
    with pytest.raises(ValueError, match="untrained_prior"):
        train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, untrained_prior=1.0)


def test_the_settings_are_recorded_in_the_saved_training_config(train_config, tiny_causal_path,
                                                            tiny_pairs_jsonl, tmp_path):
    from sigmoid_head.training.config import TrainConfig

    train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, max_steps=2,
                       uniform_negative_share=0.1, untrained_prior=0.2))
    record = json.loads((tmp_path / "head_config.json").read_text())["training"]
    assert record["uniform_negative_share"] == 0.1 and record["untrained_prior"] == 0.2
    sampler = TrainConfig.from_dict(record).sampler
    assert (sampler.uniform_negative_share, sampler.untrained_prior) == (0.1, 0.2)
    old = {k: v for k, v in record.items()  # a head saved before these settings existed
           if k not in ("uniform_negative_share", "untrained_prior")}
    sampler = TrainConfig.from_dict(old).sampler  # trained without a prior, whatever the default
    assert (sampler.uniform_negative_share, sampler.untrained_prior) == (0.0, 0.0)


def test_new_full_heads_get_the_prior_by_default_and_low_rank_heads_do_not(
        train_config, tiny_causal_path, tiny_pairs_jsonl, tmp_path):
    """The default (None) is 0.01 on a full head, recorded as applied; 0 on a low-rank head,
    which cannot hold it; an explicit 0 is the paper's setting."""
    from sigmoid_head.head.model import DEFAULT_UNTRAINED_PRIOR

    full = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "full", max_steps=2))
    assert full.config.bias and full.config.training["untrained_prior"] == DEFAULT_UNTRAINED_PRIOR == 0.01
    low = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "low", max_steps=2,
                             head_rank=4))
    assert low.config.training["untrained_prior"] == 0.0
    paper = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "paper", max_steps=2,
                               untrained_prior=0.0))
    assert not paper.config.bias and paper.config.training["untrained_prior"] == 0.0
