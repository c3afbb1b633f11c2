"""Best-of-N reranking with the head and the baselines: which score picks the best candidate?

    python -m recipes.bible.rerank_study --head runs/demo_head --out runs/rerank_llm \\
        --n-dev 60 --n-test 60 --samples 6 --temperature 0.8

The LLM setting of the demo (SmolLM2-135M-Instruct rewrites a KJV verse in modern
English, the chat prompt the demo's head was trained with), or with ``--setting mt`` the
MT setting (the Marian model of ``recipes/bible/train_mt.py`` translates a RV1909 verse,
``--data`` the built Bible data; chrF and BLEU against both references, KJV and WEB,
verses of the dev and test books of at most 40 words). For every source verse the
model writes its greedy output and ``--samples`` outputs sampled at ``--temperature``
(one seeded stream); every candidate is scored once (each registered method in each
aggregation, ``neg_entropy`` = minus the mean entropy, and ``combined`` as ``score``
reports it by default) and gets two golds against the WEB reference: sentence chrF and
sentence BLEU.

For each score: the candidate it picks per source, the mean chrF of the picks, the mean
per-source Kendall tau of score with chrF, and the picks' chrF against the greedy output
and the oracle pick. The rerank score and the softmax-side baseline are chosen on the
**dev** verses (highest mean pick chrF); on the test verses every score is compared with
that baseline by a paired bootstrap over source verses (two-sided, Holm-corrected over the
table's comparisons). The share of dominant tokens (the tokens avoid-dominant training
never draws as negatives) among the greedy and the sampled candidates' tokens is reported
beside it.

Outputs: ``OUT/candidates_<split>.jsonl`` (every candidate with its scores and golds),
``OUT/summary.json``, and the test split's per-candidate data as a table's data file
(``--pack NAME`` writes ``docs/results/data/NAME.json.gz``, rendered by
``recipes/bible/tables.py``). ``--candidates-from RUN`` scores an earlier run's candidates
with another head (the frozen model's outputs are the same), so heads are compared on the
same candidates at the cost of one scoring pass. ``--also LABEL=RUN`` adds the head-side
scores of another run on the same candidates (e.g. a remedy head scored with
``--candidates-from``) to this run's table as ``LABEL:<score>``, so one table holds both
heads and one Holm family.

``--guided-weights`` adds head-guided greedy decoding (``DecodingConfig.head_weight``: the
head's log-probabilities mixed into the next-token scores) with each weight and each head
of ``--guided-heads`` (default ``--head``): the (head, weight) with the best mean chrF on the
dev verses is decoded once on the test verses and its output enters the table as one more
row (``guided ...``), tested like the picks; its wall time per generated token against
plain greedy decoding of the same verses is printed and recorded (one shared CPU: noisy).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from sigmoid_head.registry import methods as registry

from ..common.bible_sample import PROMPT
from . import tables


def mt_items(data: Path, split: str, n: int) -> list[dict]:
    """The first ``n`` verses of at most 40 words of the MT ``split`` (``dev``/``test`` books):
    the RV1909 source, both English references (KJV first)."""
    from sigmoid_head.data.records import read_jsonl

    verses = [v for v in read_jsonl(data / f"{split}.jsonl") if len(v["web"].split()) <= 40][:n]
    return [{"source": v["es"], "target": v["kjv"], "references": [v["kjv"], v["web"]]} for v in verses]


def items(split: str, n: int, skip: int) -> list[dict]:
    """``n`` short verses of the bundled sample's KJV -> WEB ``split`` after the first
    ``skip`` (the demo uses dev verses 0-123 for validation and calibration)."""
    from sigmoid_head.data.records import read_jsonl

    from ..common.bible_sample import sample_dir, short

    return short(read_jsonl(sample_dir() / f"para_{split}.jsonl.gz"), 40)[skip:skip + n]


def render_kw(setting: str) -> dict:
    """How a source becomes the model's input: the demo's chat prompt, or the source as is."""
    if setting == "mt":
        return {"prompt_template": "{source}", "use_chat_template": False}
    return {"prompt_template": PROMPT, "use_chat_template": True}


def candidates(model, recs: list[dict], samples: int, temperature: float, seed: int,
               max_new_tokens: int, setting: str = "llm") -> list[dict]:
    """Greedy + ``samples`` sampled outputs per record, each scored, in source order."""
    from sigmoid_head.scoring.decoding import DecodingConfig
    from sigmoid_head.scoring.generate import generate_and_score

    kw = {**render_kw(setting), "with_tokens": True, "batch_size": 8}
    greedy = generate_and_score(model, recs, DecodingConfig(max_new_tokens=max_new_tokens), **kw)
    sampled = generate_and_score(model, recs, DecodingConfig(
        max_new_tokens=max_new_tokens, do_sample=True, temperature=temperature,
        num_return_sequences=samples, seed=seed), **kw)
    out = []
    for i, rec in enumerate(recs):
        group = [{**greedy[i], "origin": "greedy"}]
        group += [{**r, "origin": f"sample@{temperature:g}"} for r in sampled[i * samples:(i + 1) * samples]]
        refs = rec.get("references", [rec["target"]])
        out += [{**r, "item": i, "reference": rec["target"], "references": refs} for r in group]
    return out


def rescore(model, path: Path, setting: str = "llm") -> list[dict]:
    """The candidates of an earlier run (same frozen model, same outputs), scored by
    ``model``'s head; golds and origins kept."""
    from sigmoid_head.scoring.force_decode import score_records

    keep = ("source", "candidate", "origin", "item", "reference", "references", "chrf", "bleu", "finished")
    old = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    scores = score_records(model, [{"source": r["source"], "candidate": r["candidate"]} for r in old],
                           **render_kw(setting), with_tokens=True, batch_size=8)
    return [{**{k: r[k] for k in keep if k in r}, **s} for r, s in zip(old, scores, strict=True)]


def dominant_share(rows: list[dict]) -> float:
    """Share of the candidates' tokens that are in their position's dominant set: BoostedProb
    lifts a dominant token above its softmax probability; a set of one token is the token
    itself when its probability is at least 0.5 (the only ambiguous case)."""
    hits = total = 0
    for r in rows:
        for t in r["tokens"]:
            total += 1
            hits += t["boostedprob"] > t["softmax"] * (1 + 1e-6) or (t["n_dominant"] == 1 and t["softmax"] >= 0.5)
    return hits / max(total, 1)


def add_golds(rows: list[dict]) -> None:
    from sacrebleu.metrics import BLEU, CHRF

    chrf, bleu = CHRF(), BLEU(effective_order=True)
    for r in rows:
        refs = r.get("references", [r["reference"]])
        r["chrf"] = chrf.sentence_score(r["candidate"], refs).score / 100
        r["bleu"] = bleu.sentence_score(r["candidate"], refs).score / 100


def selection_scores(rows: list[dict]) -> dict[str, np.ndarray]:
    """Every score a user could rerank by (higher = picked): each registered method in each
    aggregation present, ``neg_entropy`` and ``combined``."""
    keys = [k for m in registry.methods() for k in m.keys(distinct_only=True) if k in rows[0]]
    out = {k: np.array([float(r[k]) for r in rows]) for k in keys}
    out["neg_entropy"] = -np.array([float(r["entropy_mean"]) for r in rows])
    out["combined"] = np.array([float(r["combined_log"]) for r in rows])
    return out


def also_scores(rows: list[dict], label: str, run_dir: Path, split: str) -> dict[str, np.ndarray]:
    """The head-side scores of another run on the same candidates, as ``LABEL:<score>``."""
    path = run_dir / f"candidates_{split}.jsonl"
    other = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    if [r["candidate"] for r in other] != [r["candidate"] for r in rows]:
        raise SystemExit(f"--also {label}: {path} holds other candidates than this run")
    return {f"{label}:{k}": v for k, v in selection_scores(other).items() if not tables.softmax_side(k)}


def decode_greedy(model, recs: list[dict], weight: float, setting: str, max_new_tokens: int) -> tuple[list[dict], float]:
    """Greedy outputs (head-guided with ``weight`` > 0) and the wall seconds they took."""
    from sigmoid_head.scoring.decoding import DecodingConfig
    from sigmoid_head.scoring.generate import generate_and_score

    t0 = time.perf_counter()
    rows = generate_and_score(model, recs, DecodingConfig(max_new_tokens=max_new_tokens, head_weight=weight),
                              **render_kw(setting), batch_size=8, progress=False)
    return rows, time.perf_counter() - t0


def sentence_chrf(rows: list[dict], recs: list[dict]) -> list[float]:
    from sacrebleu.metrics import CHRF

    chrf = CHRF()
    return [chrf.sentence_score(r["candidate"], rec.get("references", [rec["target"]])).score / 100
            for r, rec in zip(rows, recs, strict=True)]


def guided(args: argparse.Namespace, recs: dict[str, list[dict]], summary: dict,
           dev_greedy: float) -> dict[str, list[float]]:
    """Head-guided greedy decoding: (head, weight) chosen on dev by mean chrF, decoded once
    on test; its per-verse chrF as a table row, its cost per token against plain greedy.
    An earlier run's decodings in ``OUT/summary.json`` with the same heads and weights are
    reused (the tables are then remade without decoding again)."""
    from sigmoid_head.head.model import SigmoidHeadModel

    heads = dict(h.split("=", 1) for h in args.guided_heads) if args.guided_heads else {"head": args.head}
    weights = [float(w) for w in args.guided_weights.split(",")]
    setup = {"heads": heads, "weights": weights}
    old = json.loads((Path(args.out) / "summary.json").read_text()) if (Path(args.out) / "summary.json").is_file() else {}
    if old.get("guided", {}).get("setup") == setup:
        g = old["guided"]
    else:
        dev, models = {}, {}
        for label, path in heads.items():
            models[label] = SigmoidHeadModel.from_pretrained(path, args.model, device="cpu")
            for w in weights:
                rows, _ = decode_greedy(models[label], recs["dev"], w, args.setting, args.max_new_tokens)
                dev[f"{label} w={w:g}"] = float(np.mean(sentence_chrf(rows, recs["dev"])))
                print(f"guided dev: {label} w={w:g} mean chrF {dev[f'{label} w={w:g}']:.3f}", flush=True)
        label, w = max(((lab, w) for lab in heads for w in weights), key=lambda k: dev[f"{k[0]} w={k[1]:g}"])
        plain, t_plain = decode_greedy(models[label], recs["test"], 0.0, args.setting, args.max_new_tokens)
        rows, t_guided = decode_greedy(models[label], recs["test"], w, args.setting, args.max_new_tokens)
        per_tok = [t / max(sum(r["n_tokens"] for r in rs), 1) for t, rs in ((t_plain, plain), (t_guided, rows))]
        g = {"setup": setup, "dev_mean_chrf": dev, "chosen": {"head": label, "weight": w},
             "seconds_per_token": {"plain": per_tok[0], "guided": per_tok[1]},
             "test_outputs": [r["candidate"] for r in rows]}
    label, w = g["chosen"]["head"], g["chosen"]["weight"]
    sec = g["seconds_per_token"]
    g["cost"] = (f"guided decoding ({label} head, weight {w:g}) was chosen on dev among weights "
                 f"{args.guided_weights} and heads {', '.join(heads)} (dev mean chrF "
                 f"{g['dev_mean_chrf'][f'{label} w={w:g}']:.3f}; plain greedy {dev_greedy:.3f}) and took "
                 f"{sec['guided'] / sec['plain']:.2f}x the wall time per generated token of plain greedy "
                 f"decoding on the test verses ({sec['plain'] * 1e3:.2f} vs {sec['guided'] * 1e3:.2f} ms, "
                 "one run each, shared CPU)")
    summary["guided"] = g
    print(g["cost"], flush=True)
    outputs = [{"candidate": c} for c in g["test_outputs"]]
    return {f"guided ({label}, w={w:g})": sentence_chrf(outputs, recs["test"])}


def run(args: argparse.Namespace) -> dict:
    from sigmoid_head.evaluation.combination import DEFAULTS
    from sigmoid_head.head.model import SigmoidHeadModel

    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.setting == "mt" and not args.data:
        raise SystemExit("--setting mt needs --data (the folder recipes/bible/build_data.py wrote)")
    model = SigmoidHeadModel.from_pretrained(args.head, args.model, device="cpu")
    also = dict(a.split("=", 1) for a in args.also)
    data, summary = {}, {"head": args.head, "setting": args.setting, "samples": args.samples,
                         "temperature": args.temperature}
    recs = {}
    for split, n, skip in (("dev", args.n_dev, 124), ("test", args.n_test, 0)):
        recs[split] = (mt_items(Path(args.data), split, n) if args.setting == "mt" else items(split, n, skip))
        path = out / f"candidates_{split}.jsonl"
        if path.is_file():  # generated once, then reused
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        elif args.candidates_from:  # another head on the same candidates: only scoring reruns
            rows = rescore(model, Path(args.candidates_from) / path.name, args.setting)
            DEFAULTS["score"].apply(rows)
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        else:
            rows = candidates(model, recs[split], args.samples, args.temperature, args.seed,
                              args.max_new_tokens, args.setting)
            DEFAULTS["score"].apply(rows)
            add_golds(rows)
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        summary[f"dominant_share_{split}"] = {
            o: dominant_share([r for r in rows if r["origin"] == o]) for o in sorted({r["origin"] for r in rows})}
        scores = selection_scores(rows)
        for label, run_dir in also.items():
            scores.update(also_scores(rows, label, Path(run_dir), split))
        data[split] = {"gold": [r["chrf"] for r in rows], "bleu": [r["bleu"] for r in rows],
                       "groups": [r["item"] for r in rows], "origin": [r["origin"] for r in rows],
                       "scores": {k: v.tolist() for k, v in scores.items()}}
        print(f"{split}: {len(rows)} candidates for {n} verses ({(time.perf_counter() - t0) / 60:.1f} min)",
              flush=True)
    dev = {m: v for m, v in tables.rerank_table(data["dev"]).items() if m in data["dev"]["scores"]}
    summary["dev_pick_chrf"] = {m: v["pick"] for m, v in dev.items()}
    summary["chosen"] = max(dev, key=lambda m: dev[m]["pick"])
    summary["baseline"] = max((m for m in dev if tables.softmax_side(m)), key=lambda m: dev[m]["pick"])
    dev_greedy = tables.rerank_table(data["dev"])["greedy"]["pick"]
    decoded = guided(args, recs, summary, dev_greedy) if args.guided_weights else {}
    summary["minutes"] = (time.perf_counter() - t0) / 60
    (out / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    d = {**data["test"], "name": args.pack or "rerank", "kind": "rerank", "metric": "chrf",
         "baseline": summary["baseline"], "chosen": summary["chosen"],
         "baseline_chosen": f"on {args.n_dev} dev verses (dev mean pick chrF "
                            f"{dev[summary['baseline']]['pick']:.3f}; best on dev: {summary['chosen']} "
                            f"{dev[summary['chosen']]['pick']:.3f})",
         "dominant_share": summary["dominant_share_test"], "command": args.command,
         "n_boot": args.boot, "seed": 0}
    if decoded:
        d |= {"decoded": decoded, "notes": summary["guided"]["cost"]}
    print(tables.render_rerank(d))
    if args.pack:
        print(f"wrote {tables.save(d)}")
    return summary


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--setting", choices=("llm", "mt"), default="llm")
    p.add_argument("--data", help="--setting mt: the Bible data folder (recipes/bible/build_data.py)")
    p.add_argument("--head", required=True, help="the head folder (the demo's: demo-output/head)")
    p.add_argument("--model", help="base model (default: the head's)")
    p.add_argument("--out", required=True)
    p.add_argument("--n-dev", type=int, default=60)
    p.add_argument("--n-test", type=int, default=60)
    p.add_argument("--samples", type=int, default=6)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--boot", type=int, default=1000)
    p.add_argument("--candidates-from", help="an earlier run's OUT: score its candidates with --head "
                   "instead of generating (the frozen model's outputs do not depend on the head)")
    p.add_argument("--also", action="append", default=[], metavar="LABEL=RUN",
                   help="add the head-side scores of another run's OUT on the same candidates")
    p.add_argument("--guided-weights", help="comma-separated head weights of guided greedy decoding")
    p.add_argument("--guided-heads", action="append", metavar="LABEL=HEAD",
                   help="heads tried for guided decoding (default: --head)")
    p.add_argument("--pack", help="also write docs/results/data/PACK.json.gz (the test split)")
    p.add_argument("--command", default="", help="the command line, recorded with --pack")
    run(p.parse_args(argv))


if __name__ == "__main__":
    main()
