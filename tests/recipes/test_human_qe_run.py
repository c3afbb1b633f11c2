"""recipes/human_qe: the harness's --quick mode on a tiny head, and the build's checks.

The run force-decodes 6 dev and 6 test texts of each set with the committed tiny random
base model and head (tests/data/head_v0_1_0), evaluates and writes the tables: a smoke
test of the whole path (numbers from a random model mean nothing).
"""

from __future__ import annotations

import gzip
import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "human_qe"
FIXTURE = ROOT / "tests" / "data" / "head_v0_1_0"
SHROOM = ROOT / "tests" / "data" / "human_qe" / "mushroom_layout" / "synthetic.en.jsonl"


def _load(name: str):
    return importlib.import_module(f"recipes.human_qe.{name}")


def _shroom_data(tmp: Path) -> Path:
    """A data folder for mushroom-en from the synthetic file (the real one is not committed)."""
    from sigmoid_head.evaluation.gold_shroom import read_mushroom

    rows = [
        {
            "id": it.item_id,
            "group": it.group,
            "source": it.question,
            "candidate": it.text,
            "spans": it.spans,
            "soft_labels": it.soft_labels,
            "model_id": it.model_id,
        }
        for it in read_mushroom(SHROOM)
    ]
    (tmp / "mushroom-en").mkdir(parents=True)
    for split in ("dev", "test"):
        # the same answers, asked differently on dev (run.py refuses dev texts that are test's)
        split_rows = [{**r, "source": f"({split}) {r['source']}"} for r in rows]
        with gzip.open(tmp / "mushroom-en" / f"{split}.jsonl.gz", "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in split_rows)
    return tmp


@pytest.mark.parametrize("name", ["mlqe-roen-word", "mqm-ted-zhen", "mushroom-en"])
def test_quick_run_writes_every_table(name: str, tmp_path: Path) -> None:
    run = _load("run")
    data = _shroom_data(tmp_path / "data") if name == "mushroom-en" else RECIPE / "data"
    out = tmp_path / "out"
    assert (
        run.main(
            [
                "--set",
                name,
                "--quick",
                "--out",
                str(out),
                "--data",
                str(data),
                "--model",
                str(FIXTURE / "base"),
                "--head",
                str(FIXTURE / "head"),
                "--device",
                "cpu",
                "--batch-size",
                "4",
            ]
        )
        == 0
    )
    res = json.loads((out / "results.json").read_text())
    report = (out / "report.md").read_text()
    assert {"sigmoid", "softmax", "boostedprob", "rauq"} <= set(res["segment"])
    assert "-entropy_mean" in res["segment"]
    assert res["paired"] and all("p_holm" in t for t in res["paired"].values())
    if name != "mushroom-en":
        assert {"sigmoid", "softmax", "rauq"} <= set(res["word"]["methods"])
        assert "mpp_f1" in res["word"]["methods"]["sigmoid"]
    if name == "mlqe-roen-word":
        assert (
            res["gaps"]["counts"]["n_gaps"] > 0 and "gap_mcc" in res["gaps"]["methods"]["sigmoid"]
        )
        assert "no source-word scores" in res["source_tags"]
    if name == "mushroom-en":
        assert set(res["shroom"]["methods"]["sigmoid"]) == {"iou", "spearman"}
    assert "Paired tests" in report
    with gzip.open(out / "test.scores.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == (3 if name == "mushroom-en" else 6) and "words" in rows[0]


def test_build_refuses_a_file_with_another_checksum(tmp_path: Path) -> None:
    build = _load("build_data")
    (tmp_path / "o+r").mkdir()
    (tmp_path / "o+r" / "f.txt").write_bytes(b"hello")
    with pytest.raises(ValueError, match="sha256"):
        build.source_bytes(tmp_path, "o/r", "0" * 40, "f.txt", "0" * 64)
    import hashlib

    ok = hashlib.sha256(b"hello").hexdigest()
    assert build.source_bytes(tmp_path, "o/r", "0" * 40, "f.txt", ok) == b"hello"


def test_committed_sets_match_their_readme_checksums() -> None:
    import hashlib

    for name in ("mlqe-roen-word", "mqm-ted-zhen"):
        readme = (RECIPE / "data" / name / "README.md").read_text()
        for split in ("dev", "test"):
            digest = hashlib.sha256((RECIPE / "data" / name / f"{split}.jsonl.gz").read_bytes())
            assert digest.hexdigest() in readme
