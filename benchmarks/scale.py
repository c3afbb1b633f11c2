"""Scale (issue 16): training data through ``datasets`` and corpus-size ``score``, tiny model.

Synthetic Spanish-ish -> English-ish pairs (``tests/conftest.make_pairs``) and the tiny
random Llama of the test suite (hidden 32, 2 layers, vocabulary ~1,000): the figures are
those of the data path, the loop and the scoring driver, not of a real model's forward.

``train``: for each size, a fresh process (1) tokenizes the JSONL with
``data_engine=datasets`` (``num_proc`` workers; examples/s) and (2) runs ``train()`` for
``--steps`` optimizer steps on the Arrow examples (steps/s). It reports the process's
peak RSS (VmHWM) and the largest worker's (``RUSAGE_CHILDREN``). ``--engine memory`` runs
the in-memory list path for comparison.

``score``: ``sigmoid-head score -s -t --to-json`` on N candidates in a fresh process:
output lines, wall time, candidates/s, the process's peak RSS.

    python benchmarks/scale.py train --sizes 10000 100000 1000000 [--engine memory]
    python benchmarks/scale.py score --sizes 10000 100000
    python benchmarks/scale.py train --quick      # 2,000 and 20,000 examples
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_fixtures(tmp: Path) -> tuple[Path, Path]:
    """The tiny model (+ tokenizer) and a fresh head on it."""
    import torch
    from conftest import build_tiny_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    from sigmoid_head.model import SigmoidHeadModel

    tok = build_tiny_tokenizer(tmp / "tok")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, intermediate_size=64,
                         max_position_embeddings=512, tie_word_embeddings=True,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(config).eval().save_pretrained(tmp / "model")
    tok.save_pretrained(tmp / "model")
    SigmoidHeadModel.from_base(str(tmp / "model"), device="cpu").save_pretrained(tmp / "head")
    return tmp / "model", tmp / "head"


def write_pairs(path: Path, n: int) -> None:
    from conftest import make_pairs

    base = make_pairs(5000, seed=1)
    rng = random.Random(n)
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps(base[rng.randrange(len(base))] if i >= len(base) else base[i],
                               ensure_ascii=False) + "\n")


def child_train(args: argparse.Namespace) -> None:
    import torch

    from sigmoid_head.training.config import TrainConfig
    from sigmoid_head.training.loop import train

    torch.set_num_threads(1)
    out = Path(args.out)
    kw = dict(train_file=args.data, output_dir=str(out), model=args.model, lr=1e-2,
              batch_size=32, max_steps=args.steps, eval_every=None, patience=0, progress=False,
              validation_fraction=0.001, max_validation_examples=64, seed=0, device="cpu",
              data_engine=args.engine, num_proc=args.num_proc or None, max_length=64)
    t0 = time.perf_counter()
    if args.engine != "memory":
        from transformers import AutoTokenizer

        from sigmoid_head.data.datasets_io import load_examples_arrow

        tok = AutoTokenizer.from_pretrained(args.model)
        load_examples_arrow(args.data, tok, is_encoder_decoder=False, num_proc=args.num_proc or None,
                            cache_dir=str(out / "data_cache"), max_length=64,
                            prompt_template="{source}\n", task="auto", use_chat_template=False)
    t_tok = time.perf_counter() - t0
    rss_tok = peak_rss_mib()
    t1 = time.perf_counter()
    train(TrainConfig(**kw))  # datasets engine: reuses the Arrow cache written above
    t_train = time.perf_counter() - t1
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print("RESULT " + json.dumps({"tokenize_s": t_tok, "rss_after_tokenize_mib": rss_tok,
                                  "train_s": t_train, "peak_rss_mib": peak_rss_mib(),
                                  "largest_worker_rss_mib": kids}), flush=True)


def run_train(args: argparse.Namespace, tmp: Path, model: Path) -> None:
    print(f"engine={args.engine} num_proc={args.num_proc} steps={args.steps} batch=32 "
          f"max_length=64 threads=1", flush=True)
    print("| examples | tokenize s | examples/s | train() s (load + steps) | steps/s* | peak RSS MiB | "
          "largest worker RSS MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        data = tmp / f"pairs_{n}.jsonl"
        write_pairs(data, n)
        cmd = [sys.executable, __file__, "_child_train", "--data", str(data), "--model", str(model),
               "--out", str(tmp / f"out_{n}_{args.engine}"), "--steps", str(args.steps),
               "--engine", args.engine, "--num-proc", str(args.num_proc)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            print(done.stderr[-3000:])
            raise SystemExit(1)
        r = json.loads(done.stdout.split("RESULT ")[-1])
        rate = n / r["tokenize_s"] if r["tokenize_s"] > 0 else float("nan")
        print(f"| {n:,} | {r['tokenize_s']:.1f} | {rate:,.0f} | {r['train_s']:.1f} | "
              f"{args.steps / r['train_s']:.2f} | {r['peak_rss_mib']:.0f} | "
              f"{r['largest_worker_rss_mib']:.0f} |", flush=True)
        data.unlink()
    print("* steps/s includes train()'s set-up (loading the model and the Arrow examples, "
          "the length and token-count passes); memory engine: tokenization is inside train().")


def run_score(args: argparse.Namespace, tmp: Path, head: Path) -> None:
    from conftest import make_pairs

    base = make_pairs(5000, seed=2)
    print(f"batch size={args.batch_size} threads=1 (OMP_NUM_THREADS=1), one process", flush=True)
    print("| candidates | output lines | wall s | candidates/s (CLI's own figure) | peak RSS MiB |")
    print("|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        src, mt, out = tmp / f"src_{n}.txt", tmp / f"mt_{n}.txt", tmp / f"scores_{n}.jsonl"
        rng = random.Random(n)
        with src.open("w") as s, mt.open("w") as t:
            for _ in range(n):
                p = base[rng.randrange(len(base))]
                s.write(p["source"] + "\n")
                t.write(p["target"] + "\n")
        code = ("import resource, sys, torch; torch.set_num_threads(1);"
                "from sigmoid_head.cli import main; rc = main(sys.argv[1:]);"
                "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024); "
                "sys.exit(rc)")
        cmd = [sys.executable, "-c", code, "score", "-s", str(src), "-t", str(mt), "--head",
               str(head), "--to-json", str(out), "--quiet", "--batch-size",
               str(args.batch_size), "--device", "cpu"]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode:
            print(done.stderr[-3000:])
            raise SystemExit(1)
        lines = sum(1 for _ in out.open())
        rate = done.stdout.split("new outputs in")[-1].split("(")[1].split("/s")[0]
        peak = float(done.stdout.split("PEAK")[-1].split()[0])
        print(f"| {n:,} | {lines:,} | {wall:.1f} | {rate} | {peak:.0f} |", flush=True)
        for p in (src, mt, out):
            p.unlink()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=["train", "score", "_child_train"])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--quick", action="store_true", help="2,000 and 20,000 examples, 5 steps")
    p.add_argument("--engine", default="datasets", choices=["datasets", "streaming", "memory"])
    p.add_argument("--num-proc", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--data"), p.add_argument("--model"), p.add_argument("--out")
    args = p.parse_args()
    if args.what == "_child_train":
        return child_train(args)
    if args.quick:
        args.sizes, args.steps = [2_000, 20_000], 5
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model, head = build_fixtures(tmp)
        (run_train if args.what == "train" else run_score)(args, tmp, model if args.what == "train" else head)


if __name__ == "__main__":
    main()
