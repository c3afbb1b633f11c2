"""The thread policy of every command: right on a shared machine, set before torch starts.

PyTorch's CPU defaults assume the machine is its own: one OpenMP thread per core, and
threads that spin (``OMP_WAIT_POLICY`` active) between parallel regions. On a machine
whose cores other processes are using (a laptop, a shared server, a CI runner), the
spinning threads fight the others for the cores and a command runs many times slower
(issue 39: `rerank` took 528 s with the defaults and 17.6 s with one thread, same load).
The policy, applied by :func:`apply` before torch is imported:

* ``OMP_WAIT_POLICY=PASSIVE`` (threads sleep instead of spinning), unless the user set it;
* the number of threads: ``--threads N`` if given, else ``OMP_NUM_THREADS`` if the user
  set it, else :func:`default_threads`: the CPUs this process may run on
  (``os.sched_getaffinity``, and a cgroup CPU quota), less the ones the machine's other
  work keeps busy (the 1-minute load average), at least one.

From Python the same policy is applied by :func:`apply_in_python`
(``sigmoid_head.set_threads()``), and by the package itself when one of its torch-using
names (``sigmoid_head.SigmoidHeadModel``, ``score_corpus``, ...) is first looked up before
torch is imported: the user's ``OMP_NUM_THREADS`` / ``OMP_WAIT_POLICY`` still win.

The measurements behind it are ``benchmarks/threads.py`` (the commands) and
``benchmarks/threads_python.py`` (the Python API) (docs/performance.md). Torch-free.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

WAIT_POLICY = "OMP_WAIT_POLICY"
NUM_THREADS = "OMP_NUM_THREADS"
_ALSO = ("MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Set to the same count (unless the user set them): the BLAS libraries numpy may use."""


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask, capped by a cgroup v2 CPU
    quota (a container's ``cpu.max``) where there is one."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        n = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            n = min(n, max(1, math.floor(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, n)


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the system has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def default_threads(
    cpus: int | None = None, load: float | None = None, machine_cpus: int | None = None
) -> int:
    """The thread count for this process: its usable CPUs less those the rest of the
    machine keeps busy, at least 1.

    Args:
        cpus: the CPUs this process may use (default: :func:`usable_cpus`).
        load: the 1-minute load average (default: :func:`load_average`); None = idle.
        machine_cpus: the machine's CPUs, which the load is spread over (default:
            ``os.cpu_count()``).
    """
    cpus = usable_cpus() if cpus is None else cpus
    load = load_average() if load is None else load
    machine_cpus = machine_cpus or os.cpu_count() or cpus
    idle = machine_cpus - (load or 0.0)
    return max(1, min(cpus, math.floor(idle + 0.5)))


def apply(threads: int | None = None) -> dict[str, str]:
    """Set the policy for this process; returns what it set (name -> value).

    Environment variables are read by OpenMP when torch is first imported, so this runs
    before; when torch is already imported (a caller of ``sigmoid_head.cli.main`` inside
    Python, which keeps its own settings), only an explicit ``threads`` is applied, through
    ``torch.set_num_threads``, and the environment is left alone.

    Args:
        threads: ``--threads`` (None: the user's ``OMP_NUM_THREADS``, else
            :func:`default_threads`).
    """
    torch = sys.modules.get("torch")
    if torch is not None:  # too late for the environment: only the count can still change
        if threads is not None:
            torch.set_num_threads(threads)
        return {}
    chosen: dict[str, str] = {}
    if WAIT_POLICY not in os.environ:
        chosen[WAIT_POLICY] = "PASSIVE"
    if threads is None and NUM_THREADS in os.environ:
        return _set(chosen)
    count = str(threads or default_threads())
    chosen[NUM_THREADS] = count
    for name in _ALSO:
        if threads is not None or name not in os.environ:
            chosen[name] = count
    return _set(chosen)


def apply_in_python(threads: int | None = None) -> str:
    """The policy for a Python caller, before or after torch is imported; returns
    :func:`describe`'s line.

    Before torch is imported it is :func:`apply` (the environment, as every command sets
    it). After, the wait policy can no longer change (OpenMP read it when torch started),
    but the count still can: ``threads``, else the user's ``OMP_NUM_THREADS`` if set (left
    alone), else :func:`default_threads`, through ``torch.set_num_threads``.

    Args:
        threads: the thread count (None: the policy's).
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return describe(apply(threads))
    if threads is None and NUM_THREADS in os.environ:
        return describe({})
    count = threads or default_threads()
    torch.set_num_threads(count)
    return (f"threads: {count} (torch had started: set with torch.set_num_threads, its wait "
            f"policy left as it was); usable CPUs {usable_cpus()}, load average {load_average()}")


def _set(chosen: dict[str, str]) -> dict[str, str]:
    os.environ.update(chosen)
    return chosen


def describe(chosen: dict[str, str]) -> str:
    """One line for ``--verbose``: the policy in force."""
    threads = os.environ.get(NUM_THREADS, "torch's default")
    policy = os.environ.get(WAIT_POLICY, "OpenMP's default")
    who = "" if NUM_THREADS in chosen else " (set by the user)"
    return (
        f"threads: {threads}{who}, {WAIT_POLICY}={policy}; usable CPUs {usable_cpus()}, "
        f"load average {load_average()}"
    )
