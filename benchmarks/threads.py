"""The thread policy of the commands (sigmoid_head.cli.threads) against torch's defaults, side by side.

Thread settings are per process, so each variant is one ``sigmoid-head score`` run, in a
subprocess, of the same small file (KJV -> WEB candidates from the package's sample) with
the embedded SmolLM2-135M, no head (the baselines only):

* ``old``: the behaviour before the policy: torch's defaults (one thread per core,
  threads that spin between parallel regions: no ``OMP_WAIT_POLICY``);
* ``new``: the default now (``OMP_WAIT_POLICY=PASSIVE``, threads from the usable CPUs
  and the load average);
* ``passive-all``: ``--threads`` = every usable CPU, passive (the policy on an idle machine);
* ``one``: ``--threads 1``.

The variants are interleaved and repeated; the median wall time of each (model loading
included: what a user waits for) is reported with the load average before and after.
``--load N`` adds N busy-looping processes for the run (a shared machine, reproducibly;
they stop with it).

    python benchmarks/threads.py [--quick] [--rows 48] [--repeats 3] [--no-warmup] [--load 2]
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from sigmoid_head.cli.threads import default_threads, usable_cpus  # noqa: E402

DATA = ROOT / "src" / "sigmoid_head" / "bible_sample" / "para_test.jsonl.gz"
POLICY_VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
OLD = (
    "import sys, torch\n"  # torch first: the CLI then leaves the thread settings alone
    "from sigmoid_head.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _spin(stop: float) -> None:
    while time.time() < stop:
        pass


def variants(inputs: list[str]) -> dict[str, list[str]]:
    """Variant -> its command line."""
    cli = [sys.executable, "-m", "sigmoid_head.cli"]
    score = ["score", *inputs, "--quiet", "--batch-size", "16"]
    return {
        "old": [sys.executable, "-c", OLD, *score],
        "new": [*cli, *score],
        "passive-all": [*cli, *score, "--threads", str(usable_cpus())],
        "one": [*cli, *score, "--threads", "1"],
    }


def run(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed:\n{res.stderr[-2000:]}")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="8 rows, one repeat, no warm-up")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed run of each variant")
    p.add_argument("--rows", type=int, default=48, help="candidates scored per run")
    p.add_argument("--repeats", type=int, default=3, help="interleaved repetitions per variant")
    p.add_argument("--load", type=int, default=0, help="busy-looping processes during the run")
    p.add_argument("--max-minutes", type=float, default=30, help="the --load processes' limit")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.repeats = 8, 1
    env = {k: v for k, v in os.environ.items() if k not in POLICY_VARIABLES}
    env["PYTHONPATH"] = str(ROOT / "src")
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f][: args.rows]
    spinners = [
        multiprocessing.Process(
            target=_spin, args=(time.time() + 60 * args.max_minutes,), daemon=True
        )
        for _ in range(args.load)
    ]
    for s in spinners:
        s.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            src, cand = Path(tmp, "src.txt"), Path(tmp, "cand.txt")
            src.write_text("".join(r["source"].replace("\n", " ") + "\n" for r in records))
            cand.write_text("".join(r["target"].replace("\n", " ") + "\n" for r in records))
            cmds = variants(["-s", str(src), "-t", str(cand)])
            if args.load:
                time.sleep(5)  # let the load average see the spinners
            load0 = os.getloadavg()
            print(
                f"rows={len(records)} repeats={args.repeats} usable_cpus={usable_cpus()} "
                f"added_load={args.load} default_threads_now={default_threads()} "
                f"loadavg_before={load0[0]:.2f},{load0[1]:.2f},{load0[2]:.2f}",
                flush=True,
            )
            if not (args.quick or args.no_warmup):
                for cmd in cmds.values():  # warm-up: the file cache, the probe caches
                    run(cmd, env)
            times: dict[str, list[float]] = {k: [] for k in cmds}
            names = list(cmds)
            for rep in range(args.repeats):
                shift = rep % len(names)
                for name in names[shift:] + names[:shift]:
                    times[name].append(run(cmds[name], env))
                    print(
                        f"  {name}: {times[name][-1]:.1f} s (load {os.getloadavg()[0]:.2f})",
                        flush=True,
                    )
            load1 = os.getloadavg()
    finally:
        for s in spinners:
            s.terminate()
    print(f"loadavg_after={load1[0]:.2f},{load1[1]:.2f},{load1[2]:.2f}")
    import statistics

    old = statistics.median(times["old"])
    print(f"\n{'variant':12s} {'median s':>9s} {'vs old':>7s}  runs")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:12s} {med:9.1f} {old / med:6.2f}x  {', '.join(f'{t:.1f}' for t in ts)}")


if __name__ == "__main__":
    main()
