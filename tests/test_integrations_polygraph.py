"""The LM-Polygraph plugin, with the real lm-polygraph package, on SmolLM2 (offline).

Three prompts, 10 new tokens each (generate_and_score batches the prompts, polygraph runs them
one at a time, hence a tolerance of 2e-5 on log sums: batching noise). Checked: the plugin's estimators equal
``generate_and_score``'s scores for the same outputs; our softmax and entropy values equal
lm-polygraph's own MaximumSequenceProbability, Perplexity and MeanTokenEntropy computed by
its own calculators on the same outputs; polygraph loads our estimators as a third-party
module and runs the calculator under ``CausalLMWithUncertainty`` and ``UEManager`` (the
engine of its benchmark runner, fed the way its ``polygraph_eval`` script feeds it).

RAUQ: polygraph's own ``GreedyProbsCalculator`` (attentions on, eager attention) and ``RAUQ``
estimator, one prompt at a time (for a batch, 0.7.0's calculator reads row 0's attentions for
every row), against our RAUQ on the same prompt and output: read during our generation, and
from force-decoding polygraph's output; per token against polygraph's own recurrence at the
layer it picks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytest.importorskip("lm_polygraph", reason="needs the polygraph extra (lm-polygraph)")

from lm_polygraph.estimators import (  # noqa: E402
    RAUQ,
    MaximumSequenceProbability,
    MeanTokenEntropy,
    Perplexity,
)
from lm_polygraph.stat_calculators import (  # noqa: E402
    EntropyCalculator,
    GreedyProbsCalculator,
    InferCausalLMCalculator,
)
from lm_polygraph.utils.causal_lm_with_uncertainty import CausalLMWithUncertainty  # noqa: E402
from lm_polygraph.utils.factory_estimator import FactoryEstimator  # noqa: E402

from sigmoid_head.data.prompts import prompt_ids  # noqa: E402
from sigmoid_head.head.model import SigmoidHeadModel  # noqa: E402
from sigmoid_head.integrations.polygraph import (  # noqa: E402
    OPT_IN,
    RAUQ_STAT,
    SigmoidHeadCalculator,
    SigmoidHeadMeanEntropy,
    SigmoidHeadRAUQ,
    SigmoidHeadSequence,
    SigmoidHeadToken,
)
from sigmoid_head.registry import methods as registry  # noqa: E402
from sigmoid_head.scoring.decoding import DecodingConfig  # noqa: E402
from sigmoid_head.scoring.force_decode import score_examples  # noqa: E402
from sigmoid_head.scoring.generate import generate_and_score  # noqa: E402
from sigmoid_head.scoring.rauq import RauqConfig  # noqa: E402

pytestmark = pytest.mark.integration

MODULE = "sigmoid_head.integrations.polygraph"
NEW_TOKENS = 10
SOURCES = ["Name a fruit.", "What is the capital of France?", "Say hello in Spanish."]


@pytest.fixture(scope="module")
def shm():
    model = SigmoidHeadModel.from_base(None, device="cpu")
    torch.manual_seed(0)
    with torch.no_grad():  # a head that differs from the LM head, as a trained one does
        model.head.weight.add_(0.02 * torch.randn_like(model.head.weight))
    return model


@pytest.fixture(scope="module")
def prompts(shm):
    recs = [{"messages": [{"role": "user", "content": s}]} for s in SOURCES]
    return recs, prompt_ids(recs, shm.tokenizer, is_encoder_decoder=False,
                            prompt_template="{source}\n", use_chat_template=True)


@pytest.fixture(scope="module")
def ours(shm, prompts):
    recs, _ = prompts
    return generate_and_score(shm, recs, DecodingConfig(max_new_tokens=NEW_TOKENS),
                              use_chat_template=True, progress=False)


def _run(llm, tokenizer, calculators, estimator, ids):
    """polygraph's CausalLMWithUncertainty on one prompt; returns (uncertainty, stats)."""
    wrapped = CausalLMWithUncertainty(llm, tokenizer, calculators, estimator)
    out = wrapped.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False)
    return out.uncertainty_score, out


class Recording(SigmoidHeadCalculator):
    """Our calculator, keeping the statistics it gave polygraph."""

    def __call__(self, *args, **kwargs):
        self.last = super().__call__(*args, **kwargs)
        return self.last


class RecordingEntropy(EntropyCalculator):
    """polygraph's EntropyCalculator, keeping every statistic of the run it was part of."""

    def __call__(self, dependencies, *args, **kwargs):
        out = super().__call__(dependencies, *args, **kwargs)
        self.deps = {**dependencies, **out}
        return out


@pytest.fixture(scope="module")
def plugin_stats(shm, prompts):
    """Our calculator under CausalLMWithUncertainty: (uncertainty, stats, output) per prompt."""
    _, ids = prompts
    calc = Recording(shm)
    rows = []
    for p in ids:
        score, out = _run(shm.backbone.model, shm.tokenizer, [calc],
                          SigmoidHeadSequence("sigmoid", "product"), p)
        rows.append((float(score[0]), calc.last, out))
    return rows


def test_plugin_estimators_equal_generate_and_score(plugin_stats, ours, shm):
    for (score, stats, out), row in zip(plugin_stats, ours, strict=True):
        assert stats["greedy_texts"][0] == row["candidate"]
        assert len(stats["greedy_tokens"][0]) == row["n_tokens"]
        assert score == pytest.approx(-row["sigmoid_logprob"], rel=1e-4, abs=2e-5)
        for method in (m for m in registry.names() if m not in OPT_IN):
            seq = {a: float(SigmoidHeadSequence(method, a)(stats)[0])
                   for a in ("product", "mean_log", "min")}
            assert seq["product"] == pytest.approx(-row[f"{method}_logprob"], rel=1e-4, abs=2e-5)
            assert seq["mean_log"] == pytest.approx(-row[f"{method}_mean_log"], rel=1e-4, abs=2e-5)
            assert seq["min"] == pytest.approx(-math.log(row[f"{method}_min"]), rel=1e-4, abs=2e-5)
        assert float(SigmoidHeadMeanEntropy()(stats)[0]) == pytest.approx(row["entropy_mean"], rel=1e-4, abs=2e-5)
        token = SigmoidHeadToken("sigmoid")(stats)[0]
        assert token.shape == (row["n_tokens"] - 1,)
        assert np.all(token >= 0)
        # the returned generation holds the prompt and the scored output
        assert out.sequences[0, -len(stats["greedy_tokens"][0]):].tolist() == stats["greedy_tokens"][0]
    sig = [-r["sigmoid_logprob"] for r in ours]
    soft = [-r["softmax_logprob"] for r in ours]
    assert sig != pytest.approx(soft, rel=1e-3)  # the head's values are its own


def test_our_softmax_baselines_equal_polygraphs_own_estimators(plugin_stats, prompts, shm):
    _, ids = prompts
    entropy = RecordingEntropy()
    native = [InferCausalLMCalculator(tokenize=False), entropy]
    for p, (_, stats, _) in zip(ids, plugin_stats, strict=True):
        msp, out = _run(shm.backbone.model, shm.tokenizer, native, MaximumSequenceProbability(), p)
        assert out.sequences[0, len(p):len(p) + len(stats["greedy_tokens"][0])].tolist() \
            == stats["greedy_tokens"][0]  # the same outputs
        theirs = entropy.deps  # polygraph's own statistics of that run
        mte, ppl = MeanTokenEntropy()(theirs), Perplexity()(theirs)
        assert float(SigmoidHeadSequence("softmax", "product")(stats)[0]) == pytest.approx(float(msp[0]), rel=1e-4)
        assert float(SigmoidHeadSequence("softmax", "mean_log")(stats)[0]) == pytest.approx(float(ppl[0]), rel=1e-4)
        assert float(SigmoidHeadMeanEntropy()(stats)[0]) == pytest.approx(float(mte[0]), rel=1e-4)
        # polygraph's own estimators read our calculator's statistics too
        assert float(MaximumSequenceProbability()(stats)[0]) == pytest.approx(float(msp[0]), rel=1e-4)
        assert float(MeanTokenEntropy()(stats)[0]) == pytest.approx(float(mte[0]), rel=1e-4)


def _whitebox(shm):
    from lm_polygraph.utils.generation_parameters import GenerationParameters
    from lm_polygraph.utils.model import WhiteboxModel

    return WhiteboxModel(shm.backbone.model, shm.tokenizer, model_path="smollm2",
                         generation_parameters=GenerationParameters(), instruct=True)


@pytest.fixture(scope="module")
def polygraph_rauq(shm):
    """polygraph's greedy statistics with attentions and its RAUQ, one prompt per run."""
    model = shm.backbone.model
    wb, est, runs = _whitebox(shm), RAUQ(), []
    model.set_attn_implementation("eager")  # polygraph reads attentions: eager only
    try:
        for text in SOURCES:
            stats = GreedyProbsCalculator()({}, [text], wb, max_new_tokens=NEW_TOKENS)
            stats["model"] = wb
            runs.append((stats, float(est(stats)[0])))
    finally:
        model.set_attn_implementation("sdpa")
    return runs, est


def test_our_rauq_equals_polygraphs_rauq_on_the_same_outputs(shm, polygraph_rauq):
    runs, est = polygraph_rauq
    calc, rauq = Recording(shm, rauq=RauqConfig()), RauqConfig()
    worst = worst_token = 0.0
    for stats, theirs in runs:
        prompt, output = stats["input_tokens"][0], stats["greedy_tokens"][0]
        assert len(output) > 2  # a recurrence to run
        # read during our generation (the plugin), from the same prompt ids
        score, _ = _run(shm.backbone.model, shm.tokenizer, [calc], SigmoidHeadRAUQ(), prompt)
        assert calc.last["greedy_tokens"][0] == output  # the same output
        # and force-decoding polygraph's output through the one scoring path
        forced = score_examples(shm, [{"input_ids": prompt + output,
                                       "labels": [-100] * len(prompt) + output}],
                                rauq=rauq, progress=False)[0]
        ours = 1 - forced.rauq_log.mean()
        worst = max(worst, abs(float(score[0]) - theirs), abs(ours - theirs))
        assert float(score[0]) == pytest.approx(theirs, abs=1e-5)
        assert ours == pytest.approx(theirs, abs=1e-5)
        # per token: polygraph's own recurrence at the layer its RAUQ takes (the maximum)
        attn = stats["attention_all"][0].reshape(est.n_layers, est.n_heads, len(output), len(output))
        prev = np.diagonal(attn, offset=-1, axis1=2, axis2=3)
        lls = stats["greedy_log_likelihoods"][0]
        per_layer = [est._calculate_confidence_scores(lls, prev, layer, prev[layer].mean(-1).argmax())
                     for layer in est.layers]
        top = per_layer[int(np.argmax([1 - np.log(c).mean() for c in per_layer]))]
        # float32 noise of a full pass against cached generation steps: ~2e-5 relative
        for log_c in (forced.rauq_log, calc.last[RAUQ_STAT][0]):
            np.testing.assert_allclose(np.exp(log_c), top, rtol=1e-4)
            worst_token = max(worst_token, float(np.max(np.abs(np.exp(log_c) / top - 1))))
    print(f"max |ours - polygraph RAUQ| = {worst:.2e}; per token, max relative {worst_token:.2e}")
    assert shm.backbone.model.config._attn_implementation == "sdpa"


def test_polygraph_loads_our_estimators_as_a_third_party_module():
    factory = FactoryEstimator()
    est = factory(MODULE, {"method": "softmax", "aggregation": "mean_log"})
    assert str(est) == "SigmoidHeadSequence_softmax_mean_log" and est.level == "sequence"
    old = factory(MODULE, {"method": "softmax", "aggregation": "geo_mean"})  # an earlier release's config
    assert str(old) == str(est)
    assert isinstance(factory(MODULE, {}), SigmoidHeadSequence)
    assert factory(MODULE, {"level": "token"}).level == "token"
    assert isinstance(factory(MODULE, {"method": "entropy"}), SigmoidHeadMeanEntropy)
    assert isinstance(factory(MODULE, {"method": "rauq"}), SigmoidHeadRAUQ)
    assert str(factory(MODULE, {"method": "rauq", "aggregation": "min"})) == "SigmoidHeadSequence_rauq_min"
    with pytest.raises(KeyError, match="rauq=RauqConfig"):
        SigmoidHeadRAUQ()({"greedy_log_likelihoods": [np.zeros(2)]})
    with pytest.raises(ValueError, match="unknown aggregation"):
        factory(MODULE, {"aggregation": "mean"})


def test_benchmark_engine_runs_our_calculator_and_estimators(shm, ours, tmp_path):
    """UEManager, set up as polygraph_eval sets it up: default calculators plus ours as a
    configured third-party builder, estimators through FactoryEstimator."""
    from lm_polygraph.defaults.register_default_stat_calculators import (
        register_default_stat_calculators,
    )
    from lm_polygraph.utils.builder_enviroment_stat_calculator import (
        BuilderEnvironmentStatCalculator,
    )
    from lm_polygraph.utils.dataset import Dataset
    from lm_polygraph.utils.factory_stat_calculator import StatCalculatorContainer
    from lm_polygraph.utils.generation_parameters import GenerationParameters
    from lm_polygraph.utils.manager import UEManager
    from lm_polygraph.utils.model import WhiteboxModel

    shm.save_pretrained(tmp_path / "head")
    model = WhiteboxModel(shm.backbone.model, shm.tokenizer, model_path="smollm2",
                          generation_parameters=GenerationParameters(), instruct=True)
    stats, deps = SigmoidHeadCalculator.meta_info()
    calculators = register_default_stat_calculators("Whitebox") + [StatCalculatorContainer(
        name="SigmoidHeadCalculator", builder=MODULE,
        cfg={"head": str(tmp_path / "head"), "rauq": {"alpha": 0.5}},
        stats=stats, dependencies=deps)]
    factory = FactoryEstimator()
    estimators = [factory(MODULE, {"method": "sigmoid", "aggregation": "product"}),
                  factory("MaximumSequenceProbability", {}),
                  factory("MeanTokenEntropy", {}),
                  factory(MODULE, {"method": "rauq"})]
    man = UEManager(Dataset(SOURCES, ["", "", ""], batch_size=3), model, estimators,
                    BuilderEnvironmentStatCalculator(model), calculators, [], [], [],
                    max_new_tokens=NEW_TOKENS)
    man()
    assert [type(c).__name__ for c in man.stat_calculators] == ["SigmoidHeadCalculator"]
    assert man.stats["greedy_texts"] == [r["candidate"] for r in ours]
    got = man.estimations[("sequence", "SigmoidHeadSequence_sigmoid_product")]
    assert got == pytest.approx([-r["sigmoid_logprob"] for r in ours], rel=1e-4)
    msp = man.estimations[("sequence", "MaximumSequenceProbability")]
    assert msp == pytest.approx([-r["softmax_logprob"] for r in ours], rel=1e-4)
    mte = man.estimations[("sequence", "MeanTokenEntropy")]
    assert mte == pytest.approx([r["entropy_mean"] for r in ours], rel=1e-4)
    recs = [{"messages": [{"role": "user", "content": s}]} for s in SOURCES]
    with_rauq = generate_and_score(shm, recs, DecodingConfig(max_new_tokens=NEW_TOKENS),
                                   use_chat_template=True, rauq=RauqConfig(alpha=0.5), progress=False)
    got = man.estimations[("sequence", "SigmoidHeadRAUQ")]
    assert got == pytest.approx([1 - r["rauq_mean_log"] for r in with_rauq], abs=1e-5)
