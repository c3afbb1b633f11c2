"""Why is Eval Self hard for the Sigmoid Head? Token-level evidence, combined scores, dev-chosen weights.

    python -m recipes.bible.eval_self_study --setting mt --model runs/mt/model --data data/bible \\
        --heads runs/mt_full/heads --out runs/study_mt

For each saved head under ``--heads`` (folders written by experiments.py or
``sigmoid-head train``), the model's own greedy outputs on the dev books and on the test
books are force-decoded once, and every token gets: its softmax log-probability, the
softmax entropy, its dominant set (size, mass, whether the token is in it, whether it is
the argmax) and each head's logit. From these the script reports

1. saturation: the share of greedy tokens that are dominant (the tokens that avoid-dominant
   sampling never draws as negatives) and the head's probabilities on them, against the
   same figures on the reference translations;
2. Pearson with chrF of every method in every aggregation (product, mean log, min);
3. combined scores of the head with the softmax: a geometric combination
   ``a * head + (1 - a) * softmax`` of mean log scores, and the head's mean log score
   minus ``b`` times the mean entropy; ``a`` and ``b`` are chosen on the **dev books** and
   only then applied to the test books, with a paired bootstrap against the best baseline.

Eval Self has one greedy output per verse, so its bootstrap resamples verses; Eval Other
resamples source verses with all their candidates. Paired p-values are two-sided, and the
combined scores' are Holm-corrected per baseline column (the family: every combination
against that baseline).

With ``--rauq`` (LLM setting) RAUQ's per-token confidences, from the attention weights of
the same forward pass, join the methods (rows ``rauq@prod``, ``rauq@mean``, ``rauq@min``)
as a baseline: in the summary's choice of the best baseline, and as a column of the
combined scores' comparisons.

Everything goes to ``OUT/study.json`` and ``OUT/study.md``; the token arrays to
``OUT/<split>_tokens.npz``; per verse, every method's sequence score and the gold
(``gold:chrf``, ``gold:minilm``) to ``OUT/<split>_sequence.npz``, which
``python -m recipes.bible.tables --pack self OUT`` commits as a table's data; the reference
translations' token arrays to ``OUT/<split>_ref_tokens.npz`` (``--pack saturation``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path

import numpy as np
import torch

from sigmoid_head import SigmoidHeadModel, load_backbone
from sigmoid_head.data.prompts import make_examples
from sigmoid_head.evaluation.bootstrap import bootstrap_ci, paired_bootstrap
from sigmoid_head.evaluation.metrics import pearson, roc_auc
from sigmoid_head.evaluation.pvalues import add_holm, describe_p
from sigmoid_head.lm.dominant import find_dominant
from sigmoid_head.scoring.rauq import RauqConfig, capture_self_attention, rauq_positions
from sigmoid_head.scoring.token_adjust import rank_preserving

from .experiments import LLM_PROMPT, find, other_candidates, read_jsonl
from .qe_report import gold_self

ROOT = Path(__file__).resolve().parents[2]


def eval_items(setting: str, data: Path, split: str, max_words: int = 40) -> list[dict]:
    """Held-out verses of a split (dev or test books) as {source, refs}."""
    verses = [v for v in read_jsonl(find(data, split)) if len(v["web"].split()) <= max_words]
    if setting == "mt":
        return [{"source": v["es"], "refs": [v["kjv"], v["web"]]} for v in verses]
    return [{"source": v["kjv"], "refs": [v["web"]]} for v in verses]


@torch.no_grad()
def greedy(model: SigmoidHeadModel, items: list[dict], render: dict, max_new: int) -> list[str]:
    from sigmoid_head.scoring.decoding import DecodingConfig
    from sigmoid_head.scoring.generate import generate_and_score

    out = generate_and_score(model, [{"source": t["source"]} for t in items],
                             DecodingConfig(max_new_tokens=max_new), progress=True, **render)
    return [g["candidate"] for g in out]


@torch.no_grad()
def token_study(backbone, heads: dict[str, SigmoidHeadModel], records: list[dict], render: dict,
                batch: int = 32, rauq: RauqConfig | None = None,
                full_vocab: set[str] | None = None) -> dict[str, np.ndarray]:
    """Per-token arrays over all records, with ``seq`` giving each token's record index
    (and RAUQ's log confidence, ``rauq``, from the same pass when asked for).

    ``full_vocab`` names the heads whose whole-vocabulary scores (``rankpres``, ``validmass``,
    ``headmax``) are computed; None means every head. Each costs a (positions x vocabulary)
    product per head, as much as the model's own unembedding (49k rows on SmolLM2)."""
    examples = make_examples(records, backbone.tokenizer, is_encoder_decoder=backbone.is_encoder_decoder,
                             **render)
    from sigmoid_head.data.batching import Collator

    tok = backbone.tokenizer
    collate = Collator(tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
                       backbone.is_encoder_decoder)
    cols: dict[str, list[np.ndarray]] = {}
    capture = capture_self_attention(backbone.model, rauq) if rauq else contextlib.nullcontext()
    with capture as attn:
        for s in range(0, len(examples), batch):
            b = {k: v.to(backbone.device) for k, v in collate(examples[s : s + batch]).items()}
            if attn is not None:
                attn.clear()
            pos = backbone.positions(b, with_logits=True)
            row = _token_row(pos, heads, s, full_vocab)
            if attn is not None:
                row["rauq"] = rauq_positions(torch.from_numpy(row["softmax"]), attn.at(pos.row, pos.col - 1).cpu(),
                                             pos.row.cpu(), len(examples[s : s + batch]), rauq.weight).numpy()
            for k, v in row.items():
                cols.setdefault(k, []).append(v)
    return {k: np.concatenate(v) for k, v in cols.items()}


def _token_row(pos, heads: dict[str, SigmoidHeadModel], first: int,
               full_vocab: set[str] | None = None) -> dict[str, np.ndarray]:
    """The per-token arrays of one batch's scored positions (records from index ``first``)."""
    logp = torch.log_softmax(pos.logits, -1)  # (N, V)
    dom = find_dominant(logp)
    t = pos.targets
    row = {
        "seq": (pos.row + first).cpu().numpy(),
        "target": t.cpu().numpy(),
        "softmax": logp.gather(1, t[:, None])[:, 0].cpu().double().numpy(),
        "entropy": (-(logp.exp() * logp).nan_to_num().sum(-1)).cpu().double().numpy(),
        "n_dom": dom.n_dominant.cpu().numpy(),
        "dom_mass": dom.mass().cpu().double().numpy(),
        "in_dom": dom.contains(t).cpu().numpy(),
        "is_argmax": (logp.argmax(-1) == t).cpu().numpy(),
    }
    for name, hm in heads.items():
        row[f"logit:{name}"] = hm.head.logits(pos.hidden, t[:, None])[:, 0].float().cpu().double().numpy()
        if full_vocab is not None and name not in full_vocab:
            continue
        full = hm.head.full_logits(pos.hidden.to(hm.head.weight.dtype))  # (N, V)
        row[f"rankpres:{name}"] = rank_preserving(full, logp, t).cpu().double().numpy()
        # what the head says about the position, not the token: the softmax mass on tokens
        # the head accepts, log sum_v p(v) sigmoid(h_v), and the head's best token
        valid = torch.logsumexp(logp + torch.nn.functional.logsigmoid(full.float()), -1)  # (N,)
        row[f"validmass:{name}"] = valid.cpu().double().numpy()
        row[f"headmax:{name}"] = torch.nn.functional.logsigmoid(full.float().amax(-1)).cpu().double().numpy()
    return row


def log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def token_log_scores(tokens: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Method -> (T,) token log-scores (entropy as its negative: higher = more confident)."""
    p_soft = np.exp(tokens["softmax"])
    boosted = np.where(tokens["in_dom"], tokens["dom_mass"], p_soft)
    out = {"softmax": tokens["softmax"], "boostedprob": np.log(np.maximum(boosted, 1e-45)),
           "neg_entropy": -tokens["entropy"]}
    if "rauq" in tokens:
        out["rauq"] = tokens["rauq"]
    for k, v in tokens.items():
        if k.startswith("logit:"):
            out["sigmoid:" + k[6:]] = log_sigmoid(v)
        elif k.startswith(("rankpres:", "validmass:", "headmax:")):
            out[k] = v
    return out


def aggregate(tokens: dict[str, np.ndarray], n_seq: int) -> dict[str, np.ndarray]:
    """Sequence scores: ``<m>@prod`` (sum of logs), ``<m>@mean``, ``<m>@min`` per method."""
    seq = tokens["seq"]
    counts = np.bincount(seq, minlength=n_seq).astype(float)
    out = {}
    for m, v in token_log_scores(tokens).items():
        total = np.bincount(seq, weights=v, minlength=n_seq)
        mins = np.full(n_seq, np.inf)
        np.minimum.at(mins, seq, v)
        if m == "neg_entropy":
            out["entropy@mean"] = total / counts
            continue
        out[f"{m}@prod"], out[f"{m}@mean"], out[f"{m}@min"] = total, total / counts, mins
    out["length"] = -counts
    return out


def saturation(tokens: dict[str, np.ndarray], head: str) -> dict[str, float]:
    p = 1 / (1 + np.exp(-tokens[f"logit:{head}"]))
    dom, nondom = tokens["in_dom"], ~tokens["in_dom"]
    return {"tokens": int(p.size), "share_dominant": float(dom.mean()),
            "share_argmax": float(tokens["is_argmax"].mean()),
            "share_empty_dominant_set": float((tokens["n_dom"] == 0).mean()),
            "head_p_mean_dominant": float(p[dom].mean()) if dom.any() else float("nan"),
            "head_p_mean_nondominant": float(p[nondom].mean()) if nondom.any() else float("nan"),
            "head_p_std_dominant": float(p[dom].std()) if dom.any() else float("nan"),
            "softmax_p_mean_dominant": float(np.exp(tokens["softmax"][dom]).mean()) if dom.any() else float("nan"),
            "share_head_p_above_0.9": float((p > 0.9).mean())}


def choose_weight(scores_a: np.ndarray, scores_b: np.ndarray, gold: np.ndarray, grid: np.ndarray
                  ) -> tuple[float, float]:
    """The grid weight w maximising Pearson(w * a + (1 - w) * b, gold) -- call on dev only."""
    vals = [pearson(w * scores_a + (1 - w) * scores_b, gold) for w in grid]
    best = int(np.nanargmax(vals))
    return float(grid[best]), float(vals[best])


def combos(seq: dict[str, np.ndarray], head: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Combined-score components: name -> (head part, baseline part), both higher = better
    (the valid-mass one only where the head got whole-vocabulary scores, ``--full-vocab``)."""
    h = seq[f"sigmoid:{head}@mean"]
    out = {f"geo(sigmoid:{head}, softmax)": (h, seq["softmax@mean"]),
           f"geo(sigmoid:{head}, entropy)": (h, seq["entropy@mean"])}
    if f"validmass:{head}@mean" in seq:
        out[f"geo(validmass:{head}, entropy)"] = (seq[f"validmass:{head}@mean"], seq["entropy@mean"])
    return out


def standardise(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return (x - ref.mean()) / (ref.std() + 1e-12)


def render_for(setting: str) -> dict:
    """How the setting's prompts are rendered (as experiments.py trains them)."""
    return ({"prompt_template": LLM_PROMPT, "use_chat_template": True} if setting == "llm"
            else {"prompt_template": "{source}", "use_chat_template": False})


def load_heads(model: str | None, folder: str, only: str | None = None
               ) -> tuple[object, dict[str, SigmoidHeadModel]]:
    """The backbone and every saved head under ``folder`` (one sub-folder each; ``only``:
    comma-separated folder names)."""
    backbone = load_backbone(model, device="cpu" if not torch.cuda.is_available() else None)
    head_dirs = sorted(p.parent for p in Path(folder).glob("*/head_config.json"))
    if only:
        head_dirs = [d for d in head_dirs if d.name in only.split(",")]
    heads = {d.name: SigmoidHeadModel.from_pretrained(d, backbone) for d in head_dirs}
    if not heads:
        raise SystemExit(f"no saved heads under {folder}")
    return backbone, heads


def run(args: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    render = render_for(args.setting)
    if args.rauq and args.setting != "llm":
        raise SystemExit("--rauq: RAUQ is defined for decoder-only LMs (the llm setting)")
    # SmolLM2-135M-Instruct through its chat template: polygraph's alpha for instruction-tuned models
    rauq = RauqConfig(alpha=args.rauq_alpha, instruct=True) if args.rauq else None
    backbone, heads = load_heads(args.model, args.heads, args.only)
    main = heads[args.main] if args.main in heads else next(iter(heads.values()))
    full = full_vocab_of(args)
    report: dict = {"setting": args.setting, "model": args.model, "heads": list(heads)}
    splits = {}
    for split in ("dev", "test"):
        items = eval_items(args.setting, Path(args.data), split)[: args.n_items]
        hyp_file = out / f"{split}_hyps.json"
        hyps = json.loads(hyp_file.read_text()) if hyp_file.exists() else []
        if len(hyps) != len(items):  # generated once per split and item count, then reused
            hyps = greedy(main, items, render, args.max_new_tokens)
            hyp_file.write_text(json.dumps(hyps, ensure_ascii=False))
        gold = gold_self(hyps, [t["refs"] for t in items])
        recs = [{"source": t["source"], "candidate": h if h.strip() else "."} for t, h in zip(items, hyps, strict=True)]
        toks = token_study(backbone, heads, recs, render, rauq=rauq, full_vocab=full)
        refs = [{"source": t["source"], "candidate": t["refs"][-1]} for t in items]
        ref_toks = token_study(backbone, heads, refs, render, rauq=rauq, full_vocab=full)
        np.savez_compressed(out / f"{split}_tokens.npz", **toks)
        np.savez_compressed(out / f"{split}_ref_tokens.npz", **ref_toks)  # tables.py --pack saturation
        splits[split] = {"seq": aggregate(toks, len(items)), "gold": gold, "tokens": toks, "ref_tokens": ref_toks}
        np.savez_compressed(out / f"{split}_sequence.npz", **{f"gold:{k}": v for k, v in gold.items()},
                            **splits[split]["seq"])  # per verse, for tables.py --pack self
        print(f"{split}: {len(items)} items, {toks['seq'].size} tokens ({(time.perf_counter() - t0) / 60:.1f} min)",
              flush=True)
    if not args.no_eval_other:
        report["eval_other"] = eval_other(backbone, heads, args, render, rauq)
    report["saturation"] = {h: {"greedy_dev": saturation(splits["dev"]["tokens"], h),
                                "reference_dev": saturation(splits["dev"]["ref_tokens"], h)} for h in heads}
    report["pearson_chrf"] = {split: {m: bootstrap_ci(pearson, v, s["gold"]["chrf"], n=args.boot)
                                      for m, v in s["seq"].items()} for split, s in splits.items()}
    report["combined"] = combined(splits, heads, args.boot)
    report["summary"] = dev_chosen_summary(splits, args.boot)
    (out / "study.json").write_text(json.dumps(report, indent=1))
    (out / "study.md").write_text(markdown(report))
    print(markdown(report))
    print(f"done in {(time.perf_counter() - t0) / 60:.1f} min")
    return report


def full_vocab_of(args: argparse.Namespace) -> set[str] | None:
    """The ``--full-vocab`` heads as a set (None: every head)."""
    return None if getattr(args, "full_vocab", None) is None else set(filter(None, args.full_vocab.split(",")))


def eval_other(backbone, heads: dict, args: argparse.Namespace, render: dict,
               rauq: RauqConfig | None = None) -> dict:
    """ROC-AUC and Pearson of every method on the test books' force-decoded candidates
    (references = 1, next verse and word swap = 0), as in experiments.py."""
    items = eval_items(args.setting, Path(args.data), "test")[: args.n_items]
    cands = other_candidates(items, 0)
    labels = np.array([c["label"] for c in cands], dtype=float)
    verse = np.array([c["item"] for c in cands])  # the resampling unit
    seq = aggregate(token_study(backbone, heads, cands, render, rauq=rauq, full_vocab=full_vocab_of(args)),
                    len(cands))
    return {m: {"roc_auc": bootstrap_ci(roc_auc, v, labels, n=args.boot, groups=verse),
                "pearson": bootstrap_ci(pearson, v, labels, n=args.boot, groups=verse)}
            for m, v in seq.items() if m.endswith(("@mean", "@prod", "@min"))}


def combined(splits: dict, heads: dict, n_boot: int) -> dict:
    """Weights chosen on dev, applied to test; paired bootstrap vs the best test baseline."""
    dev, test = splits["dev"], splits["test"]
    baselines = ["softmax@mean", "boostedprob@mean", "entropy@mean", "softmax@prod"]
    best_base = max(baselines, key=lambda m: pearson(dev["seq"][m], dev["gold"]["chrf"]))
    res = {"best_baseline_on_dev": best_base}
    compared = baselines + [m for m in ("rauq@mean",) if m in test["seq"]]  # RAUQ: compared, not chosen
    grid = np.linspace(0, 1, 21)
    for h in heads:
        for name, (a_dev, b_dev) in combos(dev["seq"], h).items():
            a_test, b_test = combos(test["seq"], h)[name]
            za, zb = standardise(a_dev, a_dev), standardise(b_dev, b_dev)
            w, dev_r = choose_weight(za, zb, dev["gold"]["chrf"], grid)
            test_score = w * standardise(a_test, a_dev) + (1 - w) * standardise(b_test, b_dev)
            gold = test["gold"]["chrf"]
            res[name] = {"weight_on_head": w, "dev_pearson": dev_r,
                         "test_pearson": bootstrap_ci(pearson, test_score, gold, n=n_boot),
                         "vs": {b: paired_bootstrap(pearson, test_score, test["seq"][b], gold, n=n_boot)
                                for b in compared}}
    names = [k for k in res if k != "best_baseline_on_dev"]
    for b in compared:
        add_holm({k: res[k]["vs"][b] for k in names}, f"every combination vs {b}")
    return res


def family(method: str) -> str:
    """``sigmoid:h@mean`` -> ``sigmoid:h``: a method without its aggregation."""
    return method.split("@")[0]


def dev_chosen_summary(splits: dict, n_boot: int) -> dict:
    """Each method in the aggregation that is best on the dev books, then the best head and
    the best baseline (both chosen on dev) compared on the test books by a paired bootstrap."""
    dev, test = splits["dev"], splits["test"]
    g_dev, g_test = dev["gold"]["chrf"], test["gold"]["chrf"]
    best: dict[str, str] = {}
    for m in dev["seq"]:
        f = family(m)
        if f != "length" and (f not in best or pearson(dev["seq"][m], g_dev) > pearson(dev["seq"][best[f]], g_dev)):
            best[f] = m
    rows = {f: {"aggregation": m, "dev": pearson(dev["seq"][m], g_dev),
                "test": bootstrap_ci(pearson, test["seq"][m], g_test, n=n_boot)} for f, m in best.items()}
    is_base = {"softmax", "boostedprob", "entropy", "rauq"}  # rauq: only with --rauq
    heads = [f for f in rows if f not in is_base]
    base = max((f for f in rows if f in is_base), key=lambda f: rows[f]["dev"])
    out = {"rows": rows, "best_baseline": base}
    if heads:
        head = max(heads, key=lambda f: rows[f]["dev"])
        out["best_head"] = head
        out["paired"] = paired_bootstrap(pearson, test["seq"][rows[head]["aggregation"]],
                                         test["seq"][rows[base]["aggregation"]], g_test, n=n_boot)
    return out


def markdown(report: dict) -> str:
    lines = ["# Eval Self study", ""]
    s = report.get("summary")
    if s:
        lines += ["## Summary: each method in its best aggregation, chosen on the dev books (Pearson with chrF)", "",
                  "| method | aggregation (dev) | dev r | test r (95% CI) |", "|---|---|---|---|"]
        for f, r in sorted(s["rows"].items(), key=lambda kv: -kv[1]["dev"]):
            lines.append(f"| {f} | {r['aggregation'].split('@')[-1]} | {r['dev']:.3f} | {_ci(r['test'])} |")
        if "paired" in s:
            pb = s["paired"]
            lines += ["", f"Best head on dev `{s['best_head']}` against the best baseline on dev "
                      f"`{s['best_baseline']}`, on the test books: delta r = {pb['delta']:+.3f} "
                      f"[{pb['ci_low']:+.3f}, {pb['ci_high']:+.3f}], {describe_p(pb)} "
                      "(one comparison, fixed in advance).", ""]
    lines += ["## Saturation on the model's own greedy outputs (dev books)", "",
              "| head | share dominant (greedy) | share dominant (reference) | head p, dominant greedy tokens | "
              "head p, non-dominant greedy | share head p > 0.9 (greedy) | (reference) |", "|---|---|---|---|---|---|---|"]
    for h, s in report["saturation"].items():
        g, r = s["greedy_dev"], s["reference_dev"]
        lines.append(f"| {h} | {g['share_dominant']:.3f} | {r['share_dominant']:.3f} | {g['head_p_mean_dominant']:.3f}"
                     f" | {g['head_p_mean_nondominant']:.3f} | {g['share_head_p_above_0.9']:.3f} |"
                     f" {r['share_head_p_above_0.9']:.3f} |")
    lines += ["", "## Pearson with chrF (95% bootstrap CI)", "", "| method | dev | test |", "|---|---|---|"]
    p = report["pearson_chrf"]
    for m in p["test"]:
        lines.append(f"| {m} | {_ci(p['dev'][m])} | {_ci(p['test'][m])} |")
    c = report["combined"]
    shown = ["softmax@mean", "entropy@mean", "boostedprob@mean"]
    shown += [b for b in ("rauq@mean",) if any(b in v["vs"] for k, v in c.items() if k != "best_baseline_on_dev")]
    lines += ["", f"## Combined scores (weights chosen on dev; best dev baseline: {c['best_baseline_on_dev']})", "",
              "| combination | weight on head (dev) | dev r | test r | vs softmax@mean: delta, p | vs entropy@mean | "
              "vs boostedprob@mean |" + "".join(f" vs {b} |" for b in shown[3:]), "|---" * (7 + len(shown[3:])) + "|"]
    for name, v in c.items():
        if name == "best_baseline_on_dev":
            continue
        vs = v["vs"]
        lines.append(f"| {name} | {v['weight_on_head']:.2f} | {v['dev_pearson']:.3f} | {_ci(v['test_pearson'])} | "
                     + " | ".join(f"{vs[b]['delta']:+.3f}, {describe_p(vs[b], family=False)}" for b in shown) + " |")
    lines += ["", "Holm family per column: every combination against that column's baseline."]
    lines += ["", "## Eval Other (test books): references = 1, next verse / word swap = 0", "",
              "| method | ROC-AUC | Pearson |", "|---|---|---|"]
    for m, v in report.get("eval_other", {}).items():
        lines.append(f"| {m} | {_ci(v['roc_auc'])} | {_ci(v['pearson'])} |")
    return "\n".join(lines) + "\n"


def _ci(v) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--setting", choices=["llm", "mt"], required=True)
    p.add_argument("--model", default=None)
    p.add_argument("--data", default=str(ROOT / "data" / "bible"))
    p.add_argument("--heads", required=True, help="folder of saved heads (one sub-folder each)")
    p.add_argument("--only", default=None, help="comma-separated head folder names")
    p.add_argument("--main", default="token_freq+avoid", help="head whose model generates (any: same text)")
    p.add_argument("--full-vocab", default=None, metavar="HEADS",
                   help="comma-separated heads that also get the whole-vocabulary scores (rankpres, validmass, "
                        "headmax); default: every head; '' for none")
    p.add_argument("--out", required=True)
    p.add_argument("--n-items", type=int, default=None)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--boot", type=int, default=1000)
    p.add_argument("--rauq", action="store_true", help="add RAUQ (LLM setting) beside the other methods")
    p.add_argument("--rauq-alpha", type=float, default=None,
                   help="RAUQ's alpha (default: LM-Polygraph's for instruction-tuned models, 0.5)")
    p.add_argument("--no-eval-other", action="store_true",
                   help="skip the short Eval Other of the test books (eval_other_suite.py has the full one)")
    run(p.parse_args())


if __name__ == "__main__":
    main()
