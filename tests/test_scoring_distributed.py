"""scoring/distributed.py and the CLI's streamed output: windows, data parallel, resume, ETA.

Several processes are started with ``torchrun`` (gloo on CPU).
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sigmoid_head.cli import main as cli_main
from sigmoid_head.safe import files as io_utils
from sigmoid_head.safe import resumable_jsonl
from sigmoid_head.scoring import distributed
from sigmoid_head.scoring.distributed import run_sharded


class Killed(BaseException):
    """Stands for SIGKILL at a fault point."""


def _torchrun(nproc: int, args: list[str]) -> subprocess.CompletedProcess:
    """``torchrun --nproc_per_node N -m sigmoid_head.cli ARGS``, one thread per process."""
    with socket.socket() as s:  # a free port, so parallel runs do not collide
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           "--master_port", str(port), "-m", "sigmoid_head.cli", *args]
    # float32 results depend on how a matmul is split over threads: the same thread count
    # in both runs (torchrun sets OMP_NUM_THREADS=1 only for N > 1)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, pairs_maker) -> tuple[Path, Path]:
    rng = random.Random(3)
    pairs = pairs_maker(37, seed=5)
    d = tmp_path_factory.mktemp("corpus")
    (d / "src.txt").write_text("".join(p["source"] + "\n" for p in pairs), encoding="utf-8")
    cands = [" ".join(rng.sample(p["target"].split(), len(p["target"].split()))) for p in pairs]
    (d / "mt.txt").write_text("".join(c + "\n" for c in cands), encoding="utf-8")
    return d / "src.txt", d / "mt.txt"


def _score_args(corpus, head_dir, out, *extra):
    return ["score", "-s", str(corpus[0]), "-t", str(corpus[1]), "--head", str(head_dir),
            "--to-json", str(out), "--batch-size", "4", "--device", "cpu", *extra]


def _gen_args(corpus, head_dir, out, *extra):
    return ["generate", "-s", str(corpus[0]), "--head", str(head_dir), "--to-json", str(out),
            "--batch-size", "4", "--device", "cpu", "--max-new-tokens", "6", *extra]


def _assert_same(a, b):
    """The same rows: texts, tokens and counts exactly, floats to float32 rounding."""
    if isinstance(a, float) or isinstance(b, float):
        assert b == pytest.approx(a, rel=1e-5, abs=1e-6)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same(x, y)
    else:
        assert a == b


def _kill_after_windows(monkeypatch, n: int) -> None:
    """The run dies once ``n`` windows of rows are on disk."""
    written = []

    def point(name: str) -> None:
        if name == "records written":
            written.append(1)
            if len(written) == n:
                raise Killed(name)

    monkeypatch.setattr(io_utils, "fault_point", point)


def _cut_inside_row(out: Path, complete: int) -> None:
    """``out``'s partial file as a crash in the middle of writing row ``complete + 1`` leaves it."""
    partial = out.with_name(out.name + ".partial")
    rows = partial.read_bytes().splitlines(keepends=True)
    partial.write_bytes(b"".join(rows[:complete]) + rows[complete][:17])


@pytest.fixture(scope="module")
def one_process(corpus, head_dir, tmp_path_factory) -> dict[str, Path]:
    """score and generate --with-tokens run here, in one process with one thread (as each
    torchrun process has)."""
    import torch

    d, threads = tmp_path_factory.mktemp("one"), torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for command, make in (("score", _score_args), ("generate", _gen_args)):
            assert cli_main(make(corpus, head_dir, d / f"{command}.jsonl", "--with-tokens",
                                 "--quiet")) == 0
    finally:
        torch.set_num_threads(threads)
    return {"score": d / "score.jsonl", "generate": d / "generate.jsonl"}


@pytest.mark.parametrize("command", ["score", "generate"])
def test_two_processes_write_what_one_process_writes(command, corpus, head_dir, one_process,
                                                     tmp_path):
    make = _score_args if command == "score" else _gen_args
    two = tmp_path / "two.jsonl"
    run = _torchrun(2, make(corpus, head_dir, two, "--with-tokens", "--quiet"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "37 new outputs in" in run.stdout and "2 processes" in run.stdout, run.stdout
    assert "37 outputs scored" in run.stdout
    lines = one_process[command].read_text().splitlines()
    assert len(lines) == 37
    assert [json.loads(x)["source"] for x in lines] == corpus[0].read_text().splitlines()
    for x, y in zip(lines, two.read_text().splitlines(), strict=True):
        _assert_same(json.loads(x), json.loads(y))


def test_a_run_killed_in_one_process_is_finished_by_two(corpus, head_dir, one_process, tmp_path,
                                                        monkeypatch):
    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(distributed, "DEFAULT_WINDOW_BATCHES", 3)  # windows of 12 inputs
    _kill_after_windows(monkeypatch, 2)
    with pytest.raises(Killed):
        cli_main(_score_args(corpus, head_dir, out, "--with-tokens", "--quiet"))
    _cut_inside_row(out, 11)
    assert not out.exists() and len(resumable_jsonl.read_complete_jsonl(out)) == 11
    run = _torchrun(2, _score_args(corpus, head_dir, out, "--with-tokens", "--quiet"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "continuing after 11 rows" in run.stdout and "26 new outputs" in run.stdout
    assert "37 outputs scored" in run.stdout
    for x, y in zip(one_process["score"].read_text().splitlines(), out.read_text().splitlines(),
                    strict=True):
        _assert_same(json.loads(x), json.loads(y))


def test_a_killed_run_resumes_to_the_same_bytes(corpus, head_dir, tmp_path, monkeypatch, capsys):
    # windows of 3 batches of 4: the run dies inside the second window
    monkeypatch.setattr(distributed, "DEFAULT_WINDOW_BATCHES", 3)
    full, out = tmp_path / "full.jsonl", tmp_path / "out.jsonl"
    assert cli_main(_score_args(corpus, head_dir, full, "--quiet")) == 0
    summary = capsys.readouterr().out.split("outputs scored")[1]
    _kill_after_windows(monkeypatch, 2)  # 24 rows on disk; a crash while writing row 18:
    with pytest.raises(Killed):
        cli_main(_score_args(corpus, head_dir, out, "--quiet"))
    _cut_inside_row(out, 17)
    monkeypatch.setattr(io_utils, "fault_point", lambda name: None)
    capsys.readouterr()
    assert cli_main(_score_args(corpus, head_dir, out, "--quiet")) == 0
    printed = capsys.readouterr().out
    assert "continuing after 17 rows" in printed and "20 new outputs" in printed
    assert "37 outputs scored" in printed and printed.split("outputs scored")[1] == summary
    assert out.read_bytes() == full.read_bytes()  # the window holding row 18 is scored whole


def test_progress_bar_shows_the_time_left(corpus, head_dir, tmp_path, capsys):
    assert cli_main(_score_args(corpus, head_dir, tmp_path / "o.jsonl")) == 0
    err = capsys.readouterr().err
    # tqdm: "inputs: 100%|...| 37/37 [00:01<00:00, 30.1input/s]" (elapsed<left, rate)
    assert re.search(r"inputs: +\d+%.*\| *\d+/37 \[\d\d:\d\d<\d\d:\d\d, *[\d.]+ *input/s\]", err), err


def test_windows_keep_input_order_bound_the_batch_and_skip_written_rows():
    records = [{"source": f"{'x' * (i % 7)}{i}"} for i in range(50)]
    seen = []

    def score_batch(recs):
        seen.append(len(recs))
        return [{"source": r["source"], "n": len(r["source"])} for r in recs]

    got = []
    n = run_sharded(iter(records), score_batch, got.extend, batch_size=4, window=12,
                    progress=False)
    assert [r["source"] for r in got] == [r["source"] for r in records] and n == 50
    assert max(seen) == 4 and sum(seen) == 50
    seen.clear()
    rest = []
    run_sharded(iter(records), score_batch, rest.extend, batch_size=4, window=12,
                skip_rows=29, progress=False)
    assert rest == got[29:]
    assert sum(seen) == 50 - 24  # the windows before row 29 are not scored again
    seen.clear()
    assert run_sharded(iter(records), score_batch, rest.extend, batch_size=4, window=12,
                       total=50, skip_rows=50, progress=False) == 0
    assert seen == []  # a complete partial file (killed before its rename): nothing to score


def test_an_error_about_a_record_names_the_input():
    records = [{"source": "a" * (i + 1)} for i in range(10)]

    def score_batch(recs):
        bad = next((k for k, r in enumerate(recs) if r["source"] == "a" * 7), None)
        if bad is not None:
            raise ValueError(f"record {bad + 1}: the candidate is empty")
        return [{} for _ in recs]

    with pytest.raises(ValueError, match=r"^input 7: the candidate is empty$"):
        run_sharded(iter(records), score_batch, lambda rows: None, batch_size=3, window=10,
                    progress=False)
