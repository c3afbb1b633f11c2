"""Fine-tune SmolLM2-135M-Instruct on the rewriting task first, as the paper's protocol asks.

The paper trains the Sigmoid Head on the data the model itself was trained on. SmolLM2
never saw the Bible rewriting task, so this recipe first fine-tunes it (full fine-tune,
every weight) on the task's training split, rendered exactly as the head sees it (chat
template, ``Rewrite this verse in modern English:\\n{kjv}`` -> WEB, assistant tokens
trained). The examples the model consumed are written to ``OUT/seen_train.jsonl`` so the
head can then be trained on that same data:

    python -m recipes.bible.finetune_llm --data data/bible --out runs/llm_ft --minutes 60
    python -m recipes.bible.experiments --setting llm --model runs/llm_ft/model \\
        --train-data runs/llm_ft/seen_train.jsonl --data data/bible --out runs/llm_ft_heads

Resumable: a checkpoint (model, optimizer, data position, elapsed time) is written every
few minutes and on SIGINT/SIGTERM; rerunning the same command continues from it. The
budget (``--minutes``) is summed over reruns and sets the cosine learning-rate schedule.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import signal
import threading
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

from sigmoid_head.data.batching import Collator, example_length, make_batches
from sigmoid_head.data.tokenize import tokenize_records
from sigmoid_head.embedded.default_model import resolve_model_name

from .experiments import LLM_PROMPT, find, read_jsonl, write_jsonl

STOP = threading.Event()
RESUME_KEYS = ("seed", "batch_tokens", "max_words", "lr")


def training_records(data: Path, max_words: int, seed: int) -> list[dict]:
    """The rewriting task's training pairs (KJV -> WEB) of at most ``max_words`` words, shuffled."""
    recs = [r for r in read_jsonl(find(data, "para_train")) if len(r["target"].split()) <= max_words]
    random.Random(seed).shuffle(recs)
    return recs


def tokenize(records: list[dict], tokenizer) -> list[dict]:
    examples, _ = tokenize_records(records, tokenizer, is_encoder_decoder=False, max_length=192,
                                   prompt_template=LLM_PROMPT, use_chat_template=True)
    if len(examples) != len(records):
        raise SystemExit("some training records lost every trained token; cannot map seen examples")
    return examples


def lr_at(args: argparse.Namespace, step: int, progress: float) -> float:
    """Linear warmup over ``warmup_steps``, then cosine to 10% of the peak over the budget."""
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def save_checkpoint(out: Path, model, optimizer, state: dict, args: argparse.Namespace) -> None:
    """Atomic: write into checkpoint.tmp, then swap it in."""
    tmp, final = out / "checkpoint.tmp", out / "checkpoint"
    tmp.mkdir(parents=True, exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "state": state,
                "key": {k: getattr(args, k) for k in RESUME_KEYS}}, tmp / "state.pt")
    old = out / "checkpoint.old"
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    if old.exists():
        for f in old.iterdir():
            f.unlink()
        old.rmdir()


def load_checkpoint(out: Path, model, optimizer, args: argparse.Namespace) -> dict | None:
    path = out / "checkpoint" / "state.pt"
    if not path.is_file():
        tmp = out / "checkpoint.tmp" / "state.pt"
        if tmp.is_file():  # killed between the two renames: the new checkpoint is complete
            (out / "checkpoint.tmp").rename(out / "checkpoint")
        else:
            return None
    payload = torch.load(path, map_location="cpu", weights_only=True)
    changed = [k for k in RESUME_KEYS if payload["key"][k] != getattr(args, k)]
    if changed:
        raise SystemExit(f"{path} was written with other {changed}; use another --out")
    model.load_state_dict(payload["model"])
    optimizer.load_state_dict(payload["optimizer"])
    return payload["state"]


@torch.no_grad()
def mean_loss(model, examples: list[dict], collate: Collator, batch: int = 16) -> float:
    """Token-level cross-entropy of the trained (assistant) tokens."""
    model.eval()
    total, n = 0.0, 0
    for s in range(0, len(examples), batch):
        b = collate(examples[s : s + batch])
        logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits[:, :-1]
        labels = b["labels"][:, 1:]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                                 labels.reshape(-1), reduction="sum")
        total, n = total + float(loss), n + int((labels != -100).sum())
    model.train()
    return total / max(n, 1)


def run(args: argparse.Namespace) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    path = resolve_model_name(args.model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    model.train()
    records = training_records(Path(args.data), args.max_words, args.seed)
    examples = tokenize(records, tokenizer)
    dev = tokenize(read_jsonl(find(Path(args.data), "para_dev"))[: args.n_dev], tokenizer)
    collate = Collator(tokenizer.pad_token_id if tokenizer.pad_token_id is not None
                       else tokenizer.eos_token_id, is_encoder_decoder=False)
    batches = make_batches([example_length(e) for e in examples], max_tokens=args.batch_tokens,
                           shuffle=True, seed=args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0, betas=(0.9, 0.98))
    state = load_checkpoint(out, model, optimizer, args)
    if state is None:
        state = {"step": 0, "batch": 0, "elapsed": 0.0, "tokens": 0,
                 "dev_loss_before": mean_loss(model, dev, collate)}
        print(f"dev loss before fine-tuning: {state['dev_loss_before']:.4f}", flush=True)
    else:
        print(f"resuming at step {state['step']} ({state['elapsed'] / 60:.1f} min done)", flush=True)
    budget = 60.0 * args.minutes
    start, before = time.monotonic(), state["elapsed"]
    last_save = start
    bar = tqdm(total=len(batches), initial=state["batch"], desc="fine-tune", dynamic_ncols=True)
    while state["batch"] < len(batches) and not STOP.is_set():
        elapsed = before + time.monotonic() - start
        if elapsed >= budget or (args.max_steps and state["step"] >= args.max_steps):
            break
        # one step: batch -> loss on the assistant tokens -> clipped AdamW update
        batch = collate([examples[i] for i in batches[state["batch"]]])
        lr = lr_at(args, state["step"], elapsed / budget)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        state["step"] += 1
        state["batch"] += 1
        state["tokens"] += int((batch["labels"] != -100).sum())
        bar.update(1)
        bar.set_postfix_str(f"loss {loss.item():.3f} lr {lr:.1e} {elapsed / 60:.1f}/{args.minutes:g} min")
        if time.monotonic() - last_save >= 60 * args.checkpoint_minutes:
            state["elapsed"] = before + time.monotonic() - start
            save_checkpoint(out, model, optimizer, state, args)
            last_save = time.monotonic()
    bar.close()
    state["elapsed"] = before + time.monotonic() - start
    save_checkpoint(out, model, optimizer, state, args)
    if STOP.is_set():
        print("stopped; rerun the same command to continue", flush=True)
        return state
    return export(out, model, tokenizer, records, batches, state, dev, collate, args)


def export(out: Path, model, tokenizer, records, batches, state, dev, collate, args) -> dict:
    """Save the fine-tuned model, the examples it saw, and a summary."""
    model.eval()
    model.save_pretrained(out / "model")
    tokenizer.save_pretrained(out / "model")
    seen = sorted(i for b in batches[: state["batch"]] for i in b)
    write_jsonl(out / "seen_train.jsonl", [records[i] for i in seen])
    summary = {"steps": state["step"], "examples_seen": len(seen), "of": len(records),
               "trained_tokens": state["tokens"], "minutes": round(state["elapsed"] / 60, 1),
               "dev_loss_before": state["dev_loss_before"], "dev_loss_after": mean_loss(model, dev, collate),
               "settings": {k: getattr(args, k) for k in ("lr", "batch_tokens", "max_words", "seed",
                                                          "warmup_steps", "minutes")}}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1), flush=True)
    return summary


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default="data/bible", help="folder with para_{train,dev}.jsonl(.gz)")
    p.add_argument("--out", required=True)
    p.add_argument("--model", default=None, help="base model (default: the embedded SmolLM2-135M-Instruct)")
    p.add_argument("--minutes", type=float, default=60.0, help="training budget, summed over reruns")
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps")
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--warmup-steps", type=int, default=30)
    p.add_argument("--batch-tokens", type=int, default=2048, help="padded tokens per batch")
    p.add_argument("--max-words", type=int, default=40, help="skip training verses longer than this")
    p.add_argument("--n-dev", type=int, default=200, help="dev examples for the before/after loss")
    p.add_argument("--checkpoint-minutes", type=float, default=5.0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: STOP.set())
    run(args)


if __name__ == "__main__":
    main()
