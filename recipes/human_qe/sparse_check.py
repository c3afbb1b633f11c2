"""Does the row-sparse update change the head? The quality check of issue 60, item 1.

``--optimizer sparse_adamw`` (:class:`sigmoid_head.training.optim.RowSparseAdamW`) updates
only the rows of the head that received a gradient; the default is dense fused AdamW, which
also moves every untouched row along its old momentum. Issue 60 makes the row-sparse update
the single-process default only after a quality check decided in advance. This is that
check's WMT half.

**Declared before the run** (this docstring was committed before any sparse head was
trained):

* Heads: the ro-en tag head of the page (``labelled_roen``, ``labelled_roen_s1``,
  ``labelled_roen_s2``: dense fused AdamW, seeds 0 / 1 / 2, the clean ro-en tag split)
  trained again with the very same command and seeds but ``--optimizer sparse_adamw``
  (one process, so its sparse row gradients), the frozen model's hidden states read from
  the dense runs' caches (``--cache-from``), scored by ``run.py --set mlqe-roen-word`` and
  packed as :data:`SPARSE` (``labelled_roen_sparse``, ``_sparse_s1``, ``_sparse_s2``).
* Figure: word MCC on the WMT 2021 ro-en test at each head's own dev-chosen threshold (as
  every table of the page).
* Primary test (equivalence, one test, no family): the mean over the three seeds of
  (sparse minus dense of the same seed), by a paired bootstrap over test sources (1,000
  resamples, dev thresholds fixed). The two updates are called **equivalent** when the
  90% interval of that mean lies inside :data:`MARGIN` (-0.01, +0.01): two one-sided tests
  at 0.05 (TOST). Otherwise the check fails, whatever the direction.
* Reported either way (descriptive, Holm over the 3 seeds, two-sided): each seed's sparse
  minus dense, with its 95% interval.
* What follows: ``sparse_adamw`` becomes the single-process default only if this half is
  equivalent **and** the Bible half is (the primary-family head ``token_freq+avoid`` of
  ``recipes/bible/primary_family.py``, seeds 0 / 1 / 2 retrained both ways, word ROC-AUC on
  the test books, the same kind of test with a margin of +-0.01 ROC-AUC). Speed is not part
  of this check: it is measured by ``benchmarks/train_throughput.py`` on a GPU.

**Second check, declared before its runs** (added in the same session, after the first
sparse head's validation loss, 0.954 against the dense head's 0.380, showed the lazy update
trains another head, and before any ``deferred_adamw`` head was trained):
``--optimizer deferred_adamw`` (:class:`sigmoid_head.training.deferred_adamw.DeferredAdamW`,
dense AdamW's updates computed on the touched rows) is checked the same way: the same three
seeds and command, packed as :data:`DEFERRED`, the same figure, the same equivalence test
at the same margin and level, and the per-seed tests (Holm over 3, descriptive). A seed not
run for lack of compute is listed as not run; the equivalence test needs all three. It can
become the default only if it is equivalent here and in the Bible half, and faster than
dense AdamW on a GPU (``benchmarks/optimizer_step.py`` and ``train_throughput.py``).

The Bible half's commands (added after the WMT half ran; not run yet): the primary family's
heads of ``recipes/bible/primary_family.py`` trained with ``--optimizer deferred_adamw`` (and
``sparse_adamw``) beside the committed dense ones, then one suite run scoring them all::

    python -m recipes.bible.experiments --setting llm --data data/bible --out runs/llm_deferred_sK \
        --train-only --settings token_freq+avoid --seed K --data-seed 0 --optimizer deferred_adamw
"""

from __future__ import annotations

from typing import Any

import numpy as np

DENSE = ("labelled_roen", "labelled_roen_s1", "labelled_roen_s2")
"""The committed dense-AdamW heads, seeds 0 / 1 / 2."""
SPARSE = ("labelled_roen_sparse", "labelled_roen_sparse_s1", "labelled_roen_sparse_s2")
"""The same heads trained with ``--optimizer sparse_adamw``, seeds 0 / 1 / 2."""
DEFERRED = ("labelled_roen_deferred", "labelled_roen_deferred_s1", "labelled_roen_deferred_s2")
"""The same heads trained with ``--optimizer deferred_adamw``, seeds 0 / 1 / 2."""
MARGIN = 0.01
"""The equivalence margin on word MCC, stated before the run."""
EQUIVALENCE_LEVEL = 0.90
"""The level of the interval that must lie inside the margin (TOST at 0.05 each side)."""


def present() -> bool:
    """Whether the dense heads and at least one checked head have committed columns."""
    return len(_heads_present(DENSE)) == len(DENSE) and any(_heads_present(c) for c in (SPARSE, DEFERRED))


def _flags(variant: str) -> dict[str, Any]:
    """One head's test flags at its dev-chosen threshold, with the test words' BAD and sources."""
    from sigmoid_head.evaluation.gold_eval import gold_word_bad, gold_word_scores
    from sigmoid_head.evaluation.span_metrics import mcc

    from .evaluate_sets import pick_threshold
    from .supervised import wmt_rows

    data = {s: wmt_rows(s, variant) for s in ("dev", "test")}
    sc = {s: np.concatenate([gold_word_scores(r, "sigmoid") for r in data[s][0]]) for s in data}
    bad = {s: np.concatenate([gold_word_bad(it) for it in data[s][1]]) for s in data}
    thr = pick_threshold(sc["dev"], bad["dev"])
    groups = np.concatenate([[it.group] * len(gold_word_bad(it)) for it in data["test"][1]])
    return {"flags": sc["test"] < thr, "bad": bad["test"], "groups": groups, "threshold": float(thr),
            "dev_mcc": mcc(sc["dev"] < thr, bad["dev"]), "mcc": mcc(sc["test"] < thr, bad["test"])}


UPDATES = {"sparse_adamw": SPARSE, "deferred_adamw": DEFERRED}
"""Each checked update and its heads, seeds 0 / 1 / 2."""


def _heads_present(heads: tuple[str, ...]) -> list[str]:
    from .supervised import _heads_dir

    return [h for h in heads if (_heads_dir() / h).is_dir()]


def _check(ev: dict, candidates: tuple[str, ...], n_boot: int) -> dict[str, Any]:
    """The declared tests of one update against the dense heads (the seeds present)."""
    from sigmoid_head.evaluation.bootstrap import paired_bootstrap
    from sigmoid_head.evaluation.pvalues import add_holm
    from sigmoid_head.evaluation.span_metrics import mcc

    bad, groups = ev[DENSE[0]]["bad"], ev[DENSE[0]]["groups"]
    pairs = [(c, d) for c, d in zip(candidates, DENSE, strict=True) if c in ev]
    seeds = {f"{c} - {d}": paired_bootstrap(mcc, ev[c]["flags"].astype(float), ev[d]["flags"].astype(float),
                                            bad, n=n_boot, groups=groups) for c, d in pairs}
    add_holm(seeds, "per seed, minus dense (Holm over 3, descriptive)" if len(pairs) == 3
             else f"per seed, minus dense (Holm over the {len(pairs)} seeds run, descriptive)")
    out: dict[str, Any] = {"seeds": seeds, "not_run": [c for c in candidates if c not in ev],
                           "same_test_flags": [bool(np.array_equal(ev[c]["flags"], ev[d]["flags"])) for c, d in pairs]}
    if len(pairs) == len(DENSE):
        def stack(heads: tuple[str, ...]) -> np.ndarray:
            return np.stack([ev[h]["flags"].astype(float) for h in heads])

        mean = paired_bootstrap(mcc, stack(candidates), stack(DENSE), bad, n=n_boot, groups=groups,
                                alpha=1 - EQUIVALENCE_LEVEL)
        mean["equivalent"] = bool(mean["ci_low"] > -MARGIN and mean["ci_high"] < MARGIN)
        out["mean"] = mean
    return out


def results(n_boot: int = 1000) -> dict[str, Any]:
    """The declared equivalence tests and the per-seed tests of each update, JSON-ready."""
    names = [*DENSE, *(h for heads in UPDATES.values() for h in _heads_present(heads))]
    ev = {h: _flags(h) for h in names}
    bad, groups = ev[DENSE[0]]["bad"], ev[DENSE[0]]["groups"]
    for h in ev:
        if not (np.array_equal(ev[h]["bad"], bad) and np.array_equal(ev[h]["groups"], groups)):
            raise ValueError(f"{h}: its test words are not those of {DENSE[0]}")
    heads = {h: {k: ev[h][k] for k in ("threshold", "dev_mcc", "mcc")} for h in ev}
    return {"margin": MARGIN, "level": EQUIVALENCE_LEVEL, "n_boot": n_boot, "heads": heads,
            "checks": {name: _check(ev, cands, n_boot) for name, cands in UPDATES.items()}}


def block(res: dict[str, Any]) -> str:
    """The page's table: every head, the equivalence tests and the per-seed tests."""
    from .committed import fmt_p

    h = res["heads"]
    lines = ["| update | seed | test word MCC (dev) | dense AdamW, same seed | minus dense [95% CI] | "
             "Holm p (two-sided) |", "|---|---|---|---|---|---|"]
    for d in DENSE:
        lines.append(f"| dense AdamW (the default) | {DENSE.index(d)} | {h[d]['mcc']:.3f} ({h[d]['dev_mcc']:.3f}) "
                     "| | | |")
    for name, check in res["checks"].items():
        tests = iter(check["seeds"].values())
        for k, (c, d) in enumerate(zip(UPDATES[name], DENSE, strict=True)):
            if c in check["not_run"]:
                lines.append(f"| `{name}` | {k} | not run | {h[d]['mcc']:.3f} | | |")
                continue
            t = next(tests)
            lines.append(f"| `{name}` | {k} | {h[c]['mcc']:.3f} ({h[c]['dev_mcc']:.3f}) | {h[d]['mcc']:.3f} "
                         f"| {t['delta']:+.3f} [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] | {fmt_p(t['p_holm'], res['n_boot'])} |")
    lines.append("")
    for name, check in res["checks"].items():
        m = check.get("mean")
        if m is None:
            lines.append(f"- `{name}`: the equivalence test needs all three seeds; not run: "
                         f"{', '.join(check['not_run'])}.")
            continue
        verdict = ("inside the margin: **equivalent**" if m["equivalent"]
                   else "not inside the margin: **not shown equivalent**")
        same = sum(check["same_test_flags"])
        lines.append(f"- `{name}`: flags the same test words as the dense head in {same} of 3 seeds; "
                     f"mean over the three seeds, minus dense, {m['delta']:+.4f}, "
                     f"{res['level']:.0%} interval [{m['ci_low']:+.4f}, {m['ci_high']:+.4f}] (paired bootstrap "
                     f"over test sources, {res['n_boot']:,} resamples): {verdict} at the margin "
                     f"+-{res['margin']} declared before the runs.")
    return "\n".join([*lines, ""])
