"""The tables in the docs are made from committed per-item data, and a hand edit fails."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from recipes.bible import tables


def _data(folder: Path) -> dict:
    """Three methods on 40 verses of 3 candidates each (1 reference, 2 wrong ones)."""
    rng = np.random.default_rng(0)
    gold = np.tile([1.0, 0.0, 0.0], 40)
    d = {"name": "toy", "metric": "roc_auc", "gold": gold.tolist(),
         "groups": np.repeat(np.arange(40), 3).tolist(), "baseline": "softmax",
         "baseline_chosen": "by hand", "n_boot": 200, "seed": 0, "command": "made in a test",
         "scores": {m: (gold + rng.normal(0, s, gold.size)).tolist()
                    for m, s in (("softmax", 1.0), ("head", 0.5), ("other", 1.0))}}
    folder.mkdir()
    with gzip.open(folder / "toy.json.gz", "wt", encoding="utf-8") as f:
        json.dump(d, f)
    return d


def test_a_doc_table_is_regenerated_and_a_hand_edit_is_caught(tmp_path: Path) -> None:
    d = _data(tmp_path / "data")
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n\n<!-- table:toy -->\nold\n<!-- /table:toy -->\n\nmore text\n")
    (now, made), = tables.regenerate(tmp_path / "data", (doc,)).values()
    assert now != made and made.endswith("<!-- /table:toy -->\n\nmore text\n")
    doc.write_text(made)
    assert {p: a == b for p, (a, b) in tables.regenerate(tmp_path / "data", (doc,)).items()} == {doc: True}
    table = tables.render(d)
    assert "| head | " in table and "(two-sided), Holm p" in table and "over 2" in table
    assert "120 candidates from 40 source verses" in table
    row = next(line for line in made.splitlines() if line.startswith("| head | "))
    value = row.split(" | ")[1]
    doc.write_text(made.replace(row, row.replace(value, f"{float(value) + 0.001:.3f}", 1)))
    (now, made2), = tables.regenerate(tmp_path / "data", (doc,)).values()
    assert now != made2 and made2 == made  # the edit is undone by the data, so --check fails


def test_pack_reads_a_suite_output_with_its_verses(tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "suite"
    run.mkdir()
    cands = [{"label": int(i % 3 == 0), "item": i // 3} for i in range(30)]
    (run / "candidates.json").write_text(json.dumps(cands))
    rng = np.random.default_rng(1)
    np.savez(run / "sequence_scores.npz", **{"softmax@min": rng.normal(size=30),
                                              "sigmoid:h@mean": rng.normal(size=30), "length": np.ones(30)})
    monkeypatch.setattr(tables, "DATA", tmp_path / "data")
    assert tables.main(["--pack", "suite", str(run), "--name", "s", "--baseline", "softmax@min"]) == 0
    d = tables.load(tmp_path / "data" / "s.json.gz")
    assert d["groups"] == [i // 3 for i in range(30)] and set(d["scores"]) == {"softmax@min", "sigmoid:h@mean"}
    first = (tmp_path / "data" / "s.json.gz").read_bytes()
    tables.main(["--pack", "suite", str(run), "--name", "s", "--baseline", "softmax@min"])
    assert (tmp_path / "data" / "s.json.gz").read_bytes() == first  # byte-identical when rerun


def test_every_table_in_the_docs_matches_the_committed_data() -> None:
    assert tables.main(["--check"]) == 0


def test_the_metrics_view_shows_each_metric_over_verses_under_current_names(tmp_path: Path) -> None:
    d = _data(tmp_path / "data")
    d["scores"]["softmax_geo"] = d["scores"].pop("other")  # an older file's name: a geometric mean
    d["scores"] = {m: (1 / (1 + np.exp(-np.asarray(v)))).tolist() for m, v in d["scores"].items()}  # BCE
    doc = tmp_path / "README.md"
    doc.write_text("<!-- table:toy/metrics -->\n<!-- /table:toy/metrics -->\n")
    with gzip.open(tmp_path / "data" / "toy.json.gz", "wt", encoding="utf-8") as f:
        json.dump(d, f)
    (_, made), = tables.regenerate(tmp_path / "data", (doc,)).values()
    rows = {line.split(" | ")[0][2:]: line for line in made.splitlines() if line.startswith("| ")}
    # values in [0, 1] with a BCE: the probability-scale name, not the log's (_mean_log)
    assert set(rows) == {"method", "softmax", "head", "softmax_geo_mean"}
    gold, head = np.asarray(d["gold"]), np.asarray(d["scores"]["head"])
    from sigmoid_head.evaluation.metrics import pearson, roc_auc

    cells = rows["head"].split(" | ")
    assert cells[1].startswith(f"{roc_auc(head, gold):.3f} [") and cells[3].startswith(f"{pearson(head, gold):.3f} [")
    assert "intervals resample verses" in made and "Holm" not in made


def test_pack_reads_an_eval_self_study_with_its_chrf(tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "study"
    run.mkdir()
    rng = np.random.default_rng(2)
    chrf = rng.uniform(size=25)
    np.savez(run / "test_sequence.npz", **{"gold:chrf": chrf, "gold:minilm": rng.uniform(size=25),
                                           "softmax@mean": chrf + rng.normal(0, 0.1, 25),
                                           "entropy@mean": rng.normal(size=25), "length": -np.ones(25)})
    monkeypatch.setattr(tables, "DATA", tmp_path / "data")
    assert tables.main(["--pack", "self", str(run), "--name", "self", "--baseline", "entropy@mean"]) == 0
    d = tables.load(tmp_path / "data" / "self.json.gz")
    assert d["metric"] == "pearson" and d["gold"] == chrf.tolist() and d["groups"] == list(range(25))
    assert set(d["scores"]) == {"softmax@mean", "entropy@mean"}
    table = tables.render(d)
    assert "| softmax@mean | " in table and "vs entropy@mean" in table
    d["scores"]["softmax_mean_log"] = d["scores"].pop("softmax@mean")  # a log: its own name
    assert "| softmax_mean_log | " in tables.render(d)


def test_kendall_tau_is_tau_b() -> None:
    x, y = np.array([1.0, 2.0, 3.0, 3.0]), np.array([1.0, 3.0, 2.0, 4.0])
    from scipy.stats import kendalltau

    assert tables.kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    assert np.isnan(tables.kendall_tau(np.ones(3), y[:3]))


def test_the_rerank_table_picks_per_source_and_tests_over_sources() -> None:
    # 2 sources x 3 candidates (greedy first); "good" picks the best, "bad" the worst.
    gold = [0.5, 0.9, 0.1, 0.4, 0.2, 0.6]
    d = {"name": "rr", "kind": "rerank", "gold": gold, "bleu": gold, "groups": [0, 0, 0, 1, 1, 1],
         "origin": ["greedy", "s", "s"] * 2, "baseline": "good", "baseline_chosen": "in a test",
         "command": "test", "n_boot": 200, "seed": 0,
         "scores": {"good": [1, 2, 0, 1, 0, 2], "bad": [1, 0, 2, 1, 2, 0], "flat": [0] * 6}}
    rows = tables.rerank_table(d)
    assert rows["good"]["pick"] == pytest.approx((0.9 + 0.6) / 2) and rows["good"]["tau"] == pytest.approx(1.0)
    assert rows["bad"]["pick"] == pytest.approx((0.1 + 0.2) / 2) and rows["bad"]["tau"] == pytest.approx(-1.0)
    assert rows["flat"]["pick"] == pytest.approx((0.5 + 0.4) / 2)  # ties: the greedy output
    assert rows["greedy"]["pick"] == rows["flat"]["pick"] and rows["oracle"]["pick"] == rows["good"]["pick"]
    assert rows["random"]["pick"] == pytest.approx(np.mean(gold))
    table = tables.render_rerank(d)
    assert "| bad | 0.150 " in table and "vs good" in table and "Holm family" in table
    assert "6 candidates for 2 source verses" in table


def test_rerank_rows_of_another_head_and_of_another_decoding() -> None:
    gold = [0.5, 0.9, 0.1, 0.4, 0.2, 0.6]
    d = {"name": "rr", "kind": "rerank", "gold": gold, "bleu": gold, "groups": [0, 0, 0, 1, 1, 1],
         "origin": ["greedy", "s", "s"] * 2, "baseline": "softmax", "baseline_chosen": "in a test",
         "command": "test", "n_boot": 200, "seed": 0, "notes": "guided decoding took 1.10x",
         "scores": {"softmax": [1, 0, 2, 1, 2, 0], "prior 0.01:sigmoid_geomean": [1, 2, 0, 1, 0, 2]},
         "decoded": {"guided (paper, w=1)": [0.7, 0.3]}}
    assert tables.softmax_side("softmax") and not tables.softmax_side("prior 0.01:softmax")
    rows = tables.rerank_table(d)
    assert rows["guided (paper, w=1)"]["pick"] == pytest.approx(0.5)
    assert rows["prior 0.01:sigmoid_geomean"]["pick"] == pytest.approx((0.9 + 0.6) / 2)
    table = tables.render_rerank(d)
    assert "| prior 0.01: sigmoid_mean_log | 0.750 " in table  # the other head's score, renamed
    assert "| guided (paper, w=1) | 0.500 " in table and "the other decodings" in table
    assert "(2 comparisons)" not in table and "(3 comparisons)" in table  # both rows and greedy
    assert "Guided decoding took 1.10x." in table
    with pytest.raises(ValueError, match="3 values for 2 sources"):
        tables.rerank_table(d | {"decoded": {"g": [0.1, 0.2, 0.3]}})


def test_a_recipes_rows_file_is_rendered_into_its_block(tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"x": 1.0}, {"x": 3.0}]
    with gzip.open(data / "toyrows.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    monkeypatch.setitem(tables.ROW_VIEWS, "toyrows", lambda rs: f"mean {np.mean([r['x'] for r in rs]):.1f}\n")
    doc = tmp_path / "r.md"
    doc.write_text("<!-- table:toyrows -->\nold\n<!-- /table:toyrows -->\n")
    (now, made), = tables.regenerate(data, (doc,)).values()
    assert made == "<!-- table:toyrows -->\nmean 2.0\n<!-- /table:toyrows -->\n"
    (data / "other.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    with pytest.raises(SystemExit, match="no view of such rows"):
        tables.regenerate(data, (doc,))


def test_the_words_table_packs_a_suite_and_tests_over_verses(tmp_path: Path) -> None:
    from sigmoid_head.evaluation.span_metrics import word_metrics

    rng = np.random.default_rng(0)
    n_words = 300
    owner = rng.integers(0, 30, n_words)  # 30 candidates, 3 per verse
    bad = (rng.random(n_words) < 0.3).astype(float)
    good = np.log(np.clip(0.8 - 0.6 * bad + 0.1 * rng.random(n_words), 1e-6, 1))  # separates
    noise = np.log(rng.random(n_words))  # does not
    np.savez_compressed(tmp_path / "word_scores.npz", **{"score:softmax": noise, "score:sigmoid:h": good,
                                                         "score:neg_entropy": noise}, bad=bad, owner=owner)
    (tmp_path / "candidates.json").write_text(json.dumps([{"item": i // 3} for i in range(30)]))
    d = tables.from_words(tmp_path) | {"name": "w", "baseline": "softmax", "baseline_chosen": "in a test",
                                       "command": "test", "n_boot": 100, "seed": 0}
    assert set(d["scores"]) == {"softmax", "sigmoid:h"} and d["groups"] == [int(o) // 3 for o in owner]
    table = tables.render_words(d)
    row = next(line for line in table.splitlines() if line.startswith("| sigmoid:h |"))
    exact = word_metrics(np.exp(good), bad, 0.5)
    assert row.split(" | ")[1].startswith(f"{exact['mcc']:.3f} [")
    assert row.split(" | ")[3].startswith(f"{exact['roc_auc']:.3f} [")
    assert "Holm family: ROC-AUC and AP of every other method vs softmax (2 comparisons)" in table
    assert "p < 0.01 (two-sided)" in row and "of 10 source verses" in table  # 100 resamples


def test_the_saturation_table_packs_a_study_and_counts_per_token(tmp_path: Path, monkeypatch) -> None:
    """Greedy tokens mostly dominant, references less: the table shows the shares and the
    head's mean probabilities computed directly, with intervals over verses."""
    rng = np.random.default_rng(3)
    run = tmp_path / "study"
    run.mkdir()
    arrays = {}
    for stem, share in (("dev_tokens", 0.9), ("dev_ref_tokens", 0.5)):
        seq = np.repeat(np.arange(20), 6)
        in_dom = rng.random(seq.size) < share
        logit = np.where(in_dom, 3.0, -1.0) + rng.normal(0, 0.5, seq.size)
        np.savez(run / f"{stem}.npz", seq=seq, in_dom=in_dom, **{"logit:h": logit, "logit:g": -logit})
        arrays[stem] = (in_dom, 1 / (1 + np.exp(-logit)))
    monkeypatch.setattr(tables, "DATA", tmp_path / "data")
    assert tables.main(["--pack", "saturation", str(run), "--name", "sat", "--methods", "h", "--boot", "100"]) == 0
    d = tables.load(tmp_path / "data" / "sat.json.gz")
    assert list(d["scores"]) == ["h"] and list(d["greedy"]["p"]) == ["h"] and "baseline" not in d
    table = tables.render_saturation(d)
    lines = table.splitlines()
    share = next(x for x in lines if "dominant set" in x).split(" | ")
    dom_g, p_g = arrays["dev_tokens"]
    dom_r, p_r = arrays["dev_ref_tokens"]
    assert share[2].startswith(f"{dom_g.mean():.3f} [") and share[3].startswith(f"{dom_r.mean():.3f} [")
    p_dom = next(x for x in lines if "on dominant tokens" in x).split(" | ")
    assert p_dom[0] == "| h" and p_dom[2].startswith(f"{p_g[dom_g].mean():.3f} [")
    assert "120 greedy and 120 reference tokens of 20 dev-book verses" in table


def test_the_token_labels_table_packs_per_source_and_tests_against_the_softmax(tmp_path: Path, monkeypatch) -> None:
    """A score that follows the labels is ahead of a noisy softmax; the ROC-AUC shown is the
    one computed directly, and the intervals resample sources."""
    from sigmoid_head.evaluation.metrics import roc_auc

    rng = np.random.default_rng(4)
    run = tmp_path / "self"
    run.mkdir()
    good = (rng.random(400) < 0.6).astype(int)
    group = np.repeat(np.arange(40), 10)
    head = good + rng.normal(0, 0.5, 400)
    np.savez(run / "val_self_tokens_1ref.npz", good=good, group=group,
             **{"score:softmax": rng.normal(size=400), "score:h": head, "score:other": rng.normal(size=400)})
    monkeypatch.setattr(tables, "DATA", tmp_path / "data")
    assert tables.main(["--pack", "token_labels", str(run), "--name", "tl", "--baseline", "softmax",
                        "--methods", "h", "--boot", "200"]) == 0
    d = tables.load(tmp_path / "data" / "tl.json.gz")
    assert list(d["parts"]) == ["1ref"] and set(d["parts"]["1ref"]["scores"]) == {"softmax", "h"}
    table = tables.render_token_labels(d)
    row = next(x for x in table.splitlines() if "| h |" in x)
    assert f"| {roc_auc(np.asarray(d['parts']['1ref']['scores']['h']), good):.3f} [" in row
    assert "Holm p < 0.005 over 1; analytic Holm p = " in row  # 200 resamples: the smallest p they can show
    assert float(row.rsplit("analytic Holm p = ", 1)[1].split()[0]) < 0.005  # the analytic p goes below it
    assert f"| 1ref | {1 - good.mean():.1%} |" in row
    assert "400 labelled tokens of 40 sources" in table
