"""The learning curve's pieces (issue 49, item 2): its training pool, its fixed texts, its
training command and its vocabulary diagnostic, on the committed data."""

from __future__ import annotations

import gzip
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HQ = ROOT / "recipes" / "human_qe"

pytest.importorskip("scipy")


def _read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_the_pool_starts_with_the_committed_heads_data_and_holds_no_dev_or_test_source() -> None:
    from recipes.human_qe import curve_data

    pool = _read(HQ / "data" / "mlqe-en-pool" / "train.jsonl.gz")
    assert pool[:2000] == _read(HQ / "data" / "mlqe-roen-word" / "train_pe.jsonl.gz")
    assert len({r["id"] for r in pool}) == len(pool)
    held = {
        curve_data.norm(r["source"])
        for split in ("dev", "test")
        for r in _read(HQ / "data" / "mlqe-roen-word" / f"{split}.jsonl.gz")
    }
    keys = [curve_data.norm(r["source"]) for r in pool]
    assert not held & set(keys[2000:])
    # the one committed training source that a dev source repeats but for a comma
    assert sum(k in held for k in keys[:2000]) == 1
    assert len(set(keys[2000:])) == len(keys) - 2000
    pairs = {r["id"].split("-train-")[0] for r in pool}
    assert pairs == {"roen", "eten", "neen", "sien", "ruen"}


def test_norm_hides_punctuation_and_case_only() -> None:
    from recipes.human_qe.curve_data import norm

    assert norm("Text , dictat de către X .") == norm("text dictat de către x")
    assert norm("a b") != norm("a c")


def test_the_mqm_subset_is_fixed_stratified_by_talk_and_in_the_sets_order() -> None:
    from recipes.human_qe.curve import MQM_PER_TALK, subset_ids

    for split, talks in (("test", {"talk.2", "talk.6", "talk.9"}), ("dev", {"talk.5", "talk.7"})):
        gold = _read(HQ / "data" / "mqm-ted-zhen" / f"{split}.jsonl.gz")
        ids = subset_ids("mqm-ted-zhen", split, gold)
        assert ids == subset_ids("mqm-ted-zhen", split, gold)
        by_doc = {g["id"]: g["doc"] for g in gold}
        docs = [by_doc[i] for i in ids]
        assert set(docs) == talks and all(docs.count(t) == MQM_PER_TALK for t in talks)
        order = {g["id"]: k for k, g in enumerate(gold)}
        assert [order[i] for i in ids] == sorted(order[i] for i in ids)


def test_each_point_trains_with_the_committed_heads_command_but_data_seed_and_folder() -> None:
    from recipes.human_qe.curve import train_command

    page = (ROOT / "docs" / "human_labels.md").read_text()
    documented = re.search(r"sigmoid-head train (.*?)--output-dir heads/prior001", page, re.S)[1]
    want = shlex.split(documented.replace("\\\n", " ").replace("$'", "'"))
    want = [w for w in want if w != "train_pe.jsonl"]
    got = train_command("pe8k", Path("t.jsonl"), Path("h"))
    options = got[got.index("train") + 1 :]
    for k, opt in enumerate(want):
        if opt.startswith("--") and opt not in ("--train-file",):
            assert opt in options, opt
            nxt = want[k + 1] if k + 1 < len(want) else "--"
            if not nxt.startswith("--"):
                value = options[options.index(opt) + 1]
                assert value == nxt.replace("\\n", "\n"), (opt, value, nxt)


def test_the_unseen_word_rule_is_the_mcc_of_flagging_words_missing_from_training() -> None:
    import random

    from sklearn.metrics import matthews_corrcoef

    from recipes.human_qe.curve import fitted_rows, train_rows
    from recipes.human_qe.curve_tables import vocabulary

    v = vocabulary("pe2k", None)
    rows = train_rows("pe2k")
    order = list(range(len(rows)))  # the held-out tenth as `train` draws it (seed 0), not seen
    random.Random(0).shuffle(order)
    held = set(order[: len(rows) // 10])
    fitted = [r for i, r in enumerate(rows) if i not in held]
    assert fitted_rows("pe2k") == fitted and len(fitted) == 1800
    seen = {w for r in fitted for w in r["target"].split()}
    gold = _read(HQ / "data" / "mlqe-roen-word" / "test.jsonl.gz")
    flag = np.asarray([w not in seen for g in gold for w in g["candidate"].split()])
    bad = np.asarray([b for g in gold for b in g["word_bad"]])
    assert v["n_unseen"] == int(flag.sum()) and v["n_words"] == bad.size
    assert v["rule_mcc"] == pytest.approx(matthews_corrcoef(bad, flag))
    assert 0.5 <= v["sigmoid_auc_seen"] <= 1 and 0.5 <= v["softmax_auc_unseen"] <= 1


def test_each_point_names_what_it_trained_on() -> None:
    """The curve table counts post-edits for the pool and passages for general English, and
    the vocabulary rule reads each corpus's trained text (a pair's target, a text's text)."""
    from recipes.human_qe.curve import trained_text
    from recipes.human_qe.curve_tables import data_cell

    assert data_cell("pe8k", 8000) == "8,000 post-edits"
    assert data_cell("general-en", 9186) == "9,186 passages of text"
    assert trained_text({"source": "s", "target": "a b"}) == "a b"
    assert trained_text({"id": "x", "text": "c d"}) == "c d"


def test_settings_record_the_options_a_head_was_really_trained_with(tmp_path) -> None:
    """A point's settings carry ``trained_with`` (no paths) only when its DONE command
    differs from the curve's own."""
    from recipes.human_qe.curve import train_command, trained_by

    head = tmp_path / "pe8k"
    assert trained_by("pe8k", head) == {}
    cmd = train_command("pe8k", tmp_path / "train.jsonl", head)
    (tmp_path / "pe8k.DONE").write_text(" ".join(cmd) + "\n")
    assert trained_by("pe8k", head) == {}
    other = [("2" if w == "1" and cmd[k - 1] == "--threads" else w) for k, w in enumerate(cmd)]
    (tmp_path / "pe8k.DONE").write_text(" ".join(other) + "\n")
    got = trained_by("pe8k", head)["trained_with"]
    assert got[got.index("--threads") + 1] == "2"
    assert not any("/" in w for w in got) and "--seed" in got
