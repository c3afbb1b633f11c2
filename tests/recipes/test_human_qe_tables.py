"""The human-label reports, results and page are rebuilt from the committed per-item data
(recipes/human_qe/tables.py): they match today, and a figure edited by hand fails."""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "recipes" / "human_qe" / "tables.py"

pytest.importorskip("scipy")


def _load():
    return importlib.import_module("recipes.human_qe.tables")


def _committed():
    """The module that holds RESULTS (patched there: every table module reads it from there)."""
    return importlib.import_module("recipes.human_qe.committed")


def test_the_mqm_report_and_page_block_are_rebuilt_from_committed_data(tmp_path, monkeypatch, capsys):
    tables = _load()
    # the set's report, page block and error-free analysis; its ten head-variant tables (each a
    # whole rebuild: 75 of this test's 190 s) are checked by `tables --check` and their
    # building by the prefix test below
    assert tables.main(["--check", "--sets", "mqm-ted-zhen", "--no-variants"]) == 0
    # the same check on a copy cut to a fast size (the first 300 texts, 100 resamples): its
    # page written by --write passes, then one figure edited by hand in it fails
    results = tmp_path / "results"
    shutil.copytree(_committed().RESULTS / "mqm-ted-zhen", results / "mqm-ted-zhen",
                    ignore=lambda d, names: ["heads"] if "heads" in names else [])
    run = json.loads((results / "mqm-ted-zhen" / "results.json").read_text())
    run["settings"].update(limit=300, n_boot=100)
    (results / "mqm-ted-zhen" / "results.json").write_text(json.dumps(run))
    doc = tmp_path / "human_labels.md"
    doc.write_text(tables.DOC.read_text())
    monkeypatch.setattr(_committed(), "RESULTS", results)
    monkeypatch.setattr(tables, "DOC", doc)
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    assert tables.main(["--write", "--sets", "mqm-ted-zhen"]) == 0
    assert tables.main(["--check", "--sets", "mqm-ted-zhen"]) == 0
    _raw_floats_within_tolerance(tables, results / "mqm-ted-zhen" / "results.json", capsys)
    text = doc.read_text()
    block = text.split("recipes/human_qe/results/mqm-ted-zhen/report.md", 1)[1].split("### Paired tests", 1)[1]
    row = next(line for line in block.splitlines() if line.startswith("| softmax_mean_log | "))  # its delta
    delta = row.split("|")[2].strip()
    edited = f"{float(delta) - 0.1:+.3f}"
    doc.write_text(text.replace(row, row.replace(delta, edited, 1), 1))
    capsys.readouterr()
    assert tables.main(["--check", "--sets", "mqm-ted-zhen"]) == 1
    out = capsys.readouterr().out
    assert f"-| softmax_mean_log | {edited}" in out and f"+| softmax_mean_log | {delta}" in out


def _raw_floats_within_tolerance(tables, path: Path, capsys) -> None:
    """A raw float of a results file (a threshold, a Platt parameter: not bit-identical
    across CPUs) that moves in its 16th digit passes --check; one that moves in its fourth
    fails, naming the file."""
    import re

    committed_text = path.read_text()
    raw = next(m for m in re.finditer(r"-?\d+\.\d{12,}", committed_text))
    value = float(raw.group())
    for factor, passes in ((1 + 4e-16, True), (1 + 3e-4, False)):
        moved = repr(value * factor)
        assert moved != raw.group()
        path.write_text(committed_text[:raw.start()] + moved + committed_text[raw.end():])
        capsys.readouterr()
        argv = ["--check", "--sets", "mqm-ted-zhen", "--no-variants", "--no-analyses"]
        assert tables.main(argv) == (0 if passes else 1)
        out = capsys.readouterr().out
        assert passes or f"{path.name}: line" in out and "relative difference" in out, out
    path.write_text(committed_text)


def test_the_seed_table_shows_the_spread_across_seeds_beside_the_source_interval():
    tables = _load()

    def res(mcc, lo, hi):
        return {"kind": "wmt", "word": {"methods": {"sigmoid": {"mcc": [mcc, lo, hi]}}}}

    per = {"prior001": res(0.20, 0.18, 0.22), "prior001_s1": res(0.22, 0.20, 0.24),
           "prior001_s2": res(0.24, 0.22, 0.26), "paper": res(0.10, 0.08, 0.12)}
    lines = tables.seeds_table("mlqe-roen-word", per)
    row = next(line for line in lines if line.startswith("| prior001 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "3"  # seeds 0, 1, 2 of one setting
    assert cells[3:] == ["0.220", "0.020", "0.040", "0.020"]  # mean, SD (ddof 1), range, half-width
    assert not any(line.startswith("| paper |") for line in lines)  # one seed: no spread to show
    assert tables.seeds_table("mlqe-roen-word", {"paper": res(0.1, 0.0, 0.2)}) == []


def _cut_variants(results: Path, name: str, limit: int, variants: dict[str, int]) -> None:
    """Give each named variant its own --limit: settings and rows cut to that prefix."""
    import gzip

    for v, n in variants.items():
        folder = results / name / "heads" / v
        settings = json.loads((folder / "settings.json").read_text())
        (folder / "settings.json").write_text(json.dumps({**settings, "limit": n}))
        for split in ("dev", "test"):
            path = folder / f"{split}.scores.jsonl.gz"
            with gzip.open(path, "rt", encoding="utf-8") as f:
                rows = f.readlines()[:n]
            with gzip.open(path, "wt", encoding="utf-8") as f:
                f.writelines(rows)


def test_variants_on_a_prefix_are_compared_with_the_committed_head_on_that_prefix(tmp_path, monkeypatch):
    """A full committed run with variants scored on the first N texts: every variant table,
    the committed head's row included, is built on those N texts and says so; variants on
    different prefixes are refused."""
    tables = _load()
    name, results = "mlqe-roen-word", tmp_path / "results"
    shutil.copytree(_committed().RESULTS / name, results / name,
                    ignore=lambda d, names: [n for n in names if Path(d).name == "heads"
                                             and n not in ("paper", "prior001_s1")])
    monkeypatch.setattr(_committed(), "RESULTS", results)
    # the committed run as if it had scored the first 300 texts (100 resamples: a fast test)
    run = json.loads((results / name / "results.json").read_text())
    run["settings"].update(limit=300, n_boot=100)
    (results / name / "results.json").write_text(json.dumps(run))
    _cut_variants(results, name, 120, {"paper": 120, "prior001_s1": 120})
    _, blocks, _ = tables.build(None, sets=(name,), with_analyses=False)  # the variants only
    block = blocks[f"{tables.VARIANTS_BLOCK}:{name}"]
    assert block.startswith("The head variants were scored on the first 120 texts of each split")
    row = next(line for line in block.splitlines() if line.startswith("| prior001 |"))
    on_prefix = tables.rebuild(name, None, limit=120)["word"]["methods"]["sigmoid"]["mcc"][0]
    on_run = tables.rebuild(name, None)["word"]["methods"]["sigmoid"]["mcc"][0]
    assert f"{on_prefix:.3f}" != f"{on_run:.3f}"  # 120 texts are not the run's 300
    assert row.split("|")[2].strip() == f"{on_prefix:.3f}"
    with pytest.raises(SystemExit, match="has the first 300 texts only, not all"):
        tables.rebuild(name, None, limit=None)
    _cut_variants(results, name, 120, {"paper": 80})
    with pytest.raises(SystemExit, match="different --limit values"):
        tables.build(None, sets=(name,), with_analyses=False)


def test_adopt_commits_a_run_rounded_and_refuses_rows_out_of_the_set_order(tmp_path, monkeypatch):
    """--adopt: a run's rows become the set's committed ones (floats to 6 significant
    digits, same ids and order) with its settings; rows in another order are refused."""
    tables = _load()
    name = "mlqe-roen-word"
    monkeypatch.setattr(_committed(), "RESULTS", tmp_path / "results")
    (tmp_path / "results" / name).mkdir(parents=True)
    run = tmp_path / "run"
    run.mkdir()
    settings = {"model": "m", "head": "heads/h", "limit": 40, "n_boot": 10, "prompt": "default"}
    (run / "results.json").write_text(json.dumps({"settings": settings}))
    for split in ("dev", "test"):
        rows = tables.read_jsonl_gz(tables.HERE / "results" / name / f"{split}.scores.jsonl.gz")[:40]
        rows[0]["sigmoid_mean_log"] = -0.123456789
        tables.write_jsonl_gz(run / f"{split}.scores.jsonl.gz", rows)
    tables.main(["--adopt", str(run), "--set", name])
    kept = tables.read_jsonl_gz(tmp_path / "results" / name / "test.scores.jsonl.gz")
    assert [r["id"] for r in kept] == [r["id"] for r in tables.read_jsonl_gz(run / "test.scores.jsonl.gz")]
    assert kept[0]["sigmoid_mean_log"] == -0.123457
    assert json.loads((tmp_path / "results" / name / "results.json").read_text())["settings"] == settings
    rows = tables.read_jsonl_gz(run / "dev.scores.jsonl.gz")
    tables.write_jsonl_gz(run / "dev.scores.jsonl.gz", rows[::-1])
    with pytest.raises(SystemExit, match="differ in their ids or order"):
        tables.main(["--adopt", str(run), "--set", name])


def test_pack_keeps_no_path_of_the_machine_that_ran_the_head(tmp_path, monkeypatch):
    tables = _load()
    run = tmp_path / "run"
    run.mkdir()
    settings = {"model": "m", "head": str(tmp_path / "somewhere" / "my-head"), "limit": 5,
                "n_boot": 10, "prompt": "p"}
    (run / "results.json").write_text(json.dumps({"settings": settings}))
    for split in ("dev", "test"):
        rows = tables.read_jsonl_gz(_committed().RESULTS / "mlqe-roen-word" / f"{split}.scores.jsonl.gz")[:5]
        tables.write_jsonl_gz(run / f"{split}.scores.jsonl.gz", rows)
    monkeypatch.setattr(_committed(), "RESULTS", tmp_path / "results")
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    tables.pack(run, "mlqe-roen-word", "v1")
    kept = json.loads((tmp_path / "results" / "mlqe-roen-word" / "heads" / "v1" / "settings.json").read_text())
    assert kept["head"] == "heads/my-head" and str(tmp_path) not in json.dumps(kept)


def test_the_labelled_block_reads_each_heads_run_and_names_the_best_softmax_side_method(tmp_path):
    lt = importlib.import_module("recipes.human_qe.labelled_tables")

    def run(head_mcc: float, p_holm: float) -> dict:
        t = {"delta": head_mcc - 0.25, "ci_low": -0.3, "ci_high": 0.1, "p_holm": p_holm, "n_boot": 1000}
        methods = {m: {"mcc": [v, 0, 1], "roc_auc": [a, 0, 1]} for m, v, a in
                   (("sigmoid", head_mcc, 0.6), ("softmax", 0.20, 0.7), ("boostedprob", 0.25, 0.65),
                    ("rauq", 0.1, 0.5))}
        return {"n_test": 10, "n_dev": 8, "paired": {"softmax": t, "boostedprob": t},
                "word": {"methods": methods, "counts": {"n_words": 1234, "n_bad_words": 56},
                         "flagged": {"sigmoid": 0.3, "softmax": 0.1, "boostedprob": 0.2, "rauq": 0.05}}}

    for head, mcc, p in (("prior001", 0.15, 0.0), ("labelled_roen", 0.22, 0.4)):
        (tmp_path / lt.RUNS_DIR / head).mkdir(parents=True)
        (tmp_path / lt.RUNS_DIR / head / "results.json").write_text(json.dumps(run(mcc, p)))
    lines = lt.labelled_lines(tmp_path)
    rows = {line.split("|")[1].strip(): line for line in lines if line.startswith("| prior001") or line.startswith("| labelled")}
    assert "| 0.150 (30%) | boostedprob 0.250 (20%) | -0.100 [-0.300, +0.100], < 0.001 |" in rows["prior001"]
    assert "| -0.030, 0.4 | – | 0.600 / 0.700 |" in rows["labelled_roen"]  # no rauq test in that run
    assert "10 test sentences (1,234 MT words, 56 BAD)" in lines[-2] and lines[-1] == ""


def test_keep_cuts_the_heads_path_to_its_folder_name(tmp_path):
    lt = importlib.import_module("recipes.human_qe.labelled_tables")
    run = tmp_path / "run"
    run.mkdir()
    head = str(tmp_path / "x" / "roen-lab")
    res = json.loads((_committed().RESULTS / lt.RUNS_DIR / "prior001" / "results.json").read_text())
    res["settings"] = {"head": head, "limit": None, "n_boot": 1000}  # a whole et-en run
    (run / "results.json").write_text(json.dumps(res))
    (run / "report.md").write_text(f"Settings: model=m, head={head}, limit=None\n")
    dest = lt.keep(run, "labelled_roen", tmp_path / "results")
    assert json.loads((dest / "results.json").read_text())["settings"]["head"] == "heads/roen-lab"
    assert (dest / "report.md").read_text() == "Settings: model=m, head=heads/roen-lab, limit=None\n"
    with pytest.raises(ValueError, match="--head"):
        lt.keep(run, "other", tmp_path / "results")


def test_wmt22_rows_keep_no_path_of_the_machine_that_ran_the_head(tmp_path, monkeypatch):
    w = importlib.import_module("recipes.human_qe.wmt22_rows")
    board = json.loads(w.LEADERBOARD.read_text())
    leaderboard = tmp_path / "wmt22-word.json"
    leaderboard.write_text(json.dumps(board))
    monkeypatch.setattr(w, "LEADERBOARD", leaderboard)
    run = tmp_path / "run"
    run.mkdir()
    res = {"kind": "wmt", "n_dev": 3, "n_test": 4,
           "settings": {"head": str(tmp_path / "x" / "prior001"), "limit": None},
           "word": {"counts": {"n_words": board["pairs"]["km-en"]["n_words"]},
                    "methods": {"sigmoid": {"mcc": [0.1, 0.0, 0.2]}}, "thresholds": {"sigmoid": 0.5}},
           "paired": {}}
    (run / "results.json").write_text(json.dumps(res))
    assert w.add_run("km-en", run)["settings"]["head"] == "heads/prior001"
    assert str(tmp_path) not in leaderboard.read_text()
