"""How the combined score's defaults were chosen (dev books), and what they give (test books).

    python -m recipes.bible.default_combination --other runs/suite_dev runs/suite_test \
        --self mt:runs/mt_study llm:runs/llm_study --data data/bible --out docs/results/default_combination.md

The library's combined score (``sigmoid_head.evaluation.combination``) is
``w * sigmoid_mean_log + (1 - w) * baseline``, both log-confidences per token. Its defaults
are chosen here, on the dev books only, and then measured on the test books:

* Eval Other (``sigmoid-head score``), from two ``eval_other_suite.py`` outputs (the same
  heads, ``--split dev`` and ``--split test``): for every baseline (the softmax's weakest
  token, ``softmax_mean_log`` / ``boostedprob_mean_log``, minus the mean entropy) and
  weight on a grid of 0.05, the dev ROC-AUC averaged over the heads; the best pair is the
  default. On test: each head's combination against the baseline that is best on dev, by
  a paired bootstrap over source verses (a verse's candidates stay together), two-sided,
  Holm-corrected over the heads of one test set (the family: every head's combination
  against that baseline).
* Eval Self (``sigmoid-head generate``), from ``eval_self_study.py`` outputs (greedy
  outputs and token arrays of the dev and test books): the same choice by Pearson with
  chrF; each study's dev curve is the mean over its heads, and the studies (models and
  settings) count equally.

Nothing is chosen on the test books.

With ``--packed`` the inputs are the per-item data committed under
``docs/results/data/`` (``python -m recipes.bible.tables --pack``) instead of run folders, so the
report is rebuilt from the repository alone:

    python -m recipes.bible.default_combination --packed --other mt_suite_dev mt_suite_test \
        --other llm_suite_dev llm_suite_test --self mt:mt_eval_self llm:llm_eval_self \
        --out docs/results/default_combination.md

(``--self SETTING:NAME`` reads the packs ``NAME_dev`` and ``NAME_test``; ``--other`` repeats,
one dev/test pair per model or setting, and the choice averages over them as over studies.)
"""

from __future__ import annotations

import argparse
import difflib
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from recipes.common.compare import compare
from sigmoid_head.evaluation.bootstrap import bootstrap_ci, paired_bootstrap
from sigmoid_head.evaluation.metrics import pearson, roc_auc
from sigmoid_head.evaluation.pvalues import add_holm, describe_p

from .eval_self_study import aggregate, eval_items
from .qe_report import gold_self
from .tables import DATA, load

GRID = np.round(np.arange(0.0, 1.0001, 0.05), 2)
BASELINES = {"softmax_min": "softmax@min", "softmax_mean_log": "softmax@mean",
             "boostedprob_mean_log": "boostedprob@mean", "neg_entropy": "entropy@mean"}
"""The library's baseline names -> the recipes' sequence-score keys (all log-confidences)."""


def heads_of(seq: dict[str, np.ndarray]) -> list[str]:
    return sorted(k[len("sigmoid:"):-len("@mean")] for k in seq if k.startswith("sigmoid:") and k.endswith("@mean"))


def mix(seq: dict[str, np.ndarray], head: str, base: str, w: float) -> np.ndarray:
    return w * seq[f"sigmoid:{head}@mean"] + (1.0 - w) * seq[BASELINES[base]]


def choose(dev: list[tuple[dict, np.ndarray]], metric) -> dict:
    """The (baseline, weight) whose dev metric is best averaged over the runs (each run: the
    mean over its heads, so every model and setting counts once); ties go to the smaller weight."""
    curves = {b: np.mean([np.mean([[metric(mix(seq, h, b, w), gold) for w in GRID] for h in heads_of(seq)], axis=0)
                          for seq, gold in dev], axis=0) for b in BASELINES}
    best = max(curves, key=lambda b: (curves[b].max(), -GRID[int(np.argmax(curves[b]))]))
    i = int(np.argmax(curves[best]))
    base_only = max(BASELINES, key=lambda b: curves[b][0])
    return {"baseline": best, "weight": float(GRID[i]), "dev_value": float(curves[best][i]),
            "best_baseline_alone": base_only, "best_baseline_alone_dev": float(curves[base_only][0]),
            "curves": {b: [round(float(v), 4) for v in c] for b, c in curves.items()}}


def measure(test: dict[str, np.ndarray], gold: np.ndarray, choice: dict, metric, n_boot: int,
            groups: np.ndarray | None = None) -> dict:
    """Each head's combination on test against the dev-chosen baseline alone (resampling
    ``groups``, the source verses, when given); Holm over the heads."""
    base = test[BASELINES[choice["best_baseline_alone"]]]
    kw = {"n": n_boot, "groups": groups}
    out = {"baseline_alone": bootstrap_ci(metric, base, gold, **kw), "heads": {},
           "unit": "item" if groups is None else "source verse"}
    for h in heads_of(test):
        comb = mix(test, h, choice["baseline"], choice["weight"])
        out["heads"][h] = {"head_alone": bootstrap_ci(metric, test[f"sigmoid:{h}@mean"], gold, **kw),
                           "combined": bootstrap_ci(metric, comb, gold, **kw),
                           "vs_baseline": paired_bootstrap(metric, comb, base, gold, **kw)}
    add_holm({h: v["vs_baseline"] for h, v in out["heads"].items()},
             f"every head's combination vs {choice['best_baseline_alone']} on this test set")
    return out


def packed(name: str, data_dir: Path | None = None) -> tuple[dict, np.ndarray, np.ndarray]:
    """A committed table's data (``docs/results/data/NAME.json.gz``): scores, gold, groups."""
    d = load((data_dir or DATA) / f"{name}.json.gz")
    return ({m: np.asarray(v, dtype=float) for m, v in d["scores"].items()},
            np.asarray(d["gold"], dtype=float), np.asarray(d["groups"]))


def eval_other(dev_dir: Path, test_dir: Path, n_boot: int, checks: list[tuple[str, Path]] = (),
               from_data: bool = False, also: list[tuple[Path, Path]] = ()) -> dict:
    """Chosen on ``dev_dir`` (and the dev suites of ``also``: other models or settings, each
    run counting once in the average), measured on ``test_dir``, on the test suites of
    ``also``, and on each of ``checks`` (test-only suites: the same choice applied unchanged).
    ``from_data``: the folders are names of committed tables' data instead (:func:`packed`)."""
    def load(d: Path) -> tuple[dict, np.ndarray]:
        if from_data:
            return packed(str(d))[:2]
        cands = json.loads((d / "candidates.json").read_text())
        return dict(np.load(d / "sequence_scores.npz")), np.array([c["label"] for c in cands], dtype=float)

    def verses(d: Path) -> np.ndarray:
        if from_data:
            return packed(str(d))[2]
        return np.array([c["item"] for c in json.loads((d / "candidates.json").read_text())])

    pairs = [(Path(dev_dir), Path(test_dir)), *((Path(d), Path(t)) for d, t in also)]
    choice = choose([load(d) for d, _ in pairs], roc_auc)
    tests = [("" if not also else t.name, t) for _, t in pairs] + list(checks)
    test = {name: measure(*load(d), choice, roc_auc, n_boot, verses(d)) for name, d in tests}
    return {"choice": choice, "test": test if len(test) > 1 else test[""]}


def eval_self(studies: list[tuple[str, Path]], data: Path, n_boot: int, from_data: bool = False) -> dict:
    def load(setting: str, d: Path, split: str) -> tuple[dict, np.ndarray]:
        if from_data:  # the packs NAME_dev / NAME_test
            return packed(f"{d}_{split}")[:2]
        hyps = json.loads((d / f"{split}_hyps.json").read_text())
        items = eval_items(setting, data, split)[: len(hyps)]
        gold = np.asarray(gold_self(hyps, [t["refs"] for t in items])["chrf"], dtype=float)
        return aggregate(dict(np.load(d / f"{split}_tokens.npz")), len(hyps)), gold

    choice = choose([load(s, d, "dev") for s, d in studies], pearson)
    def measured(s: str, d: Path) -> dict:  # one greedy output per verse: a verse is an item
        seq, gold = load(s, d, "test")
        return measure(seq, gold, choice, pearson, n_boot, np.arange(gold.size))

    return {"choice": choice, "test": {f"{s}:{d.name}": measured(s, d) for s, d in studies}}


def _ci(v) -> str:
    """A ``bootstrap_ci`` triple (value, low, high) as text."""
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def markdown(r: dict) -> str:
    lines = ["# The combined score's defaults: chosen on the dev books, measured on the test books", "",
             "`combined_log = w * sigmoid_mean_log + (1 - w) * baseline` (both in nats per token); "
             "`recipes/bible/default_combination.py`.", ""]
    if "command" in r:
        lines += [f"Rebuilt from the committed data under `docs/results/data/` by `{r['command']}`; "
                  "the same command with `--check` fails when this file differs from what the data give.", ""]
    for part, metric, what in (("eval_other", "ROC-AUC", "Eval Other (`sigmoid-head score`)"),
                               ("eval_self", "Pearson with chrF", "Eval Self (`sigmoid-head generate`)")):
        if part not in r:
            continue
        c = r[part]["choice"]
        lines += [f"## {what}", "",
                  f"Dev choice ({metric}, averaged over the runs, each the mean of its heads): **w = {c['weight']:.2f} on the head, "
                  f"baseline `{c['baseline']}`**, dev {c['dev_value']:.3f}; the best baseline alone on dev is "
                  f"`{c['best_baseline_alone']}` ({c['best_baseline_alone_dev']:.3f}).", "",
                  "Dev curves (weight on the head 0, 0.25, 0.5, 0.75, 1):", ""]
        for b, curve in c["curves"].items():
            lines.append(f"- `{b}`: " + ", ".join(f"{curve[i]:.3f}" for i in (0, 5, 10, 15, 20)))
        tests = r[part]["test"]
        tests = {"": tests} if "heads" in tests else tests
        for name, t in tests.items():
            lines += ["", f"Test books{' (' + name + ')' if name else ''}: baseline alone "
                      f"`{c['best_baseline_alone']}` {_ci(t['baseline_alone'])}", "",
                      "| head | head alone | combined | combined - baseline [95% CI] | p |",
                      "|---|---|---|---|---|"]
            for h, v in t["heads"].items():
                pb = v["vs_baseline"]
                lines.append(f"| {h} | {_ci(v['head_alone'])} | {_ci(v['combined'])} | {pb['delta']:+.3f} "
                             f"[{pb['ci_low']:+.3f}, {pb['ci_high']:+.3f}] | {describe_p(pb, family=False)} |")
            family = next(iter(t["heads"].values()))["vs_baseline"].get("family", "")
            lines += ["", f"Intervals resample {t.get('unit', 'item')}s; Holm family: {family}."]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--other", nargs=2, action="append", metavar=("DEV", "TEST"),
                   help="eval_other_suite.py outputs; repeat for other models or settings (the dev "
                        "choice averages over the runs, each counting once)")
    p.add_argument("--other-check", nargs="*", default=[], metavar="NAME:DIR",
                   help="test-only eval_other_suite.py outputs of other models: the dev choice applied to them")
    p.add_argument("--self", dest="studies", nargs="*", default=[], metavar="SETTING:DIR",
                   help="eval_self_study.py outputs, e.g. mt:runs/mt_study")
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "data" / "bible"))
    p.add_argument("--boot", type=int, default=1000)
    p.add_argument("--packed", action="store_true",
                   help="--other/--self name committed table data (docs/results/data) instead of run folders")
    p.add_argument("--out", required=True, help="markdown report (a .json beside it)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 (printing the diff) if --out differs from what the inputs give")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    report: dict = {}
    if args.other:
        checks = [(c.split(":", 1)[0], Path(c.split(":", 1)[1])) for c in args.other_check]
        (dev, test), *also = args.other
        report["eval_other"] = eval_other(Path(dev), Path(test), args.boot, checks, args.packed,
                                          [(Path(d), Path(t)) for d, t in also])
    if args.studies:
        studies = [(s.split(":", 1)[0], Path(s.split(":", 1)[1])) for s in args.studies]
        report["eval_self"] = eval_self(studies, Path(args.data), args.boot, args.packed)
    if not report:
        raise SystemExit("give --other and/or --self")
    if args.packed:  # a report from committed data names the command that rebuilds it
        shown = [a for a in argv if a != "--check"]
        report["command"] = "python -m recipes.bible.default_combination " + " ".join(map(shlex.quote, shown))
    out, text = Path(args.out), markdown(report)
    made = {out: text, out.with_suffix(".json"): json.dumps(report, indent=1)}
    if args.check:  # the report and the JSON beside it
        stale = 0
        for path, new in made.items():
            old = path.read_text(encoding="utf-8") if path.is_file() else ""
            same = compare(old, new)  # numbers within a stated tolerance (recipes/common/compare.py)
            if not same.ok:
                stale += 1
                print(f"{path}: {same.problem}")
                sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                           str(path), "regenerated"))
        if not stale:
            print(f"{out} and its .json: match their inputs")
        return 1 if stale else 0
    out.parent.mkdir(parents=True, exist_ok=True)
    for path, new in made.items():
        path.write_text(new, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
