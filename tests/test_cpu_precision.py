"""cpu_precision + cli/precision: never die on a CPU that faults on half-precision products.

A faulting CPU is stood in for by a probe child that kills itself with SIGILL, and by
verdicts written into the probe's cache (the mechanism that carries a real verdict from
one run to the next), so these tests need no such CPU.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sigmoid_head.cli import main as cli_main
from sigmoid_head.lm import cpu_precision as cp
from sigmoid_head.lm.backbone import load_backbone, resolve_dtype

# a child that dies as the faulting CPU does
SIGILL_CHILD = "import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n"
# a child that dies unless oneDNN is kept off AMX (what ONEDNN_MAX_CPU_ISA does on such a CPU)
SIGILL_UNLESS_ISA = (
    "import os, signal\n"
    "if os.environ.get('ONEDNN_MAX_CPU_ISA') != 'AVX512_CORE_BF16':\n"
    "    os.kill(os.getpid(), signal.SIGILL)\n"
)


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    """A fresh sigmoid-head cache (so the probe verdicts are this test's own)."""
    monkeypatch.setenv("SIGMOID_HEAD_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(cp.ISA_VARIABLE, raising=False)
    return tmp_path / "cache"


def _counting_child(marker: Path) -> str:
    """A child that appends a line to ``marker`` each time it runs, then succeeds."""
    return f"open({str(marker)!r}, 'a').write('ran\\n')\n"


def _plant(verdicts: dict[bool, cp.Verdict], dtype: str = "bfloat16") -> None:
    """Write cached verdicts for ``dtype`` without and with ONEDNN_MAX_CPU_ISA set."""
    for with_isa, verdict in verdicts.items():
        env = {**os.environ, cp.ISA_VARIABLE: cp.ISA_WITHOUT_AMX} if with_isa else {
            k: v for k, v in os.environ.items() if k != cp.ISA_VARIABLE}
        cp._store(cp.probe_key(dtype, env), verdict)


def test_a_child_killed_by_sigill_is_a_failed_probe(cache) -> None:
    verdict = cp.probe("bfloat16", code=SIGILL_CHILD)
    assert verdict == cp.Verdict(False, signal.SIGILL, "killed by SIGILL")


def test_a_child_that_raises_is_a_failed_probe_with_its_last_line(cache) -> None:
    verdict = cp.probe("float16", code="raise RuntimeError('no half here')")
    assert not verdict.ok and verdict.signal is None and verdict.detail == "RuntimeError: no half here"


def test_the_verdict_is_cached_once_per_key(cache, tmp_path, monkeypatch) -> None:
    marker = tmp_path / "runs.txt"
    code = _counting_child(marker)
    assert cp.probe("bfloat16", code=code).ok and cp.probe("bfloat16", code=code).ok
    assert marker.read_text().count("ran") == 1  # the second answer came from the cache
    stored = json.loads((cache / cp.CACHE_FILENAME).read_text())
    assert list(stored.values()) == [{"ok": True, "signal": None, "detail": ""}]
    # each part of the key asks again: the dtype, the ISA variable, the CPU flags, torch
    assert cp.probe("float16", code=code).ok
    monkeypatch.setenv(cp.ISA_VARIABLE, cp.ISA_WITHOUT_AMX)
    assert cp.probe("bfloat16", code=code).ok
    monkeypatch.setattr(cp, "_cpu_flags", lambda: "fpu avx2 amx_tile amx_bf16")
    assert cp.probe("bfloat16", code=code).ok
    monkeypatch.setattr(torch, "__version__", "0.0.0-other")
    assert cp.probe("bfloat16", code=code).ok
    assert marker.read_text().count("ran") == 5
    assert len(json.loads((cache / cp.CACHE_FILENAME).read_text())) == 5


def test_a_failure_is_cached_too_and_a_broken_cache_is_probed_again(cache, tmp_path) -> None:
    assert not cp.probe("bfloat16", code=SIGILL_CHILD).ok
    assert not cp.probe("bfloat16", code="raise SystemExit(0)").ok  # cached: not run again
    (cache / cp.CACHE_FILENAME).write_text("{not json")
    assert cp.probe("bfloat16", code="raise SystemExit(0)").ok


def test_the_refusal_is_one_line_naming_float32_and_the_variable(cache) -> None:
    with pytest.raises(cp.CpuPrecisionError) as err:
        cp.check_cpu_dtype("bfloat16", code=SIGILL_UNLESS_ISA)
    message = str(err.value)
    assert "\n" not in message and "killed by SIGILL" in message
    assert "--dtype float32" in message
    assert "ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 before Python starts" in message


def test_the_refusal_says_when_the_variable_does_not_help(cache) -> None:
    with pytest.raises(cp.CpuPrecisionError, match="did not help either"):
        cp.check_cpu_dtype("float16", code=SIGILL_CHILD)


def test_float32_is_never_probed(cache) -> None:
    cp.check_cpu_dtype("float32", code=SIGILL_CHILD)
    assert not (cache / cp.CACHE_FILENAME).exists()


def test_a_working_cpu_keeps_bfloat16_when_asked(cache, tiny_causal_path) -> None:
    if not cp.probe("bfloat16").ok:  # the real product, in a child
        pytest.skip("this CPU cannot run bfloat16 matrix products")
    backbone = load_backbone(str(tiny_causal_path), dtype="bfloat16", device="cpu")
    assert backbone.model.dtype == torch.bfloat16


def test_auto_on_the_cpu_loads_a_bfloat16_checkpoint_in_float32(cache, tiny_causal_path,
                                                                  tmp_path) -> None:
    saved = tmp_path / "bf16-model"
    backbone = load_backbone(str(tiny_causal_path), dtype="float32", device="cpu")
    backbone.model.to(torch.bfloat16).save_pretrained(saved)
    backbone.tokenizer.save_pretrained(saved)
    assert json.loads((saved / "config.json").read_text())["dtype"] == "bfloat16"
    assert load_backbone(str(saved), device="cpu").model.dtype == torch.float32
    assert resolve_dtype("auto", "cpu") == torch.float32
    assert not (cache / cp.CACHE_FILENAME).exists()  # auto probes nothing


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_auto_on_cuda_keeps_the_checkpoints_dtype() -> None:
    assert resolve_dtype("auto", "cuda") == "auto"


def test_load_backbone_refuses_bfloat16_on_a_faulting_cpu(cache, tiny_causal_path) -> None:
    _plant({False: cp.Verdict(False, 4, "killed by SIGILL"),
            True: cp.Verdict(False, 4, "killed by SIGILL")})
    with pytest.raises(ValueError, match="use --dtype float32"):
        load_backbone(str(tiny_causal_path), dtype="bf16", device="cpu")


def _score_args(head_dir, texts, out: Path, dtype: str) -> list[str]:
    return ["score", "-s", str(texts[0]), "-t", str(texts[1]), "--head", str(head_dir),
            "--to-json", str(out), "--quiet", "--device", "cpu", "--dtype", dtype]


def test_score_in_process_refuses_in_one_line(cache, head_dir, texts, tmp_path, capsys) -> None:
    _plant({False: cp.Verdict(False, 4, "killed by SIGILL"),
            True: cp.Verdict(True)})  # the variable would help, but main(argv) cannot re-exec
    out = tmp_path / "o.jsonl"
    assert cli_main(_score_args(head_dir, texts, out, "bfloat16")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sigmoid-head score: error: this CPU cannot run")
    assert "ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16" in err[0] and not out.exists()


def test_train_refuses_bf16_autocast_on_a_faulting_cpu(cache, tiny_causal_path, tiny_pairs_jsonl,
                                                       tmp_path, capsys) -> None:
    _plant({False: cp.Verdict(False, 4, "killed by SIGILL"),
            True: cp.Verdict(False, 4, "killed by SIGILL")})
    code = cli_main(["train", "--model", str(tiny_causal_path), "--train-file",
                     str(tiny_pairs_jsonl), "--output-dir", str(tmp_path / "h"),
                     "--mixed-precision", "bf16", "--device", "cpu"])
    assert code == 2 and "cannot run bfloat16" in capsys.readouterr().err
    assert not (tmp_path / "h").exists()


def test_the_command_line_runs_again_with_the_variable(cache, head_dir, texts, tmp_path) -> None:
    if not cp.probe("bfloat16").ok:
        pytest.skip("this CPU cannot run bfloat16 matrix products even with the variable")
    # without the variable the product faults; with it, it runs (this CPU's real verdict)
    _plant({False: cp.Verdict(False, 4, "killed by SIGILL"), True: cp.Verdict(True)})
    out = tmp_path / "o.jsonl"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SIGMOID_HEAD_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-m", "sigmoid_head.cli",
                           *_score_args(head_dir, texts, out, "bfloat16")],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    assert ("sigmoid-head: this CPU faults on bfloat16 matrix products; running again with "
            "ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16") in done.stderr
    assert len(out.read_text().splitlines()) == len(texts[0].read_text().splitlines())


def test_the_polygraph_calculator_refuses_a_half_model_on_a_faulting_cpu(cache, head_dir,
                                                                          tiny_causal_path) -> None:
    pytest.importorskip("lm_polygraph", reason="needs the polygraph extra (lm-polygraph)")
    from sigmoid_head.integrations.polygraph import SigmoidHeadCalculator

    _plant({False: cp.Verdict(False, 4, "killed by SIGILL"),
            True: cp.Verdict(False, 4, "killed by SIGILL")})
    backbone = load_backbone(str(tiny_causal_path), dtype="float32", device="cpu")
    half = backbone.model.to(torch.bfloat16)  # what a user's WhiteboxModel may hold
    with pytest.raises(cp.CpuPrecisionError, match="cannot run bfloat16"):
        SigmoidHeadCalculator(head_dir)._head_model(half, backbone.tokenizer)
