"""Half precision on the CPU without dying: resolve ``dtype="auto"`` and probe bf16/fp16.

Some x86 machines (virtual machines in particular) list ``avx512_bf16``, ``amx_bf16`` and
``amx_tile`` among their CPU flags but fault when an AMX instruction runs. oneDNN, which
PyTorch uses for CPU matrix products, trusts the flags, so the first bf16 matrix product
of moderate size kills the whole process with SIGILL: no exception, no message.
``ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16`` set before the first product keeps oneDNN off AMX.

Two rules follow, both applied by :func:`sigmoid_head.lm.backbone.load_backbone` (so by every
command, :meth:`SigmoidHeadModel.from_pretrained` and the LM-Polygraph plugin's loader):

* ``dtype="auto"`` on the CPU means float32, whatever the checkpoint stores. On CPUs
  without native bf16 units half precision is emulated and several times slower
  (docs/performance.md, measured by ``benchmarks/cpu_dtype.py``), and float32 never
  reaches the faulting instructions. On CUDA ``auto`` keeps the checkpoint's dtype.
* An explicit bfloat16/float16 on the CPU is first tried in a child process
  (:func:`probe`), once per machine: the verdict is cached under the sigmoid-head cache,
  keyed on the torch version, the CPU flags, the dtype and ``ONEDNN_MAX_CPU_ISA``. When
  the child dies, the request is refused with one line (:class:`CpuPrecisionError`)
  naming ``--dtype float32`` and the variable; the command line re-runs itself with the
  variable set instead, when the probe shows that this is enough (:func:`cli_preflight`).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from ..embedded.default_model import cache_dir
from ..safe.files import write_atomic

ISA_VARIABLE = "ONEDNN_MAX_CPU_ISA"
ISA_WITHOUT_AMX = "AVX512_CORE_BF16"
HALF_DTYPES = ("bfloat16", "float16")
PROBE_TIMEOUT_S = 300.0
CACHE_FILENAME = "cpu_precision.json"

# The child's work: a matrix product of the size that faults on the machines described above.
PROBE_CODE = (
    "import sys, torch\n"
    "dtype = getattr(torch, sys.argv[1])\n"
    "layer = torch.nn.Linear(512, 512).to(dtype)\n"
    "out = layer(torch.randn(64, 512, dtype=dtype))\n"
    "assert torch.isfinite(out.float()).all()\n"
)


class CpuPrecisionError(ValueError):
    """Half precision was asked for on a CPU that cannot run it (a one-line user error)."""


@dataclass(frozen=True)
class Verdict:
    """What the probe child did.

    Attributes:
        ok: the child ran the matrix product and exited 0.
        signal: the signal that killed it (e.g. 4 for SIGILL), if one did.
        detail: one line: the signal's name, the last line the child printed, or "".
    """

    ok: bool
    signal: int | None = None
    detail: str = ""


def _cpu_flags() -> str:
    """The CPU flags line (Linux), else the processor name: part of the cache key."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return f"{platform.machine()} {platform.processor()}"


def probe_key(dtype: str, env: dict[str, str] | None = None) -> str:
    """The cache key of a probe: torch version, CPU flags, dtype and ONEDNN_MAX_CPU_ISA."""
    import torch

    env = os.environ if env is None else env
    parts = [torch.__version__, _cpu_flags(), dtype, env.get(ISA_VARIABLE, "")]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _cache_path() -> Path:
    return cache_dir() / CACHE_FILENAME


def _read_cache() -> dict[str, dict]:
    try:
        from ..safe.json_io import read_json

        data = read_json(_cache_path())  # nested too deep included: start afresh
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _cached(key: str) -> Verdict | None:
    entry = _read_cache().get(key)
    if not isinstance(entry, dict) or not isinstance(entry.get("ok"), bool):
        return None
    sig = entry.get("signal")
    return Verdict(entry["ok"], sig if isinstance(sig, int) else None, str(entry.get("detail", "")))


def _store(key: str, verdict: Verdict) -> None:
    """Remember a verdict; a cache that cannot be written only costs a probe next time."""
    data = _read_cache()
    data[key] = asdict(verdict)
    try:
        _cache_path().parent.mkdir(parents=True, exist_ok=True)
        write_atomic(_cache_path(), json.dumps(data, indent=1, sort_keys=True))
    except OSError:
        pass


def _run_child(dtype: str, env: dict[str, str], code: str) -> Verdict:
    """Run ``code`` with argument ``dtype`` in a fresh interpreter; how did it end?"""
    try:
        done = subprocess.run([sys.executable, "-c", code, dtype], env=env, capture_output=True,
                              text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return Verdict(False, None, f"the probe did not finish in {PROBE_TIMEOUT_S:.0f} s")
    if done.returncode == 0:
        return Verdict(True)
    if done.returncode < 0:
        sig = -done.returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return Verdict(False, sig, f"killed by {name}")
    last = next((ln for ln in reversed(done.stderr.splitlines()) if ln.strip()), "")
    return Verdict(False, None, last.strip() or f"exit code {done.returncode}")


def probe(dtype: str, env: dict[str, str] | None = None, *, code: str = PROBE_CODE,
          use_cache: bool = True) -> Verdict:
    """Can a ``dtype`` matrix product run on this CPU? Asked of a child process, once.

    Args:
        dtype: "bfloat16" or "float16".
        env: the child's environment (default: this process's).
        code: the child's program (``sys.argv[1]`` is the dtype); tests pass one that kills
            itself to stand in for a faulting CPU.
        use_cache: read and write the verdict cache (keyed by :func:`probe_key`).

    Returns:
        The child's :class:`Verdict`.
    """
    env = dict(os.environ if env is None else env)
    key = probe_key(dtype, env)
    if use_cache and (known := _cached(key)) is not None:
        return known
    verdict = _run_child(dtype, env, code)
    if use_cache:
        _store(key, verdict)
    return verdict


def isa_rescues(dtype: str, *, code: str = PROBE_CODE, use_cache: bool = True) -> bool:
    """Does the product run once ``ONEDNN_MAX_CPU_ISA`` keeps oneDNN off AMX?"""
    if os.environ.get(ISA_VARIABLE):
        return False  # already set (perhaps to this very value): nothing more to try
    env = {**os.environ, ISA_VARIABLE: ISA_WITHOUT_AMX}
    return probe(dtype, env, code=code, use_cache=use_cache).ok


def refusal(dtype: str, verdict: Verdict, rescued: bool) -> str:
    """The one-line refusal for ``dtype`` on this CPU."""
    line = (f"this CPU cannot run {dtype} matrix products (a probe process: {verdict.detail}); "
            "use --dtype float32 (dtype='float32')")
    if rescued:
        return line + f", or set {ISA_VARIABLE}={ISA_WITHOUT_AMX} before Python starts"
    if not os.environ.get(ISA_VARIABLE):
        return line + f" ({ISA_VARIABLE}={ISA_WITHOUT_AMX} did not help either)"
    return line + f" ({ISA_VARIABLE} is set to {os.environ[ISA_VARIABLE]!r})"


def check_cpu_dtype(dtype: str, *, code: str = PROBE_CODE) -> None:
    """Raise :class:`CpuPrecisionError` unless ``dtype`` matrix products run on this CPU.

    float32 is never probed; bfloat16 and float16 are probed once per machine (cached).
    """
    if dtype not in HALF_DTYPES:
        return
    verdict = probe(dtype, code=code)
    if not verdict.ok:
        raise CpuPrecisionError(refusal(dtype, verdict, isa_rescues(dtype, code=code)))
