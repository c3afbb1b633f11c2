"""Small ablation: untrained head rows and gibberish in scripts the head never saw (issue 25).

    python -m recipes.bible.untrained_rows --out runs/untrained_rows [--quick]
    python -m recipes.bible.untrained_rows --from-scores docs/results/data/untrained_rows.jsonl.gz

Trains the demo's head (SmolLM2-135M-Instruct, 600 short KJV -> WEB verse pairs, chat
template, lr 1e-3, 12 epochs with early stopping on 64 dev verses, hidden states cached
once and shared) once per setting: the paper's (token_freq + avoid dominant), with
``--uniform-negative-share`` 0.1 / 0.2, with ``--freq-smoothing 1``, and with
``--untrained-prior`` 0.2 / 0.05 / 0.01. Every head
and the softmax-side baselines then score, in one pass, candidates for held-out verses of
the dev books (``para_dev``, after the 64 of the validation loss) and of the test books
(``para_test``):

- ``reference`` (1); the demo's ``next verse`` and ``word swap`` (0);
- gibberish in a script the English training data never has as a target (0), one script
  drawn per verse and kind among Hebrew, Arabic/Persian, Cyrillic, Greek, Devanagari, CJK:
  ``letters`` (random words of the script, as many words as the reference), ``drift``
  (the reference's first half, then such words: a sample that went astray) and
  ``sampled`` (the model's own continuation at temperature 0.8 after two tokens of the
  script: the degenerate samples issue 25's pilot saw the head prefer).

Per setting: the mean geo-mean score (exp of the mean token log-score) of references
and of each kind, ROC-AUC of references against the gibberish and against the demo's
negatives, pairwise accuracy (a verse's reference above each of its own gibberish
candidates), and paired bootstrap tests over verses against the paper's setting. The
remedy and its setting are chosen on the dev verses (ROC-AUC of references against every
negative), never on the test ones. Per-candidate scores go to ``scores.jsonl.gz``; ``--from-scores``
remakes the tables from such a file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import time
import unicodedata
from pathlib import Path

import numpy as np

from .experiments import score_all

SETTINGS = {  # name -> TrainConfig overrides
    "paper": {},
    "uniform 0.1": {"uniform_negative_share": 0.1},
    "uniform 0.2": {"uniform_negative_share": 0.2},
    "freq smoothing 1": {"freq_smoothing": 1.0},
    "prior 0.2": {"untrained_prior": 0.2},
    "prior 0.05": {"untrained_prior": 0.05},
    "prior 0.01": {"untrained_prior": 0.01},
}
SCRIPTS = {  # script name (unicodedata's first word) -> letters
    "HEBREW": [chr(c) for c in range(0x05D0, 0x05EB)],
    "ARABIC": [chr(c) for c in range(0x0627, 0x063B)] + [chr(c) for c in range(0x0641, 0x064B)]
    + list("پچژگ"),
    "CYRILLIC": [chr(c) for c in range(0x0430, 0x0450)],
    "GREEK": [chr(c) for c in range(0x03B1, 0x03CA)],
    "DEVANAGARI": [chr(c) for c in range(0x0915, 0x093A)],
    "CJK": [chr(c) for c in range(0x4E00, 0x4E00 + 3000)],
}
GIBBERISH = ("letters", "drift", "sampled")
REGULAR = ("next verse", "word swap")
BASELINES = ("softmax", "boostedprob")


def script_words(rng: random.Random, script: str, n_tokens: int, tokenizer) -> str:
    """Random words of ``script`` (CJK: runs of characters without spaces), added until the
    text is ``n_tokens`` tokens long or longer."""
    letters, words, text = SCRIPTS[script], [], ""
    while not text or len(tokenizer(text, add_special_tokens=False)["input_ids"]) < n_tokens:
        words.append("".join(rng.choice(letters) for _ in range(rng.randint(2, 7))))
        text = ("" if script == "CJK" else " ").join(words)
    return text


def script_tokens(tokenizer, script: str) -> list[int]:
    """Vocabulary ids whose text is letters of ``script`` only."""
    out = []
    for i in range(len(tokenizer)):
        text = tokenizer.decode([i]).strip()
        if text and "\ufffd" not in text and all(
                c.isalpha() and unicodedata.name(c, "").split(" ")[0] == script for c in text):
            out.append(i)
    return out


def candidates(verses: list[dict], seed: int, split: str, tokenizer) -> list[dict]:
    """Reference, the demo's two negatives and the ``letters``/``drift`` gibberish per verse
    (``sampled`` is added by :func:`add_sampled`), gibberish as many tokens long as what it
    replaces; ``item`` is the verse's index."""
    from sigmoid_head.demo.run import candidates as demo_candidates

    rng, out = random.Random(seed), []
    demo = demo_candidates(verses, seed)
    by_source: dict[str, list[dict]] = {}
    for c in demo:
        by_source.setdefault(c["source"], []).append(c)
    for i, v in enumerate(verses):
        for c in by_source.pop(v["source"], []):
            out.append({"split": split, "item": i, "source": v["source"], "candidate": c["candidate"],
                        "label": c["label"], "kind": c["kind"], "script": ""})
        words = v["target"].split()
        half = " ".join(words[: len(words) // 2])
        n_ref = len(tokenizer(v["target"], add_special_tokens=False)["input_ids"])
        n_half = len(tokenizer(half, add_special_tokens=False)["input_ids"])
        for kind in ("letters", "drift"):
            script = rng.choice(sorted(SCRIPTS))
            if kind == "letters":
                text = script_words(rng, script, n_ref, tokenizer)
            else:
                text = half + " " + script_words(rng, script, max(n_ref - n_half, 1), tokenizer)
            out.append({"split": split, "item": i, "source": v["source"], "candidate": text,
                        "label": 0, "kind": kind, "script": script})
    return out


def add_sampled(backbone, verses: list[dict], seed: int, split: str, prompt: str) -> list[dict]:
    """The model's continuation (temperature 0.8) after two tokens of a random script."""
    from sigmoid_head.data.prompts import prompt_ids
    from sigmoid_head.scoring.decoding import DecodingConfig
    from sigmoid_head.scoring.generate import generate_outputs

    tok, rng = backbone.tokenizer, random.Random(seed + 1)
    pools = {s: script_tokens(tok, s) for s in SCRIPTS}
    scripts = [rng.choice(sorted(s for s in pools if len(pools[s]) >= 2)) for _ in verses]
    seeds = [rng.sample(pools[s], 2) for s in scripts]
    prompts = prompt_ids([{"source": v["source"]} for v in verses], tok, is_encoder_decoder=False,
                         prompt_template=prompt, use_chat_template=True)
    n_ref = [len(tok(v["target"], add_special_tokens=False)["input_ids"]) for v in verses]
    outs = generate_outputs(backbone, [p + s for p, s in zip(prompts, seeds, strict=True)],
                            DecodingConfig(max_new_tokens=max(n_ref), do_sample=True,
                                           temperature=0.8, seed=seed), progress=False)
    return [{"split": split, "item": i, "source": verses[i]["source"],
             "candidate": tok.decode(seeds[i] + g.output[: max(n_ref[i] - 2, 1)], skip_special_tokens=True),
             "label": 0, "kind": "sampled", "script": scripts[i]}
            for g in outs for i in [g.input_index]]


def train_heads(backbone, out: Path, n_train: int, epochs: float, seed: int, prompt: str,
                settings: dict[str, dict]) -> dict:
    """One demo-sized head per setting on one backbone and one shared hidden-state cache."""
    from sigmoid_head import SigmoidHeadModel, TrainConfig, train
    from sigmoid_head.data.batching import Collator, pad_id
    from sigmoid_head.data.records import read_jsonl
    from sigmoid_head.training.cache import PositionCache

    from ..common.bible_sample import sample_dir, short, write_jsonl

    data = sample_dir()
    recs = short(read_jsonl(data / "para_train.jsonl.gz"), 40)
    random.Random(seed).shuffle(recs)  # the demo's training verses
    out.mkdir(parents=True, exist_ok=True)
    train_file = write_jsonl(out / "train.jsonl", recs[:n_train])
    dev_file = write_jsonl(out / "dev.jsonl", short(read_jsonl(data / "para_dev.jsonl.gz"), 40)[:64])
    caches, heads = None, {}
    for name, extra in settings.items():
        t0 = time.perf_counter()
        config = TrainConfig(train_file=str(train_file), validation_file=str(dev_file),
                             output_dir=str(out / "heads" / name.replace(" ", "_")),
                             use_chat_template=True, prompt_template=prompt, max_length=192,
                             batch_size=16, epochs=epochs, lr=1e-3, eval_every=50, patience=3,
                             cache_hidden=True, seed=seed, progress=False, device="cpu",
                             **{"untrained_prior": 0.0, **extra})  # 0: the paper's setting
        if caches is None:
            collate = Collator(pad_id(backbone.tokenizer), False)
            rule = config.dominant_config()
            caches = (PositionCache(backbone, collate, rule), PositionCache(backbone, collate, rule))
        heads[name] = train(config, model=SigmoidHeadModel.from_base(backbone), caches=caches)
        hist = heads[name].config.training
        print(f"  {name}: val loss {hist['history'][0]['val_loss']:.3f} -> "
              f"{hist['best_val_loss']:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return heads


def score_rows(backbone, heads: dict, cands: list[dict], prompt: str) -> list[dict]:
    """Each candidate with every method's mean and summed token log-score, and its count of
    tokens never seen as a training target."""
    render = {"prompt_template": prompt, "use_chat_template": True, "max_length": 512}
    seq, details = score_all(backbone, heads, cands, render)
    counts = next(iter(heads.values())).token_counts
    rows = []
    for r, c in enumerate(cands):
        ids = details[r]["ids"]
        row = {**c, "n_tokens": len(ids), "n_untrained": int(sum(float(counts[i]) == 0 for i in ids))}
        for name in [*BASELINES, *(f"sigmoid:{h}" for h in heads)]:
            row[f"{name}@mean"] = float(seq[f"{name}@mean"][r])
            row[f"{name}@sum"] = float(seq[name][r])
        rows.append(row)
    return rows


def pairwise(rows: list[dict], key: str, kinds: tuple[str, ...]) -> float:
    """Share of (reference, own candidate of ``kinds``) pairs with the reference above (ties 1/2)."""
    refs = {r["item"]: r[key] for r in rows if r["kind"] == "reference"}
    wins = [1.0 if refs[r["item"]] > r[key] else 0.5 if refs[r["item"]] == r[key] else 0.0
            for r in rows if r["kind"] in kinds]
    return float(np.mean(wins)) if wins else float("nan")


def _subset(rows: list[dict], kinds: tuple[str, ...]) -> tuple[list[dict], np.ndarray]:
    sub = [r for r in rows if r["kind"] == "reference" or r["kind"] in kinds]
    return sub, np.array([r["label"] for r in sub], dtype=float)


def auc(rows: list[dict], key: str, kinds: tuple[str, ...]) -> float:
    from sigmoid_head.evaluation.metrics import roc_auc

    sub, gold = _subset(rows, kinds)
    return roc_auc(np.array([r[key] for r in sub]), gold)


def methods(rows: list[dict]) -> list[str]:
    return [k.removesuffix("@mean") for k in rows[0] if k.endswith("@mean")]


def choose_on_dev(dev: list[dict]) -> str:
    """The remedy with the best dev ROC-AUC (geo-mean) of references against every negative."""
    every = (*GIBBERISH, *REGULAR)
    remedies = [m for m in methods(dev) if m.startswith("sigmoid:") and m != "sigmoid:paper"]
    return max(remedies, key=lambda m: auc(dev, f"{m}@mean", every))


def tables(rows: list[dict], n_boot: int = 1000, seed: int = 0) -> str:
    """The ablation's markdown: the dev choice, then the test table and tests against the paper."""
    from sigmoid_head.evaluation.bootstrap import paired_bootstrap
    from sigmoid_head.evaluation.metrics import roc_auc
    from sigmoid_head.evaluation.pvalues import add_holm, describe_p

    dev = [r for r in rows if r["split"] == "dev"]
    test = [r for r in rows if r["split"] == "test"]
    chosen = choose_on_dev(dev)
    every = (*GIBBERISH, *REGULAR)
    lines = [f"Chosen on {len({r['item'] for r in dev})} dev verses (ROC-AUC of references against "
             f"every negative, geo-mean): `{chosen}` (dev {auc(dev, chosen + '@mean', every):.3f}; "
             f"paper {auc(dev, 'sigmoid:paper@mean', every):.3f}).", ""]
    kinds = ["reference", *GIBBERISH]
    head = ("| score (geo-mean) | " + " | ".join(f"mean, {k}" for k in kinds)
            + " | ROC-AUC ref vs gibberish | pairwise ref > own gibberish | ROC-AUC ref vs "
            "next verse + word swap | ROC-AUC, every negative |")
    lines += [f"Test: {len({r['item'] for r in test})} verses of the test books, {len(test)} candidates.",
              "", head, "|" + "---|" * (len(kinds) + 5)]
    for m in methods(test):
        key = f"{m}@mean"
        means = [np.mean([np.exp(r[key]) for r in test if r["kind"] == k]) for k in kinds]
        name = m.removeprefix("sigmoid:") if m.startswith("sigmoid:") else f"{m} (baseline)"
        name = f"head, {name}" if m.startswith("sigmoid:") else name
        lines.append(f"| {name}{' **(dev choice)**' if m == chosen else ''} | "
                     + " | ".join(f"{x:.3f}" for x in means)
                     + f" | {auc(test, key, GIBBERISH):.3f} | {pairwise(test, key, GIBBERISH):.3f}"
                     f" | {auc(test, key, REGULAR):.3f} | {auc(test, key, every):.3f} |")
    untrained = [r["n_untrained"] / max(r["n_tokens"], 1) for r in test if r["kind"] in ("letters",)]
    lines += ["", f"Tokens of `letters` candidates never seen as a training target: "
              f"{100 * np.mean(untrained):.1f}% (mean per candidate)."]
    tests = {}
    for kinds_name, ks in (("gibberish", GIBBERISH), ("next verse + word swap", REGULAR)):
        sub, gold = _subset(test, ks)
        base = np.array([r["sigmoid:paper@mean"] for r in sub])
        for m in [m for m in methods(test) if m.startswith("sigmoid:") and m != "sigmoid:paper"]:
            tests[(m, kinds_name)] = paired_bootstrap(
                roc_auc, np.array([r[f"{m}@mean"] for r in sub]), base, gold, n=n_boot, seed=seed,
                groups=np.array([r["item"] for r in sub]))
    add_holm(tests, "every remedy vs the paper, on both candidate sets")
    lines += ["", "ROC-AUC against the paper's head (test, paired bootstrap over verses, "
              f"{n_boot} resamples):", ""]
    for (m, kinds_name), t in tests.items():
        lines.append(f"- {m.removeprefix('sigmoid:')}, references vs {kinds_name}: "
                     f"{t['delta']:+.3f} [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}], {describe_p(t, analytic=True)}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> list[dict]:
    from sigmoid_head import load_backbone
    from sigmoid_head.data.records import read_jsonl

    from ..common.bible_sample import PROMPT, sample_dir, short

    t0, out = time.perf_counter(), Path(args.out)
    backbone = load_backbone(None, device="cpu")
    settings = {k: v for k, v in SETTINGS.items() if not args.quick or k in ("paper", "prior 0.05")}
    heads = train_heads(backbone, out, args.n_train, args.epochs, args.seed, PROMPT, settings)
    data = sample_dir()
    splits = {"dev": short(read_jsonl(data / "para_dev.jsonl.gz"), 40)[64:64 + args.n_dev],
              "test": short(read_jsonl(data / "para_test.jsonl.gz"), 40)[:args.n_test]}
    rows = []
    for split, verses in splits.items():
        cands = candidates(verses, args.seed, split, backbone.tokenizer) + add_sampled(backbone, verses, args.seed, split, PROMPT)
        print(f"  scoring {len(cands)} {split} candidates ({time.perf_counter() - t0:.0f} s)", flush=True)
        rows += score_rows(backbone, heads, cands, PROMPT)
    with gzip.open(out / "scores.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    print(f"took {(time.perf_counter() - t0) / 60:.1f} min; wrote {out / 'scores.jsonl.gz'}")
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", help="run folder (heads, scores.jsonl.gz)")
    p.add_argument("--from-scores", help="remake the tables from a scores.jsonl.gz")
    p.add_argument("--quick", action="store_true", help="two settings, few verses, one epoch")
    p.add_argument("--n-train", type=int, default=600)
    p.add_argument("--epochs", type=float, default=12.0)
    p.add_argument("--n-dev", type=int, default=60)
    p.add_argument("--n-test", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.quick:
        args.n_train, args.epochs, args.n_dev, args.n_test = 48, 1.0, 8, 8
    if args.from_scores:
        with gzip.open(args.from_scores, "rt", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
    elif args.out:
        rows = run(args)
    else:
        p.error("give --out (run the ablation) or --from-scores (remake its tables)")
    print(tables(rows))


if __name__ == "__main__":
    main()
