"""recipes/human_qe/splice.py: only the rows a data fix changed are re-scored and spliced,
into the committed rows or a head variant's packed columns, and only when the unchanged
check rows show that the (retrained) head reproduces the committed one."""

from __future__ import annotations

import importlib
import json
import shutil

import pytest

NAME = "mqm-ted-zhen"
VARIANT = "paper"


def _mods():
    return (importlib.import_module("recipes.human_qe.splice"),
            importlib.import_module("recipes.human_qe.committed"))


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    """A copy of the variant's packed columns, and an "earlier commit" whose data differ
    from today's in the sources of rows 3 and 7 of each split (no git needed)."""
    splice, committed = _mods()
    src = committed.RESULTS / NAME / "heads" / VARIANT
    results = tmp_path / "results"
    shutil.copytree(src, results / NAME / "heads" / VARIANT)
    monkeypatch.setattr(splice, "RESULTS", results)

    def old_rows(name, split, commit):
        rows = [dict(r) for r in committed.gold_rows(name, split, None)]
        for k in (3, 7):
            rows[k]["source"] = rows[k]["source"] + " <v>marked</v>"
        return rows

    monkeypatch.setattr(splice, "_old_rows", old_rows)
    return splice, committed, results / NAME / "heads" / VARIANT


def _run_rows(packed, gold):
    """Run rows (per-word dicts, the candidate) carrying the packed head columns."""
    cand = {g["id"]: g["candidate"] for g in gold}
    return [{**{k: v for k, v in r.items() if k != "words"}, "candidate": cand[r["id"]],
             "words": [{"sigmoid": w, "softmax": 0.5} for w in r["words"]]} for r in packed]


def _write_run(splice, committed, folder, tmp_path, ids_per_split, change):
    run = tmp_path / "run"
    for split in ("dev", "test"):
        packed = committed.read_jsonl_gz(folder / f"{split}.scores.jsonl.gz")
        gold = committed.gold_rows(NAME, split, None)
        rows = _run_rows([packed[k] for k in ids_per_split], gold)
        for r in rows:
            r.update(change(r))
        run.mkdir(exist_ok=True)
        splice.write_jsonl_gz(run / f"{split}.scores.jsonl.gz", rows)
    return run


def test_subset_keeps_changed_rows_within_the_limit_and_adds_check_rows(setup, tmp_path):
    splice, committed, _ = setup
    splice.subset(NAME, "earlier", tmp_path / "sub", limit=5, check=2)
    for split in ("dev", "test"):
        rows = committed.read_jsonl_gz(tmp_path / "sub" / NAME / f"{split}.jsonl.gz")
        gold = committed.gold_rows(NAME, split, None)
        # row 7 is past the limit; row 3 changed; rows 0 and 1 are the first unchanged
        assert [r["id"] for r in rows] == [gold[k]["id"] for k in (0, 1, 3)]


def test_a_variant_gets_the_changed_rows_and_keeps_every_other(setup, tmp_path, capsys):
    splice, committed, folder = setup
    before = {s: committed.read_jsonl_gz(folder / f"{s}.scores.jsonl.gz") for s in ("dev", "test")}
    # rows 0 and 1 (unchanged) as packed: the check; rows 3 and 7 (changed): new scores
    run = _write_run(splice, committed, folder, tmp_path, (0, 1, 3, 7), lambda r: {})
    for split in ("dev", "test"):
        rows = committed.read_jsonl_gz(run / f"{split}.scores.jsonl.gz")
        for r in rows[2:]:
            r["sigmoid_mean_log"] = -9.0
        splice.write_jsonl_gz(run / f"{split}.scores.jsonl.gz", rows)
    splice.adopt(run, NAME, since="earlier", variant=VARIANT)
    out = capsys.readouterr().out
    assert "check: 4 unchanged rows agree" in out and "within a relative 0 " in out
    for split in ("dev", "test"):
        after = committed.read_jsonl_gz(folder / f"{split}.scores.jsonl.gz")
        assert len(after) == len(before[split])
        for k, (a, b) in enumerate(zip(after, before[split], strict=True)):
            if k in (3, 7):
                assert a["sigmoid_mean_log"] == -9.0 and a["words"] == b["words"]
                assert "softmax" not in json.dumps(a)  # head columns only
            else:
                assert a == b
    record = json.loads((folder / "rescored.json").read_text())
    assert record["test"] == sorted(before["test"][k]["id"] for k in (3, 7))


def test_a_head_that_does_not_reproduce_the_check_rows_is_refused(setup, tmp_path):
    splice, committed, folder = setup
    before = (folder / "test.scores.jsonl.gz").read_bytes()
    record = (folder / "rescored.json").read_bytes()  # the committed re-scoring's ids
    run = _write_run(splice, committed, folder, tmp_path, (0, 3),
                     lambda r: {"sigmoid_mean_log": r["sigmoid_mean_log"] * 1.01})
    with pytest.raises(SystemExit, match="does not reproduce"):
        splice.adopt(run, NAME, since="earlier", variant=VARIANT)
    assert (folder / "test.scores.jsonl.gz").read_bytes() == before
    assert (folder / "rescored.json").read_bytes() == record
    # and without any unchanged row there is nothing to check against
    run = _write_run(splice, committed, folder, tmp_path, (3, 7), lambda r: {})
    with pytest.raises(SystemExit, match="no unchanged row"):
        splice.adopt(run, NAME, since="earlier", variant=VARIANT)
    with pytest.raises(SystemExit, match="needs --since"):
        splice.adopt(run, NAME, variant=VARIANT)
