"""One bootstrap resample by drawn indices against one by multiplicities, on the MQM set.

The committed MQM TED zh-en test split (recipes/human_qe: 6,420 texts, their word scores
and gold spans) is read once; then, on the same draws, each statistic is timed both ways,
interleaved, and the two results are checked equal:

* word metrics (MCC, F1-BAD, ROC-AUC, AP of the head's word scores): the drawn texts' words
  concatenated and sorted (``word_metrics``) against the words ranked once and weighted
  (``WeightedWords``);
* Kendall's tau-b of ``sigmoid_mean_log`` with the human score: ``kendall`` on the drawn
  texts against the merge done once (``WeightedKendall``).

    python benchmarks/bootstrap_speed.py [--resamples 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))  # the recipes are a package

from recipes.human_qe import committed, tables  # noqa: E402
from recipes.human_qe import evaluate_sets as es  # noqa: E402
from sigmoid_head.evaluation.bootstrap import Clusters  # noqa: E402
from sigmoid_head.evaluation.gold_eval import gold_word_bad, gold_word_scores  # noqa: E402
from sigmoid_head.evaluation.metrics import kendall  # noqa: E402
from sigmoid_head.evaluation.span_metrics import WeightedWords, word_metrics  # noqa: E402
from sigmoid_head.evaluation.weighted_kendall import WeightedKendall  # noqa: E402

NAME = "mqm-ted-zhen"


def _data() -> tuple[list, list, np.ndarray, np.ndarray, np.ndarray]:
    """(word scores, gold BAD tags) per text, the head's sequence score, the human score,
    the sources."""
    gold = tables.gold_rows(NAME, "test", None)
    scored = tables.joined(
        gold, tables.read_jsonl_gz(committed.RESULTS / NAME / "test.scores.jsonl.gz")
    )
    items = es.items_of(es.KIND[NAME], gold)
    scores = [gold_word_scores(r, "sigmoid") for r in scored]
    bad = [gold_word_bad(it) for it in items]
    x = np.asarray([float(r["sigmoid_mean_log"]) for r in scored])
    human = es.human_scores(es.KIND[NAME], gold)
    return scores, bad, x, human, np.asarray([it.group for it in items])


def _timed(fn, *args) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--resamples", type=int, default=20)
    args = p.parse_args(argv)
    scores, bad, x, human, groups = _data()
    clusters = Clusters(groups)
    t0 = time.perf_counter()
    words, tau = WeightedWords(scores, bad, 0.5), WeightedKendall(x, human)
    prepare = time.perf_counter() - t0
    load0 = os.getloadavg()[0]
    print(
        f"{len(scores)} texts, {sum(b.size for b in bad)} words, {clusters.n_groups} sources; "
        f"one-off preparation {prepare:.2f} s; load average {load0:.2f}",
        flush=True,
    )

    def old_words(idx: np.ndarray) -> dict:
        return word_metrics(
            np.concatenate([scores[i] for i in idx]), np.concatenate([bad[i] for i in idx]), 0.5
        )

    times: dict[str, list[float]] = {
        k: [] for k in ("words old", "words new", "kendall old", "kendall new")
    }
    rng = np.random.default_rng(0)
    for _ in range(args.resamples):
        drawn = rng.integers(0, clusters.n_groups, size=clusters.n_groups)
        idx, weight = clusters.expand(drawn), clusters.multiplicity(drawn)
        t_old, a = _timed(old_words, idx)
        t_new, b = _timed(words.metrics, weight)
        assert a == b, (a, b)
        times["words old"].append(t_old)
        times["words new"].append(t_new)
        t_old, a = _timed(kendall, x[idx], human[idx])
        t_new, b = _timed(tau, weight)
        assert a == b, (a, b)
        times["kendall old"].append(t_old)
        times["kendall new"].append(t_new)
    print(f"load average after {os.getloadavg()[0]:.2f}; identical results on every resample\n")
    print(f"{'statistic':12s} {'old ms':>8s} {'new ms':>8s} {'speed-up':>8s}")
    for stat in ("words", "kendall"):
        old = statistics.median(times[f"{stat} old"]) * 1000
        new = statistics.median(times[f"{stat} new"]) * 1000
        print(f"{stat:12s} {old:8.1f} {new:8.1f} {old / new:7.1f}x")


if __name__ == "__main__":
    main()
