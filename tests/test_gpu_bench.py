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


def test_gpu_sh_dry_run_writes_its_header_and_figures(tmp_path):
    from sigmoid_head.embedded.default_model import is_converted

    if not is_converted():
        pytest.skip("the embedded SmolLM2 (its tokenizer serves the random-init models) is absent")
    out = tmp_path / "figures.txt"
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    # the scripts the other dry runs of this file do not run (step_ops: its own test;
    # train_throughput, scoring and rerank: the issue-60 dry run), so that each runs once
    run = subprocess.run(["bash", str(BENCH / "gpu.sh"), "--device", "cpu", "--tiny", "--out",
                          str(out), "--only", "generation,rauq_overhead"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    text = out.read_text()
    for figure in ("# sigmoid-head benchmarks: device=cpu tiny=1", "torch ", "same outputs: True",
                   "eager+rauq", "RAUQ's own code inside the eager+rauq passes",
                   "step_ops verdict: not run", "sections failed: 0"):
        assert figure in text, figure
    assert "### train_throughput.py" not in text and "### rerank.py" not in text
    # RAUQ's recurrence is timed where the scoring paths call it (a share of 0 would mean the
    # benchmark patched a name those paths no longer use)
    shares = re.findall(r"recurrence (\d+\.\d+)%", text)
    assert shares and all(float(s) > 0 for s in shares), shares


def test_scoring_ops_are_flat_in_the_rows_of_a_batch(capsys):
    import scoring_ops

    assert scoring_ops.main(["--rows", "4", "32"]) == 0
    out = capsys.readouterr().out
    assert "ops(32 rows) / ops(4 rows) = 1.0" in out and "PASS" in out
    # one copy of the results per pass, and one truth read (transformers' padding check)
    for line in out.splitlines()[1:3]:
        assert "Tensor.cpu x1," in line and "Tensor.__bool__ x1," in line, line


@pytest.mark.parametrize("script", ["scoring", "train_throughput"])
def test_compile_reduce_overhead_is_refused_in_one_line_before_any_model_loads(script, monkeypatch):
    import importlib

    import common

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded before the refusal")

    monkeypatch.setattr(common, "load", no_load)
    monkeypatch.setattr(common, "backbone_for", no_load)
    with pytest.raises(SystemExit) as refused:
        importlib.import_module(script).main(["--compile", "reduce-overhead", "--device", "cpu"])
    message = str(refused.value.code)
    assert message.startswith("--compile reduce-overhead: refused") and "\n" not in message
    assert "use --compile default" in message
    args = common.parser("x").parse_args(["--compile", "default"])  # the bounded mode stays
    assert args.compile == "default"


def test_the_gpu_suite_never_runs_reduce_overhead(monkeypatch, capsys):
    import gpu_suite

    calls = []
    for name in ("step_ops", "train_throughput", "scoring", "generation", "rerank",
                 "rauq_overhead"):  # every section records its argv instead of running
        monkeypatch.setattr(getattr(gpu_suite, name), "main",
                            lambda argv, name=name: calls.append((name, argv)) or 0)
    monkeypatch.setattr(gpu_suite.torch.cuda, "empty_cache", lambda: None)
    assert gpu_suite.main(["--device", "cuda", "--models", "olmo2-1b"]) == 0
    compiled = [argv for _, argv in calls if "--compile" in argv]
    assert compiled and all(argv[argv.index("--compile") + 1] == "default" for argv in compiled)


def test_gpu_lent_issue60_dry_run_writes_the_whole_table(tiny_tokenizer_path, tmp_path):
    """GPU_LENT_ISSUE60=1 on the CPU with the tiny shape: every row of issue 60's table is
    there (the dense, sparse and no-update steps side by side, memory, scoring, rerank, the
    reduce-overhead refusal), within its time budget."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHON": sys.executable, "SIGMOID_HEAD_BENCH_TOKENIZER": str(tiny_tokenizer_path),
           "GPU_LENT_ISSUE60": "1", "GPU_LENT_DEVICE": "cpu", "GPU_LENT_MODELS": "tiny",
           "GPU_LENT_SUITE_ARGS": "--tiny", "GPU_LENT_NO_WHEELS": "1", "GPU_LENT_BUDGET": "400",
           "PYTHONPATH": os.pathsep.join([str(root / "src"), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(["bash", str(BENCH / "gpu_lent.sh"), str(tmp_path / "out")], cwd=root,
                         capture_output=True, text=True, env=env, timeout=480)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    text = (tmp_path / "out" / "issue60.txt").read_text()
    for figure in ("ours_tf ", "ours_tf_sparse ", "ours_tf_deferred ", "ours_tf_no_update ", "ours_mixed ",
                   "forward+head+optimizer state", "full_scores", "sigmoid_only",
                   "(rerank - generate) / forward", "--compile reduce-overhead: refused",
                   "sections failed: 0", "sections skipped (deadline): 0"):
        assert figure in text, figure
    assert "### step_ops.py" not in text and "### generation.py" not in text  # the table only


def test_profile_step_honours_model(capsys, monkeypatch, tiny_tokenizer_path):
    import profile_step

    monkeypatch.setenv("SIGMOID_HEAD_BENCH_TOKENIZER", str(tiny_tokenizer_path))
    profile_step.main(["--model", "tiny", "--examples", "16", "--batch-size", "2", "--rows", "3",
                       "--threads", "1", "--optimizer", "sparse_adamw"])
    out = capsys.readouterr().out
    assert out.startswith("model=tiny ") and "optimizer=sparse_adamw" in out
    assert "== training step" in out and "== full scoring" in out


def test_the_published_variant_runs_on_the_embedded_model_on_the_cpu_only() -> None:
    import common
    import train_throughput

    def args(*argv: str):
        return common.parser("x").parse_args(list(argv))

    assert train_throughput.with_published(args())  # smollm2 on the CPU: the comparison it is for
    assert not train_throughput.with_published(args("--model", "tiny"))
    assert not train_throughput.with_published(args("--device", "cuda"))
