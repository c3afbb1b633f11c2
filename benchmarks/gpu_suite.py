"""The benchmarks of ``gpu.sh``, run in one process (imports and data loading once).

Sections: step_ops.py, then per model train_throughput.py --memory, scoring.py,
generation.py and rauq_overhead.py --generate, each called through its ``main(argv)``. The exit status is step_ops'
verdict (0 = operator ratio <= 1.1 and no syncs inside the step).

    python benchmarks/gpu_suite.py [--device cuda] [--tiny]
"""

from __future__ import annotations

import argparse
import sys

import generation
import rauq_overhead
import scoring
import step_ops
import torch
import train_throughput

MODELS = ("olmo2-1b", "olmo2-7b", "smollm2")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--tiny", action="store_true", help="a dry run: one tiny model, quick modes")
    args = p.parse_args()
    if args.tiny:
        models, flags = ["tiny"], ["--quick", "--examples", "40", "--threads", "1"]
        step_flags = ["--quick", "--threads", "1"]
    else:
        models, flags, step_flags = list(MODELS), ["--repeats", "3", "--batches", "6"], []
    device = ["--device", args.device]

    def section(name: str, argv: list[str]) -> None:
        print(f"\n### {name} {' '.join(argv)}", flush=True)

    section("step_ops.py", device + step_flags)
    status = step_ops.main(device + step_flags)
    for m in models:
        model = ["--model", m]
        runs = [("train_throughput.py", train_throughput.main, ["--memory", "--memory-in-process"]),
                ("scoring.py", scoring.main, []), ("generation.py", generation.main, []),
                ("rauq_overhead.py", rauq_overhead.main, ["--generate"])]
        for name, fn, extra in runs:
            section(name, model + device + flags + extra)
            fn(model + device + flags + extra)
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
    print(f"\nstep_ops verdict: {'PASS' if status == 0 else 'FAIL'}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
