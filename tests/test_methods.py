"""methods.py: the one registry of scoring methods and aggregations.

A toy baseline registered here, and nowhere else, appears in the score records, the
CLI summary, ``evaluate``, the HTML page and the LM-Polygraph plugin: adding a baseline is
its per-token function (one file) plus one ``register`` line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sigmoid_head.cli import main as cli_main
from sigmoid_head.evaluation.evaluate import evaluate_scores
from sigmoid_head.evaluation.html import render_page
from sigmoid_head.registry import methods as registry
from sigmoid_head.scoring.force_decode import score_records


def top_probability(rows) -> torch.Tensor:
    """The toy baseline: the log of the largest softmax probability at each position."""
    return rows.logp.max(-1).values  # (R,)


@pytest.fixture
def toy():
    method = registry.register(registry.Method("toy", reads="lm_logits", token_values=top_probability))
    yield method
    registry.unregister("toy")


RECORDS = [{"source": "el perro", "candidate": "the dog eats"},
           {"source": "la casa", "candidate": "a house here now"},
           {"source": "el gato", "candidate": "the cat"},
           {"source": "un libro", "candidate": "one book it is"}]


def test_a_registered_method_is_scored_aggregated_and_shown(toy, causal, tmp_path: Path) -> None:
    rows = score_records(causal, RECORDS, with_tokens=True, progress=False)
    for r in rows:
        assert set(toy.keys()) <= set(r)
        tops = [t["toy"] for t in r["tokens"]]
        assert all(t["toy"] >= t["softmax"] - 1e-9 for t in r["tokens"])  # the top beats the token
        assert r["toy_mean_log"] == pytest.approx(float(np.mean(np.log(tops))), rel=1e-6)
        assert r["toy"] == pytest.approx(math.prod(tops), rel=1e-6)
        assert all("toy" in w for w in r["words"])
    page = render_page(rows, [[t["token"] for t in r["tokens"]] for r in rows])
    assert 'data-method="toy"' in page and "<tr><th>toy</th>" in page
    gold = np.array([1.0, 0.0, 1.0, 0.0])
    table, _ = evaluate_scores({k: np.array([r[k] for r in rows]) for k in rows[0]
                                if isinstance(rows[0][k], float)}, gold, ci=False)
    assert {"toy", "toy_geo_mean"} <= {t["method"] for t in table}


def test_the_cli_writes_and_summarises_a_registered_method(toy, tiny_causal_path, texts, tmp_path,
                                                           capsys) -> None:
    out = tmp_path / "s.jsonl"
    assert cli_main(["score", "-s", str(texts[0]), "-t", str(texts[1]), "--model",
                     str(tiny_causal_path), "--to-json", str(out), "--quiet", "--device", "cpu"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(0 < r["toy_min"] <= r["toy"] ** (1 / r["n_tokens"]) <= 1 for r in rows)
    assert "\ntoy " in capsys.readouterr().out
    from sigmoid_head.scoring.fields import field_for

    assert all(field_for(k) is not None for k in ("toy", "toy_mean_log", "toy_min"))  # --describe


def test_a_registered_method_reaches_the_polygraph_plugin(toy, causal) -> None:
    pytest.importorskip("lm_polygraph", reason="needs the polygraph extra (lm-polygraph)")
    from sigmoid_head.integrations.polygraph import (
        SigmoidHeadCalculator,
        SigmoidHeadSequence,
        _stats,
        estimator_names,
    )
    from sigmoid_head.scoring.decoding import DecodingConfig
    from sigmoid_head.scoring.generate import generate_outputs

    stat = "sigmoid_head_toy_log_likelihoods"
    assert stat in SigmoidHeadCalculator.meta_info()[0]
    assert "SigmoidHeadSequence_toy_mean_log" in estimator_names()
    prompt = causal.tokenizer("el perro")["input_ids"]
    outs = generate_outputs(causal, [prompt], DecodingConfig(max_new_tokens=5), progress=False)
    stats = _stats(outs, [prompt], causal.tokenizer)
    want = outs[0].scores.log_probs()["toy"]
    assert float(SigmoidHeadSequence("toy", "mean_log")(stats)[0]) == pytest.approx(-float(np.mean(want)))


def test_the_registry_refuses_what_it_cannot_use() -> None:
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry.Method("softmax", reads="lm_logits", token_values=top_probability))
    with pytest.raises(ValueError, match="reads must be one of"):
        registry.Method("x", reads="tea leaves", token_values=top_probability)
    with pytest.raises(ValueError, match="unknown aggregations"):
        registry.Method("x", reads="lm_logits", token_values=top_probability, aggregations=("median",))
    from sigmoid_head.scoring.token_scores import softmax_log  # a "module:function" path resolves

    assert registry.METHODS["softmax"].values_function() is softmax_log


def test_old_aggregation_names_are_read() -> None:
    assert registry.canonical("softmax_geomean") == "softmax_mean_log"
    assert registry.canonical("sigmoid_geo") == "sigmoid_mean_log"
    assert registry.canonical("softmax_min") == "softmax_min"
    row = registry.upgrade_columns({"softmax_geomean": 0.5, "sigmoid_mean_log": -0.1, "sigmoid_geomean": 0.2})
    assert row == {"softmax_mean_log": pytest.approx(math.log(0.5)), "sigmoid_mean_log": -0.1}


def test_one_name_per_scale_of_the_length_normalised_score() -> None:
    """``_mean_log`` is the log a record holds; ``_geo_mean`` its exponential, a name of
    its own that is never rewritten to the log's, though it ranks (rerank, the plugin) as
    the log does."""
    agg = registry.AGGREGATIONS["mean_log"]
    assert (agg.key("softmax"), agg.probability_key("softmax")) == ("softmax_mean_log", "softmax_geo_mean")
    assert agg.label == "geo_mean" and agg.probability(math.log(0.25)) == pytest.approx(0.25)
    assert registry.AGGREGATIONS["min"].probability_key("softmax") == "softmax_min"
    assert registry.canonical("softmax_geo_mean") == "softmax_geo_mean"
    assert registry.probability_key("softmax_geomean") == "softmax_geo_mean"  # an old geo-mean
    assert registry.probability_key("softmax_mean_log") == "softmax_mean_log"
    assert registry.ranking_key("softmax_geo_mean") == "softmax_mean_log"
    assert registry.ranking_key("sigmoid_geo") == "sigmoid_mean_log"
    assert registry.aggregation_name("geo_mean") == "mean_log"
    assert registry.METHODS["softmax"].probability_keys() == ["softmax", "softmax_geo_mean", "softmax_min"]
    kept = {"softmax_geo_mean": 0.5}
    assert registry.upgrade_columns(dict(kept)) == kept  # today's name: not read as an old one


def test_deferred_range_checks_read_the_device_once_and_raise_what_the_immediate_check_raises(monkeypatch):
    """Scoring passes check every method's values in one go (issue 60: no host copy per
    method): good values never come to the host; a bad one raises the immediate check's
    error, the first bad method in order first."""
    from sigmoid_head.registry import contract

    def immediate(owner: str, unit: str, values) -> str:
        with pytest.raises(ValueError) as err:
            contract.token_values(owner, unit, values, len(values))
        return str(err.value)

    copies = []
    real = contract._check_range
    monkeypatch.setattr(contract, "_check_range", lambda *a: (copies.append(a[0]), real(*a)))
    later = contract.DeferredChecks()
    good = {"p": torch.tensor([0.0, 0.5, 1.0 + 5e-5]), "lp": torch.tensor([-math.inf, -2.0, 5e-5])}
    for unit, v in good.items():
        contract.token_values(f"ok-{unit}", "log" if unit == "lp" else "probability", v, 3, later)
    later.settle()
    assert copies == [] and later.pending == []
    bad = [("a", "probability", torch.tensor([0.2, 0.3, 0.4])),
           ("b", "log", torch.tensor([-1.0, 0.5, -0.2])),  # a log-probability above 0
           ("c", "probability", torch.tensor([float("nan"), 0.1, 0.1]))]
    for owner, unit, v in bad:
        contract.token_values(owner, unit, v, 3, later)
    with pytest.raises(ValueError) as err:
        later.settle()
    assert str(err.value) == immediate("b", "log", bad[1][2])
    for owner, unit, v in [("d", "probability", torch.tensor([-math.inf, 0.1])),
                           ("e", "log", torch.tensor([math.inf, -1.0])),
                           ("f", "probability", torch.tensor([0.1, 1.01]))]:
        contract.token_values(owner, unit, v, 2, later)
        with pytest.raises(ValueError) as err:
            later.settle()
        assert str(err.value) == immediate(owner, unit, v)


def test_split_rows_settles_the_pending_checks_from_its_one_copy(monkeypatch):
    """A scoring pass settles the methods' range checks from the one copy of its results
    (the flag rides along; issue 60): good values return rows, a bad one raises the
    immediate check's error, and neither reads the device a second time."""
    from sigmoid_head.registry import contract
    from sigmoid_head.scoring import token_scores

    copies = []

    def counting_cpu(tensors):
        copies.append(len(tensors))
        return real_host(tensors)

    real_host = token_scores._host
    monkeypatch.setattr(token_scores, "_host", counting_cpu)
    row, ids = torch.tensor([0, 0, 1]), torch.tensor([5, 6, 7])
    for values, bad in ((torch.tensor([-0.1, -2.0, -0.3]), None),
                        (torch.tensor([-0.1, 0.5, -0.3]), "b")):  # 0.5: a log-probability above 0
        later = contract.DeferredChecks()
        contract.token_values("b", "log", values, 3, later)
        copies.clear()
        if bad is None:
            rows = token_scores.split_rows({"softmax_log": values}, ids, row, 2, later)
            assert [r.ids.tolist() for r in rows] == [[5, 6], [7]]
        else:
            with pytest.raises(ValueError) as err:
                token_scores.split_rows({"softmax_log": values}, ids, row, 2, later)
            with pytest.raises(ValueError) as once:
                contract.token_values("b", "log", values, 3)
            assert str(err.value) == str(once.value)
        assert copies == [4] and later.pending == []  # values, rows, ids and the flag: one copy


def test_one_host_copy_gives_back_every_dtype_exactly():
    from sigmoid_head.scoring.token_scores import _host

    g = torch.Generator().manual_seed(0)
    tensors = [torch.randn(5, generator=g), torch.randn(2, 3, generator=g).to(torch.bfloat16),
               torch.tensor([0, 2**52 + 1, -7]), torch.tensor([True, False]),
               torch.randint(0, 100, (4,), dtype=torch.int32, generator=g), torch.zeros(0)]
    out = _host(tensors)
    for t, a in zip(tensors, out, strict=True):
        assert a.shape == tuple(t.shape)
        if t.dtype.is_floating_point:
            assert a.dtype == np.float64 and np.array_equal(a, t.double().numpy())
        else:
            assert a.dtype == t.numpy().dtype and np.array_equal(a, t.numpy())
