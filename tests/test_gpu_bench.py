"""The step-operator benchmark's verdict, its counter, and the GPU benchmark's CPU dry run."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import step_ops  # noqa: E402


def test_the_counter_sees_syncs_and_operators():
    counter = step_ops.Counting()
    x = torch.tensor([0.0, 2.0, 0.0, 3.0])
    with counter, step_ops.python_syncs(counter):
        y = x * 2
        y.nonzero()
        float(y.sum())
        y[y > 1]  # boolean-mask indexing: its size depends on the data
    whats = {what for _, what in counter.syncs}
    assert {"Tensor.nonzero", "Tensor.__float__", "aten::nonzero", "aten::_local_scalar_dense",
            "aten::index"} <= whats
    assert counter.ops["other"] >= 5


def test_step_ops_quick_passes_its_verdict(capsys):
    status = step_ops.main(["--quick", "--device", "cpu", "--device-profile", "cuda"])
    out = capsys.readouterr().out
    assert status == 0 and "verdict: PASS" in out
    assert out.count("ops(4096) / ops(256) = 1.0") == 2  # both samplers, ratio 1.0xx
    assert "syncing calls inside the step: 0 (must be 0)" in out


def test_gpu_sh_dry_run_writes_every_figure(tmp_path):
    from sigmoid_head.embedded.default_model import is_converted

    if not is_converted():
        pytest.skip("the embedded SmolLM2 (its tokenizer serves the random-init models) is absent")
    out = tmp_path / "figures.txt"
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(["bash", str(BENCH / "gpu.sh"), "--device", "cpu", "--tiny", "--out",
                          str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    text = out.read_text()
    for figure in ("step_ops verdict: PASS", "vs fwd_trained", "ours_mixed",
                   "forward+head+optimizer state", "full_scores", "same outputs: True",
                   "eager+rauq", "RAUQ's own code inside the eager+rauq passes",
                   "(rerank - generate) / forward", "sections failed: 0"):
        assert figure in text, figure
    # RAUQ's recurrence is timed where the scoring paths call it (a share of 0 would mean the
    # benchmark patched a name those paths no longer use)
    shares = re.findall(r"recurrence (\d+\.\d+)%", text)
    assert shares and all(float(s) > 0 for s in shares), shares


def test_scoring_ops_are_flat_in_the_rows_of_a_batch(capsys):
    import scoring_ops

    assert scoring_ops.main(["--rows", "4", "32"]) == 0
    out = capsys.readouterr().out
    assert "ops(32 rows) / ops(4 rows) = 1.0" in out and "PASS" in out
