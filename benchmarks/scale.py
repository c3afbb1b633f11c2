"""Scale (issue 16): training data through ``datasets`` and corpus-size ``score``, tiny model.

Synthetic Spanish-ish -> English-ish pairs (``tests/conftest.make_pairs``) and the tiny
random Llama of the test suite (hidden 32, 2 layers, vocabulary ~1,000): the figures are
those of the data path, the loop and the scoring driver, not of a real model's forward.

Memory is read from ``/proc/self/status`` in the measured process: the kernel's peak RSS
(VmHWM), and the peaks of its two parts sampled every 20 ms by a thread: RssAnon (private
memory: Python objects, numpy arrays, torch tensors) and RssFile (resident pages of
mapped files: the shared libraries, ~190 MiB here, and the memory-mapped Arrow files of
``datasets``; the package gives their pages back as it reads, ``data/mapped_pages.py``).
Pages of a file mapping that were only read are clean page cache, which the kernel drops
under memory pressure and reads again when needed; the table says how much of the Arrow
mappings was resident, and how much of it dirty, after the pass over every label
(``/proc/self/smaps``), and the machine's load average (1 minute) after each size.

``train``: for each size, a fresh process (1) tokenizes the JSONL with
``data_engine=datasets`` (``num_proc`` workers; examples/s) and counts the target tokens
(a pass over every label), then (2) runs ``train()`` for ``--steps`` optimizer steps on
the Arrow examples (it reuses the Arrow files of step 1). Memory peaks are reported for
the whole process and for ``train()`` alone; the largest worker's RSS from
``RUSAGE_CHILDREN``. ``--engine memory`` runs the in-memory list path for comparison.
``--speed-repeats N`` then times train()'s steps with the pages of the Arrow files given
back as the package does, kept mapped, and read one example per call (see READ_PATHS).

``score``: ``sigmoid-head score -s -t --to-json`` on N candidates in a fresh process (or
``--processes 2``: under ``torchrun``, one thread each): output lines, wall time,
candidates/s (the CLI's own figure), memory of the process that writes.

``parallel``: for ``--processes 2 4 8``, how evenly the windows' batches fall on the
processes (computed: each batch costs its padded tokens, the slowest process of each
window sets its pace), and the rows/s process 0's writer sustains (measured, per-row
fsync against one fsync per window): the inputs to what N devices would do.

    python benchmarks/scale.py train --sizes 10000 100000 1000000 [--engine memory]
    python benchmarks/scale.py score --sizes 10000 100000 [--processes 1 2]
    python benchmarks/scale.py parallel --sizes 100000 --processes 2 4 8
    python benchmarks/scale.py train --quick      # 2,000 and 20,000 examples, 5 steps
    python benchmarks/scale.py train --sizes 1000000 --steps 100 --speed-repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import MemoryPeaks, mapped_files_mib, memory_mib  # noqa: E402

MAX_LENGTH, BATCH = 64, 32


def build_fixtures(tmp: Path) -> tuple[Path, Path]:
    """The tiny model (+ tokenizer) and a fresh head on it."""
    from conftest import build_tiny_causal, build_tiny_tokenizer

    from sigmoid_head.head.model import SigmoidHeadModel

    tok = build_tiny_tokenizer(tmp / "tok")
    build_tiny_causal(tok).save_pretrained(tmp / "model")
    tok.save_pretrained(tmp / "model")
    SigmoidHeadModel.from_base(str(tmp / "model"), device="cpu").save_pretrained(tmp / "head")
    return tmp / "model", tmp / "head"


def write_pairs(path: Path, n: int, seed: int = 1) -> None:
    """``n`` pairs: 5,000 distinct ones, then random repeats of them."""
    from conftest import make_pairs

    base = make_pairs(5000, seed=seed)
    rng = random.Random(n)
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps(base[rng.randrange(len(base))] if i >= len(base) else base[i],
                               ensure_ascii=False) + "\n")


def _peaks(meter: MemoryPeaks) -> dict:
    return {f"peak_{k}_mib": v for k, v in meter.peak.items()}


def child_train(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoTokenizer

    from sigmoid_head.data.datasets_io import load_examples_arrow
    from sigmoid_head.training.config import TrainConfig
    from sigmoid_head.training.loop import train

    torch.set_num_threads(1)
    meter = MemoryPeaks()
    out, result = Path(args.out), {}
    kw = dict(train_file=args.data, output_dir=str(out / "run"), model=args.model, lr=1e-2,
              batch_size=BATCH, max_steps=args.steps, eval_every=None, patience=0,
              progress=False, validation_fraction=0.001, max_validation_examples=64, seed=0,
              device="cpu", data_engine=args.engine, num_proc=args.num_proc or None,
              data_cache_dir=str(out / "data_cache"), max_length=MAX_LENGTH)
    if args.engine != "memory":
        t0 = time.perf_counter()
        tok = AutoTokenizer.from_pretrained(args.model)
        examples = load_examples_arrow(args.data, tok, is_encoder_decoder=False,
                                       num_proc=args.num_proc or None,
                                       cache_dir=kw["data_cache_dir"], max_length=MAX_LENGTH,
                                       prompt_template="{source}\n", task="auto",
                                       use_chat_template=False)
        result["tokenize_s"] = time.perf_counter() - t0
        examples.token_counts(len(tok))  # touches every label of the Arrow files
        result["arrow_mapped_mib"] = mapped_files_mib(".arrow")
        del examples
    result["before_train"] = _peaks(meter)
    meter.reset()
    t1 = time.perf_counter()
    train(TrainConfig(**kw))  # datasets engine: reuses the Arrow files written above
    result["train_s"] = time.perf_counter() - t1
    result["train"] = _peaks(meter)
    meter.stop()
    result["hwm_mib"] = memory_mib()["hwm"]
    result["largest_worker_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if args.speed_repeats and args.engine != "memory":
        result["ms_per_step"] = _step_times(kw, out, args.speed_repeats)
    print("RESULT " + json.dumps(result), flush=True)


READ_PATHS = ("released", "kept", "per example")
"""How ``--speed-repeats`` reads the Arrow examples: as the package does (a datasets call
per group of 16 rows, the pages given back after each), the same with every page kept
mapped, and one call per example with every page kept mapped (the read path before the
pages were given back)."""


def _step_times(kw: dict, out: Path, repeats: int) -> dict:
    """ms per optimizer step of ``train()`` (its steps only, not its set-up) for each of
    READ_PATHS, run in turn ``repeats`` times (the order rotating); the medians."""
    import statistics

    from sigmoid_head.data import mapped_pages
    from sigmoid_head.training import loop, step
    from sigmoid_head.training.config import TrainConfig

    release, at, run_epochs = mapped_pages.MappedPages.release, step.examples_at, loop._run_epochs
    seconds = {}

    def timed(run):
        t0 = time.perf_counter()
        run_epochs(run)
        seconds["last"] = time.perf_counter() - t0

    times = {k: [] for k in READ_PATHS}
    loop._run_epochs = timed
    try:
        for r in range(repeats):
            for path in READ_PATHS[r % 3 :] + READ_PATHS[: r % 3]:
                mapped_pages.MappedPages.release = (release if path == "released"
                                                     else lambda self: 0)
                step.examples_at = ((lambda ex, idx: [ex[i] for i in idx])
                                    if path == "per example" else at)
                out_dir = out / f"speed_{r}_{path.replace(' ', '_')}"
                loop.train(TrainConfig(**{**kw, "output_dir": str(out_dir)}))
                times[path].append(1000 * seconds["last"] / kw["max_steps"])
    finally:
        mapped_pages.MappedPages.release, step.examples_at = release, at
        loop._run_epochs = run_epochs
    return {k: statistics.median(v) for k, v in times.items()}


def _run_child(cmd: list[str]) -> dict:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        print(done.stderr[-3000:])
        raise SystemExit(1)
    return json.loads(done.stdout.split("RESULT ")[-1])


def run_train(args: argparse.Namespace, tmp: Path, model: Path) -> None:
    print(f"engine={args.engine} num_proc={args.num_proc} steps={args.steps} batch={BATCH} "
          f"max_length={MAX_LENGTH} threads=1", flush=True)
    print("| examples | tokenize s | examples/s | train() s | peak RSS (VmHWM) MiB | "
          "peak anon MiB: process / train() | peak file-backed MiB: process / train() | "
          "Arrow mapped after the label pass: resident / dirty MiB | largest worker MiB | "
          "load avg |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    speed = []
    for n in args.sizes:
        data = tmp / f"pairs_{n}.jsonl"
        write_pairs(data, n)
        r = _run_child([sys.executable, __file__, "_child_train", "--data", str(data),
                        "--model", str(model), "--out", str(tmp / f"out_{n}_{args.engine}"),
                        "--steps", str(args.steps), "--engine", args.engine,
                        "--num-proc", str(args.num_proc),
                        "--speed-repeats", str(args.speed_repeats)])
        before, during = r["before_train"], r["train"]
        tok_s = r.get("tokenize_s", float("nan"))
        mapped = r.get("arrow_mapped_mib", {"rss": float("nan"), "dirty": float("nan")})
        anon = max(before["peak_anon_mib"], during["peak_anon_mib"])
        file = max(before["peak_file_mib"], during["peak_file_mib"])
        print(f"| {n:,} | {tok_s:.1f} | {n / tok_s:,.0f} | {r['train_s']:.1f} | "
              f"{r['hwm_mib']:.0f} | {anon:.0f} / {during['peak_anon_mib']:.0f} | "
              f"{file:.0f} / {during['peak_file_mib']:.0f} | {mapped['rss']:.0f} / "
              f"{mapped['dirty']:.0f} | {r['largest_worker_mib']:.0f} | "
              f"{os.getloadavg()[0]:.1f} |", flush=True)
        if "ms_per_step" in r:
            speed.append((n, r["ms_per_step"]))
        data.unlink()
    if speed:
        print(f"\nms per optimizer step (train()'s steps; medians of {args.speed_repeats}, "
              "interleaved):")
        print("| examples | " + " | ".join(READ_PATHS) + " |")
        print("|---:|" + "---:|" * len(READ_PATHS))
        for n, ms in speed:
            print(f"| {n:,} | " + " | ".join(f"{ms[k]:.1f}" for k in READ_PATHS) + " |")
    print("train() s: set-up (the model, the Arrow examples, the length and token-count "
          "passes) and the steps; memory engine: tokenization is inside train().")


def child_score(args: argparse.Namespace) -> None:
    import torch

    from sigmoid_head.cli import main

    torch.set_num_threads(1)
    meter = MemoryPeaks()
    rc = main(args.cli)
    peaks = meter.stop()
    if int(os.environ.get("RANK", "0")) == 0:  # under torchrun: the process that writes
        print("RESULT " + json.dumps({"rc": rc, "hwm_mib": memory_mib()["hwm"], **peaks}),
              flush=True)


def write_candidates(src: Path, mt: Path, n: int) -> None:
    """``n`` source/candidate lines drawn from 5,000 synthetic pairs."""
    from conftest import make_pairs

    base = make_pairs(5000, seed=2)
    rng = random.Random(n)
    with src.open("w") as s, mt.open("w") as t:
        for _ in range(n):
            p = base[rng.randrange(len(base))]
            s.write(p["source"] + "\n")
            t.write(p["target"] + "\n")


def run_score(args: argparse.Namespace, tmp: Path, head: Path) -> None:
    print(f"batch size={args.batch_size} threads=1 per process device={args.device}", flush=True)
    print("| candidates | processes | output lines | wall s | candidates/s (the CLI's figure) | "
          "peak RSS (VmHWM) MiB | peak anon MiB | peak file-backed MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        src, mt = tmp / f"src_{n}.txt", tmp / f"mt_{n}.txt"
        write_candidates(src, mt, n)
        for procs in args.processes:
            out = tmp / f"scores_{n}_{procs}.jsonl"
            cli = ["score", "-s", str(src), "-t", str(mt), "--head", str(head), "--to-json",
                   str(out), "--quiet", "--batch-size", str(args.batch_size), "--device",
                   args.device]
            launcher = [sys.executable]
            if procs > 1:
                launcher += ["-m", "torch.distributed.run", "--nproc_per_node", str(procs)]
            t0 = time.perf_counter()
            done = subprocess.run([*launcher, __file__, "_child_score", "--", *cli],
                                  capture_output=True, text=True,
                                  env={**os.environ, "OMP_NUM_THREADS": "1"})
            wall = time.perf_counter() - t0
            if done.returncode:
                print(done.stderr[-3000:])
                raise SystemExit(1)
            r = json.loads(done.stdout.split("RESULT ")[-1].splitlines()[0])
            lines = sum(1 for _ in out.open())
            rate = done.stdout.split(" new outputs in ")[1].split("(")[1].split("/s")[0]
            print(f"| {n:,} | {procs} | {lines:,} | {wall:.1f} | {rate} | {r['hwm_mib']:.0f} | "
                  f"{r['anon']:.0f} | {r['file']:.0f} |", flush=True)
            out.unlink()
        for p in (src, mt):
            p.unlink()


def run_parallel(args: argparse.Namespace, tmp: Path, head: Path) -> None:
    """What N processes would get from the windows: measured inputs, computed balance."""
    from transformers import AutoTokenizer

    from sigmoid_head.safe.resumable_jsonl import ResumableJsonlWriter
    from sigmoid_head.scoring.distributed import DEFAULT_WINDOW_BATCHES, window_batches

    n, bs = args.sizes[0], args.batch_size
    src, mt = tmp / "src.txt", tmp / "mt.txt"
    write_candidates(src, mt, n)
    tok = AutoTokenizer.from_pretrained(str(tmp / "model"))
    recs = [{"source": s, "candidate": c} for s, c in
            zip(src.read_text().splitlines(), mt.read_text().splitlines(), strict=True)]
    window = DEFAULT_WINDOW_BATCHES * bs
    print(f"{n:,} candidates, batch size {bs}, windows of {window} inputs; cost of a batch = "
          "its padded tokens (sequences x longest prompt + candidate)")
    print("| processes | batches per process per window | balance: mean / slowest process "
          "(computed) |")
    print("|---:|---:|---:|")
    for world in args.processes:
        busy = slowest = 0
        for w0 in range(0, n, window):
            chunk = recs[w0 : w0 + window]
            batches = window_batches(chunk, bs)
            cost = [len(b) * max(len(tok(r["source"] + "\n" + r["candidate"])["input_ids"])
                                 for r in (chunk[i] for i in b)) for b in batches]
            per = [sum(cost[b] for b in range(p, len(cost), world)) for p in range(world)]
            busy, slowest = busy + sum(per), slowest + max(per)
        print(f"| {world} | {DEFAULT_WINDOW_BATCHES / world:g} | "
              f"{busy / (world * slowest):.3f} |", flush=True)
    rows = [json.loads(x) for x in _sample_rows(tmp, head, src, mt, bs)]
    print(f"\nprocess 0's writer, measured (rows as `score` writes them, "
          f"{len(rows)} distinct, repeated):")
    print("| fsync | rows/s |")
    print("|---|---:|")
    for each in (True, False):
        out, total = tmp / f"w_{each}.jsonl", 20_000 if not each else 2_000
        data = [rows[i % len(rows)] for i in range(total)]
        t0 = time.perf_counter()
        with ResumableJsonlWriter(out, key="bench", total=total) as w:
            step = 1 if each else window
            for i in range(0, total, step):
                w.write_many(data[i : i + step], each=each)
        rate = total / (time.perf_counter() - t0)
        print(f"| {'per row' if each else f'per window of {window} rows'} | {rate:,.0f} |",
              flush=True)
        out.unlink()


def _sample_rows(tmp: Path, head: Path, src: Path, mt: Path, bs: int) -> list[str]:
    """Real output rows: ``score`` on the first 256 candidates."""
    few_src, few_mt, out = tmp / "few_src.txt", tmp / "few_mt.txt", tmp / "few.jsonl"
    few_src.write_text("".join(src.read_text().splitlines(keepends=True)[:256]))
    few_mt.write_text("".join(mt.read_text().splitlines(keepends=True)[:256]))
    from sigmoid_head.cli import main

    main(["score", "-s", str(few_src), "-t", str(few_mt), "--head", str(head), "--to-json",
          str(out), "--quiet", "--batch-size", str(bs), "--device", "cpu"])
    return out.read_text().splitlines()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=["train", "score", "parallel", "_child_train",
                                    "_child_score"])
    p.add_argument("cli", nargs="*", help=argparse.SUPPRESS)
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--quick", action="store_true", help="2,000 and 20,000 examples, 5 steps")
    p.add_argument("--engine", default="datasets", choices=["datasets", "streaming", "memory"])
    p.add_argument("--num-proc", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--speed-repeats", type=int, default=0,
                   help="train: after the measured run, time train()'s steps with the Arrow "
                        "pages given back and kept, this many times each (interleaved)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--device", default="cpu", help="score: cpu or cuda (one device per process)")
    p.add_argument("--processes", type=int, nargs="+", default=[1],
                   help="score: torchrun processes per run; parallel: process counts")
    p.add_argument("--data"), p.add_argument("--model"), p.add_argument("--out")
    args = p.parse_args()
    if args.what == "_child_train":
        return child_train(args)
    if args.what == "_child_score":
        return child_score(args)
    if args.quick:
        args.sizes, args.steps = [2_000, 20_000], 5
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model, head = build_fixtures(tmp)
        if args.what == "train":
            run_train(args, tmp, model)
        elif args.what == "score":
            run_score(args, tmp, head)
        else:
            run_parallel(args, tmp, head)


if __name__ == "__main__":
    main()
