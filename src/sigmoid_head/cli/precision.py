"""Before a command loads a model: make sure the half precision it asks for runs on this CPU.

A command that asks for bfloat16/float16 on the CPU (``--dtype``, or train's
``--mixed-precision bf16/fp16``) has it probed in a child process first
(:mod:`sigmoid_head.lm.cpu_precision`, cached once per machine). When the child dies but
runs with ``ONEDNN_MAX_CPU_ISA`` set, the command runs itself again with that variable
(one line on stderr says so): oneDNN reads it only before its first matrix product, so
it cannot be set from inside. Otherwise the command stops with a one-line error.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..lm.cpu_precision import (
    HALF_DTYPES,
    ISA_VARIABLE,
    ISA_WITHOUT_AMX,
    CpuPrecisionError,
    isa_rescues,
    probe,
    refusal,
)

_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "bfloat16": "bfloat16", "float16": "float16"}


def half_dtypes_asked(args: argparse.Namespace) -> list[str]:
    """The half-precision dtypes the parsed command line asks for on the CPU (maybe none)."""
    asked = {_ALIASES.get(str(getattr(args, name, "")), "") for name in ("dtype", "mixed_precision")}
    asked &= set(HALF_DTYPES)
    if not asked:
        return []
    device = getattr(args, "device", None)
    if device is None:
        import torch

        on_cpu = not torch.cuda.is_available()
    else:
        on_cpu = str(device).split(":")[0] == "cpu"
    return sorted(asked) if on_cpu else []


def _run_again_with_isa(dtype: str) -> None:
    """Replace this process by the same command with ONEDNN_MAX_CPU_ISA set (no return)."""
    print(f"sigmoid-head: this CPU faults on {dtype} matrix products; running again with "
          f"{ISA_VARIABLE}={ISA_WITHOUT_AMX}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    env = {**os.environ, ISA_VARIABLE: ISA_WITHOUT_AMX}
    os.execve(sys.executable, [sys.executable, "-m", "sigmoid_head.cli", *sys.argv[1:]], env)


def preflight(args: argparse.Namespace, *, may_reexec: bool) -> None:
    """Probe every half dtype ``args`` asks for on the CPU.

    Args:
        args: the parsed command line.
        may_reexec: this process runs the real command line (``sys.argv``), so it may
            replace itself; a caller of ``main(argv)`` inside Python gets the refusal.

    Raises:
        CpuPrecisionError: the dtype cannot run here (and re-running cannot help).
    """
    for dtype in half_dtypes_asked(args):
        verdict = probe(dtype)
        if verdict.ok:
            continue
        rescued = isa_rescues(dtype)
        if rescued and may_reexec:
            _run_again_with_isa(dtype)
        raise CpuPrecisionError(refusal(dtype, verdict, rescued))
