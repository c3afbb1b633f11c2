"""cli/rerank.py: sigmoid-head rerank end to end: the library's file, --describe, refusals
(bad --select, outputs over inputs or in the head folder), resume after a kill without
duplicates, and two processes writing what one writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import FIXTURE
from test_scoring_distributed import Killed, _assert_same, _cut_inside_row, _torchrun

from sigmoid_head.cli import main as cli_main
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.safe import files as io_utils
from sigmoid_head.scoring import rerank
from sigmoid_head.scoring.corpus import CorpusConfig
from sigmoid_head.scoring.rerank import RerankConfig, rerank_corpus

SOURCES = ["el perro come el pan", "la casa", "una mujer", "el niño lee un libro hoy",
           "el gato bebe el agua", "la mujer ama la ciudad", "un hombre", "el libro"]


@pytest.fixture(scope="module")
def src(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rerank") / "src.txt"
    path.write_text("".join(s + "\n" for s in SOURCES), encoding="utf-8")
    return path


def _args(src: Path, out: Path, *extra: str) -> list[str]:
    return ["rerank", "-s", str(src), "--head", str(FIXTURE / "head"), "--model",
            str(FIXTURE / "base"), "--device", "cpu", "--samples", "2", "--max-new-tokens", "4",
            "--batch-size", "2", "--quiet", "-o", str(out), *extra]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def full(src, tmp_path_factory) -> Path:
    """An uninterrupted run, in one process with one thread (as each torchrun process has)."""
    import torch

    out, threads = tmp_path_factory.mktemp("full") / "full.jsonl", torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert cli_main(_args(src, out)) == 0
    finally:
        torch.set_num_threads(threads)
    return out


def test_rerank_writes_the_library_rows(src, full, tmp_path, capsys) -> None:
    assert cli_main(_args(src, tmp_path / "again.jsonl", "--select", "combined")) == 0  # the default
    printed = capsys.readouterr().out
    assert "8 sources reranked, 2 samples + greedy each; picked by combined" in printed
    rows = _rows(full)
    assert [r["source"] for r in rows] == SOURCES
    assert all(len(r["candidates"]) == 3 and r["select"] == "combined" for r in rows)
    assert (tmp_path / "again.jsonl").read_bytes() == full.read_bytes()
    model = SigmoidHeadModel.from_pretrained(FIXTURE / "head", str(FIXTURE / "base"), device="cpu")
    lib = tmp_path / "lib.jsonl"
    rerank_corpus(model, [{"source": s} for s in SOURCES],
                  RerankConfig(samples=2, max_new_tokens=4),
                  CorpusConfig(batch_size=2, quiet=True, to_json=str(lib)))
    assert lib.read_bytes() == full.read_bytes()


def test_describe_lists_the_row_and_score_fields(capsys) -> None:
    assert cli_main(["rerank", "--describe"]) == 0
    out = capsys.readouterr().out
    assert "`picked`" in out and "`candidates[].origin`" in out
    assert "| `entropy_mean` | higher = worse |" in out


def test_bad_options_are_refused_in_one_line(src, tmp_path, capsys, monkeypatch) -> None:
    from sigmoid_head.cli import common

    def no_model(self):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(common.ModelOptions, "load", no_model)  # every refusal comes first
    out = tmp_path / "o.jsonl"
    assert cli_main(_args(src, out, "--select", "softmax@median")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "choose one of: sigmoid, " in err and "entropy_mean" in err
    assert cli_main(["rerank", "-s", str(src), "--model", str(FIXTURE / "base"), "-o", str(out),
                     "--select", "sigmoid@mean"]) == 2
    assert "need a head" in capsys.readouterr().err
    assert cli_main(["rerank", "-s", str(src), "--head", str(FIXTURE / "head")]) == 2
    assert "give -o OUT.jsonl" in capsys.readouterr().err
    assert cli_main(_args(src, out, "--samples", "0", "--no-greedy")) == 2
    assert "no candidates" in capsys.readouterr().err
    assert not out.exists() and not Path(str(out) + ".partial").exists()


def test_outputs_over_inputs_or_in_the_head_are_refused(src, tmp_path, capsys) -> None:
    before = src.read_bytes()
    assert cli_main(_args(src, src)) == 2
    assert "is the same file as --sources" in capsys.readouterr().err
    assert src.read_bytes() == before
    head = tmp_path / "head"
    head.mkdir()
    for f in (FIXTURE / "head").iterdir():
        (head / f.name).write_bytes(f.read_bytes())
    args = _args(src, head / "picks.jsonl")
    args[args.index("--head") + 1] = str(head)
    assert cli_main(args) == 2
    assert "inside the --head folder" in capsys.readouterr().err
    assert not (head / "picks.jsonl").exists()


def test_a_killed_run_resumes_without_duplicates(src, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(rerank, "RERANK_WINDOW_BATCHES", 1)  # windows of one batch, 2 sources
    full = tmp_path / "full.jsonl"  # the batches (and so the samples' seeds) follow the windows
    assert cli_main(_args(src, full)) == 0
    written = []

    def point(name: str) -> None:
        if name == "records written":
            written.append(1)
            if len(written) == 2:
                raise Killed(name)

    monkeypatch.setattr(io_utils, "fault_point", point)
    out = tmp_path / "out.jsonl"
    with pytest.raises(Killed):
        cli_main(_args(src, out))
    _cut_inside_row(out, 3)  # killed while writing the fourth row
    monkeypatch.setattr(io_utils, "fault_point", lambda name: None)
    capsys.readouterr()
    assert cli_main(_args(src, out)) == 0
    printed = capsys.readouterr().out
    assert "continuing after 3 rows" in printed and "5 new outputs" in printed
    assert [r["source"] for r in _rows(out)] == SOURCES  # each source once, in order
    assert out.read_bytes() == full.read_bytes()  # the window of row 4 drawn again, the same
    other = tmp_path / "other.jsonl"
    monkeypatch.setattr(io_utils, "fault_point", point)
    written.clear()
    with pytest.raises(Killed):
        cli_main(_args(src, other))
    # other candidates cannot continue that run
    assert cli_main(_args(src, other, "--temperature", "1.5")) == 2
    assert "holds results of another run" in capsys.readouterr().err


def test_two_processes_write_what_one_process_writes(src, full, tmp_path) -> None:
    two = tmp_path / "two.jsonl"
    run = _torchrun(2, _args(src, two))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "8 new outputs in" in run.stdout and "2 processes" in run.stdout, run.stdout
    for x, y in zip(full.read_text().splitlines(), two.read_text().splitlines(), strict=True):
        _assert_same(json.loads(x), json.loads(y))
