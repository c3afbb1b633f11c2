"""Settings chosen on the WMT ro-en test, looked at again on dev (issue 58, item 4).

``--untrained-prior 0.01`` became the default after a comparison on the WMT ro-en **test**
word tags (issue 49). This module asks what the same comparison says on the **dev** set,
which is where a setting should be chosen: for each head variant with committed dev rows,
its dev word MCC at its own dev-chosen threshold (the threshold every table uses) beside its
test word MCC at that threshold. A setting "chosen on dev" is the one with the higher mean
dev MCC over its seeds. From committed rows only; nothing is fitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import committed

SET = "mlqe-roen-word"
SETTINGS = {
    "--untrained-prior 0.01 (the default since issue 49)": (None, "prior001_s1", "prior001_s2"),
    "--untrained-prior 0 (the paper's setting)": ("paper", "paper_s1", "paper_s2"),
    "--freq-smoothing 1, no prior": ("smooth1",),
}
"""Setting -> its head variants on the WMT set (None: the set's committed head, ``prior001``
seed 0)."""


def variant_mcc(variant: str | None) -> dict[str, float]:
    """Dev MCC at the dev-chosen threshold and test MCC at that threshold, of one head."""
    from sigmoid_head.evaluation.gold_eval import gold_word_bad, gold_word_scores
    from sigmoid_head.evaluation.span_metrics import mcc

    from .evaluate_sets import pick_threshold
    from .supervised import wmt_rows

    out = {}
    data = {s: wmt_rows(s, variant) for s in ("dev", "test")}
    sc = {s: np.concatenate([gold_word_scores(r, "sigmoid") for r in data[s][0]]) for s in data}
    bad = {s: np.concatenate([gold_word_bad(it) for it in data[s][1]]) for s in data}
    thr = pick_threshold(sc["dev"], bad["dev"])
    out["dev_mcc"] = mcc(sc["dev"] < thr, bad["dev"])
    out["test_mcc"] = mcc(sc["test"] < thr, bad["test"])
    return out


def results() -> dict[str, Any]:
    out: dict[str, Any] = {"settings": {}}
    for name, variants in SETTINGS.items():
        present = [v for v in variants if v is None or (committed.RESULTS / SET / "heads" / v).is_dir()]
        rows = {v or "prior001": variant_mcc(v) for v in present}
        out["settings"][name] = {
            "heads": rows,
            "mean_dev_mcc": float(np.mean([r["dev_mcc"] for r in rows.values()])),
            "mean_test_mcc": float(np.mean([r["test_mcc"] for r in rows.values()])),
        }
    by = out["settings"]
    out["chosen_on_dev"] = max(by, key=lambda k: by[k]["mean_dev_mcc"])
    out["chosen_on_test"] = max(by, key=lambda k: by[k]["mean_test_mcc"])
    return out


def block(res: dict[str, Any]) -> str:
    lines = ["| setting | heads (seeds) | dev word MCC (mean) | test word MCC (mean) | per head: dev / test |",
             "|---|---|---|---|---|"]
    for name, e in res["settings"].items():
        per = "; ".join(f"{h} {r['dev_mcc']:.3f} / {r['test_mcc']:.3f}" for h, r in e["heads"].items())
        lines.append(f"| {name} | {len(e['heads'])} | {e['mean_dev_mcc']:.3f} | {e['mean_test_mcc']:.3f} | {per} |")
    same = res["chosen_on_dev"] == res["chosen_on_test"]
    return "\n".join([*lines, "", f"Chosen on dev: {res['chosen_on_dev']}; on test: {res['chosen_on_test']} "
                      + ("(the same choice)." if same else "(a different choice)."), ""])
