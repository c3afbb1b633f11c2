"""Data-parallel scaling: one process vs two gloo processes (torchrun), same global batch.

Both runs train the same head (``tests/test_distributed.py`` checks they agree): one
process with ``grad_accum=2`` against two processes with ``grad_accum=1``, for a fixed
number of optimizer steps on the embedded SmolLM2-135M, interleaved and repeated. The
time is that of ``train()`` inside the processes (model loading included, interpreter
start-up excluded). Scaling efficiency = t(1 process) / (2 x t(2 processes)).
On a 2-core machine two processes share the same two cores, so little gain is possible.

    python benchmarks/data_parallel.py [--quick] [--steps 4]
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import common

SCRIPT = textwrap.dedent("""
    import sys, time, torch
    from sigmoid_head.training.config import TrainConfig
    from sigmoid_head.training.loop import train
    from accelerate import PartialState
    data, out, accum, steps, bs, threads = sys.argv[1:7]
    if int(threads):
        torch.set_num_threads(int(threads))
    t0 = time.perf_counter()
    train(TrainConfig(train_file=data, output_dir=out, lr=1e-4, batch_size=int(bs),
                      grad_accum=int(accum), max_steps=int(steps), eval_every=None, patience=0,
                      progress=False, validation_fraction=0.0, seed=0, device="cpu",
                      use_chat_template=True, prompt_template=%r, max_length=192))
    if PartialState().is_main_process:
        print("TRAIN_SECONDS", time.perf_counter() - t0, flush=True)
""" % common.PROMPT)  # noqa: UP031


def run(nproc: int, data: Path, out: Path, args) -> float:
    shutil.rmtree(out, ignore_errors=True)
    accum = 2 // nproc
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           str(out.parent / "run.py"), str(data), str(out), str(accum), str(args.steps),
           str(args.batch_size), str(args.threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return float(done.stdout.split("TRAIN_SECONDS")[-1].split()[0])


def main() -> None:
    p = common.parser(__doc__)
    p.add_argument("--steps", type=int, default=4)
    args = p.parse_args()
    if args.quick:
        args.steps, args.repeats, args.batch_size = 1, 1, 4
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "run.py").write_text(SCRIPT)
        data = tmp / "train.jsonl.gz"
        n = 2 * args.steps * args.batch_size
        with gzip.open(common.DATA, "rt") as f, gzip.open(data, "wt") as g:
            for _, line in zip(range(n), f, strict=False):
                g.write(line)
        times = {1: [], 2: []}
        for _ in range(args.repeats):
            for nproc in (1, 2):
                times[nproc].append(run(nproc, data, tmp / f"out{nproc}", args))
    t1, t2 = common.median(times[1]), common.median(times[2])
    print(f"threads per process={args.threads or 'default'} steps={args.steps} "
          f"global batch={2 * args.batch_size} sequences repeats={args.repeats}")
    print(f"1 process  (grad_accum 2): {t1:7.2f} s")
    print(f"2 processes (gloo)       : {t2:7.2f} s   speed-up {t1 / t2:.2f}x, "
          f"scaling efficiency {t1 / (2 * t2):.0%}")


if __name__ == "__main__":
    main()
