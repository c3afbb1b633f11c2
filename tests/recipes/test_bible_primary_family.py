"""The declared primary family with several training seeds: packed from a suite run that
must hold the committed candidates and words, and tested as a seed average."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from recipes.bible import primary_family, tables


def _suite_run(folder: Path, shift: float = 0.0, extra_seeds: int = 2, model: str = "llm",
               seeds: range | None = None) -> Path:
    """A fake ``eval_other_suite.py`` output over the committed seed-0 candidates and words of
    ``model`` (``llm`` or ``mt``): the committed softmax columns (``shift`` added to the
    softmax minimum) and heads ``token_freq+avoid_sK`` (K in ``seeds``, default 1 to
    ``extra_seeds``) that are the seed-0 head plus small noise."""
    other = tables.load(tables.DATA / f"{model}_suite_test.json.gz")
    words = tables.load(tables.DATA / f"{model}_words_test.json.gz")
    rng = np.random.default_rng(1)
    folder.mkdir()
    items = other["groups"]
    (folder / "candidates.json").write_text(json.dumps(
        [{"label": g, "item": i} for g, i in zip(other["gold"], items, strict=True)]))
    seq = {m: np.asarray(v) for m, v in other["scores"].items()}
    seq["softmax@min"] = seq["softmax@min"] + shift
    wsc = {f"score:{m}": np.asarray(v) for m, v in words["scores"].items()}
    for s in seeds if seeds is not None else range(1, extra_seeds + 1):
        seq[f"sigmoid:token_freq+avoid_s{s}@mean"] = (np.asarray(other["scores"]["sigmoid:token_freq+avoid@mean"])
                                                      + rng.normal(0, 0.05, len(items)))
        wsc[f"score:sigmoid:token_freq+avoid_s{s}"] = (np.asarray(words["scores"]["sigmoid:token_freq+avoid"])
                                                       + rng.normal(0, 0.05, len(words["gold"])))
    np.savez(folder / "sequence_scores.npz", **seq)
    first = {}
    for c, i in enumerate(items):
        first.setdefault(i, c)
    np.savez(folder / "word_scores.npz", bad=np.asarray(words["gold"]),
             owner=np.array([first[g] for g in words["groups"]]), **wsc)
    return folder


def test_the_family_is_packed_from_seed_0_and_the_run_and_rendered(tmp_path: Path) -> None:
    run = _suite_run(tmp_path / "run")
    d = primary_family.build(run, {1: "token_freq+avoid_s1", 2: "token_freq+avoid_s2"}, "made in a test",
                             n_boot=60)
    assert d["seeds"] == [0, 1, 2] and d["combination"] == {
        "baseline": "softmax@min", "weight": 0.7,
        "chosen": "on the dev books of both models (docs/results/default_combination.json)"}
    words0 = tables.load(tables.DATA / "llm_words_test.json.gz")
    assert d["parts"]["llm_words"]["head"]["0"] == words0["scores"]["sigmoid:token_freq+avoid"]
    assert d["max_gap_to_committed"]["softmax@min"] == 0.0
    d = json.loads(json.dumps(d))  # as saved: the seeds' keys become strings
    table = tables.render_primary(d)
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + 4, table  # header, two comparisons run, two not run
    words_row = next(r for r in rows if r.startswith("| SmolLM2: word ROC-AUC"))
    # seed 0's word ROC-AUC and baseline are the committed words table's (0.798 and 0.785)
    assert "| 0.785 | 0.798 / " in words_row and "Holm p" in words_row
    assert sum("| not run | not run |" in r for r in rows) == 2
    assert "over 4" in words_row and "2 not run: p = 1" in table


def test_a_run_over_other_candidates_or_another_softmax_is_refused(tmp_path: Path) -> None:
    run = _suite_run(tmp_path / "run", shift=1e-3)
    with pytest.raises(SystemExit, match="softmax@min: the run differs .* by up to 0.001"):
        primary_family.build(run, {1: "token_freq+avoid_s1"}, "", n_boot=20)
    with pytest.raises(SystemExit, match=r"heads \['nope'\] are not in"):
        primary_family.build(_suite_run(tmp_path / "ok"), {1: "nope"}, "", n_boot=20)
    with pytest.raises(SystemExit, match="SEED > 0"):
        primary_family.main(["--suite", str(run), "--seed-head", "0:token_freq+avoid"])


def test_holm_counts_the_comparisons_not_run_with_p_1() -> None:
    """Two comparisons run with tiny p and two not run: Holm over 4 multiplies the smallest
    p by 4 and the next by 3; a comparison not run never counts as settled."""
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(50), 4)
    gold = np.tile([1.0, 0.0, 0.0, 0.0], 50)
    base = gold + rng.normal(0, 2.0, gold.size)
    part = {"gold": gold.tolist(), "groups": groups.tolist(), "baseline": base.tolist(),
            "baseline_name": "b", "label": "L", "form": "combined",
            "head": {str(s): (gold + rng.normal(0, 0.3, gold.size)).tolist() for s in range(3)}}
    d = {"name": "toy", "seeds": [0, 1, 2], "n_boot": 100, "seed": 0, "model": "m", "head": "h",
         "n_train": 10, "declared": "Declared.", "command": "c",
         "combination": {"baseline": "b", "weight": 0.7, "chosen": "by hand"},
         "parts": {"a": part, "c": dict(part, label="L2", form="words")},
         "not_run": {"x": "X: not run", "y": "Y: not run"}}
    table = tables.render_primary(d)
    row = next(r for r in table.splitlines() if r.startswith("| L vs b"))
    assert "above the baseline" in row and "over 4" in row
    low = next(r for r in table.splitlines() if r.startswith("| L2 vs b"))
    assert "below the baseline" in low  # word form: a high score on BAD words is wrong
    assert table.count("| not tested |") == 2


def test_the_mt_half_comes_from_one_run_on_a_retrained_model(tmp_path: Path) -> None:
    """With --mt-suite every MT seed (0 included) and the MT baseline come from that run: its
    softmax may differ from the committed model's (recorded), its candidates may not."""
    llm = _suite_run(tmp_path / "llm")
    mt = _suite_run(tmp_path / "mt", shift=0.25, model="mt", seeds=range(3))
    heads = {s: f"token_freq+avoid_s{s}" for s in range(3)}
    d = primary_family.build(llm, {1: heads[1], 2: heads[2]}, "llm cmd", n_boot=40,
                             mt={"suite": mt, "seed_heads": heads, "model": "A retrained MT model.",
                                 "command": "mt cmd"})
    assert d["not_run"] == {} and d["notes"] == ["A retrained MT model."]
    assert d["max_gap_to_committed"]["MT softmax@min vs the tables' model"] == pytest.approx(0.25)
    mt_words = tables.load(tables.DATA / "mt_words_test.json.gz")
    assert d["parts"]["mt_words"]["baseline"] == mt_words["scores"]["softmax"]
    assert d["parts"]["mt_other"]["baseline"][0] == pytest.approx(
        tables.load(tables.DATA / "mt_suite_test.json.gz")["scores"]["softmax@min"][0] + 0.25)
    table = tables.render_primary(json.loads(json.dumps(d)))
    rows = [line for line in table.splitlines() if line.startswith("| MT: ")]
    assert len(rows) == 2 and all("over 4" in r for r in rows), table
    assert "not run" not in table and "(4 comparisons)" in table and "A retrained MT model." in table
    with pytest.raises(SystemExit, match="are not the SmolLM2 ones"):
        primary_family.build(llm, {1: heads[1], 2: heads[2]}, "", n_boot=20,
                             mt={"suite": mt, "seed_heads": {0: heads[0], 1: heads[1]}, "model": "m", "command": ""})
    other_items = _suite_run(tmp_path / "mt_other_items", model="llm", seeds=range(3))
    with pytest.raises(SystemExit, match="MT Eval Other labels: 3178 values committed, 1330 in the run"):
        primary_family.build(llm, {1: heads[1], 2: heads[2]}, "", n_boot=20,
                             mt={"suite": other_items, "seed_heads": heads, "model": "m", "command": ""})
    with pytest.raises(SystemExit, match="needs --mt-model"):
        primary_family.main(["--suite", str(llm), "--seed-head", "1:x", "--mt-suite", str(mt)])
