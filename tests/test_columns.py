"""columns.py: one registry entry per output column, read by every consumer.

(a) a sequence baseline declared in this file plus one ``register`` line appears in score
rows, the summary, ``--describe``, ``evaluate``'s defaults, rerank's selectable scores and
rows, and the LM-Polygraph plugin's estimators; (b) every key that score / generate
(``--mc-samples``, ``--with-tokens``) / rerank rows hold on the tiny models has an entry;
(c) a new token method under ``--mc-samples`` writes ``mc_<method>``, which has its entry
and reaches the summary, ``--describe`` and ``evaluate``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sigmoid_head.cli import main as cli_main
from sigmoid_head.evaluation.evaluate import default_methods, evaluate_scores
from sigmoid_head.registry import columns
from sigmoid_head.registry import methods as registry


def candidate_length_score(b: columns.BaselineInputs) -> list[float]:
    """The toy baseline: shorter candidates score higher, in (0, 1]."""
    return [1.0 / (1.0 + len(c)) for c in b.candidates]


@pytest.fixture
def toy_baseline():
    column = columns.register(columns.Column(
        "toy_judge", columns.SEQUENCE, columns.HIGHER_BETTER, "(0, 1]", "1 / (1 + characters)",
        summary=True, evaluate=True, compute=candidate_length_score,
        commands=("score", "generate", "rerank"), polygraph=True))
    yield column
    columns.unregister("toy_judge")


@pytest.fixture
def toy_method():
    method = registry.register(registry.Method(
        "toptoy", reads="lm_logits", token_values=lambda rows: rows.logp.max(-1).values))
    yield method
    registry.unregister("toptoy")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _keys(row: dict, prefix: str = "") -> set[str]:
    """Every key of a row; those of list items as ``list[].key``."""
    out = set()
    for key, value in row.items():
        out.add(prefix + key)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for item in value:
                out |= _keys(item, f"{prefix}{key}[].")
    return out


def test_a_registered_baseline_reaches_every_consumer(toy_baseline, head_dir, texts, tmp_path,
                                                      capsys) -> None:
    out = tmp_path / "s.jsonl"
    assert cli_main(["score", "-s", str(texts[0]), "-t", str(texts[1]), "--head", str(head_dir),
                     "--to-json", str(out), "--quiet", "--device", "cpu"]) == 0
    rows = _rows(out)
    assert [r["toy_judge"] for r in rows] == [1.0 / (1 + len(r["candidate"])) for r in rows]
    assert list(rows[0]).index("toy_judge") > list(rows[0]).index("n_tokens")
    assert "\ntoy_judge " in capsys.readouterr().out  # the summary
    assert cli_main(["score", "--describe"]) == 0
    assert "| `toy_judge` | higher = better | (0, 1] |" in capsys.readouterr().out
    assert "toy_judge" in default_methods()
    gold = np.arange(len(rows), dtype=float)
    table, _ = evaluate_scores(out, gold, ci=False)
    assert "toy_judge" in {t["method"] for t in table}

    from sigmoid_head.scoring import rerank

    assert "toy_judge" in rerank.selectable(head=False)
    assert not rerank.higher_is_better("entropy_mean") and rerank.higher_is_better("toy_judge")
    picked = tmp_path / "r.jsonl"
    assert cli_main(["rerank", "-s", str(texts[0]), "--head", str(head_dir), "--samples", "2",
                     "--max-new-tokens", "3", "--select", "toy_judge", "-o", str(picked),
                     "--quiet", "--device", "cpu"]) == 0
    for r in _rows(picked):
        values = [c["toy_judge"] for c in r["candidates"]]
        assert r["pick"] == values.index(max(values)) and r["select"] == "toy_judge"


def test_a_registered_baseline_reaches_the_polygraph_plugin(toy_baseline, causal) -> None:
    pytest.importorskip("lm_polygraph", reason="needs the polygraph extra (lm-polygraph)")
    from sigmoid_head.integrations.polygraph import (
        SigmoidHeadCalculator,
        estimator_names,
        load_estimator,
    )
    from sigmoid_head.integrations.polygraph_calculator import _baselines
    from sigmoid_head.scoring.decoding import DecodingConfig
    from sigmoid_head.scoring.generate import generate_outputs

    assert "sigmoid_head_toy_judge" in SigmoidHeadCalculator.meta_info()[0]
    assert "SigmoidHeadBaseline_toy_judge" in estimator_names()
    prompt = causal.tokenizer("el perro")["input_ids"]
    outs = generate_outputs(causal, [prompt], DecodingConfig(max_new_tokens=4), progress=False)
    stats = _baselines(causal, ["el perro"], outs, [prompt])
    text = causal.tokenizer.decode(outs[0].output, skip_special_tokens=True)
    estimator = load_estimator({"method": "toy_judge"})
    assert float(estimator(stats)[0]) == pytest.approx(-1.0 / (1 + len(text)))  # an uncertainty


def test_every_output_column_has_an_entry(head_dir, tiny_seq2seq_path, texts, tmp_path) -> None:
    from sigmoid_head.evaluation.spans import SpanConfig, add_errors

    keys: set[str] = set()
    score = tmp_path / "score.jsonl"
    assert cli_main(["score", "-s", str(texts[0]), "-t", str(texts[1]), "--head", str(head_dir),
                     "--with-tokens", "--rauq", "--self-judge", "--to-json", str(score),
                     "--quiet", "--device", "cpu"]) == 0
    rows = _rows(score)
    add_errors(rows, SpanConfig(threshold=1.0))
    for r in rows:
        keys |= _keys(r)
    for model in (["--head", str(head_dir)], ["--model", str(tiny_seq2seq_path)]):
        gen = tmp_path / "gen.jsonl"
        gen.unlink(missing_ok=True)
        assert cli_main(["generate", "-s", str(texts[0]), *model, "--max-new-tokens", "3",
                         "--mc-samples", "2", "--with-tokens", "--to-json", str(gen), "--quiet",
                         "--device", "cpu"]) == 0
        keys |= set().union(*map(_keys, _rows(gen)))
    picked = tmp_path / "r.jsonl"
    assert cli_main(["rerank", "-s", str(texts[0]), "--head", str(head_dir), "--samples", "2",
                     "--max-new-tokens", "3", "--with-tokens", "-o", str(picked), "--quiet",
                     "--device", "cpu"]) == 0
    for r in _rows(picked):  # a candidate holds a generate row's keys
        keys |= {k if k.split("[]")[0] != "candidates" or columns.column_for(k)
                 else k.removeprefix("candidates[].") for k in _keys(r)}
    assert {"mc_sigmoid", "rauq_min", "self_judge", "errors[].severity", "pick"} <= keys
    assert {"candidates[].origin", "tokens[].sigmoid", "words[].word"} <= keys
    assert {k for k in keys if columns.column_for(k) is None} == set()
    assert columns.column_for("no_such_column") is None


def test_a_new_token_method_under_mc_samples_is_described_everywhere(
        toy_method, head_dir, texts, tmp_path, capsys) -> None:
    out = tmp_path / "gen.jsonl"
    assert cli_main(["generate", "-s", str(texts[0]), "--head", str(head_dir), "--max-new-tokens",
                     "3", "--mc-samples", "2", "--to-json", str(out), "--quiet",
                     "--device", "cpu"]) == 0
    rows = _rows(out)
    assert all(r["mc_toptoy"] <= 0 for r in rows)
    assert "mc_boostedprob" not in rows[0]  # BoostedProb says Monte Carlo does not apply
    assert "\nmc_toptoy " in capsys.readouterr().out  # the summary
    field = columns.column_for("mc_toptoy")
    assert field is not None and field.direction == columns.HIGHER_BETTER
    assert cli_main(["generate", "--describe"]) == 0
    assert "mc_toptoy" in capsys.readouterr().out
    assert "mc_toptoy" in default_methods()
    table, _ = evaluate_scores(out, np.arange(len(rows), dtype=float), ci=False)
    assert "mc_toptoy" in {t["method"] for t in table}


def test_the_registry_refuses_what_it_cannot_use() -> None:
    with pytest.raises(ValueError, match="already registered"):
        columns.register(columns.Column("entropy_mean", columns.PASS, columns.HIGHER_WORSE, "", ""))
    with pytest.raises(ValueError, match="level must be one of"):
        columns.Column("x", "galaxy", columns.NEITHER, "", "")
    with pytest.raises(ValueError, match="settings need a compute hook"):
        columns.Column("x", columns.SEQUENCE, columns.NEITHER, "", "", settings=dict)
