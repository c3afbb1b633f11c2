"""scoring/rerank.py and cli/rerank.py: best-of-N candidates, their scores and the pick."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sigmoid_head.cli import main as cli_main
from sigmoid_head.scoring.generate import DecodingConfig, generate_and_score
from sigmoid_head.scoring.rerank import (
    DEFAULT_SELECT,
    RerankConfig,
    check_select,
    pick,
    rerank_corpus,
    rerank_records,
)

SOURCES = [{"source": s} for s in ("el perro come el pan", "la casa", "el niño lee un libro", "una mujer",
                                   "el gato")]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_pick_takes_the_highest_first_on_ties_lowest_entropy_and_never_nan() -> None:
    rows = [{"s": 0.2, "entropy_mean": 2.0}, {"s": 0.9, "entropy_mean": 0.5},
            {"s": 0.9, "entropy_mean": 0.1}, {"s": math.nan, "entropy_mean": math.nan}]
    assert pick(rows, "s") == 1  # the first of the tied best
    assert pick(rows, "entropy_mean") == 2  # lower is better
    assert pick([{"s": math.nan}, {"s": -5.0}], "s") == 1
    with pytest.raises(ValueError, match="unknown selection score 'nope'; choose from .*softmax_mean_log"):
        check_select("nope")
    check_select(DEFAULT_SELECT)


def test_config_refuses_what_cannot_draw_a_candidate() -> None:
    with pytest.raises(ValueError, match="samples"):
        RerankConfig(samples=0, greedy=False)
    with pytest.raises(ValueError, match="temperature"):
        RerankConfig(temperature=0.0)
    assert RerankConfig(samples=3).per_source() == 4 and RerankConfig(samples=3, greedy=False).per_source() == 3


@pytest.mark.parametrize("model_name", ["causal", "seq2seq"])
def test_candidates_are_the_models_outputs_and_one_pick_per_source(model_name, request) -> None:
    model = request.getfixturevalue(model_name)
    dec = DecodingConfig(max_new_tokens=4, seed=3)
    cfg = RerankConfig(samples=3, select="sigmoid_mean_log")
    rows = rerank_records(model, SOURCES, cfg, dec, batch_size=2)
    assert len(rows) == 4 * len(SOURCES)
    greedy = generate_and_score(model, SOURCES, dec, batch_size=2, progress=False)
    for i, src in enumerate(SOURCES):
        group = rows[4 * i:4 * i + 4]
        assert [r["origin"] for r in group] == ["greedy", "sample:0", "sample:1", "sample:2"]
        assert all(r["source"] == src["source"] for r in group)
        assert group[0]["candidate"] == greedy[i]["candidate"]  # the greedy output is generate's
        assert group[0]["softmax_mean_log"] == pytest.approx(greedy[i]["softmax_mean_log"], abs=1e-5)
        best = max(range(4), key=lambda k: (group[k]["sigmoid_mean_log"], -k))
        assert [r["picked"] for r in group] == [k == best for k in range(4)]
        assert {r["picked_by"] for r in group} == {"sigmoid_mean_log"}
        assert "combined_log" in group[0]  # the head's (default) combination, before the pick
    again = rerank_records(model, SOURCES, cfg, dec, batch_size=2)
    assert [r["candidate"] for r in again] == [r["candidate"] for r in rows]  # seeded


def test_sampled_candidates_differ_with_the_seed(causal) -> None:
    cfg = RerankConfig(samples=4, greedy=False, temperature=1.5)
    a = rerank_records(causal, SOURCES, cfg, DecodingConfig(max_new_tokens=6, seed=0))
    b = rerank_records(causal, SOURCES, cfg, DecodingConfig(max_new_tokens=6, seed=1))
    assert [r["candidate"] for r in a] != [r["candidate"] for r in b]
    assert all(r["origin"].startswith("sample:") for r in a)


def test_the_corpus_run_resumes_to_the_same_file(causal, tmp_path, monkeypatch, capsys) -> None:
    from sigmoid_head.scoring import corpus_output
    from sigmoid_head.scoring.corpus import CorpusConfig

    dec, cfg = DecodingConfig(max_new_tokens=4, seed=5), RerankConfig(samples=2)
    whole = tmp_path / "whole.jsonl"
    rerank_corpus(causal, SOURCES, CorpusConfig(batch_size=2, to_json=str(whole), quiet=True), cfg, dec)
    rows = _rows(whole)
    assert [r["source_index"] for r in rows] == [i for i in range(len(SOURCES)) for _ in range(3)]
    assert sum(r["picked"] for r in rows) == len(SOURCES)

    many = [{"source": f"{r['source']} {i}"} for i in range(4) for r in SOURCES]  # 20: two windows of 16
    cut = tmp_path / "cut.jsonl"
    real = corpus_output.run_sharded if hasattr(corpus_output, "run_sharded") else None
    assert real is not None
    calls = {"n": 0}

    def dying(*args, **kw):  # the first run dies after its first window
        def sink_then_die(rows_):
            kw_sink(rows_)
            calls["n"] += 1
            raise KeyboardInterrupt
        kw_sink = args[2]
        return real(args[0], args[1], sink_then_die, **kw)

    monkeypatch.setattr(corpus_output, "run_sharded", dying)
    with pytest.raises(KeyboardInterrupt):
        rerank_corpus(causal, many, CorpusConfig(batch_size=1, to_json=str(cut), quiet=True), cfg, dec)
    monkeypatch.setattr(corpus_output, "run_sharded", real)
    assert not cut.exists() and calls["n"] == 1
    capsys.readouterr()
    rerank_corpus(causal, many, CorpusConfig(batch_size=1, to_json=str(cut), quiet=True), cfg, dec)
    assert "continuing after 48 rows already written" in capsys.readouterr().out  # 16 sources x 3
    resumed = _rows(cut)
    fresh = tmp_path / "fresh.jsonl"
    rerank_corpus(causal, many, CorpusConfig(batch_size=1, to_json=str(fresh), quiet=True), cfg, dec)
    assert resumed == _rows(fresh) and len(resumed) == 3 * len(many)


def test_cli_rerank_end_to_end(head_dir, texts, tmp_path, capsys) -> None:
    out = tmp_path / "rr.jsonl"
    cli_main(["rerank", "-s", str(texts[0]), "--head", str(head_dir), "--samples", "2",
              "--max-new-tokens", "3", "--select", "softmax_mean_log", "--to-json", str(out),
              "--quiet", "--device", "cpu"])
    rows = _rows(out)
    assert len(rows) == 3 * 5 and sum(r["picked"] for r in rows) == 5
    for i in range(5):
        group = [r for r in rows if r["source_index"] == i]
        best = max(range(3), key=lambda k: (group[k]["softmax_mean_log"], -k))
        assert group[best]["picked"] and group[0]["origin"] == "greedy"


def test_cli_rerank_refuses_an_unknown_score_and_an_output_over_its_input(head_dir, texts, tmp_path,
                                                                          capsys) -> None:
    assert cli_main(["rerank", "-s", str(texts[0]), "--head", str(head_dir), "--select", "bleu",
                     "--device", "cpu"]) == 2
    assert "unknown selection score 'bleu'" in capsys.readouterr().err
    assert cli_main(["rerank", "-s", str(texts[0]), "--head", str(head_dir), "--to-json", str(texts[0]),
                     "--device", "cpu"]) == 2
    assert Path(texts[0]).read_text().startswith("el perro")  # the input is untouched
