"""Regenerate the tables of docs/results.md and docs/results/*.md from committed per-item data.

    python -m recipes.bible.tables --check   # exit 1, with a diff, if a table in the docs differs
    python -m recipes.bible.tables --write   # rewrite the tables in place
    python -m recipes.bible.tables --pack suite runs/mt_or_test --name mt_suite_test \
        --baseline softmax@min --chosen "on the dev books (compare_other.py)" --command "..."

Each ``docs/results/data/<name>.json.gz`` holds what one table is made of, item by item:
every method's score per candidate, the gold, each candidate's source (the resampling
unit), the metric, the baseline the comparisons are made against (and where it was
chosen) and the command that produced the scores. The docs mark the table's place with
``<!-- table:<name> -->`` ... ``<!-- /table:<name> -->``; everything between the markers is
made here and nowhere else, so a number edited by hand fails ``--check`` (and the test
that runs it).

A block ``<!-- table:<name>/metrics -->`` holds a shorter table of the same data instead:
ROC-AUC, BCE and Pearson per method, each with its interval over source verses (the
README's demo table).

Methods are shown under their current names, one name per scale (:func:`shown`): a
length-normalised score an older data file holds as a geometric mean (``softmax_geo``, in
[0, 1], so its BCE is that of a probability) is ``softmax_geo_mean``
(:func:`sigmoid_head.registry.methods.probability_key`); a file that holds the mean token
log-probability names it ``softmax_mean_log`` and keeps that name. Rerank tables, where
only the order matters, show the row name (:func:`sigmoid_head.registry.methods.ranking_key`:
``softmax_mean_log``).

A table shows, per method, the metric with two 95% intervals (candidates resampled, as the
earlier tables did, and source verses resampled, the unit that is independent), and the
paired bootstrap against the baseline over verses: the delta, its interval, the two-sided
p and the Holm-corrected p within the table's family (every other method against the
baseline).
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import json
import re
import sys
from pathlib import Path

import numpy as np

from recipes.common.compare import compare, tolerance_note
from sigmoid_head.evaluation.bootstrap import bootstrap_ci, paired_bootstrap
from sigmoid_head.evaluation.metrics import METRICS
from sigmoid_head.evaluation.pvalues import add_holm, describe_p
from sigmoid_head.registry.methods import probability_key, ranking_key

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "results" / "data"
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs" / "results").glob("*.md")))
NAMES = {"roc_auc": "ROC-AUC", "pearson": "Pearson", "bce": "BCE", "spearman": "Spearman"}


def shown(method: str) -> str:
    """A data file's score key as its tables name it: the name of the scale its values are
    on (``softmax_geo`` / ``softmax_geomean``, geometric means, -> ``softmax_geo_mean``;
    ``softmax_mean_log``, ``softmax@mean``, logs, unchanged)."""
    return probability_key(method)


def load(path: Path) -> dict:
    """One table's per-item data (a gzipped JSON object)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def save(d: dict, data_dir: Path | None = None) -> Path:
    """Write one table's per-item data as ``<data_dir>/<name>.json.gz`` (deterministic bytes;
    default folder :data:`DATA`)."""
    data_dir = DATA if data_dir is None else data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"{d['name']}.json.gz"
    raw = json.dumps(d, sort_keys=True, separators=(",", ":")).encode()
    with path.open("wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
        gz.write(raw)
    return path


def from_suite(folder: Path) -> dict:
    """Scores, labels and verses of an ``eval_other_suite.py`` (or compare) output folder."""
    cands = json.loads((folder / "candidates.json").read_text(encoding="utf-8"))
    seq = np.load(folder / "sequence_scores.npz")
    return {"metric": "roc_auc", "gold": [float(c["label"]) for c in cands],
            "groups": [int(c["item"]) for c in cands],
            "scores": {m: seq[m].astype(float).tolist() for m in seq.files
                       if m.endswith(("@mean", "@prod", "@min"))}}


def from_demo(folder: Path) -> dict:
    """Scores, labels and verses of a ``sigmoid-head demo`` output folder (its test candidates)."""
    from sigmoid_head.data.records import read_jsonl
    from sigmoid_head.demo.run import table_scores

    rows = read_jsonl(folder / "scores.jsonl", objects=True)
    # verse ids in sorted-source order: the demo's own resamples (it groups by source text)
    verses = np.unique([r["source"] for r in rows], return_inverse=True)[1]
    return {"metric": "roc_auc", "gold": [float(r["label"]) for r in rows],
            "groups": verses.astype(int).tolist(),
            "scores": {m: [float(x) for x in v] for m, v in table_scores(rows).items()}}  # exact: products are tiny


def from_self(folder: Path, split: str = "test", gold: str = "chrf") -> dict:
    """Sequence scores and gold of an ``eval_self_study.py`` output folder (its test books):
    one greedy output per verse, so each verse is its own group; the metric is Pearson."""
    seq = np.load(folder / f"{split}_sequence.npz")
    scores = {m: seq[m].astype(float).tolist() for m in seq.files
              if not m.startswith("gold:") and m != "length"}
    truth = seq[f"gold:{gold}"].astype(float)
    return {"metric": "pearson", "gold": truth.tolist(), "groups": list(range(truth.size)),
            "scores": scores}


def from_words(folder: Path, threshold: float = 0.5) -> dict:
    """Word-level error detection of an ``eval_other_suite.py`` output folder: every method's
    word log-scores (6 significant digits), the BAD labels and each word's source verse."""
    words = np.load(folder / "word_scores.npz")
    cands = json.loads((folder / "candidates.json").read_text(encoding="utf-8"))
    return {"kind": "words", "metric": "word", "threshold": threshold,
            "gold": words["bad"].astype(int).tolist(),
            "groups": [int(cands[i]["item"]) for i in words["owner"]],
            "scores": {k.removeprefix("score:"): [float(f"{x:.6g}") for x in words[k]]
                       for k in words.files if k.startswith("score:") and k != "score:neg_entropy"}}


def from_saturation(folder: Path, split: str = "dev") -> dict:
    """Where the head can say "no" on a model's own output: per token of an
    ``eval_self_study.py`` folder's greedy outputs and of the reference translations, whether
    the token is in its position's dominant set, and each head's probability (4 significant
    digits); each token's verse is its resampling unit. ``--methods`` keeps a few heads."""
    out = {"kind": "saturation", "metric": "saturation", "split": split, "scores": {}}
    for part, stem in (("greedy", f"{split}_tokens.npz"), ("reference", f"{split}_ref_tokens.npz")):
        if not (folder / stem).is_file():
            raise SystemExit(f"{folder / stem}: not found (eval_self_study.py writes it since the LLM rebuild)")
        t = np.load(folder / stem)
        out[part] = {"groups": t["seq"].astype(int).tolist(), "in_dom": t["in_dom"].astype(int).tolist(),
                     "p": {k.removeprefix("logit:"): [float(f"{x:.4g}") for x in 1 / (1 + np.exp(-t[k]))]
                           for k in t.files if k.startswith("logit:")}}
    out["scores"] = {h: [] for h in out["greedy"]["p"]}  # the heads, for --methods and --baseline
    return out


def from_token_labels(folder: Path) -> dict:
    """Token-level labels of a ``self_labelled.py --val-self`` folder: for each label set
    (``val_self_tokens_<n>ref.npz``), every token's OK (1) / BAD (0) label, its output's
    source (the resampling unit) and every score (5 significant digits)."""
    parts = {}
    for path in sorted(folder.glob("val_self_tokens_*ref.npz")):
        t = np.load(path)
        parts[path.stem.removeprefix("val_self_tokens_")] = {
            "gold": t["good"].astype(int).tolist(), "groups": t["group"].astype(int).tolist(),
            "scores": {k.removeprefix("score:"): [float(f"{x:.5g}") for x in t[k]]
                       for k in t.files if k.startswith("score:")}}
    if not parts:
        raise SystemExit(f"{folder}: no val_self_tokens_*ref.npz (self_labelled.py --val-self writes them)")
    first = next(iter(parts.values()))
    return {"kind": "token_labels", "metric": "roc_auc", "parts": parts,
            "scores": {m: [] for m in first["scores"]}}


PACKERS = {"suite": from_suite, "demo": from_demo, "self": from_self, "words": from_words,
           "saturation": from_saturation, "token_labels": from_token_labels}
"""Output kinds ``--pack`` reads: name -> reader of the output folder."""


def _ci(v: tuple[float, float, float]) -> str:
    return f"[{v[1]:.3f}, {v[2]:.3f}]"


def _paired(t: dict, sep: str) -> str:
    """A paired test's cell: delta [95% CI], then ``sep`` and its two-sided (Holm) p, the
    bootstrap's and the analytic one (which resolves p below 1/resamples)."""
    return (f"{t['delta']:+.3f} [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}]{sep}"
            f"{describe_p(t, family=False, analytic=True)}")


RECIPE_SCRIPT = re.compile(r"python3? (?:\./)?recipes/(bible|human_qe)/(\w+)\.py")
"""A recipe called as a script, as the packs made before the recipes were a package record it."""


def as_module(command: str) -> str:
    """A recorded command as it is run today: ``python recipes/bible/x.py ...`` becomes
    ``python -m recipes.bible.x ...`` (the recipes are a package; the arguments are kept)."""
    return RECIPE_SCRIPT.sub(r"python -m recipes.\1.\2", command)


def _made_by(d: dict) -> str:
    """Every table's last sentence: its data file, the command that made it (spelled as it
    runs today, :func:`as_module`), and how to render it."""
    return (f"Data: `docs/results/data/{d['name']}.json.gz`, made by `{as_module(d['command'])}`; "
            "table: `python -m recipes.bible.tables --write`.")


def render(d: dict) -> str:
    """The Markdown table (and its notes) of one data file."""
    spec = METRICS[d["metric"]]
    gold, groups = np.asarray(d["gold"], dtype=float), np.asarray(d["groups"])
    scores = {m: np.asarray(v, dtype=float) for m, v in d["scores"].items()}
    base, kw = d["baseline"], {"n": d["n_boot"], "seed": d["seed"]}
    tests = {m: paired_bootstrap(spec.fn, v, scores[base], gold, groups=groups,
                                 higher_is_better=spec.higher_is_better, **kw)
             for m, v in scores.items() if m != base}
    family = f"every other method vs {shown(base)} ({len(tests)} comparisons)"
    add_holm(tests, family)
    name = NAMES.get(d["metric"], d["metric"])
    lines = [f"| method | {name} | 95% CI, candidates resampled | 95% CI, verses resampled | "
             f"vs {shown(base)}: delta [95% CI, verses] | p |", "|---|---|---|---|---|---|"]
    for m, v in scores.items():
        item = bootstrap_ci(spec.fn, v, gold, **kw)
        src = bootstrap_ci(spec.fn, v, gold, groups=groups, **kw)
        t = tests.get(m)
        vs = _paired(t, " | ") if t else "(baseline) | "
        lines.append(f"| {shown(m)} | {item[0]:.3f} | {_ci(item)} | {_ci(src)} | {vs} |")
    n_src = len(np.unique(groups))
    lines += ["", f"{gold.size} candidates from {n_src} source verses; {d['n_boot']} resamples (seed "
              f"{d['seed']}); p two-sided; Holm family: {family}; baseline `{shown(base)}` chosen "
              f"{d['baseline_chosen']}. " + _made_by(d)]
    return "\n".join(lines) + "\n"


def render_metrics(d: dict, metrics: tuple[str, ...] = ("roc_auc", "bce", "pearson")) -> str:
    """The short table of one data file: each metric with its 95% interval over source
    verses (no tests; the full table has them)."""
    gold, groups = np.asarray(d["gold"], dtype=float), np.asarray(d["groups"])
    kw = {"n": d["n_boot"], "seed": d["seed"], "groups": groups}
    head = " | ".join(f"{NAMES[k]} {'↑' if METRICS[k].higher_is_better else '↓'}" for k in metrics)
    lines = [f"| method | {head} |", "|---" * (len(metrics) + 1) + "|"]
    for m, v in d["scores"].items():
        cells = [bootstrap_ci(METRICS[k].fn, np.asarray(v, dtype=float), gold, **kw) for k in metrics]
        lines.append(f"| {shown(m)} | " + " | ".join(f"{c[0]:.3f} {_ci(c)}" for c in cells) + " |")
    lines += ["", f"{gold.size} candidates from {len(np.unique(groups))} verses; intervals resample "
              f"verses ({d['n_boot']} resamples, seed {d['seed']}). Data: "
              f"`docs/results/data/{d['name']}.json.gz`; table: `python -m recipes.bible.tables --write`."]
    return "\n".join(lines) + "\n"


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b of two short vectors (NaN when either is constant)."""
    i, j = np.triu_indices(x.size, 1)
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    den = np.sqrt(float(np.count_nonzero(sx)) * float(np.count_nonzero(sy)))
    return float(np.sum(sx * sy) / den) if den else float("nan")


def softmax_side(method: str) -> bool:
    """A score that does not use the head (a baseline for the head's comparisons); another
    head's scores are named ``LABEL:<score>``."""
    return ":" not in method and not method.startswith(("sigmoid", "combined"))


def rerank_table(d: dict) -> dict[str, dict]:
    """Per selection score: the chrF of its pick in every source (``per_source``), their mean
    (``pick``), and the mean per-source Kendall tau with chrF (``tau``) and with BLEU
    (``tau_bleu``); plus the rows ``greedy``, ``random`` (a source's mean candidate) and
    ``oracle`` (its best candidate), and one row per output decoded another way (``decoded``:
    name -> its chrF per source, e.g. head-guided decoding). Ties pick the first candidate
    (greedy comes first)."""
    groups, gold = np.asarray(d["groups"]), np.asarray(d["gold"], dtype=float)
    bleu = np.asarray(d.get("bleu", d["gold"]), dtype=float)
    members = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    out = {}
    for m, v in d["scores"].items():
        v = np.asarray(v, dtype=float)
        picks = np.array([gold[idx[np.argmax(v[idx])]] for idx in members])
        taus = [kendall_tau(v[idx], gold[idx]) for idx in members]
        taus_b = [kendall_tau(v[idx], bleu[idx]) for idx in members]
        out[m] = {"per_source": picks, "pick": float(picks.mean()), "tau": float(np.nanmean(taus)),
                  "tau_bleu": float(np.nanmean(taus_b))}
    origin = np.asarray(d["origin"])
    for name, f in (("greedy", lambda idx: gold[idx][origin[idx] == "greedy"][0]),
                    ("random", lambda idx: gold[idx].mean()), ("oracle", lambda idx: gold[idx].max())):
        picks = np.array([f(idx) for idx in members])
        out[name] = {"per_source": picks, "pick": float(picks.mean()), "tau": float("nan"),
                     "tau_bleu": float("nan")}
    for name, chrf in d.get("decoded", {}).items():
        picks = np.asarray(chrf, dtype=float)
        if picks.size != len(members):
            raise ValueError(f"decoded {name!r}: {picks.size} values for {len(members)} sources")
        out[name] = {"per_source": picks, "pick": float(picks.mean()), "tau": float("nan"),
                     "tau_bleu": float("nan")}
    return out


def _mean(pred: np.ndarray, gold: np.ndarray) -> float:
    return float(np.mean(pred))


def render_rerank(d: dict) -> str:
    """The reranking table of one data file (kind ``rerank``): each score's mean pick chrF
    with its interval over source verses, its per-source Kendall tau with chrF and BLEU, and
    the paired bootstrap over verses against the dev-chosen softmax-side baseline."""
    rows, base = rerank_table(d), d["baseline"]
    kw = {"n": d["n_boot"], "seed": d["seed"]}
    zeros = np.zeros(rows[base]["per_source"].size)
    methods = [m for m in d["scores"] if m != base]
    decoded = list(d.get("decoded", {}))
    tests = {m: paired_bootstrap(_mean, rows[m]["per_source"], rows[base]["per_source"], zeros, **kw)
             for m in [*methods, *decoded, "greedy"]}
    what = "every other score, the other decodings and greedy decoding" if decoded else \
        "every other score and greedy decoding"
    family = f"{what} vs {ranking_key(base)} ({len(tests)} comparisons)"
    add_holm(tests, family)
    lines = [f"| pick by | chrF of the pick [95% CI, verses] | Kendall tau, chrF | Kendall tau, BLEU | "
             f"vs {ranking_key(base)}: delta [95% CI] | p |", "|---|---|---|---|---|---|"]
    for m in [base, *methods, *decoded, "greedy", "random", "oracle"]:
        r, t = rows[m], tests.get(m)
        ci = bootstrap_ci(_mean, r["per_source"], zeros, **kw)
        vs = (_paired(t, " | ")
              if t else ("(baseline) | " if m == base else "| "))
        taus = " | ".join("" if np.isnan(r[k]) else f"{r[k]:.3f}" for k in ("tau", "tau_bleu"))
        label, _, key = m.rpartition(":")  # another head's score: LABEL:<score>
        name = m if m in ("greedy", "random", "oracle", *decoded) else (
            f"{label}: {ranking_key(key)}" if label else ranking_key(key))
        lines.append(f"| {name} | {r['pick']:.3f} {_ci(ci)} | {taus} | {vs} |")
    share = ", ".join(f"{k} {v:.1%}" for k, v in d.get("dominant_share", {}).items())
    n_src = len(np.unique(d["groups"]))
    lines += ["", f"{len(d['gold'])} candidates for {n_src} source verses; {d['n_boot']} resamples "
              f"(seed {d['seed']}) of verses; p two-sided; Holm family: {family}; baseline "
              f"`{ranking_key(base)}` chosen {d['baseline_chosen']}. Share of dominant tokens: {share}. "
              + (f"{d['notes'][0].upper()}{d['notes'][1:]}. " if d.get("notes") else "")
              + _made_by(d)]
    return "\n".join(lines) + "\n"


def render_words(d: dict) -> str:
    """Word-level error detection (kind ``words``): each method's MCC and F1-BAD (a word is
    BAD when its probability is below the threshold), ROC-AUC and AP, with intervals over
    source verses; paired bootstrap over verses of ROC-AUC and AP against the baseline."""
    from sigmoid_head.evaluation.bootstrap import clustered_ci
    from sigmoid_head.evaluation.metrics import roc_auc
    from sigmoid_head.evaluation.span_metrics import WeightedWords, average_precision

    bad, groups, base, thr = (np.asarray(d["gold"], dtype=float), np.asarray(d["groups"]), d["baseline"],
                              d["threshold"])
    kw = {"n": d["n_boot"], "seed": d["seed"], "groups": groups}
    scores = {m: np.asarray(v, dtype=float) for m, v in d["scores"].items()}
    others = [m for m in scores if m != base]
    tests = {}
    for name, fn in (("ROC-AUC", roc_auc), ("AP", average_precision)):
        for m in others:
            tests[(m, name)] = paired_bootstrap(fn, -scores[m], -scores[base], bad, **kw)
    family = f"ROC-AUC and AP of every other method vs {shown(base)} ({len(tests)} comparisons)"
    add_holm(tests, family)
    lines = [f"| method (word = product of its tokens) | MCC | F1-BAD | ROC-AUC | AP | "
             f"ROC-AUC vs {shown(base)} [95% CI], p | AP vs {shown(base)} [95% CI], p |",
             "|---|---|---|---|---|---|---|"]
    for m in [base, *others]:
        words = WeightedWords(np.exp(scores[m])[:, None], bad[:, None], thr)  # a word per item
        ci = clustered_ci(words.thresholded, groups, d["n_boot"], seed=d["seed"], by_weight=True)
        # the ranking metrics on the paired tests' resamples (computed there, read back)
        ci.update({k: bootstrap_ci(fn, -scores[m], bad, **kw) for k, fn in
                   (("roc_auc", roc_auc), ("ap", average_precision))})
        cells = [f"{ci[k][0]:.3f} [{ci[k][1]:.3f}, {ci[k][2]:.3f}]" for k in ("mcc", "f1_bad", "roc_auc", "ap")]
        vs = ["(baseline)", ""] if m == base else [
            _paired(t, ", ")
            for t in (tests[(m, "ROC-AUC")], tests[(m, "AP")])]
        lines.append(f"| {shown(m)} | " + " | ".join(cells + vs) + " |")
    lines += ["", f"{bad.size} words ({int(bad.sum())} BAD) of {len(np.unique(groups))} source verses; "
              f"MCC and F1-BAD at word probability < {thr:g}; {d['n_boot']} resamples (seed {d['seed']}) "
              f"of verses; p two-sided; Holm family: {family}; baseline chosen {d['baseline_chosen']}. "
              + _made_by(d)]
    return "\n".join(lines) + "\n"


def render_saturation(d: dict) -> str:
    """Kind ``saturation``: per head, the share of greedy and reference tokens in their
    dominant set and the head's mean probability on dominant and other tokens, intervals
    over verses."""
    from sigmoid_head.evaluation.bootstrap import clustered_ci

    def stats(part: dict, head: str) -> dict[str, tuple[float, float, float]]:
        dom, p = np.asarray(part["in_dom"], dtype=bool), np.asarray(part["p"][head], dtype=float)

        def fn(idx: np.ndarray) -> dict[str, float]:
            dd, pp = dom[idx], p[idx]
            return {"share": float(dd.mean()), "p_dom": float(pp[dd].mean()) if dd.any() else float("nan"),
                    "p_other": float(pp[~dd].mean()) if (~dd).any() else float("nan"),
                    "p_high": float((pp > 0.9).mean())}
        return clustered_ci(fn, np.asarray(part["groups"]), d["n_boot"], seed=d["seed"])

    rows = (("share", "share of tokens in their position's dominant set"),
            ("p_dom", "head probability on dominant tokens, mean"),
            ("p_other", "head probability on the other tokens, mean"),
            ("p_high", "share of tokens with head probability > 0.9"))
    lines = ["| head | statistic | greedy outputs | reference translations |", "|---|---|---|---|"]
    for head in d["scores"]:
        g, r = stats(d["greedy"], head), stats(d["reference"], head)
        for k, label in rows:
            if k == "share" and head != next(iter(d["scores"])):
                continue  # the dominant sets are the model's: one row for all heads
            lines.append(f"| {'(model)' if k == 'share' else head} | {label} | {g[k][0]:.3f} {_ci(g[k])} | "
                         f"{r[k][0]:.3f} {_ci(r[k])} |")
    n_g, n_r = len(d["greedy"]["groups"]), len(d["reference"]["groups"])
    lines += ["", f"{n_g} greedy and {n_r} reference tokens of {len(np.unique(d['greedy']['groups']))} "
              f"{d['split']}-book verses; 95% intervals over {d['n_boot']} resamples of verses (seed {d['seed']}). "
              + _made_by(d)]
    return "\n".join(lines) + "\n"


def render_token_labels(d: dict) -> str:
    """Kind ``token_labels``: per label set, the share of BAD tokens and each score's ROC-AUC
    for OK against BAD, intervals and paired tests against the baseline over sources
    (Holm over every other score of that label set)."""
    from sigmoid_head.evaluation.metrics import roc_auc

    base, kw = d["baseline"], {"n": d["n_boot"], "seed": d["seed"]}
    lines = ["| labels | BAD tokens | score | ROC-AUC [95% CI, sources] | vs " + shown(base) +
             ": delta [95% CI], p |", "|---|---|---|---|---|"]
    for part, v in d["parts"].items():
        gold, groups = np.asarray(v["gold"], dtype=float), np.asarray(v["groups"])
        scores = {m: np.asarray(x, dtype=float) for m, x in v["scores"].items() if m in d["scores"]}
        tests = {m: paired_bootstrap(roc_auc, x, scores[base], gold, groups=groups, **kw)
                 for m, x in scores.items() if m != base}
        add_holm(tests, f"every other score vs {shown(base)} ({len(tests)} comparisons)")
        for m, x in scores.items():
            ci = bootstrap_ci(roc_auc, x, gold, groups=groups, **kw)
            t = tests.get(m)
            vs = _paired(t, ", ") if t else "(baseline)"
            lines.append(f"| {part} | {1 - gold.mean():.1%} | {shown(m)} | {ci[0]:.3f} {_ci(ci)} | {vs} |")
    first = next(iter(d["parts"].values()))
    lines += ["", f"{len(first['gold'])} labelled tokens of {len(np.unique(first['groups']))} sources per label set; "
              f"{d['n_boot']} resamples (seed {d['seed']}) of sources; p two-sided; Holm family: every other "
              f"score vs {shown(base)} within a label set; baseline chosen {d['baseline_chosen']}. "
              + _made_by(d)]
    return "\n".join(lines) + "\n"


def primary_scores(d: dict, part: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One comparison of a ``primary`` data file as ROC-AUC inputs: (runs (K, N), one per
    seed; the baseline's score (N,); gold (N,); source verse (N,)). Form ``combined``: each
    seed's ``w * head mean log + (1 - w) * baseline``; form ``words``: minus the word
    log-scores, since a low score flags a BAD word (gold 1)."""
    gold, groups = np.asarray(part["gold"], dtype=float), np.asarray(part["groups"])
    base = np.asarray(part["baseline"], dtype=float)
    head = np.array([part["head"][str(s)] for s in d["seeds"]], dtype=float)  # (K, N)
    if part["form"] == "combined":
        w = d["combination"]["weight"]
        return w * head + (1.0 - w) * base, base, gold, groups
    return -head, -base, gold, groups


def render_primary(d: dict) -> str:
    """The declared primary family with several training seeds (kind ``primary``, made by
    ``recipes/bible/primary_family.py``): per comparison, the head's ROC-AUC for each seed,
    their mean and SD, and the paired bootstrap of the seed-averaged ROC-AUC against the
    baseline (one resample of verses applied to every seed); Holm over the whole declared
    family, where a comparison that was not run counts with p = 1."""
    from sigmoid_head.evaluation.metrics import roc_auc

    seeds, tests, cells = d["seeds"], {}, {}
    for key, part in d["parts"].items():
        runs, base_score, gold, groups = primary_scores(d, part)
        kw = {"n": d["n_boot"], "seed": d["seed"], "groups": groups}
        per_seed, base_value = [roc_auc(r, gold) for r in runs], roc_auc(base_score, gold)
        tests[key] = paired_bootstrap(roc_auc, runs, base_score, gold, **kw)
        cells[key] = {"base": base_value, "per_seed": per_seed, "deltas": [v - base_value for v in per_seed],
                      "n": gold.size, "n_src": len(np.unique(groups)), "label": part["label"],
                      "baseline_name": part["baseline_name"]}
    for key in d["not_run"]:
        tests[key] = {"p_value": 1.0, "p_normal": 1.0, "n_boot": d["n_boot"]}
    family = (f"the declared primary family ({len(tests)} comparisons"
              + (f", {len(d['not_run'])} not run: p = 1)" if d["not_run"] else ")"))
    add_holm(tests, family)
    lines = ["| comparison (declared in advance) | baseline ROC-AUC | head ROC-AUC, seed "
             + " / ".join(str(s) for s in seeds) + " | mean (SD across seeds) | mean - baseline "
             "[95% CI, verses] | p (two-sided), Holm p | outcome |", "|---|---|---|---|---|---|---|"]
    for key, t in tests.items():
        if key in d["not_run"]:
            lines.append(f"| {d['not_run'][key]} | not run | not run | - | - | counted with p = 1 | not tested |")
            continue
        c = cells[key]
        survives = t["p_holm"] < 0.05 and t["p_holm_normal"] < 0.05
        outcome = ("not distinguishable" if not survives
                   else "above the baseline" if t["delta"] > 0 else "below the baseline")
        lines.append(
            f"| {c['label']} vs {c['baseline_name']} | {c['base']:.3f} | "
            + " / ".join(f"{v:.3f}" for v in c["per_seed"])
            + " (deltas " + " / ".join(f"{v:+.3f}" for v in c["deltas"]) + ")"
            + f" | {np.mean(c['per_seed']):.3f} ({np.std(c['per_seed'], ddof=1):.3f}) | "
            f"{t['delta']:+.3f} [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] | "
            f"{describe_p(t, family=False, analytic=True)} | {outcome} |")
    parts = "; ".join(f"{c['label']}: {c['n']} items of {c['n_src']} source verses" for c in cells.values())
    comb = d["combination"]
    lines += ["", f"{d['model']}, head `{d['head']}` trained with seeds {', '.join(map(str, seeds))} "
              f"(only the training seed differs: same {d['n_train']:,} training pairs). "
              + "".join(f"{n} " for n in d.get("notes", [])) + f"{parts}. The combined "
              f"score is {comb['weight']:g} x the head's mean log-probability + {1 - comb['weight']:g} x "
              f"`{comb['baseline']}`, the weight chosen {comb['chosen']}. {d['n_boot']} resamples of verses "
              f"(seed {d['seed']}), each applied to every seed; the SD across seeds is the spread training "
              f"adds, which the interval over verses does not cover. p two-sided; Holm family: {family}. "
              "A comparison counts as settled only where both the bootstrap and the analytic Holm p are "
              f"below 0.05. {d['declared']} " + _made_by(d)]
    return "\n".join(lines) + "\n"


VIEWS = {"": render, "/metrics": render_metrics}
"""Block name suffix -> how that block shows a data file."""


KIND_VIEWS = {"rerank": {"": render_rerank}, "words": {"": render_words}, "saturation": {"": render_saturation},
              "token_labels": {"": render_token_labels}, "primary": {"": render_primary}}
"""A data file's ``kind`` -> its views (others: :data:`VIEWS`)."""


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- table:{re.escape(name)} -->\n)(.*?)(<!-- /table:{re.escape(name)} -->)",
                      re.DOTALL)


def render_untrained_rows(rows: list[dict]) -> str:
    """recipes/bible/untrained_rows.py's tables, from its per-candidate rows."""
    from . import untrained_rows

    return untrained_rows.tables(rows) + "\n"


ROW_VIEWS = {"untrained_rows": render_untrained_rows}
"""A recipe's per-item rows (``<name>.jsonl.gz``, one JSON object per line) -> its tables."""


def load_rows(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def regenerate(data_dir: Path = DATA, docs: tuple[Path, ...] = DOCS) -> dict[Path, tuple[str, str]]:
    """Every doc that holds a table: path -> (text now, text with the tables regenerated).

    Raises:
        SystemExit: a data file whose table is in no doc.
    """
    texts = {p: p.read_text(encoding="utf-8") for p in docs if p.is_file()}
    new = dict(texts)
    for path in sorted(data_dir.glob("*.json.gz")):
        d = load(path)
        found = False
        views = KIND_VIEWS.get(d.get("kind", ""), VIEWS)
        for suffix, view in views.items():
            block = _block(d["name"] + suffix)
            hits = [p for p, t in new.items() if block.search(t)]
            table = view(d) if hits else ""
            for p in hits:
                new[p] = block.sub(lambda m, t=table: m.group(1) + t + m.group(3), new[p])
            found = found or bool(hits)
        if not found:
            raise SystemExit(f"{path.name}: no <!-- table:{d['name']} --> block in the docs")
    for path in sorted(data_dir.glob("*.jsonl.gz")):
        name = path.name.removesuffix(".jsonl.gz")
        if name not in ROW_VIEWS:
            raise SystemExit(f"{path.name}: no view of such rows in tables.py (ROW_VIEWS)")
        block = _block(name)
        hits = [p for p, t in new.items() if block.search(t)]
        if not hits:
            raise SystemExit(f"{path.name}: no <!-- table:{name} --> block in the docs")
        table = ROW_VIEWS[name](load_rows(path))
        for p in hits:
            new[p] = block.sub(lambda m, t=table: m.group(1) + t + m.group(3), new[p])
    return {p: (texts[p], new[p]) for p in texts if "<!-- table:" in texts[p]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 if a doc's table differs")
    mode.add_argument("--write", action="store_true", help="rewrite the tables in the docs")
    mode.add_argument("--pack", nargs=2, metavar=("KIND", "DIR"),
                      help=f"commit a run's per-item data; KIND: {', '.join(PACKERS)}")
    p.add_argument("--name", help="--pack: the table's name (its <!-- table:NAME --> block)")
    p.add_argument("--baseline", help="--pack: the method every other one is compared with")
    p.add_argument("--chosen", default="in advance", help="--pack: where the baseline was chosen")
    p.add_argument("--command", default="", help="--pack: the command that made DIR")
    p.add_argument("--boot", type=int, default=1000, help="--pack: bootstrap resamples")
    p.add_argument("--split", default=None,
                   help="--pack self/saturation: the study's split (dev or test; default test for self, dev for saturation)")
    p.add_argument("--methods", help="--pack: keep only these comma-separated methods (and the baseline)")
    args = p.parse_args(argv)
    if args.pack:
        kind, folder = args.pack
        split = {"split": args.split} if kind in ("self", "saturation") and args.split else {}
        d = PACKERS[kind](Path(folder), **split) | {"name": args.name, "baseline": args.baseline,
                                                    "baseline_chosen": args.chosen, "command": args.command,
                                                    "n_boot": args.boot, "seed": 0}
        if args.methods:
            keep = {args.baseline, *args.methods.split(",")} - {None}
            unknown = sorted(keep - set(d["scores"]))
            if unknown:
                raise SystemExit(f"--methods {unknown}: not in {sorted(d['scores'])}")
            d["scores"] = {m: v for m, v in d["scores"].items() if m in keep}
            for part in ("greedy", "reference"):  # saturation: the kept heads' probabilities only
                if part in d:
                    d[part]["p"] = {m: v for m, v in d[part]["p"].items() if m in keep}
            for v in d.get("parts", {}).values():  # token_labels: the kept scores only
                v["scores"] = {m: x for m, x in v["scores"].items() if m in keep}
        if kind == "saturation":
            d.pop("baseline"), d.pop("baseline_chosen")  # no comparisons: statistics per head
        elif args.baseline not in d["scores"]:
            raise SystemExit(f"--baseline {args.baseline!r} is not one of {sorted(d['scores'])}")
        print(f"wrote {save(d)}; put <!-- table:{args.name} --> <!-- /table:{args.name} --> in a doc, then --write")
        return 0
    stale, agree = 0, []
    for path, (now, made) in regenerate().items():
        same = compare(now, made)  # numbers within a stated tolerance (recipes/common/compare.py)
        agree.append(same)
        if same.ok:
            continue
        stale += 1
        if args.write:
            path.write_text(made, encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
        else:
            print(f"{path.relative_to(ROOT)}: {same.problem}")
            sys.stdout.writelines(difflib.unified_diff(now.splitlines(True), made.splitlines(True),
                                                       str(path.relative_to(ROOT)), "regenerated"))
    if args.check and stale:
        print(f"{stale} doc(s) differ from the committed data: python -m recipes.bible.tables --write")
        return 1
    if args.check:
        print(f"the docs' tables match the committed data; {tolerance_note(agree)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
