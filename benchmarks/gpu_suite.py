"""The benchmarks of ``gpu.sh``, run in one process (imports and data loading once).

Sections: step_ops.py, then per model train_throughput.py --memory, scoring.py,
generation.py, rerank.py and rauq_overhead.py --generate, each called through its
``main(argv)``; then train_throughput.py and scoring.py again with the frozen body under
``torch.compile`` (``--compile default``; ``reduce-overhead`` is refused, see common.py) on
the ``--compile-models``, right after that model's eager sections. A section that fails prints its traceback and the suite
goes on; one that would start after ``--deadline`` seconds is skipped (named in the summary),
so a time-boxed device run always ends with every finished figure. The exit status is 0
only when step_ops' verdict passed (operator ratio <= 1.1, no syncs inside the step) and no
section failed.

``--only`` keeps the named scripts (``--only train_throughput,scoring``: issue 60's table;
step_ops runs only when named then).

    python benchmarks/gpu_suite.py [--device cuda] [--tiny] [--models smollm2-random,olmo2-1b]
        [--compile-models smollm2-random] [--deadline 480] [--only train_throughput,scoring]
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

import generation
import rauq_overhead
import rerank
import scoring
import step_ops
import torch
import train_throughput

MODELS = ("smollm2-random", "olmo2-1b", "olmo2-7b")
BATCH_SIZE = {"smollm2-random": 64, "olmo2-1b": 32, "olmo2-7b": 16, "smollm2": 16, "tiny": 8}
"""Sequences per micro-batch on CUDA: enough to occupy the card at each size (16 on CPU)."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--tiny", action="store_true", help="a dry run: one tiny model, quick modes")
    p.add_argument("--models", help=f"comma-separated (default: {','.join(MODELS)}; tiny)")
    p.add_argument("--compile-models", default=None,
                   help="models measured again under torch.compile (default on CUDA: the "
                        "second of --models, else the first; none on CPU; 'none' for none)")
    p.add_argument("--deadline", type=float, default=0,
                   help="skip sections that would start after this many seconds (0: never)")
    p.add_argument("--only", help="comma-separated scripts to run, without .py (default: all)")
    args = p.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None

    def wanted(script: str) -> bool:
        return only is None or script.removesuffix(".py") in only

    start = time.monotonic()
    cuda = args.device.startswith("cuda")
    if args.tiny:
        models, flags = ["tiny"], ["--quick", "--examples", "40", "--threads", "1"]
        step_flags = ["--quick", "--threads", "1"]
    else:
        models, flags, step_flags = list(MODELS), ["--repeats", "3", "--batches", "6"], []
    if args.models:
        models = args.models.split(",")
    if args.compile_models is None:
        compile_models = models[1:2] or models[:1] if cuda and not args.tiny else []
    else:
        compile_models = [] if args.compile_models == "none" else args.compile_models.split(",")
    device = ["--device", args.device]
    failed: list[str] = []
    skipped: list[str] = []

    def section(name: str, fn, argv: list[str]) -> int | None:
        title = f"{name} {' '.join(argv)}"
        if args.deadline and time.monotonic() - start > args.deadline:
            skipped.append(title)
            print(f"\n### {title}: skipped (past the {args.deadline:.0f} s deadline)", flush=True)
            return None
        print(f"\n### {title}  [t={time.monotonic() - start:.0f} s]", flush=True)
        try:
            return fn(argv)
        except Exception:  # one broken section must not cost the figures of the others
            traceback.print_exc()
            sys.stdout.flush()
            failed.append(title)
            return None
        finally:
            if cuda:
                torch.cuda.empty_cache()

    status = section("step_ops.py", step_ops.main, device + step_flags) if wanted("step_ops") else None
    runs = [("train_throughput.py", train_throughput.main, ["--memory", "--memory-in-process"]),
            ("scoring.py", scoring.main, []), ("generation.py", generation.main, []),
            ("rerank.py", rerank.main, []), ("rauq_overhead.py", rauq_overhead.main, ["--generate"])]
    runs = [r for r in runs if wanted(r[0])]
    modes = ["default"]  # reduce-overhead is refused (common.COMPILE_REFUSED)
    for m in models + [m for m in compile_models if m not in models]:
        size = ["--batch-size", str(BATCH_SIZE.get(m, 16))] if cuda else []
        if m in models:
            for name, fn, extra in runs:
                section(name, fn, ["--model", m] + device + flags + size + extra)
        if m in compile_models:  # right after the model's eager figures
            for mode in modes:
                for name, fn in (("train_throughput.py", train_throughput.main),
                                 ("scoring.py", scoring.main)):
                    if wanted(name):
                        section(name, fn, ["--model", m] + device + flags + size + ["--compile", mode])
    verdict = "not run" if not wanted("step_ops") else "PASS" if status == 0 else "FAIL"
    print(f"\nstep_ops verdict: {verdict}", flush=True)
    print(f"sections failed: {len(failed)}" + "".join(f"\n  {t}" for t in failed))
    print(f"sections skipped (deadline): {len(skipped)}" + "".join(f"\n  {t}" for t in skipped))
    print(f"suite wall time: {time.monotonic() - start:.0f} s", flush=True)
    return 0 if (status == 0 or not wanted("step_ops")) and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
