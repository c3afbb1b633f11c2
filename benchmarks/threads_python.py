"""The thread policy from Python (``import sigmoid_head``) against torch's defaults, side by side.

Thread settings are per process, so each variant is one fresh Python process that loads
the embedded SmolLM2-135M with a new head (``SigmoidHeadModel.from_base()``) and scores
the same rows of the package's KJV -> WEB sample with ``score_corpus``:

* ``defaults``: torch imported before any name of sigmoid_head is looked up, so the
  package leaves torch's defaults alone (one thread per core, spinning): what the Python
  API did before it applied the policy;
* ``policy``: the package's own lookup applies the commands' policy (passive, the usable
  CPUs less the load, at least one);
* ``one``: ``sigmoid_head.set_threads(1)`` first.

The variants are interleaved and repeated; the median of each of the scoring call alone
and of the whole process (model loading included) is printed, with the load average
before and after and the thread count each variant ran with.

    python benchmarks/threads_python.py [--rows 4] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICY_VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
CHILD = """
import gzip, json, os, sys, time
variant, rows, data = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if variant == "defaults":
    import torch  # first: the package's lookups then leave the thread settings alone
import sigmoid_head
if variant == "one":
    sigmoid_head.set_threads(1)
from sigmoid_head import CorpusConfig, SigmoidHeadModel, score_corpus
import torch
with gzip.open(data, "rt", encoding="utf-8") as f:
    records = [json.loads(line) for line in f][:rows]
records = [{"source": r["source"], "candidate": r["target"]} for r in records]
model = SigmoidHeadModel.from_base(device="cpu")
t0 = time.perf_counter()
score_corpus(model, records, CorpusConfig(quiet=True))
print(json.dumps({"score_s": time.perf_counter() - t0, "threads": torch.get_num_threads(),
                  "wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset")}))
"""
VARIANTS = ("defaults", "policy", "one")


def run(variant: str, rows: int, env: dict[str, str]) -> dict:
    """One fresh process of ``variant``: its scoring time, wall time and thread settings."""
    data = ROOT / "src" / "sigmoid_head" / "bible_sample" / "para_test.jsonl.gz"
    t0 = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", CHILD, variant, str(rows), str(data)],
        env=env,
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{res.stderr[-2000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return {**out, "wall_s": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=4, help="rows scored per process")
    p.add_argument("--repeats", type=int, default=5, help="interleaved repetitions per variant")
    args = p.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k not in POLICY_VARIABLES}
    env["PYTHONPATH"] = str(ROOT / "src")
    load0 = os.getloadavg()
    print(
        f"rows={args.rows} repeats={args.repeats} cpus={os.cpu_count()} "
        f"loadavg_before={load0[0]:.2f},{load0[1]:.2f},{load0[2]:.2f}",
        flush=True,
    )
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for rep in range(args.repeats):
        shift = rep % len(VARIANTS)
        for v in VARIANTS[shift:] + VARIANTS[:shift]:
            runs[v].append(run(v, args.rows, env))
            r = runs[v][-1]
            print(
                f"  {v}: score {r['score_s']:.2f} s, process {r['wall_s']:.1f} s, "
                f"{r['threads']} threads, {r['wait_policy']} (load {os.getloadavg()[0]:.2f})",
                flush=True,
            )
    load1 = os.getloadavg()
    print(f"loadavg_after={load1[0]:.2f},{load1[1]:.2f},{load1[2]:.2f}\n")
    base = statistics.median(r["score_s"] for r in runs["defaults"])
    print(
        f"{'variant':9s} {'threads':>7s} {'wait':>8s} {'score s':>8s} {'vs defaults':>11s} "
        f"{'process s':>9s}  score runs"
    )
    for v, rs in runs.items():
        med = statistics.median(r["score_s"] for r in rs)
        wall = statistics.median(r["wall_s"] for r in rs)
        each = ", ".join(f"{r['score_s']:.2f}" for r in rs)
        print(
            f"{v:9s} {rs[0]['threads']:7d} {rs[0]['wait_policy']:>8s} {med:8.2f} "
            f"{base / med:10.2f}x {wall:9.1f}  {each}"
        )


if __name__ == "__main__":
    main()
