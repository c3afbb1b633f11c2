"""The labelled head's opponents (issue 58, item 2): the linear probe as a tied head, its
hidden states read back from a training cache, and the committed training rows."""

from __future__ import annotations

import gzip
import importlib
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")


def test_probe_fit_recovers_a_linear_rule_and_the_tied_head_scores_it():
    probe = importlib.import_module("recipes.human_qe.probe")
    from sigmoid_head.head.folder import HeadConfig

    rng = np.random.default_rng(0)
    w_true = rng.normal(size=8) * 3
    x = rng.normal(size=(4000, 8)) * rng.uniform(0.5, 4, size=8) + 2.0  # unscaled, off-centre
    y = (rng.uniform(size=4000) < 1 / (1 + np.exp(-(x - 2.0) @ w_true))).astype(np.int64)
    fit = probe.fit_probe(x[:3000], y[:3000], x[3000:], y[3000:], grid=(0.01, 1.0))
    assert fit["C"] in (0.01, 1.0) and len(fit["grid"]) == 2
    # the folded-back weights give the regression's own probabilities on raw features
    p = 1 / (1 + np.exp(-(x @ fit["w"] + fit["c"])))
    assert np.corrcoef(x @ fit["w"], (x - 2.0) @ w_true)[0, 1] > 0.95
    assert abs(float(((p > 0.5) == y).mean()) - 0.9) < 0.1

    cfg = HeadConfig(base_model="m", vocab_size=11, hidden_size=8, fingerprint="f")
    cfg2, head = probe.tied_head(cfg, fit["w"], fit["c"], {"probe": True})
    assert cfg2.bias and cfg2.training == {"probe": True}
    h = torch.tensor(x[:5], dtype=torch.float32)
    ids = torch.tensor([[0], [3], [10], [7], [1]])
    got = torch.sigmoid(head.logits(h, ids)).squeeze(-1).detach().numpy()  # every token: the same score
    np.testing.assert_allclose(got, p[:5], rtol=1e-4, atol=1e-5)


def test_cached_hidden_reads_the_trainers_cache_as_the_frozen_pass_gives_it(
        tiny_causal_path, pairs_maker, train_config, tmp_path):
    """The probe's rows from a real training cache equal the frozen model's own (no second
    reader of the cache's files: the trainer's read-only view); other data is refused."""
    import torch

    from sigmoid_head.head.folder import load_head_files
    from sigmoid_head.lm.backbone import load_backbone
    from sigmoid_head.training.config import TrainConfig
    from sigmoid_head.training.labelled import load_labelled_examples
    from sigmoid_head.training.loop import train

    probe = importlib.import_module("recipes.human_qe.probe")
    gold = tmp_path / "gold"
    gold.mkdir()
    pairs = pairs_maker(24, seed=3)
    for name, part in (("train", pairs[:16]), ("dev", pairs[16:])):
        (gold / f"{name}.src").write_text("".join(p["source"] + "\n" for p in part))
        (gold / f"{name}.mt").write_text("".join(p["target"] + "\n" for p in part))
        (gold / f"{name}.tags").write_text("".join(
            " ".join("BAD" if (k + j) % 3 == 0 else "OK" for j, _ in enumerate(p["target"].split())) + "\n"
            for k, p in enumerate(part)))
    train(train_config(tiny_causal_path, None, tmp_path / "head", train_file=None,
                       labelled_file=str(gold / "train.tags"), labelled_validation_file=str(gold / "dev.tags"),
                       max_steps=2, eval_every=2, cache_hidden=True, cache_dir=str(tmp_path / "cache"),
                       disk_cache_dtype="float32"))
    config, _ = load_head_files(tmp_path / "head")
    backbone = load_backbone(str(tiny_causal_path), dtype=torch.float32)
    form = TrainConfig.from_dict(config.training).prompt_format(backbone.is_encoder_decoder)
    ex = load_labelled_examples(gold / "train.tags", backbone.tokenizer, form)
    x, y = probe.cached_hidden(tmp_path / "cache" / "train", ex)
    x0, y0 = probe.hidden_and_good(backbone, ex)
    np.testing.assert_array_equal(y, y0)
    assert 0 < y.sum() < y.size
    np.testing.assert_allclose(x, x0, rtol=1e-5, atol=1e-5)
    other = [ex[0], {**ex[1], "input_ids": [*ex[1]["input_ids"][:-1], ex[1]["input_ids"][-1] + 1]}]
    with pytest.raises(ValueError, match="example 1 is not in the cache"):
        probe.cached_hidden(tmp_path / "cache" / "train", other)
    with pytest.raises(ValueError, match="no hidden-state cache there"):
        probe.cached_hidden(tmp_path / "gold", ex)


def _write(path, rows):
    with gzip.open(path, "wt") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def test_keep_joins_spans_and_refuses_rows_of_other_items(tmp_path, monkeypatch):
    sup = importlib.import_module("recipes.human_qe.supervised")
    monkeypatch.setattr(sup, "kept", lambda: tmp_path / "kept")
    run = tmp_path / "run"
    run.mkdir()
    gold = [{"id": 7, "src": "s a", "tgt": "a b", "mqm_spans": [{"start": 2, "end": 3, "category": None}]}]
    _write(run / "test.scores.jsonl.gz", [{"id": "test-0", "group": "s a", "candidate": "a b", "softmax": 0.5}])
    _write(run / "dev.scores.jsonl.gz", [{"id": "dev-0", "group": "s a", "candidate": "a b", "softmax": 0.4}])
    _write(tmp_path / "train.jsonl.gz", gold)
    _write(tmp_path / "held.jsonl.gz", gold)
    sup.keep(run, tmp_path / "train.jsonl.gz", tmp_path / "held.jsonl.gz")
    with gzip.open(tmp_path / "kept" / "train.scores.jsonl.gz", "rt") as f:
        row = json.loads(f.readline())
    assert row == {"id": 7, "group": "s a", "candidate": "a b", "spans": [{"start": 2, "end": 3}], "softmax": 0.5}
    _write(tmp_path / "held.jsonl.gz", [{**gold[0], "tgt": "a c"}])
    with pytest.raises(SystemExit, match="is not item 7"):
        sup.keep(run, tmp_path / "train.jsonl.gz", tmp_path / "held.jsonl.gz")
    assert (tmp_path / "kept" / "validation.scores.jsonl.gz").exists()  # the earlier keep stands


def test_word_feature_names_match_the_columns():
    fc = importlib.import_module("recipes.human_qe.feature_combination")
    sup = importlib.import_module("recipes.human_qe.supervised")
    rows, items = sup.wmt_rows("dev", "labelled_roen")  # committed rows with a head's columns
    x0, x1 = fc.word_features(rows[0], items[0], False), fc.word_features(rows[0], items[0], True)
    assert x0.shape[1] == len(fc.WORD_FEATURES)
    assert x1.shape[1] == len(fc.WORD_FEATURES) + len(fc.HEAD_WORD_FEATURES)
    np.testing.assert_array_equal(x1[:, : x0.shape[1]], x0)
    np.testing.assert_array_equal(sup.head_features([rows[0]], [items[0]]), x1[:, x0.shape[1]:])


def _sup(dev: dict[str, float]) -> dict:
    heads = ["h0", "h1", "h2"]
    names = ["softmax", "lr", "gbm", "probe", *heads, *(f"gbm+{h}" for h in heads), "gbm+probe"]
    scores = {k: {"mcc": 0.3, "dev_mcc": dev.get(k, 0.2)} for k in names}
    tests = {}
    for h in heads:
        tests[f"{h} - gbm"] = {"delta": -0.05, "p_holm": 0.012, "n_boot": 1000}
        tests[f"gbm+{h} - gbm"] = {"delta": 0.07, "p_holm": 0.0, "n_boot": 1000}
    return {"scores": scores, "best": "gbm", "heads": heads, "tests": tests}


def test_the_readme_recommends_what_is_best_on_dev():
    ws = importlib.import_module("recipes.human_qe.which_score")
    use, evidence = ws.tags_row(_sup({"gbm+probe": 0.46, "gbm+h1": 0.45}))
    assert use.startswith("gradient-boosted trees") and "a linear probe" in use
    assert "gbm+probe 0.300" in evidence and "(Holm p 0.012)" in evidence and "(Holm p < 0.001)" in evidence
    assert ws.tags_row(_sup({"h2": 0.5}))[0].startswith("the head trained on your tags")
    assert "the tag head's word scores" in ws.tags_row(_sup({"gbm+h0": 0.5}))[0]
    assert ws.tags_row(_sup({"softmax": 0.5}))[0] == "the softmax side's word score"


def test_the_readme_chooses_a_setting_by_its_seeds_mean_dev_mcc():
    """A user trains one seed: seeds are one setting, chosen by their mean dev MCC, never the
    luckiest seed on dev."""
    ws = importlib.import_module("recipes.human_qe.which_score")
    sup = _sup({"gbm+probe": 0.46, "gbm+h1": 0.45, "gbm+h1_s1": 0.48, "gbm+h1_s2": 0.42})
    for k, test in (("gbm+h1", 0.44), ("gbm+h1_s1", 0.43), ("gbm+h1_s2", 0.41)):
        sup["scores"][k] = {"mcc": test, "dev_mcc": sup["scores"].get(k, {}).get("dev_mcc", 0.2)}
    sup["scores"]["gbm+h1_s1"]["dev_mcc"], sup["scores"]["gbm+h1_s2"]["dev_mcc"] = 0.48, 0.42
    use, evidence = ws.tags_row(sup)
    assert "a linear probe" in use  # 0.46 against the seeds' mean 0.45, not the best seed's 0.48
    assert evidence.startswith("gbm+probe 0.300 against the softmax's 0.300 (dev 0.460, the best on dev; next on "
                               "dev gbm+h1: dev 0.450 (mean of 3 seeds), test 0.440 / 0.430 / 0.410 (3 seeds, mean 0.427))")
    assert ws.seed_groups({"a": 0, "a_s1": 0, "b_s": 0, "gbm+a_s2": 0}) == {"a": ["a", "a_s1"], "b_s": ["b_s"],
                                                                          "gbm+a": ["gbm+a_s2"]}


def test_training_rows_sharing_a_wmt_text_are_refused():
    sup = importlib.import_module("recipes.human_qe.supervised")
    rows, items = sup.wmt_rows("test")
    clean = {"train": ([{"id": 1, "group": "a source of its own", "candidate": "an MT of its own"}], []),
             "validation": ([], [])}
    assert sup.check_disjoint(clean) == 1
    leaked = {**clean, "validation": ([{"id": 2, "group": "x", "candidate": rows[14]["candidate"].upper() + " "}], [])}
    with pytest.raises(ValueError, match=r"1 training sentences share a text with WMT dev/test: \[2\]"):
        sup.check_disjoint(leaked)


def test_the_readme_row_for_mixed_pairs_tags_follows_the_pooled_comparison():
    """The row for tags of the user's pair among other pairs' appears once the pooled trees are
    compared with the same trees on the ro-en tags, and recommends the pair's tags alone only
    while the pooled trees are below them."""
    ws = importlib.import_module("recipes.human_qe.which_score")
    heads = ["p0", "p1"]
    pool = {"n_boot": 1000, "best": "gbm", "heads": heads, "counts": {"train_sentences": 26486},
            "scores": {"gbm": {"mcc": 0.264}, "gbm_roen": {"mcc": 0.334}, "p0": {"mcc": 0.30}, "p1": {"mcc": 0.28}},
            "tests": {"p0 - gbm": {"delta": 0.043, "p_holm": 0.054}, "p1 - gbm": {"delta": 0.025, "p_holm": 0.128}}}
    assert ws.pooled_row(pool) is None  # before the pool's own trees: nothing to recommend from
    pool["post_hoc"] = {"gbm - gbm_roen": {"delta": -0.070, "p_holm": 0.008}}
    use, evidence = ws.pooled_row(pool)
    assert use.endswith("fitted on your pair's tags only")
    assert evidence.startswith("trees on the pooled tags of the five MLQE-PE English-target pairs (26,486 sentences) "
                               "0.264 against 0.334 on their ro-en part alone (-0.070, Holm p 0.008")
    assert evidence.endswith("0.290 (mean of 2 seeds), minus gbm, the best pooled opponent on dev: "
                             "+0.043 (Holm p 0.054), +0.025 (Holm p 0.128)")
    pool["post_hoc"]["gbm - gbm_roen"]["delta"] = 0.01
    assert ws.pooled_row(pool)[0] == "gradient-boosted trees fitted on all the tags you have"


def test_the_readme_names_the_mixed_heads_data():
    ws = importlib.import_module("recipes.human_qe.which_score")
    assert "their post-edits" in ws.describe("labelled_roen_mix1")
    assert "their post-edits" in ws.describe("gbm+labelled_roen_mix1")
    assert "post-edits" not in ws.describe("gbm+labelled_roen")


def test_the_readme_names_the_librarys_word_model_best_on_dev():
    ws = importlib.import_module("recipes.human_qe.which_score")
    sup = _sup({"gbm+h1": 0.45})
    t = {"delta": -0.02, "p_holm": 0.25, "n_boot": 1000}
    sup["library"] = {"recipe": "gbm+h1",
                      "models": {"softmax side": {"cv_mcc": 0.30, "mcc": 0.28}, "h0": {"cv_mcc": 0.43, "mcc": 0.39},
                                 "probe": {"cv_mcc": 0.90, "mcc": 0.43}},  # the probe is a recipe: never named
                      "tests": {f"word model ({k}) - gbm+h1": t for k in ("softmax side", "h0", "probe")}}
    use, evidence = ws.tags_row(sup)
    assert use.endswith("a head trained on your tags (`train --labelled-file`), then "
                        "`calibrate --gold-spans DEV_TAGS --word-model`")
    assert "word model over h0 (best on dev among the library's, out-of-fold 0.430) 0.390" in evidence
    assert "minus gbm+h1: -0.020 (Holm p 0.25)" in evidence
    sup["library"]["models"]["softmax side"]["cv_mcc"] = 0.5
    assert ws.tags_row(sup)[0].endswith("with the library alone: `calibrate --gold-spans DEV_TAGS --word-model`")


def test_the_readme_row_for_other_pairs_follows_the_mean_dev_mcc():
    ws = importlib.import_module("recipes.human_qe.which_score")

    def pair(dev: dict[str, float], test: float) -> dict:
        names = ("softmax", "lr", "gbm", "probe", "head", "gbm+head")
        return {"scores": {n: {"dev_mcc": dev.get(n, 0.1), "mcc": test if n in dev else 0.2} for n in names}}

    lopo = {"per_pair": 500, "pairs": {"ro-en": pair({"gbm": 0.3}, 0.31), "et-en": pair({"gbm": 0.25}, 0.21)}}
    use, evidence = ws.other_pairs_row(lopo)
    assert use.startswith("gradient-boosted trees") and use.endswith("(`recipes/human_qe/lopo.py`)")
    assert "gbm 0.260 on average (best mean dev MCC) against the softmax's 0.200" in evidence
    assert "per pair (gbm/softmax): ro-en 0.310/0.200, et-en 0.210/0.200" in evidence
    # the combinations need the user's own dev tags: never the pick for this row
    lopo["pairs"]["ro-en"]["scores"]["gbm+head"]["dev_mcc"] = 0.9
    assert ws.other_pairs_row(lopo)[0].startswith("gradient-boosted trees")
    lopo = {"per_pair": 500, "pairs": {"ro-en": pair({"softmax": 0.3}, 0.3)}}
    assert ws.other_pairs_row(lopo)[0] == "the softmax side's word score"


def test_the_pooled_family_picks_its_best_opponent_among_its_own(tmp_path, monkeypatch):
    """The pooled head's primary family (declared before its runs): the best on dev among
    lr, gbm and the pooled probe (never the ro-en probe, however good on dev), each seed
    minus it and it with the seed's features minus it, Holm over six."""
    sup = importlib.import_module("recipes.human_qe.supervised")
    committed = importlib.import_module("recipes.human_qe.committed")
    monkeypatch.setattr(committed, "RESULTS", tmp_path)
    for h in (*sup.POOLED, sup.POOL_PROBE):
        (tmp_path / sup.SET / "heads" / h).mkdir(parents=True)
    fit = {"train_sentences": 26486, "train_tokens": 600000, "train_bad_share": 0.3,
           "validation_sentences": 2940, "validation_tokens": 60000, "chosen_C": 0.01}
    (tmp_path / sup.POOL_FIT).write_text(json.dumps(fit))
    rng = np.random.default_rng(0)
    n_groups, per = 80, 10
    bad = {s: rng.random(n_groups * per) < 0.3 for s in ("dev", "test")}
    groups = np.repeat(np.arange(n_groups), per)

    def noisy(strength: float) -> dict[str, np.ndarray]:  # higher = better (OK), better with strength
        return {s: 1.0 - bad[s] * strength - rng.random(bad[s].size) for s in bad}

    names = {"softmax": 0.2, "lr": 0.4, "gbm": 0.6, "probe": 3.0, sup.POOL_PROBE: 0.8,
             **{h: 1.0 for h in sup.POOLED}}
    out = {k: noisy(v) for k, v in names.items()}
    hf = {h: {s: np.column_stack([np.log(np.clip(out[h][s], 1e-6, 1))] * 4) for s in bad} for h in sup.POOLED}
    sc = {"scores": out, "combos": {}, "bad": bad, "groups": groups, "dev_groups": groups,
          "head_features": hf, "x": {}}
    monkeypatch.setattr(sup, "_opponents", lambda results: (None, None))
    monkeypatch.setattr(sup, "scores", lambda fitted, heads: sc)
    res = sup.pooled_results(n_boot=50)
    assert res["best"] == sup.POOL_PROBE  # the ro-en probe is better on dev, but not an opponent here
    assert list(res["tests"]) == [k for h in sup.POOLED for k in (f"{h} - probe_pool", f"probe_pool+{h} - probe_pool")]
    assert all("p_holm" in t for t in res["tests"].values()) and res["family"] == sup.POOL_FAMILY.format(on="ro-en")
    assert set(res["secondary"]) == {*(f"{h} - {o}" for h in sup.POOLED for o in ("lr", "gbm")),
                                     "probe_pool - softmax", "probe_pool - probe"}
    assert res["tests"]["labelled_pool - probe_pool"]["delta"] > 0  # stronger by construction
    page = sup.pooled_block(res)
    assert "| probe_pool (best on dev) | pooled train tags |" in page
    assert page.endswith("resamples of test sources.\n")
    assert "`probe_pool` fitted on 26,486 pooled sentences (600,000 tagged tokens, 30% BAD), C 0.01" in page
    (tmp_path / sup.SET / "heads" / "labelled_pool_s2").rmdir()
    assert sup.pooled_results(n_boot=50)["tests"]["labelled_pool - probe_pool"]["family"].endswith(
        "(only 2 seeds present)")
    # once the pool's own rows are committed, its own lr and gbm stand in for the ro-en ones
    assert res["opponents_trained_on"] == "ro-en train tags" and "| gbm | ro-en train tags |" in page
    assert "post_hoc" not in res and "gbm_roen" not in page
    (tmp_path / "pool").mkdir()
    monkeypatch.setattr(sup, "pool_kept", lambda: tmp_path / "pool")
    counts = {"train_sentences": 26486, "train_words": 500000, "train_bad": 150000,
              "validation_sentences": 1000, "validation_words": 20000}
    monkeypatch.setattr(sup, "_pool_opponents", lambda results: {
        "counts": counts, "lr": {"model": None, "C": 0.1}, "gbm": {"model": None, "max_iter": 300}})

    class RoEn:  # the ro-en lr and gbm, set beside the pool's own after the results (POOL_POST_HOC)
        def predict_proba(self, x):
            p = np.clip(0.2 + 0.5 * x + 0.3 * rng.random(x.size), 0, 1)
            return np.column_stack([1 - p, p])

    sc["x"] = {s: bad[s].astype(float) for s in bad}
    monkeypatch.setattr(sup, "_opponents", lambda results: (None, {"lr": {"model": RoEn()}, "gbm": {"model": RoEn()}}))
    res = sup.pooled_results(n_boot=50)
    page = sup.pooled_block(res)
    # every seed present (seed 2's folder is gone by now) against the ro-en trees, beside the two fits
    assert set(res["post_hoc"]) == {"lr - lr_roen", "gbm - gbm_roen", *(f"{h} - gbm_roen" for h in sup.POOLED[:2])}
    assert all(t["family"] == sup.POOL_POST_HOC and t["family_size"] == 4 for t in res["post_hoc"].values())
    assert res["best"] in sup.POOL_OPPONENTS  # the ro-en models stay outside the declared family
    assert "| gbm_roen | ro-en train tags |" in page and "| gbm - gbm_roen (added after the results) |" in page
    assert "added after the results: " + sup.POOL_POST_HOC in page
    assert res["opponents_trained_on"] == "pooled train tags" and "| gbm | pooled train tags |" in page
    assert "lr and gbm fitted on the pooled tags" in res["family"]
    assert "lr and gbm fitted on 26,486 pooled sentences (500,000 words, 150,000 BAD)" in page
    assert "lr C 0.1, gbm 300 trees." in page


def test_keep_pool_takes_ro_en_rows_from_the_committed_ones_and_trims_them(tmp_path, monkeypatch):
    sup = importlib.import_module("recipes.human_qe.supervised")
    monkeypatch.setattr(sup, "kept", lambda: tmp_path / "kept")
    monkeypatch.setattr(sup, "pool_kept", lambda: tmp_path / "pool")
    words = [{"word": "a", "start": 0, "end": 1, "softmax": 0.5, "boostedprob": 0.6, "rauq": 0.7, "extra": 1}]
    seq = {"softmax_mean_log": -1.0, "entropy_mean": 2.0, "dominant_mean": 3.0, "rauq_min": 0.1}
    (tmp_path / "kept").mkdir()
    _write(tmp_path / "kept" / "train.scores.jsonl.gz", [{"id": 1, "group": "ro", "candidate": "a", **seq,
                                                           "words": words}])
    _write(tmp_path / "kept" / "validation.scores.jsonl.gz", [])
    run = tmp_path / "run"
    run.mkdir()
    _write(run / "dev.scores.jsonl.gz", [{"id": "dev-0", "group": "et", "candidate": "a b", **seq,
                                          "words": words + [{**words[0], "start": 2, "end": 3}]}])
    _write(run / "test.scores.jsonl.gz", [])
    gold = [{"id": "roen-1", "src": "ro", "tgt": "a", "mqm_spans": [{"start": 0, "end": 1, "category": None}]},
            {"id": "eten-4", "src": "et", "tgt": "a b", "mqm_spans": []}]
    _write(tmp_path / "train.jsonl.gz", gold)
    _write(tmp_path / "held.jsonl.gz", gold[1:])
    assert sup.main(["--keep-pool", str(tmp_path / "train.jsonl.gz"), str(tmp_path / "held.jsonl.gz"), str(run)]) == 0
    data = sup.training_rows(tmp_path / "pool")
    rows, items = data["train"]
    assert [r["id"] for r in rows] == ["roen-1", "eten-4"] and items[0].spans == [{"start": 0, "end": 1}]
    readme = (tmp_path / "pool" / "README.md").read_text()  # the counts of what was written
    assert "the 2 MLQE-PE train sentences" in readme and "the 1 held-out ones" in readme
    assert rows[0] == {"id": "roen-1", "group": "ro", "candidate": "a", "spans": [{"start": 0, "end": 1}],
                       "softmax_mean_log": -1.0, "entropy_mean": 2.0, "dominant_mean": 3.0,
                       "words": [{"start": 0, "end": 1, "softmax": 0.5, "boostedprob": 0.6, "rauq": 0.7}]}
    fc = importlib.import_module("recipes.human_qe.feature_combination")
    assert fc.word_data(rows, items, head=False)[0].shape == (3, len(fc.WORD_FEATURES))  # what the fit reads
    _write(tmp_path / "held.jsonl.gz", [{**gold[1], "tgt": "a c", "id": "eten-9"}])
    with pytest.raises(SystemExit, match=r"1 items without a scored row, e.g. \['eten-9'\]"):
        sup.keep_pool([run], tmp_path / "train.jsonl.gz", tmp_path / "held.jsonl.gz")
    assert sup.training_rows(tmp_path / "pool")["validation"][0][0]["id"] == "eten-4"  # the earlier keep stands


def test_the_readme_row_for_mixed_pairs_tags_cites_the_in_pair_points():
    """The leave-one-pair-out study's in-pair points with a head (2,000 tags, then all) join
    the row for tags of the user's pair among other pairs', the all-tags point with its bound
    while its family is incomplete."""
    ws = importlib.import_module("recipes.human_qe.which_score")
    assert ws.in_pair_points({"n_boot": 1000}) == ""  # neither point run
    t = {"delta": -0.042, "p_holm": 0.01}
    lopo = {"n_boot": 1000, "more": 2000, "more_tests": {"et-en: head +2000 - gbm +2000": t,
                                                         "et-en: head +2000 - head": {"delta": 0.05, "p_holm": 0.03}}}
    text = ws.in_pair_points(lopo)
    assert text == ("; leave one pair out, the held-out pair with its first 2,000 tagged sentences added to 500 of "
                    "each other pair's (1 of 5 pairs), the head minus the dev-better of lr and gbm on the same tags: "
                    "et-en -0.042 (Holm p 0.01)")
    lopo.update(all_size=10, all_tests={"ro-en: head +all - lr +all": {"delta": 0.01, "p_holm": 0.8, "bound": "bonferroni"},
                                        "ro-en: head +all - head +2000": {"delta": 0.02, "p_holm": 1.0, "bound": "bonferroni"}})
    assert ws.in_pair_points(lopo).endswith(
        "; and with all its tagged sentences added to 500 of each other pair's (1 of 5 pairs, 2 of the declared 10 "
        "tests run), the head minus the dev-better of lr and gbm on the same tags: ro-en +0.010 (bound on Holm p 0.8)")
