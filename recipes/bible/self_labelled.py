"""A head trained on the model's own outputs (issue 25, item 4): decode, tag, train a grid.

    python -m recipes.bible.self_labelled --model runs/mt/model --data data/bible --out runs/mt_self

1. The paper's head (``token_freq+avoid``) on the same 3,000 training pairs, dev file and
   settings as ``experiments.py --setting mt`` (lr 1e-3, batch 16, 8 epochs, validation
   every 50 steps, patience 3, hidden-state cache, max length 192), unless
   ``OUT/heads/token_freq+avoid`` already holds it.
2. The frozen model decodes every distinct source of those pairs, and 200 other training
   sources held out for the self term's validation: its greedy output and 2 samples at
   temperature 0.8 (seed 0), written once to ``OUT/decoded.jsonl``.
3. Each output's words are tagged OK/BAD against the first reference of its source (the
   first record of the verse in ``mt_train``) and against both (union of the two
   TER-without-shifts alignments): ``OUT/self_{1,2}ref_{train,val}.jsonl``.
4. One head per (references, weight) in {1, 2} x {0.3, 1, 3}, the paper's objective plus
   the self term (``sigmoid-head train --self-generated``), same settings as 1:
   ``OUT/heads/self_{n}ref_w{w}``. A head already saved is skipped, so a rerun resumes.

``python -m recipes.bible.eval_self_study --heads OUT/heads`` and ``eval_other_suite.py --heads
OUT/heads`` then evaluate them beside the paper's head. Which (references, weight) is
reported is chosen on the dev books, never the test books:

    python -m recipes.bible.self_labelled --choose runs/mt_self/study

prints every self head's Pearson with chrF on the dev books' greedy outputs (geo-mean,
``sigmoid:<head>@mean``) and names the best.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch

from sigmoid_head import SigmoidHeadModel, load_backbone
from sigmoid_head.data.records import read_jsonl
from sigmoid_head.training.config import TrainConfig
from sigmoid_head.training.loop import train
from sigmoid_head.training.self_generated import (
    bad_share,
    decode_sources,
    group_references,
    label_outputs,
)

from .experiments import find, task_data, train_heads, write_jsonl

REFS = (1, 2)
WEIGHTS = (0.3, 1.0, 3.0)
RENDER = {"prompt_template": "{source}", "use_chat_template": False}


def _name(refs: int, weight: float) -> str:
    return f"self_{refs}ref_w{weight:g}"


def choose(study: Path) -> str:
    """The self head with the best dev-book Pearson (geo-mean) in an eval_self_study output."""
    dev = json.loads((study / "study.json").read_text())["pearson_chrf"]["dev"]
    rows = {m: v[0] for m, v in dev.items() if m.startswith("sigmoid:") and m.endswith("@mean")}
    for m, v in sorted(rows.items(), key=lambda kv: -kv[1]):
        print(f"  {m}: dev Pearson {v:.3f}")
    chosen = max((m for m in rows if m.startswith("sigmoid:self_")), key=rows.get)
    print(f"chosen on the dev books: {chosen.removeprefix('sigmoid:').removesuffix('@mean')}")
    return chosen


def val_self(out: Path, model: str) -> dict:
    """Every head's mean BCE on the held-out self-labelled outputs (1 and 2 references),
    and the ROC-AUC of its token probability for good (1) against bad (0) tokens there,
    beside the softmax probability's; the per-token scores, labels and sources go to
    ``OUT/val_self_tokens_<n>ref.npz`` (``tables.py --pack token_labels``)."""
    from sigmoid_head.data.batching import Collator, pad_id
    from sigmoid_head.data.prompt_format import PromptFormat
    from sigmoid_head.evaluation.metrics import roc_auc
    from sigmoid_head.training.self_generated import load_self_examples

    backbone = load_backbone(model, device="cpu")
    collate = Collator(pad_id(backbone.tokenizer), True)
    report = {}
    for n in REFS:
        ex = load_self_examples(out / f"self_{n}ref_val.jsonl", backbone.tokenizer,
                                PromptFormat(True, max_length=192, **RENDER))
        good = torch.tensor([g for e in ex for g in e["good"]])
        keep = good >= 0
        batch = collate(ex)
        with torch.no_grad():
            pos = backbone.positions(batch, with_logits=True)
        soft = torch.log_softmax(pos.logits.float(), -1).gather(1, pos.targets[:, None])[:, 0]
        row = {"tokens": int(keep.sum()), "bad_share": float((good[keep] == 0).float().mean()),
               "softmax_auc": roc_auc(soft[keep].numpy(), good[keep].numpy())}
        # per token, for tables.py --pack token_labels: each output's source is its resampling
        # unit (a source's samples share their encoder input)
        source_of = {}
        group = np.array([source_of.setdefault(tuple(ex[int(r)]["input_ids"]), len(source_of))
                          for r in pos.row.tolist()])
        arrays = {"good": good[keep].numpy(), "group": group[keep.numpy()], "score:softmax": soft[keep].numpy()}
        for head_dir in sorted((out / "heads").iterdir()):  # the positions above, every head
            head = SigmoidHeadModel.from_pretrained(head_dir, backbone)
            with torch.no_grad():
                logit = head.head(pos.hidden, pos.targets[:, None])[:, 0].float()
            bce = torch.nn.functional.binary_cross_entropy_with_logits(logit[keep], good[keep].float())
            row[head_dir.name] = {"bce": float(bce), "auc": roc_auc(logit[keep].numpy(), good[keep].numpy())}
            arrays[f"score:{head_dir.name}"] = logit[keep].numpy()
        np.savez_compressed(out / f"val_self_tokens_{n}ref.npz", **arrays)
        report[f"{n}ref"] = row
        print(json.dumps({f"{n}ref": row}, indent=1), flush=True)
    (out / "val_self.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--choose", type=Path, metavar="STUDY", help="only name the dev-chosen self head "
                   "of an eval_self_study.py output")
    p.add_argument("--val-self", action="store_true", help="only score every head of OUT/heads on "
                   "the held-out self-labelled outputs (BCE, token ROC-AUC) into OUT/val_self.json")
    p.add_argument("--model", help="the Marian model of recipes/bible/train_mt.py")
    p.add_argument("--data", default="data/bible")
    p.add_argument("--out")
    p.add_argument("--n-train", type=int, default=3000, help="training pairs (as experiments.py)")
    p.add_argument("--n-val-sources", type=int, default=200)
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--epochs", type=float, default=8)
    p.add_argument("--refs", default=",".join(map(str, REFS)))
    p.add_argument("--weights", default=",".join(f"{w:g}" for w in WEIGHTS))
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.choose:
        choose(args.choose)
        return
    if not args.model or not args.out:
        p.error("--model and --out are required (without --choose)")
    if args.val_self:
        val_self(Path(args.out), args.model)
        return
    t0, out = time.perf_counter(), Path(args.out)
    backbone = load_backbone(args.model, device="cpu" if not torch.cuda.is_available() else None)
    train_file, dev_file, _ = task_data("mt", Path(args.data), out, args.n_train, 300, 0, args.seed)
    # untrained_prior 0: the paper's setting (the library's default for new heads is 0.01)
    config_kw = dict(train_file=str(train_file), validation_file=str(dev_file), untrained_prior=0.0,
                     lr=1e-3, batch_size=16,
                     epochs=args.epochs, eval_every=50, patience=3, cache_hidden=True, max_length=192,
                     seed=args.seed, progress=False, **RENDER)
    if not (out / "heads" / "token_freq+avoid" / "head.safetensors").exists():
        print("[1/4] the paper's head, token_freq+avoid", flush=True)
        train_heads(backbone, config_kw, [("token_freq+avoid", "token_freq", True, 1.0)], out)

    decoded = out / "decoded.jsonl"
    if not decoded.exists():
        every = group_references(read_jsonl(find(Path(args.data), "mt_train")))
        refs = {g["source"]: g["references"] for g in every}
        mine = list(dict.fromkeys(r["source"] for r in read_jsonl(train_file)))
        rest = sorted(set(refs) - set(mine))
        random.Random(args.seed).shuffle(rest)
        sources = [{"source": s, "references": refs[s], "split": "train"} for s in mine]
        sources += [{"source": s, "references": refs[s], "split": "val"} for s in rest[: args.n_val_sources]]
        print(f"[2/4] decoding {len(sources)} sources (greedy + {args.samples} samples)", flush=True)
        outputs = decode_sources(backbone, sources, samples=args.samples, temperature=args.temperature,
                                 seed=args.seed, batch_size=32, **RENDER)
        split = {s["source"]: s["split"] for s in sources}
        write_jsonl(decoded, [{**o, "split": split[o["source"]]} for o in outputs])
        print(f"  {len(outputs)} outputs ({time.perf_counter() - t0:.0f} s)", flush=True)
    outputs = read_jsonl(decoded)
    files = {}
    for n in map(int, args.refs.split(",")):
        for part in ("train", "val"):
            rows = label_outputs([o for o in outputs if o["split"] == part], max_refs=n)
            files[n, part] = write_jsonl(out / f"self_{n}ref_{part}.jsonl", rows)
            greedy = [r for r in rows if r["origin"] == "greedy"]
            print(f"[3/4] {n} reference(s), {part}: {len(rows)} outputs, BAD words {bad_share(rows):.1%} "
                  f"(greedy {bad_share(greedy):.1%})", flush=True)
    stats = {}
    for n in map(int, args.refs.split(",")):
        for w in map(float, args.weights.split(",")):
            name, head_dir = _name(n, w), out / "heads" / _name(n, w)
            if (head_dir / "head.safetensors").exists():
                continue
            t1 = time.perf_counter()
            config = TrainConfig(**config_kw, output_dir=str(head_dir), negatives="token_freq",
                                 avoid_dominant=True, self_generated=str(files[n, "train"]),
                                 self_validation_file=str(files[n, "val"]), self_weight=w)
            head = train(config, model=SigmoidHeadModel.from_base(backbone))
            hist = head.config.training["history"]
            best = min(hist, key=lambda h: h["val_loss"])
            stats[name] = {"seconds": round(time.perf_counter() - t1), "best_step": best["step"],
                           "val_paper": best["val_paper"], "val_self": best["val_self"],
                           "val_self_start": hist[0]["val_self"]}
            print(f"[4/4] {name}: val_self {hist[0]['val_self']:.3f} -> {best['val_self']:.3f}, "
                  f"val_paper {best['val_paper']:.3f} at step {best['step']} ({stats[name]['seconds']} s)",
                  flush=True)
    if stats:
        log = out / "train_stats.json"
        old = json.loads(log.read_text()) if log.exists() else {}
        log.write_text(json.dumps({**old, **stats}, indent=1) + "\n")
    print(f"done ({time.perf_counter() - t0:.0f} s); heads under {out / 'heads'}")


if __name__ == "__main__":
    main()
