"""The installed ``sigmoid-head`` entry point: every command's help, a real tiny run of
each cheap command, and the one error convention (one line on stderr, exit code 2).

The runs use the committed 0.1.0 head and its tiny base model (tests/data/head_v0_1_0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sigmoid_head.cli import COMMANDS

FIXTURE = Path(__file__).resolve().parent / "data" / "head_v0_1_0"
ENTRY = Path(sys.executable).with_name("sigmoid-head")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    command = [str(ENTRY)] if ENTRY.exists() else [sys.executable, "-m", "sigmoid_head.cli"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def test_top_level_help_lists_every_command() -> None:
    res = run("--help")
    assert res.returncode == 0
    for name, help_text in COMMANDS.items():
        assert name in res.stdout and help_text[:30] in " ".join(res.stdout.split())


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_command_help(command: str) -> None:
    res = run(command, "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"usage: sigmoid-head {command}")


def test_train_help_comes_from_the_config_docstrings() -> None:
    out = " ".join(run("train", "--help").stdout.split())
    assert "--lr LR Peak learning rate (cosine decay after warmup)" in out
    assert '--negatives NEGATIVES Sampler name, or several joined with "+"' in out
    assert "--dominant-cut DOMINANT_CUT Which significant drop ends the set" in out


def _pairs(path: Path) -> tuple[Path, Path]:
    expected = json.loads((FIXTURE / "expected_scores.json").read_text(encoding="utf-8"))
    pairs = [r for r in expected["records"] if "source" in r]
    src, cand = path / "src.txt", path / "cand.txt"
    src.write_text("".join(r["source"] + "\n" for r in pairs), encoding="utf-8")
    cand.write_text("".join(r["candidate"] + "\n" for r in pairs), encoding="utf-8")
    return src, cand


def test_score_runs_and_gives_the_library_scores(tmp_path: Path) -> None:
    src, cand = _pairs(tmp_path)
    out = tmp_path / "scores.jsonl"
    res = run("score", "-s", str(src), "-t", str(cand), "--head", str(FIXTURE / "head"),
              "--model", str(FIXTURE / "base"), "--device", "cpu", "--quiet", "--to-json", str(out))
    assert res.returncode == 0, res.stderr
    assert "3 outputs scored" in res.stdout
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]
    expected = json.loads((FIXTURE / "expected_scores.json").read_text(encoding="utf-8"))["scores"]
    for row, want in zip(rows, expected[:3], strict=True):
        assert row["sigmoid"] == pytest.approx(want["sigmoid"], rel=1e-5)
        assert row["softmax"] == pytest.approx(want["softmax"], rel=1e-5)


def test_generate_runs(tmp_path: Path) -> None:
    src, _ = _pairs(tmp_path)
    out = tmp_path / "gen.jsonl"
    res = run("generate", "-s", str(src), "--head", str(FIXTURE / "head"), "--model",
              str(FIXTURE / "base"), "--device", "cpu", "--quiet", "--max-new-tokens", "3",
              "--to-json", str(out))
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]
    assert len(rows) == 3 and all(1 <= r["n_tokens"] <= 3 and 0 < r["sigmoid"] <= 1 for r in rows)


def test_train_runs(tmp_path: Path) -> None:
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"source": f"el perro {i}", "target": f"the dog {i}"}) + "\n"
                            for i in range(8)), encoding="utf-8")
    res = run("train", "--train-file", str(data), "--output-dir", str(tmp_path / "head"),
              "--model", str(FIXTURE / "base"), "--max-steps", "2", "--batch-size", "4",
              "--validation-fraction", "0", "--no-progress", "--device", "cpu", "--lr", "1e-3")
    assert res.returncode == 0, res.stderr
    config = json.loads((tmp_path / "head" / "head_config.json").read_text())
    assert config["training"]["lr"] == 1e-3 and config["training"]["steps"] == 2


def test_evaluate_runs_without_torch(tmp_path: Path) -> None:
    scores, gold = tmp_path / "scores.jsonl", tmp_path / "gold.txt"
    values = [0.9, 0.2, 0.7, 0.4, 0.8, 0.1]
    scores.write_text("".join(json.dumps({"sigmoid": v, "softmax": 1 - v}) + "\n" for v in values))
    gold.write_text("1\n0\n1\n0\n1\n0\n")
    res = run("evaluate", "--scores", str(scores), "--gold", str(gold), "--no-ci")
    assert res.returncode == 0, res.stderr
    assert "sigmoid" in res.stdout and "roc_auc" in res.stdout.lower().replace("-", "_")
    probe = ("import sys; from sigmoid_head.cli import main; "
             f"code = main(['evaluate', '--scores', {str(scores)!r}, '--gold', {str(gold)!r}, '--no-ci']); "
             "assert code == 0; assert 'torch' not in sys.modules, 'torch was imported'")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("args, message", [
    (["score", "-s", "missing.txt", "-t", "missing.txt"], "file not found: missing.txt"),
    (["evaluate", "--scores", "s.jsonl", "--gold", "g.txt"], "file not found: s.jsonl"),
    (["score", "-s", "a.txt"], "-s needs -t CANDIDATES.txt"),
])
def test_user_errors_are_one_line_and_exit_2(tmp_path: Path, args, message) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    res = run(*args, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr == f"sigmoid-head {args[0]}: error: {message}\n"
