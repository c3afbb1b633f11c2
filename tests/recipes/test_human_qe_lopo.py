"""Leave one pair out (issue 58, item 3): the study's data builder keeps each held-out pair
out of its head's training file, its rows are committed with their gold, and pool rows that
share a text with a pair's dev or test set are refused."""

from __future__ import annotations

import gzip
import importlib
import json

import numpy as np
import pytest

pytest.importorskip("sklearn")


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def _read(path):
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def test_si_en_is_trained_and_scored_without_its_source():
    lopo = importlib.import_module("recipes.human_qe.lopo")
    assert lopo.prompt("si-en") == lopo.NO_SOURCE_PROMPT and "{source}" not in lopo.NO_SOURCE_PROMPT
    assert lopo.prompt("ro-en") == lopo.SOURCE_PROMPT and "{source}" in lopo.SOURCE_PROMPT
    row = {"id": "sien-train-0", "src": "සිංහල", "tgt": "x", "mqm_spans": []}
    assert lopo._as_pair(row, "si-en")["src"] == lopo.NO_SOURCE_TEXT and row["src"] == "සිංහල"
    assert lopo._as_pair(row, "ro-en") is row


def _members(pair, k):
    """A pair's test (WMT 2021 long tags) and dev (interleaved gaps) files, one sentence each."""
    mt = f"good {pair} words {k}"
    long = [f"{pair}\tSYS\tmt\t0\t{j}\t{w}\t{'BAD' if j == 1 else 'OK'}" for j, w in enumerate(mt.split())]
    test = {"task2_wordlevel_mt.tags": long, "test21.tok.mt": [mt], "test21.tok.src": [f"src {pair} {k}"]}
    dev = {"dev.tags": ["OK OK BAD OK OK OK OK OK OK"], "dev.mt": [f"dev {pair} text {k}"], "dev.src": [f"dsrc {pair}"]}
    return test, dev


def test_build_keeps_each_held_out_pair_out_of_its_training_file(tmp_path, monkeypatch, tiny_tokenizer):
    lopo = importlib.import_module("recipes.human_qe.lopo")
    monkeypatch.setattr(lopo, "PER_PAIR", 2)
    monkeypatch.setattr(lopo, "VALIDATION_PER_PAIR", 1)
    files = {}
    for k, pair in enumerate(lopo.PAIRS):
        files[f"data/test21_goldlabels/{pair}-test21.tar.gz"], files[f"data/post-editing/dev/{pair}-dev.tar.gz"] = _members(pair, k)
    monkeypatch.setattr(lopo.curve_data, "_files", lambda clones: files)
    pool = tmp_path / "pool"
    rows = []
    for pair in lopo.PAIRS:
        key = pair.replace("-", "")
        long = " ".join(["word"] * 400)  # longer than MAX_LENGTH tokens: dropped and counted
        rows += [{"id": f"{key}-train-{j}", "src": f"{pair} source {j}", "tgt": long if j == 0 else f"mt {j}",
                  "mqm_spans": []} for j in range(4)]
    _write(pool / "train.jsonl.gz", rows)
    _write(pool / "dev.jsonl.gz", rows)
    stats = lopo.build(pool, tmp_path / "clones", tmp_path / "out", tiny_tokenizer)
    assert all(p["train_dropped_too_long"] == 1 for p in stats["pairs"].values())
    picked = _read(tmp_path / "out" / "pool" / "train.jsonl.gz")
    assert len(picked) == 2 * len(lopo.PAIRS) and not any(r["tgt"] == long for r in picked)
    assert {r["src"] for r in picked if r["id"].startswith("sien")} == {lopo.NO_SOURCE_TEXT}
    for held in lopo.PAIRS:
        for split, n in (("train", 2), ("validation", 1)):
            ids = [r["id"] for r in _read(tmp_path / "out" / "without" / held / f"{split}.jsonl.gz")]
            assert len(ids) == n * 4 and not any(i.startswith(held.replace("-", "") + "-") for i in ids)
            own = [r["id"] for r in _read(tmp_path / "out" / "own" / held / f"{split}.jsonl.gz")]
            assert len(own) == n and all(i.startswith(held.replace("-", "") + "-") for i in own)
            pooled = [r["id"] for r in _read(tmp_path / "out" / "pool" / f"{split}.jsonl.gz")]
            assert sorted(ids + own) == sorted(pooled)  # the curve's two heads: the pair alone, and the whole pool
    # the gold files read as the pair's items: WMT 2021's long tags, dev's interleaved gaps dropped
    user_files = importlib.import_module("recipes.human_qe.user_files")
    gold = tmp_path / "out" / "gold" / "et-en"
    _, dev, test = user_files.read_user_sets(gold / "test.tags", gold / "dev.tags", None)
    assert test[0]["word_bad"] == [0, 1, 0, 0] and dev[0]["word_bad"] == [0, 0, 0, 0]


def test_keep_joins_gold_and_refuses_rows_of_other_items(tmp_path, monkeypatch):
    lopo = importlib.import_module("recipes.human_qe.lopo")
    monkeypatch.setattr(lopo, "folder", lambda: tmp_path / "kept")
    data, runs = tmp_path / "data", tmp_path / "runs"
    pool = [{"id": "roen-train-3", "src": "s", "tgt": "a b", "mqm_spans": [{"start": 2, "end": 3, "category": None}]}]
    _write(data / "pool" / "train.jsonl.gz", pool)
    _write(data / "pool" / "validation.jsonl.gz", pool)
    for split in ("test", "dev"):
        _write(runs / "pool" / f"{split}.scores.jsonl.gz", [{"id": f"{split}-0", "group": "s", "candidate": "a b",
                                                             "softmax": 0.123456789}])
    for k, pair in enumerate(lopo.PAIRS):
        test, dev = _members(pair, k)
        gold = data / "gold" / pair
        gold.mkdir(parents=True)
        for name, m, keys in (("test", test, ("task2_wordlevel_mt.tags", "test21.tok.mt", "test21.tok.src")),
                              ("dev", dev, ("dev.tags", "dev.mt", "dev.src"))):
            for suffix, key in zip(("tags", "mt", "src"), keys, strict=True):
                (gold / f"{name}.{suffix}").write_text("\n".join(m[key]) + "\n")
            _write(runs / f"lopo-{pair}" / f"{name}.scores.jsonl.gz",
                   [{"id": f"{name}-0", "group": m[keys[2]][0], "candidate": m[keys[1]][0], "sigmoid": 0.5}])
    test, dev = _members("ne-en", 2)  # ne-en also has a probe run: only its head columns are kept
    for name, m, keys in (("test", test, ("test21.tok.mt", "test21.tok.src")), ("dev", dev, ("dev.mt", "dev.src"))):
        _write(runs / "probe-ne-en" / f"{name}.scores.jsonl.gz",
               [{"id": f"{name}-0", "group": m[keys[1]][0], "candidate": m[keys[0]][0], "softmax": 0.1,
                 "sigmoid": 0.25, "sigmoid_mean_log": -1.5, "words": [{"word": "good", "softmax": 0.1, "sigmoid": 0.25}]}])
        _write(runs / "all-ne-en" / f"{name}.scores.jsonl.gz",  # the in-pair curve's +500 head
               [{"id": f"{name}-0", "group": m[keys[1]][0], "candidate": m[keys[0]][0], "softmax": 0.1,
                 "sigmoid": 0.75, "words": [{"word": "good", "softmax": 0.1, "sigmoid": 0.75}]}])
        _write(runs / "plus-ne-en" / f"{name}.scores.jsonl.gz",  # the 2,000 point's head
               [{"id": f"{name}-0", "group": m[keys[1]][0], "candidate": m[keys[0]][0], "softmax": 0.1,
                 "sigmoid": 0.625, "words": [{"word": "good", "softmax": 0.1, "sigmoid": 0.625}]}])
    more = [{"id": "sien-train-7", "src": "-", "tgt": "c d", "mqm_spans": [{"start": 0, "end": 1, "category": None}]}]
    _write(data / "more" / "train.jsonl.gz", more)
    _write(runs / "more" / "test.scores.jsonl.gz", [{"id": "test-0", "group": "-", "candidate": "c d", "softmax": 0.5}])
    (runs / "probe-ne-en.json").write_text(json.dumps({"chosen_C": 0.1, "grid": [], "train_tokens": 9,
                                                       "validation_tokens": 3}))
    lopo.keep(runs, data)
    probe = _read(tmp_path / "kept" / "ne-en" / "probe" / "test.scores.jsonl.gz")[0]
    assert probe == {"id": "neen-test-0", "sigmoid": 0.25, "sigmoid_mean_log": -1.5, "words": [0.25]}
    assert _read(tmp_path / "kept" / "ne-en" / "curve-all" / "dev.scores.jsonl.gz")[0] == {
        "id": "neen-dev-0", "sigmoid": 0.75, "words": [0.75]}
    assert not (tmp_path / "kept" / "ne-en" / "own").exists() and not (tmp_path / "kept" / "ro-en" / "curve-all").exists()
    assert lopo._probe_fit("ne-en")["chosen_C"] == 0.1 and lopo._probe_fit("ro-en") is None
    assert _read(tmp_path / "kept" / "ne-en" / "plus2000" / "test.scores.jsonl.gz")[0] == {
        "id": "neen-test-0", "sigmoid": 0.625, "words": [0.625]}
    assert _read(tmp_path / "kept" / lopo.MORE_FOLDER / "train.scores.jsonl.gz") == [
        {"id": "sien-train-7", "group": "-", "candidate": "c d", "spans": [{"start": 0, "end": 1}], "softmax": 0.5}]
    assert [r["id"] for r in lopo._pool()["more"][0]] == ["sien-train-7"]
    row = _read(tmp_path / "kept" / "pool" / "train.scores.jsonl.gz")[0]
    assert row == {"id": "roen-train-3", "group": "s", "candidate": "a b", "spans": [{"start": 2, "end": 3}],
                   "softmax": 0.1234568}
    si = _read(tmp_path / "kept" / "si-en" / "test.scores.jsonl.gz")[0]
    assert si["id"] == "sien-test-0" and si["word_bad"] == [0, 1, 0, 0] and si["sigmoid"] == 0.5
    _write(runs / "lopo-ru-en" / "dev.scores.jsonl.gz", [{"id": "dev-0", "group": "x", "candidate": "other", "sigmoid": 0.5}])
    with pytest.raises(SystemExit, match="lopo-ru-en: its dev rows are not"):
        lopo.keep(runs, data)
    _write(runs / "more" / "test.scores.jsonl.gz", [{"id": "test-0", "group": "-", "candidate": "e f"}])
    with pytest.raises(SystemExit, match="more: its test rows are not"):
        lopo.keep(runs, data)
    assert (tmp_path / "kept" / "si-en" / "test.scores.jsonl.gz").exists()  # the earlier keep stands
    # a later point alone (its earlier runs gone): added, every kept file left as it was
    kept_before = {f: f.read_bytes() for f in (tmp_path / "kept").rglob("*") if f.is_file()}
    added = tmp_path / "later"
    test, _ = _members("ro-en", 0)
    _write(added / "plus-ro-en" / "test.scores.jsonl.gz", [{"id": "test-0", "group": test["test21.tok.src"][0],
                                                            "candidate": test["test21.tok.mt"][0], "sigmoid": 0.375}])
    lopo.keep(added, data, add=True)
    assert _read(tmp_path / "kept" / "ro-en" / "plus2000" / "test.scores.jsonl.gz") == [
        {"id": "roen-test-0", "sigmoid": 0.375}]
    assert all(f.read_bytes() == b for f, b in kept_before.items() if f.name != "README.md")
    _write(added / "plus-et-en" / "test.scores.jsonl.gz", [{"id": "test-0", "group": "x", "candidate": "other"}])
    with pytest.raises(SystemExit, match="plus-et-en: its test rows are not"):
        lopo.keep(added, data, add=True)
    # a pool sentence sharing a pair's test MT (normalised) is refused; the si-en dash is no text
    pooled = lopo._pool()
    lopo.check_disjoint(pooled, "et-en")
    leaked = {**pooled, "train": ([{"id": "x", "group": "-", "candidate": "Good ET-EN words, 1"}], [])}
    lopo.check_disjoint(leaked, "ro-en")
    with pytest.raises(ValueError, match=r"1 pool sentences share a text with et-en dev/test: \['x'\]"):
        lopo.check_disjoint(leaked, "et-en")


@pytest.mark.parametrize("head", ["prior001", "labelled_roen", "labelled_roen_mix1"])
def test_the_et_en_rows_give_the_committed_figures(head):
    """Issue 58, item 5: the et-en table's clean heads keep their per-item rows; with the et-en
    gold the leave-one-pair-out study commits, they give the run's word MCC at its threshold."""
    from sigmoid_head.evaluation.gold_eval import gold_word_scores
    from sigmoid_head.evaluation.span_metrics import mcc

    committed = importlib.import_module("recipes.human_qe.committed")
    run = committed.RESULTS / "user-eten" / head
    res = json.loads((run / "results.json").read_text())
    rows = _read(run / "test.scores.jsonl.gz")
    gold = _read(committed.RESULTS / "lopo" / "et-en" / "test.scores.jsonl.gz")
    assert [r["candidate"] for r in rows] == [g["candidate"] for g in gold] and len(rows) == res["n_test"]
    bad = np.concatenate([g["word_bad"] for g in gold])
    assert int(bad.sum()) == res["word"]["counts"]["n_bad_words"]
    for method in ("sigmoid", "softmax"):
        scores = np.concatenate([gold_word_scores(r, method) for r in rows])
        flags = scores < res["word"]["thresholds"][method]
        assert flags.mean() == pytest.approx(res["word"]["flagged"][method], abs=1e-9)
        assert mcc(flags, bad) == pytest.approx(res["word"]["methods"][method]["mcc"][0], rel=1e-6)


def test_block_shows_each_pair_and_a_probe_not_run():
    lopo = importlib.import_module("recipes.human_qe.lopo")
    t = {"delta": -0.05, "ci_low": -0.08, "ci_high": -0.02, "p_value": 0.0, "p_holm": 0.0}

    def scores(probe: bool) -> dict:
        names = ["softmax", "lr", "gbm", "head", "lr+head", *(["probe"] if probe else [])]
        return {n: {"mcc": 0.1 + 0.01 * k, "dev_mcc": 0.2} for k, n in enumerate(names)}

    curve = {str(n): {"lr": 0.2, "gbm": 0.21} for n in (*lopo.CURVE, "own only")}
    pairs = {"ro-en": {"best": "lr", "scores": scores(True), "curve": curve, "test_words": 17770, "test_bad": 0.218},
             "si-en": {"best": "lr", "scores": scores(False), "curve": curve, "test_words": 17518, "test_bad": 0.583}}
    res = {"pairs": pairs, "per_pair": 500, "no_source": ["si-en"], "n_boot": 1000, "family": "F", "secondary_family": "S",
           "tests": {"ro-en: head - lr": t}, "secondary": {"ro-en: head - softmax": t}}
    text = lopo.block(res)
    assert "| ro-en | 17,770 (22%) | 0.100 | 0.110 | 0.120 | 0.150 | 0.130 | 0.140 | lr |" in text
    assert "| si-en | 17,518 (58%) | 0.100 | 0.110 | 0.120 | not run | 0.130 | 0.140 | lr |" in text
    assert "| ro-en: head - lr | -0.050 | [-0.080, -0.020] | < 0.001 | < 0.001 |" in text
    assert "| ro-en | 0.200 | 0.210 |" in text and "(si-en: prompt without the source)" in text
    assert "head's in-pair curve" not in text  # no curve heads scored: no curve table
    for e in pairs.values():
        e["curve"] = {**curve, "0": {**curve["0"], "head": 0.13}, "500": {**curve["500"], "head": 0.16},
                      "own only": {**curve["own only"], "head": 0.19, "best on dev": "gbm"}}
    res.update(curve_family="C", curve_tests={"ro-en: head +500 - head": t})
    text = lopo.block(res)
    assert "| ro-en | 0.130 | 0.160 | 0.190 | 0.200 | 0.210 |" in text and "Curve family (C):" in text
    assert "| ro-en: head +500 - head | -0.050 | [-0.080, -0.020] | < 0.001 | < 0.001 |" in text


def test_more_continues_the_pool_and_writes_each_pairs_plus_head_files(tmp_path, monkeypatch, tiny_tokenizer):
    """The 2,000 point: each pair's sentences after its first PER_PAIR by the same fitting rule,
    and the "+2,000" head's training file (the four other pairs' pool rows and the pair's own)."""
    lopo = importlib.import_module("recipes.human_qe.lopo")
    monkeypatch.setattr(lopo, "PER_PAIR", 2)
    monkeypatch.setattr(lopo, "MORE", 4)
    long = " ".join(["word"] * 400)  # longer than MAX_LENGTH tokens: skipped and counted
    rows, picked, validation = [], [], []
    for pair in lopo.PAIRS:
        key = pair.replace("-", "")
        mine = [{"id": f"{key}-train-{j}", "src": f"{pair} source {j}", "tgt": long if j == 3 else f"mt {j}",
                 "mqm_spans": []} for j in range(7)]
        rows += mine
        picked += [lopo._as_pair(r, pair) for r in mine[:2]]
        validation += [{"id": f"{key}-dev-{j}", "src": "s", "tgt": f"v {j}", "mqm_spans": []} for j in range(6)]
    _write(tmp_path / "pool" / "train.jsonl.gz", rows)
    out = tmp_path / "out"
    _write(out / "pool" / "train.jsonl.gz", picked)
    _write(out / "pool" / "validation.jsonl.gz", validation)
    stats = lopo.build_more(tmp_path / "pool", out, tiny_tokenizer)
    assert all(p == {"train_dropped_too_long": 1, "own": 4, "head_train": 4 * 2 + 4} for p in stats["pairs"].values())
    more = [r["id"] for r in _read(out / "more" / "train.jsonl.gz")]
    assert more == [f"{p.replace('-', '')}-train-{j}" for p in lopo.PAIRS for j in (2, 4)]  # 3 is too long
    assert {r["src"] for r in _read(out / "more" / "train.jsonl.gz") if r["id"].startswith("sien")} == {lopo.NO_SOURCE_TEXT}
    assert [r["id"] for r in _read(out / "more" / "validation.jsonl.gz")] == [
        f"{p.replace('-', '')}-dev-{j}" for p in lopo.PAIRS for j in range(5)]
    for held in lopo.PAIRS:
        key = held.replace("-", "")
        ids = [r["id"] for r in _read(out / "plus" / held / "train.jsonl.gz")]
        assert sorted(ids) == sorted([r["id"] for r in picked if not r["id"].startswith(key)]
                                     + [f"{key}-train-{j}" for j in (0, 1, 2, 4)])
        assert _read(out / "plus" / held / "validation.jsonl.gz") == validation
    _write(out / "pool" / "train.jsonl.gz", picked[1:])  # a pool that is not the rule's first PER_PAIR: refused
    with pytest.raises(ValueError, match="ro-en: the first 2 fitting sentences are not"):
        lopo.build_more(tmp_path / "pool", out, tiny_tokenizer)


def test_block_shows_the_2000_point_where_its_heads_were_scored():
    lopo = importlib.import_module("recipes.human_qe.lopo")
    t = {"delta": 0.02, "ci_low": -0.01, "ci_high": 0.05, "p_value": 0.2, "p_holm": 0.6}
    scores = {n: {"mcc": 0.1, "dev_mcc": 0.2} for n in ("softmax", "lr", "gbm", "head", "lr+head")}
    curve = {str(n): {"lr": 0.2, "gbm": 0.21} for n in (*lopo.CURVE, "own only")}
    curve["2000"] = {"lr": 0.25, "gbm": 0.26}
    pairs = {p: {"best": "lr", "scores": scores, "curve": {k: dict(v) for k, v in curve.items()}, "test_words": 10,
                 "test_bad": 0.5} for p in ("ro-en", "ne-en")}
    res = {"pairs": pairs, "per_pair": 500, "no_source": ["si-en"], "n_boot": 1000, "family": "F",
           "secondary_family": "S", "tests": {}, "secondary": {}, "more": 2000, "more_family": "M", "more_tests": {}}
    text = lopo.block(res)
    assert "| lr +2,000 | gbm +2,000 |" in text and "| ro-en | 0.200 | 0.210 | 0.200 | 0.210 | 0.200 | 0.210 | 0.250 | 0.260 |" in text
    assert "2,000 point" not in text  # no +2,000 head scored: no table of its family
    c = pairs["ro-en"]["curve"]
    c["2000"].update(head=0.3, **{"best on dev": "gbm"})
    c["0"]["head"], c["500"]["head"] = 0.13, 0.16
    res["more_tests"] = {"ro-en: head +2000 - gbm +2000": t}
    text = lopo.block(res)
    assert "| ro-en | 0.130 | 0.160 | 0.300 | 0.250 | 0.260 | gbm |" in text and "| ne-en | 0.130" not in text
    assert "2,000-point family (M):" in text and "| ro-en: head +2000 - gbm +2000 | +0.020 | [-0.010, +0.050] |" in text


def test_rest_continues_the_2000_point_and_writes_the_plus_all_head_files(tmp_path, monkeypatch, tiny_tokenizer):
    """The all-tags point: one pair's every fitting sentence after its first MORE, by the same
    rule, and the "+all" head's training file (the four other pairs' pool rows and the pair's own)."""
    lopo = importlib.import_module("recipes.human_qe.lopo")
    monkeypatch.setattr(lopo, "PER_PAIR", 2)
    monkeypatch.setattr(lopo, "MORE", 4)
    long = " ".join(["word"] * 400)  # longer than MAX_LENGTH tokens: skipped and counted
    rows, picked, validation = [], [], []
    for pair in lopo.PAIRS:
        key = pair.replace("-", "")
        mine = [{"id": f"{key}-train-{j}", "src": f"{pair} source {j}", "tgt": long if j in (3, 7) else f"mt {j}",
                 "mqm_spans": []} for j in range(9)]
        rows += mine
        picked += [lopo._as_pair(r, pair) for r in mine[:2]]
        validation += [{"id": f"{key}-dev-{j}", "src": "s", "tgt": f"v {j}", "mqm_spans": []} for j in range(6)]
    _write(tmp_path / "pool" / "train.jsonl.gz", rows)
    out = tmp_path / "out"
    _write(out / "pool" / "train.jsonl.gz", picked)
    _write(out / "pool" / "validation.jsonl.gz", validation)
    lopo.build_more(tmp_path / "pool", out, tiny_tokenizer)
    stats = lopo.build_rest(tmp_path / "pool", out, "si-en", tiny_tokenizer)
    assert stats["pairs"] == {"si-en": {"train_dropped_too_long": 2, "own": 7, "rest": 3, "head_train": 4 * 2 + 7}}
    rest = _read(out / "rest" / "si-en" / "train.jsonl.gz")
    assert [r["id"] for r in rest] == [f"sien-train-{j}" for j in (5, 6, 8)]  # 7 is too long
    assert {r["src"] for r in rest} == {lopo.NO_SOURCE_TEXT}
    ids = [r["id"] for r in _read(out / "plusall" / "si-en" / "train.jsonl.gz")]
    assert sorted(ids) == sorted([r["id"] for r in picked if not r["id"].startswith("sien")]
                                 + [f"sien-train-{j}" for j in (0, 1, 2, 4, 5, 6, 8)])
    assert _read(out / "plusall" / "si-en" / "validation.jsonl.gz") == validation
    lopo.build_rest(tmp_path / "pool", out, "ro-en", tiny_tokenizer)  # a second pair: both counts kept
    assert set(json.loads((out / "rest-stats.json").read_text())["pairs"]) == {"si-en", "ro-en"}
    with pytest.raises(ValueError, match="unknown pair 'xx-en'"):
        lopo.build_rest(tmp_path / "pool", out, "xx-en", tiny_tokenizer)
    more = _read(out / "more" / "train.jsonl.gz")
    _write(out / "more" / "train.jsonl.gz", [r for r in more if r["id"] != "eten-train-4"])  # not the rule's: refused
    with pytest.raises(ValueError, match="et-en: the first 4 fitting sentences are not"):
        lopo.build_rest(tmp_path / "pool", out, "et-en", tiny_tokenizer)


def _write_gold(data, pairs):
    """Each pair's test and dev gold files, as ``lopo build`` writes them."""
    for k, pair in enumerate(pairs):
        test, dev = _members(pair, k)
        gold = data / "gold" / pair
        gold.mkdir(parents=True)
        for name, m, keys in (("test", test, ("task2_wordlevel_mt.tags", "test21.tok.mt", "test21.tok.src")),
                              ("dev", dev, ("dev.tags", "dev.mt", "dev.src"))):
            for suffix, key in zip(("tags", "mt", "src"), keys, strict=True):
                (gold / f"{name}.{suffix}").write_text("\n".join(m[key]) + "\n")


def test_keep_adds_the_all_tags_point_of_the_pairs_that_ran(tmp_path, monkeypatch):
    lopo = importlib.import_module("recipes.human_qe.lopo")
    monkeypatch.setattr(lopo, "folder", lambda: tmp_path / "kept")
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "rest-stats.json").write_text('{"more": 2000, "pairs": {"et-en": {"rest": 2}}}\n')
    for name in ("train", "validation"):  # an earlier keep's pool rows
        _write(tmp_path / "kept" / "pool" / f"{name}.scores.jsonl.gz",
               [{"id": "roen-train-3", "group": "s", "candidate": "a b", "spans": [], "softmax": 0.5}])
    before = (tmp_path / "kept" / "pool" / "train.scores.jsonl.gz").read_bytes()
    data, runs = tmp_path / "data", tmp_path / "runs"
    rest = [{"id": "roen-train-9", "src": "s9", "tgt": "c d", "mqm_spans": [{"start": 0, "end": 1, "category": None}]}]
    _write(data / "rest" / "ro-en" / "train.jsonl.gz", rest)
    (data / "rest-stats.json").write_text('{"more": 2000, "pairs": {"ro-en": {"rest": 1}}}\n')
    _write(runs / "rest-ro-en" / "test.scores.jsonl.gz", [{"id": "test-0", "group": "s9", "candidate": "c d",
                                                          "softmax": 0.25}])
    _write_gold(data, lopo.PAIRS)
    test, _ = _members("ro-en", 0)
    _write(runs / "plusall-ro-en" / "test.scores.jsonl.gz", [{"id": "test-0", "group": test["test21.tok.src"][0],
                                                             "candidate": test["test21.tok.mt"][0], "sigmoid": 0.375}])
    lopo.keep(runs, data, add=True)
    assert _read(tmp_path / "kept" / lopo.REST_FOLDER / "ro-en" / "train.scores.jsonl.gz") == [
        {"id": "roen-train-9", "group": "s9", "candidate": "c d", "spans": [{"start": 0, "end": 1}], "softmax": 0.25}]
    assert _read(tmp_path / "kept" / "ro-en" / "plusall" / "test.scores.jsonl.gz") == [{"id": "roen-test-0", "sigmoid": 0.375}]
    # an earlier session's pair stays beside the one this data folder built
    assert json.loads((tmp_path / "kept" / "rest-stats.json").read_text())["pairs"] == {
        "et-en": {"rest": 2}, "ro-en": {"rest": 1}}
    assert (tmp_path / "kept" / "pool" / "train.scores.jsonl.gz").read_bytes() == before
    assert [r["id"] for r in lopo._pool()["rest"][0]] == ["roen-train-9"]
    _write(runs / "rest-ro-en" / "test.scores.jsonl.gz", [{"id": "test-0", "group": "s9", "candidate": "other"}])
    with pytest.raises(SystemExit, match="rest-ro-en: its test rows are not"):
        lopo.keep(runs, data, add=True)


def test_an_incomplete_family_prints_its_bonferroni_bound_then_holm():
    lopo = importlib.import_module("recipes.human_qe.lopo")
    tests = {f"t{k}": {"p_value": p} for k, p in enumerate((0.001, 0.04, 0.2))}
    lopo.bound_or_holm(tests, "F", 10)
    assert [t["p_holm"] for t in tests.values()] == pytest.approx([0.01, 0.4, 1.0])
    assert all(t["bound"] == "bonferroni" and t["family_size"] == 10 for t in tests.values())
    zero = {"t": {"p_value": 0.0, "n_boot": 1000}}  # below one in 1,000 resamples: bounded by 10 in 1,000
    lopo.bound_or_holm(zero, "F", 10)
    assert zero["t"]["p_holm"] == pytest.approx(0.01)
    whole = {f"t{k}": {"p_value": p} for k, p in enumerate((0.001, 0.04, 0.2))}
    lopo.bound_or_holm(whole, "F", 3)  # every declared test has run: Holm, below the bound
    assert [t["p_holm"] for t in whole.values()] == pytest.approx([0.003, 0.08, 0.2])
    assert not any("bound" in t for t in whole.values())
    with pytest.raises(ValueError, match="4 tests in a family declared as 3"):
        lopo.bound_or_holm({f"t{k}": {"p_value": 0.1} for k in range(4)}, "F", 3)


def test_block_shows_the_all_tags_point_and_how_much_of_its_family_ran():
    lopo = importlib.import_module("recipes.human_qe.lopo")
    t = {"delta": 0.02, "ci_low": -0.01, "ci_high": 0.05, "p_value": 0.02, "p_holm": 0.2}
    scores = {n: {"mcc": 0.1, "dev_mcc": 0.2} for n in ("softmax", "lr", "gbm", "head", "lr+head")}
    curve = {str(n): {"lr": 0.2, "gbm": 0.21, "head": 0.15} for n in (*lopo.CURVE, "own only")}
    curve["2000"] = {"lr": 0.25, "gbm": 0.26, "head": 0.3, "best on dev": "gbm"}
    pairs = {p: {"best": "lr", "scores": scores, "curve": {k: dict(v) for k, v in curve.items()}, "test_words": 10,
                 "test_bad": 0.5} for p in ("ro-en", "ne-en")}
    pairs["ro-en"]["curve"]["all"] = {"lr": 0.27, "gbm": 0.28, "head": 0.29, "best on dev": "lr", "own": 6283}
    res = {"pairs": pairs, "per_pair": 500, "no_source": ["si-en"], "n_boot": 1000, "family": "F",
           "secondary_family": "S", "tests": {}, "secondary": {}, "more": 2000, "more_family": "M", "more_tests": {}}
    assert "all-tags point" not in lopo.block(res)  # not run: no table
    t = {**t, "bound": "bonferroni"}
    res.update(all_family="A", all_size=10, all_tests={"ro-en: head +all - lr +all": t, "ro-en: head +all - head +2000": t})
    text = lopo.block(res)
    assert "| ro-en | 6,283 | 0.300 | 0.290 | 0.270 | 0.280 | lr |" in text and "| ne-en | 6" not in text
    assert "All-tags family (A): 2 of its 10 tests have run; until all have, the Holm column is" in text
    assert "| ro-en: head +all - lr +all | +0.020 | [-0.010, +0.050] | 0.02 | 0.2 |" in text
    assert text.count("| bound on Holm p |") == 1  # the all-tags family's column only
