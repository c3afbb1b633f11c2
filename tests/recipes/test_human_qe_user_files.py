"""recipes/human_qe/run.py on a user's own gold files (issue 49, item 7).

Small gold files are written from the committed sets (WMT ro-en word tags with gaps and
sources; MQM spans as ESA-style JSONL), then the harness runs on them with the tiny random
model and head of tests/data/head_v0_1_0 (numbers from a random model mean nothing: this
checks the path, the dev/test split and the kind each file is evaluated as).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "human_qe"
FIXTURE = ROOT / "tests" / "data" / "head_v0_1_0"


def _load(name: str):
    return importlib.import_module(f"recipes.human_qe.{name}")


def _rows(name: str, n: int) -> list[dict]:
    with gzip.open(RECIPE / "data" / name / "dev.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(n), f, strict=False)]


def _wmt_files(tmp: Path, stem: str, rows: list[dict]) -> Path:
    """``stem.tags`` (gap, word, gap, ... tags), ``stem.mt`` and ``stem.src``."""
    tags = []
    for r in rows:
        seq = [r["gap_bad"][0]]
        for w, g in zip(r["word_bad"], r["gap_bad"][1:], strict=True):
            seq += [w, g]
        tags.append(" ".join("BAD" if t else "OK" for t in seq))
    (tmp / f"{stem}.mt").write_text("".join(r["candidate"] + "\n" for r in rows))
    (tmp / f"{stem}.src").write_text("".join(r["source"] + "\n" for r in rows))
    path = tmp / f"{stem}.tags"
    path.write_text("".join(t + "\n" for t in tags))
    return path


def _span_file(tmp: Path, rows: list[dict]) -> Path:
    path = tmp / "spans.jsonl"
    path.write_text(
        "".join(
            json.dumps({"src": r["source"], "tgt": r["candidate"], "esa_spans": r["spans"]}) + "\n"
            for r in rows
        )
    )
    return path


def _run(run, out: Path, *extra: str) -> dict:
    args = [
        "--quick",
        "--out",
        str(out),
        "--model",
        str(FIXTURE / "base"),
        "--head",
        str(FIXTURE / "head"),
        "--device",
        "cpu",
        "--batch-size",
        "4",
        *extra,
    ]
    assert run.main(args) == 0
    return json.loads((out / "results.json").read_text())


def test_word_tags_dev_and_test_files(tmp_path: Path) -> None:
    rows = _rows("mlqe-roen-word", 12)
    dev, test = _wmt_files(tmp_path, "dev", rows[:6]), _wmt_files(tmp_path, "test", rows[6:])
    res = _run(_load("run"), tmp_path / "out", "--test-gold", str(test), "--dev-gold", str(dev))
    assert res["kind"] == "wmt" and res["n_dev"] == 6 and res["n_test"] == 6
    assert {"sigmoid", "softmax"} <= set(res["word"]["methods"])
    assert res["gaps"]["counts"]["n_gaps"] == sum(len(r["gap_bad"]) for r in rows[6:])
    assert res["word"]["counts"]["n_bad_words"] == sum(sum(r["word_bad"]) for r in rows[6:])
    assert res["paired"]


def test_span_file_with_a_dev_share_splits_by_source(tmp_path: Path) -> None:
    user = _load("user_files")
    rows = _rows("mqm-ted-zhen", 40)
    path = _span_file(tmp_path, rows)
    kind, dev, test = user.read_user_sets(path, None, 0.5)
    assert kind == "mqm" and len(dev) + len(test) == 40 and dev and test
    assert not {r["group"] for r in dev} & {r["group"] for r in test}
    both = [*dev, *test]  # no MQM score in an ESA file: minus the weighted spans
    assert all((r["mqm"] < 0) == bool(r["spans"]) for r in both)
    assert any(r["spans"] for r in both) and any(not r["spans"] for r in both)
    res = _run(_load("run"), tmp_path / "out", "--test-gold", str(path), "--dev-share", "0.5")
    assert res["kind"] == "mqm" and "sigmoid" in res["word"]["methods"] and "gaps" not in res


def test_user_files_refuse_bad_combinations(tmp_path: Path) -> None:
    user = _load("user_files")
    path = _span_file(tmp_path, _rows("mqm-ted-zhen", 4))
    with pytest.raises(ValueError, match="one of them"):
        user.read_user_sets(path, None, None)
    with pytest.raises(ValueError, match="one of them"):
        user.read_user_sets(path, path, 0.3)
    with pytest.raises(ValueError, match="strictly between"):
        user.read_user_sets(path, None, 1.0)
    with pytest.raises(SystemExit):
        _load("run").main(
            ["--set", "mqm-ted-zhen", "--test-gold", str(path), "--out", str(tmp_path)]
        )


def test_source_shown_replaces_the_source_in_the_prompt_only(tmp_path: Path) -> None:
    """--source-shown: the model reads TEXT where each source was (scores change: the prompt
    differs), while the items keep their own sources as resampling groups and the run says so."""
    rows = _rows("mlqe-roen-word", 12)
    dev, test = _wmt_files(tmp_path, "dev", rows[:6]), _wmt_files(tmp_path, "test", rows[6:])
    gold = ("--test-gold", str(test), "--dev-gold", str(dev))
    run = _load("run")
    plain = _run(run, tmp_path / "plain", *gold)
    shown = _run(run, tmp_path / "shown", *gold, "--source-shown", "-")
    assert shown["settings"]["source_shown"] == "-" and "source_shown" not in plain["settings"]
    with gzip.open(tmp_path / "shown" / "test.scores.jsonl.gz", "rt") as f:
        a = [json.loads(x) for x in f]
    with gzip.open(tmp_path / "plain" / "test.scores.jsonl.gz", "rt") as f:
        b = [json.loads(x) for x in f]
    assert [r["group"] for r in a] == [r["group"] for r in b] == [r["source"] for r in rows[6:]]
    assert [r["sigmoid_logprob"] for r in a] != [r["sigmoid_logprob"] for r in b]


def test_wmt22_rows_commit_textless_rows_whose_figures_recompute(tmp_path: Path, monkeypatch) -> None:
    """A word-tag run kept as the WMT 2022 rows are (issue 58, item 5): its per-item rows
    committed without text, its figures computed from them and the gold, ``--check``
    recomputing them equal, and failing once a committed score is changed."""
    from recipes.human_qe.committed import read_jsonl_gz
    from recipes.human_qe.run import write_jsonl_gz

    w = _load("wmt22_rows")
    rows = _rows("mlqe-roen-word", 12)
    data = tmp_path / "data"
    (data / "km-en").mkdir(parents=True)
    dev, test = _wmt_files(data / "km-en", "dev", rows[:6]), _wmt_files(data / "km-en", "test", rows[6:])
    run = tmp_path / "run"
    res = _run(_load("run"), run, "--test-gold", str(test), "--dev-gold", str(dev))
    board = json.loads(w.LEADERBOARD.read_text())
    board["pairs"]["km-en"]["n_words"] = res["word"]["counts"]["n_words"]
    board.pop("ours", None)
    monkeypatch.setattr(w, "LEADERBOARD", tmp_path / "wmt22-word.json")
    monkeypatch.setattr(w, "ROWS", tmp_path / "rows")
    w.LEADERBOARD.write_text(json.dumps(board))

    ours = w.add_run("km-en", run, data)
    kept = {s: read_jsonl_gz(tmp_path / "rows" / "km-en" / f"{s}.scores.jsonl.gz") for s in ("dev", "test")}
    assert [r["id"] for r in kept["test"]] == [r["id"] for r in read_jsonl_gz(run / "test.scores.jsonl.gz")]
    text = json.dumps(kept, ensure_ascii=False)
    assert all(r["candidate"] not in text and r["source"] not in text for r in rows)  # no text committed
    assert all("word" not in wd for r in kept["test"] for wd in r["words"])
    assert ours["settings"]["rows"] == "results/wmt22/km-en"
    for m, v in ours["methods"].items():  # from the rounded rows: near the run's own figure
        assert abs(v["mcc"][0] - res["word"]["methods"][m]["mcc"][0]) < 0.05, m
    assert w.check(data) == 0
    for r in kept["test"]:  # the committed word scores of the head turned around
        for wd in r["words"]:
            wd["sigmoid"] = 1.0 - wd["sigmoid"]
    write_jsonl_gz(tmp_path / "rows" / "km-en" / "test.scores.jsonl.gz", kept["test"])
    assert w.check(data) == 1
