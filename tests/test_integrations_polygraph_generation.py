"""The LM-Polygraph plugin against polygraph's own generation, on the tiny model (fast).

Issue 26, item 9: the calculator generates what polygraph's WhiteboxModel generates under
every setting of its GenerationParameters (repetition_penalty, allow_newlines through
suppressed tokens, stop strings, the min_new_tokens=2 of its GreedyProbsCalculator and the
EOS masking that implies), and its softmax log-likelihoods equal polygraph's at every
position; in a config mixing it with polygraph's own greedy calculators one generation
serves every estimator, or reading a statistic of another generation is refused;
``load_estimator`` refuses options it cannot honour.

``first_wins`` runs calculators as polygraph's UEManager.calculate does (a statistic
already in the batch is not replaced); CausalLMWithUncertainty is polygraph's own (there a
later calculator's statistics replace earlier ones).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("lm_polygraph", reason="needs the polygraph extra (lm-polygraph)")

from lm_polygraph.estimators import RAUQ, BoostedProbSequence, MaximumSequenceProbability  # noqa: E402
from lm_polygraph.stat_calculators import (  # noqa: E402
    GreedyProbsCalculator,
    InferCausalLMCalculator,
)
from lm_polygraph.utils.causal_lm_with_uncertainty import CausalLMWithUncertainty  # noqa: E402
from lm_polygraph.utils.generation_parameters import GenerationParameters  # noqa: E402
from lm_polygraph.utils.model import WhiteboxModel  # noqa: E402

from sigmoid_head.integrations.polygraph import (  # noqa: E402
    SigmoidHeadCalculator,
    SigmoidHeadSequence,
    load_estimator,
)
from sigmoid_head.scoring.force_decode import score_examples  # noqa: E402

TEXTS = ["el perro come el pan", "la casa", "una mujer grande lee un libro"]
NEW = 12


@pytest.fixture(scope="module")
def shm(causal):
    causal.tokenizer.padding_side = "left"  # as polygraph's WhiteboxModel.from_pretrained sets it
    return causal


@pytest.fixture
def eager(shm):
    """Eager attention while a test runs (polygraph's GreedyProbsCalculator reads attentions)."""
    model = shm.backbone.model
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    yield
    model.set_attn_implementation(before)


def _whitebox(shm, **params):
    return WhiteboxModel(shm.backbone.model, shm.tokenizer, model_path="tiny",
                         generation_parameters=GenerationParameters(**params))


def first_wins(calculators, wb, texts=TEXTS):
    stats = {"input_texts": list(texts), "model": wb}
    for calc in calculators:
        for k, v in calc(stats, list(texts), wb, NEW).items():
            stats.setdefault(k, v)
    return stats


SETTINGS = {
    "repetition_penalty": {"repetition_penalty": 1.3},
    "no_newlines": {"allow_newlines": False},
    "stop_strings": {"stop_strings": ["the", "a"]},
    "all": {"repetition_penalty": 1.2, "allow_newlines": False, "stop_strings": ["the"]},
    "defaults": {},  # min_new_tokens=2: no EOS at the first two positions
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_calculator_generates_and_scores_as_polygraph_does(shm, name):
    wb = _whitebox(shm, **SETTINGS[name])
    torch.manual_seed(0)
    theirs = GreedyProbsCalculator(output_attentions=False)({}, TEXTS, wb, max_new_tokens=NEW)
    ours = SigmoidHeadCalculator(shm)({}, TEXTS, wb, max_new_tokens=NEW)
    assert ours["greedy_tokens"] == theirs["greedy_tokens"]
    for a, b in zip(ours["greedy_log_likelihoods"], theirs["greedy_log_likelihoods"], strict=True):
        np.testing.assert_allclose(a, np.asarray(b, dtype=np.float64), atol=1e-5)
    for a, b in zip(ours["greedy_log_probs"], theirs["greedy_log_probs"], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    msp = MaximumSequenceProbability()
    np.testing.assert_allclose(msp(ours), msp(theirs), atol=1e-5)


def test_a_mix_after_polygraphs_generation_scores_that_generation(shm, eager):
    """GreedyProbsCalculator samples first; the calculator then scores its outputs (it
    used to sample its own, whose statistics were paired with polygraph's)."""
    wb = _whitebox(shm, do_sample=True, temperature=1.5, top_k=0)
    torch.manual_seed(3)
    stats = first_wins([GreedyProbsCalculator(), SigmoidHeadCalculator(shm)], wb)
    examples = [{"input_ids": (p := shm.tokenizer(t)["input_ids"]) + list(toks),
                 "labels": [-100] * len(p) + list(toks)}
                for t, toks in zip(TEXTS, stats["greedy_tokens"], strict=True)]
    forced = score_examples(shm, examples, progress=False)  # the head on polygraph's outputs
    for ts, lp in zip(forced, stats["sigmoid_head_log_likelihoods"], strict=True):
        np.testing.assert_allclose(lp, ts.log_probs()["sigmoid"], atol=1e-5)
    assert SigmoidHeadSequence()(stats).shape == (len(TEXTS),)
    assert np.all(np.isfinite(BoostedProbSequence()(stats)))


def test_a_mix_before_polygraphs_generation_serves_one_generation_or_refuses(shm, eager):
    """The calculator samples first: polygraph's BoostedProbSequence reads the calculator's
    distributions (one generation); RAUQ, which needs attention the calculator does not
    compute, is refused instead of reading another generation's."""
    wb = _whitebox(shm, do_sample=True, temperature=1.5, top_k=0)
    torch.manual_seed(3)
    stats = first_wins([SigmoidHeadCalculator(shm), GreedyProbsCalculator()], wb)
    for toks, lp in zip(stats["greedy_tokens"], stats["greedy_log_probs"], strict=True):
        assert len(lp) == len(toks)
    assert np.all(np.isfinite(BoostedProbSequence()(stats)))
    with pytest.raises(ValueError, match="attention_all is not computed by SigmoidHeadCalculator"):
        RAUQ()(stats)


def test_statistics_of_two_generations_are_refused(shm):
    """CausalLMWithUncertainty: a calculator after ours samples again and replaces the
    greedy statistics; our estimator refuses instead of scoring the pair."""
    ids = shm.tokenizer(TEXTS[:1], return_tensors="pt")["input_ids"]
    llm = CausalLMWithUncertainty(shm.backbone.model, shm.tokenizer,
                                  [SigmoidHeadCalculator(shm), InferCausalLMCalculator()],
                                  SigmoidHeadSequence())
    torch.manual_seed(5)
    with pytest.raises(ValueError, match="two generations"):
        llm.generate(ids, max_new_tokens=NEW, do_sample=True, temperature=2.0, top_k=0)


@pytest.mark.parametrize("cfg", [
    {"level": "claim"},
    {"method": "entropy", "level": "token"},
    {"method": "entropy", "aggregation": "min"},
    {"level": "token", "aggregation": "min"},
    {"agregation": "min"},
])
def test_load_estimator_refuses_what_it_cannot_honour(cfg):
    with pytest.raises(ValueError):
        load_estimator(cfg)
