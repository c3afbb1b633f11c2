"""scoring/rerank.py: best-of-N candidates per source, scored by their own generation, and
the pick under the selection score (the lowest for a score where higher = worse); seeded,
reproducible samples; the head folder's extras on every candidate; clear refusals."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from test_cli import FIXTURE

from sigmoid_head.evaluation.calibration import Calibrator
from sigmoid_head.evaluation.combination import RERANK_SELECT, Combination
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.scoring import rerank
from sigmoid_head.scoring.corpus import CorpusConfig, score_corpus
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.distributed import window_batches
from sigmoid_head.scoring.generate import generate_and_score
from sigmoid_head.scoring.rerank import RerankConfig, rerank_corpus

SOURCES = ["el perro come el pan", "la casa", "una mujer", "el niño lee un libro hoy"]


def _model(head: Path = FIXTURE / "head") -> SigmoidHeadModel:
    return SigmoidHeadModel.from_pretrained(head, str(FIXTURE / "base"), device="cpu")


@pytest.fixture(scope="module")
def model() -> SigmoidHeadModel:
    return _model()


def _rows(model, config: RerankConfig | None = None, batch_size: int = 2, **corpus) -> list[dict]:
    config = config or RerankConfig(samples=3, max_new_tokens=5)
    records = [{"source": s} for s in SOURCES]
    return rerank_corpus(model, records, config,
                         CorpusConfig(quiet=True, batch_size=batch_size, **corpus)).rows


@pytest.fixture(scope="module")
def rows(model) -> list[dict]:
    return _rows(model)


def test_every_source_has_the_greedy_output_and_its_samples(model, rows) -> None:
    assert [r["source"] for r in rows] == SOURCES
    for r in rows:
        assert [(c["origin"], c.get("sample")) for c in r["candidates"]] == \
            [("greedy", None), ("sample", 0), ("sample", 1), ("sample", 2)]
        for c in r["candidates"]:
            assert {"candidate", "finished", "n_tokens", "sigmoid_mean_log", "softmax_min",
                    "boostedprob", "entropy_mean", "combined"} <= set(c)
    # the candidates and their scores are generate's: the greedy run, and each batch's samples
    # drawn with that batch's seed (batches of 2 sources, the longest first)
    greedy = generate_and_score(model, SOURCES, DecodingConfig(max_new_tokens=5), progress=False)
    for r, g in zip(rows, greedy, strict=True):
        assert r["candidates"][0]["candidate"] == g["candidate"]
        assert r["candidates"][0]["softmax_mean_log"] == pytest.approx(g["softmax_mean_log"], rel=1e-5)
    records = [{"source": s} for s in SOURCES]
    first = window_batches(records, 2)[0]
    part = [records[i] for i in first]
    sampled = generate_and_score(model, part, DecodingConfig(
        max_new_tokens=5, do_sample=True, temperature=0.8, num_return_sequences=3,
        seed=rerank.batch_seed(0, part)), progress=False)
    got = [c for i in first for c in rows[i]["candidates"][1:]]
    assert [c["candidate"] for c in got] == [s["candidate"] for s in sampled]
    assert [c["sigmoid"] for c in got] == pytest.approx([s["sigmoid"] for s in sampled], rel=1e-5)


def test_the_pick_is_the_best_candidate_under_the_default_score(rows) -> None:
    assert rerank.RerankConfig().select == RERANK_SELECT
    for r in rows:
        values = [c[RERANK_SELECT] for c in r["candidates"]]
        assert r["select"] == RERANK_SELECT
        assert r["pick"] == values.index(max(values))
        assert r["picked"] == r["candidates"][r["pick"]]["candidate"]
        assert r["picked_score"] == max(values)


def test_every_selectable_score_picks_in_its_direction(rows) -> None:
    names = rerank.selectable(head=True, calibrated=[])
    assert "entropy_mean" in names and "combined" in names
    lowest_differs, picks = False, set()
    for key in names:
        better = rerank.higher_is_better(key)
        assert better == (key != "entropy_mean"), key  # the one uncertainty among them
        for r in rows:
            row = rerank.reranked_row(r, r["candidates"], key)
            values = [c[key] for c in r["candidates"]]
            best = max(values) if better else min(values)
            assert row["pick"] == values.index(best), key
            picks.add(row["pick"])
            if not better and min(values) != max(values):
                lowest_differs = True
    assert lowest_differs  # the entropy picks would change under the wrong sign
    assert len(picks) > 1  # not always the first candidate


def test_pick_breaks_ties_by_order_and_skips_nan() -> None:
    assert rerank.pick([0.2, 0.5, 0.5], True) == 1
    assert rerank.pick([0.2, 0.1, 0.1], False) == 1
    assert rerank.pick([math.nan, 0.1, 0.3], True) == 2
    assert rerank.pick([math.nan, math.nan], False) == 0


def test_samples_are_seeded(model, rows) -> None:
    assert _rows(model) == rows  # the same settings draw the same candidates
    other = _rows(model, RerankConfig(samples=3, max_new_tokens=5, seed=1))
    texts = [[c["candidate"] for c in r["candidates"]] for r in rows]
    other_texts = [[c["candidate"] for c in r["candidates"]] for r in other]
    assert [t[0] for t in texts] == [t[0] for t in other_texts]  # greedy does not sample
    assert [t[1:] for t in texts] != [t[1:] for t in other_texts]


def test_each_batch_draws_from_its_own_stream() -> None:
    a, b = [{"source": "la casa"}], [{"source": "una mujer"}]
    assert rerank.batch_seed(0, a) == rerank.batch_seed(0, [{"source": "la casa"}])
    assert len({rerank.batch_seed(0, a), rerank.batch_seed(0, b), rerank.batch_seed(1, a)}) == 3
    assert 0 <= rerank.batch_seed(0, a) < 2**63


def test_samples_only_and_beam_search(model) -> None:
    only = _rows(model, RerankConfig(samples=2, greedy=False, max_new_tokens=4))
    assert all([c["origin"] for c in r["candidates"]] == ["sample"] * 2 for r in only)
    beam = _rows(model, RerankConfig(samples=1, num_beams=3, max_new_tokens=4))
    assert all([c["origin"] for c in r["candidates"]] == ["beam", "sample"] for r in beam)
    assert all("softmax_mean_log" in r["candidates"][0] for r in beam)  # force-decoded


def test_selection_names_and_refusals(tiny_causal_path) -> None:
    assert rerank.select_key("softmax@mean") == "softmax_mean_log"
    assert rerank.select_key("sigmoid@prod") == "sigmoid"
    assert rerank.select_key("entropy@mean") == "entropy_mean"
    assert rerank.select_key("softmax_geomean") == "softmax_mean_log"
    assert rerank.select_key("softmax_geo_mean") == "softmax_mean_log"  # ranks as the log
    assert rerank.select_key("softmax@geo_mean") == "softmax_mean_log"
    assert RerankConfig(select="boostedprob@min").select == "boostedprob_min"
    with pytest.raises(ValueError, match="not a score; choose one of: sigmoid, .*softmax_mean_log"):
        RerankConfig(select="softmax@median")
    with pytest.raises(ValueError, match="not a score; choose one of"):
        RerankConfig(select="n_tokens")  # a count, not a score
    with pytest.raises(ValueError, match="no candidates"):
        RerankConfig(samples=0, greedy=False)
    with pytest.raises(ValueError, match="temperature"):
        RerankConfig(temperature=0)
    from sigmoid_head.lm.backbone import load_backbone

    bare = load_backbone(str(tiny_causal_path), device="cpu")
    with pytest.raises(ValueError, match="need a head"):
        rerank_corpus(bare, [{"source": "la casa"}], RerankConfig(select="sigmoid@mean"))
    with pytest.raises(ValueError, match="calibration"):
        rerank_corpus(_model(), [{"source": "la casa"}], RerankConfig(select="sigmoid_platt"))
    with pytest.raises(ValueError, match="does not offer html, rauq"):
        rerank_corpus(bare, [{"source": "la casa"}], corpus=CorpusConfig(html="p.html", rauq=True))
    rows = rerank_corpus(bare, [{"source": "la casa"}], RerankConfig(samples=1, max_new_tokens=3),
                         CorpusConfig(quiet=True)).rows  # baselines only: the default needs no head
    assert "sigmoid" not in rows[0]["candidates"][0] and rows[0]["select"] == "softmax_min"


def test_the_head_folders_extras_reach_every_candidate(tmp_path) -> None:
    head = tmp_path / "head"
    shutil.copytree(FIXTURE / "head", head)
    records = [{"source": s, "candidate": c} for s, c in
               zip(SOURCES[:3], ["the dog eats the bread", "the house", "a car"], strict=True)]
    scored = score_corpus(_model(head), records, CorpusConfig(quiet=True)).rows
    Calibrator.fit(scored, [1, 1, 0]).save(head)
    Combination(0.5, "boostedprob_mean_log", "test").save(head)
    rows = rerank_corpus(_model(head), [{"source": s, "target": "x"} for s in SOURCES[:2]],
                         RerankConfig(samples=2, max_new_tokens=4, select="sigmoid_platt"),
                         CorpusConfig(quiet=True)).rows
    for r in rows:
        assert r["target"] == "x" and r["select"] == "sigmoid_platt"
        values = [c["sigmoid_platt"] for c in r["candidates"]]
        assert r["pick"] == values.index(max(values))
        for c in r["candidates"]:
            assert c["combined_log"] == pytest.approx(0.5 * c["sigmoid_mean_log"]
                                                      + 0.5 * c["boostedprob_mean_log"])
