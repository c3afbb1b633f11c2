"""The README's "Which score to use" on human labels, by what the user has (issue 58, item 6).

One row per situation, each naming the score or command and its measured figure against
the softmax side, every figure read from the committed results (``tables.py`` writes the
block into README.md; ``--check`` compares it):

* nothing but the model: the WMT ro-en set's committed run (the unsupervised head of this
  page against the softmax);
* post-edits of the user's domain: the learning curve's 28,115-pair heads (word level) and
  the combination analysis with them (segment level, ``calibrate --quality-model``);
* word tags of the user's pair: :mod:`supervised` (the head against what the same tags buy
  without it; the recommendation follows its declared family);
* word tags of the user's pair among other pairs' tags: the pooled comparison of
  :mod:`supervised` (``supervised-pool``: the trees fitted on the pool against the same
  trees on the ro-en tags alone, and the pooled head against the pool's best opponent);
  the row appears once the pool's own ``lr`` and ``gbm`` are in it;
* word tags of other pairs only: the leave-one-pair-out study (:mod:`lopo`; before it, the
  et-en run of the ro-en tag head).
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from . import committed
from .committed import fmt_p
from .lopo import CURVED

BLOCK = "human-qe-analysis:which-score"


def _json(*parts: str) -> dict:
    return json.loads(committed.RESULTS.joinpath(*parts).read_text())


DESCRIBE = {
    "softmax": "the softmax side's word score",
    "lr": "a logistic regression over the softmax side's word features, fitted on the tags",
    "gbm": "gradient-boosted trees over the softmax side's word features, fitted on the tags",
    "probe": "a linear probe on the final hidden state, fitted on the tags (`recipes/human_qe/probe.py`)",
}


def describe(name: str) -> str:
    """What a score of :mod:`supervised` is, for a user."""
    from .supervised import MIXED

    mixed = "a head trained on your tags and their post-edits (`train --labelled-file --train-file`)"
    if "+" in name:
        opp, other = name.split("+", 1)
        with_ = ("a linear probe on the final hidden state" if other == "probe" else
                 f"the word scores of {mixed}" if other in MIXED else "the tag head's word scores")
        return (f"{DESCRIBE[opp]}, combined on your dev tags with {with_} "
                "(`recipes/human_qe/supervised.py`)")
    if name in MIXED:
        return mixed
    return DESCRIBE.get(name, "the head trained on your tags (`train --labelled-file`)")


def seed_groups(scores: dict[str, Any]) -> dict[str, list[str]]:
    """Scores grouped by setting: ``name_s1``, ``name_s2`` (other seeds) join ``name``."""
    out: dict[str, list[str]] = {}
    for name in scores:
        out.setdefault(re.sub(r"_s\d+$", "", name), []).append(name)
    return out


def tags_row(sup: dict[str, Any]) -> tuple[str, str]:
    """(what to use, evidence) for a user with tags of their pair: the setting with the best
    dev MCC (mean over its seeds) among everything :mod:`supervised` measured (chosen on dev,
    as every setting; a user trains one seed, so a seed is not a choice), beside what the
    declared family says of the tag head."""
    s, best, heads, t = sup["scores"], sup["best"], sup["heads"], sup["tests"]
    configs = seed_groups(s)
    dev = {c: float(np.mean([s[n]["dev_mcc"] for n in names])) for c, names in configs.items()}
    pick, second = sorted(configs, key=lambda c: -dev[c])[:2]
    alone = [t[f"{h} - {best}"] for h in heads]
    combo = [t[f"{best}+{h} - {best}"] for h in heads]

    def deltas(ts: list[dict]) -> str:
        return ", ".join(f"{x['delta']:+.3f} (Holm p {fmt_p(x['p_holm'], x['n_boot'])})" for x in ts)

    heads_mcc = np.mean([s[h]["mcc"] for h in heads])
    def test_of(c: str) -> str:
        names = configs[c]
        if len(names) == 1:
            return f"{s[names[0]]['mcc']:.3f}"
        return (" / ".join(f"{s[n]['mcc']:.3f}" for n in names)
                + f" ({len(names)} seeds, mean {np.mean([s[n]['mcc'] for n in names]):.3f})")

    def dev_of(c: str) -> str:
        return f"dev {dev[c]:.3f}" + (f" (mean of {len(configs[c])} seeds)" if len(configs[c]) > 1 else "")

    evidence = (f"{pick} {test_of(pick)} against the softmax's {s['softmax']['mcc']:.3f} ({dev_of(pick)}, the "
                f"best on dev; next on dev {second}: {dev_of(second)}, test {test_of(second)}); the tag head alone {heads_mcc:.3f} (mean of "
                f"{len(heads)} seeds), minus {best}, the best opponent on dev: {deltas(alone)}; {best} with "
                f"the head's columns minus {best}: {deltas(combo)}")
    lib = sup.get("library")
    if lib:  # what the library alone buys: its word model over a head the library trains
        models = {k: v for k, v in lib["models"].items() if k != "probe"}  # the probe is a recipe
        name = max(models, key=lambda k: models[k]["cv_mcc"])
        t_rec = lib["tests"][f"word model ({name}) - {lib['recipe']}"]
        mixed = name in sup.get("mixed", [])
        train = ("" if name not in (*heads, *sup.get("mixed", [])) else
                 f"a head trained on your tags{' and their post-edits' if mixed else ''} (`train "
                 f"--labelled-file{' --train-file' if mixed else ''}`), then ")
        use = f"{describe(pick)}; with the library alone: {train}`calibrate --gold-spans DEV_TAGS --word-model`"
        evidence += (f"; the library's word model over {name} (best on dev among the library's, out-of-fold "
                     f"{models[name]['cv_mcc']:.3f}) {models[name]['mcc']:.3f}, minus {lib['recipe']}: "
                     f"{t_rec['delta']:+.3f} (Holm p {fmt_p(t_rec['p_holm'], t_rec['n_boot'])})")
        return use, evidence
    return describe(pick), evidence


LOPO_DESCRIBE = {
    "softmax": "the softmax side's word score",
    "lr": "a logistic regression over the softmax side's word features, fitted on the other pairs' tags",
    "gbm": "gradient-boosted trees over the softmax side's word features, fitted on the other pairs' tags",
    "probe": "a linear probe on the final hidden state, fitted on the other pairs' tags",
    "head": "a head trained on the other pairs' tags (`train --labelled-file`)",
}


def other_pairs_row(lopo: dict[str, Any]) -> tuple[str, str]:
    """(what to use, evidence) for a user with tags of other pairs only: of the scores that
    need no tag of the user's pair (:mod:`lopo`: the combinations are fitted on the held-out
    pair's dev tags, so they are left out), the one with the best mean dev MCC over the
    held-out pairs; its mean test MCC against the softmax's, and per pair."""
    pairs = lopo["pairs"]
    names = [n for n in LOPO_DESCRIBE if all(n in e["scores"] for e in pairs.values())]
    pick = max(names, key=lambda n: float(np.mean([e["scores"][n]["dev_mcc"] for e in pairs.values()])))

    def mean(n: str) -> float:
        return float(np.mean([e["scores"][n]["mcc"] for e in pairs.values()]))

    sec = lopo.get("secondary", {})

    def holm(p: str) -> str:
        t = sec.get(f"{p}: {pick} - softmax")
        return f" (Holm p {fmt_p(t['p_holm'], lopo.get('n_boot', 1000))})" if t else ""

    per = ", ".join(f"{p} {e['scores'][pick]['mcc']:.3f}/{e['scores']['softmax']['mcc']:.3f}{holm(p)}"
                    for p, e in pairs.items())
    evidence = (f"leave one pair out over the {len(pairs)} MLQE-PE English-target pairs ({lopo['per_pair']} tagged "
                f"sentences of each other pair): {pick} {mean(pick):.3f} on average (best mean dev MCC) against "
                f"the softmax's {mean('softmax'):.3f}; per pair ({pick}/softmax): {per}; the tag head "
                f"{mean('head'):.3f}")
    return LOPO_DESCRIBE[pick] + (" (`recipes/human_qe/lopo.py`)" if pick not in ("softmax", "head") else ""), evidence


def pooled_row(pool: dict[str, Any]) -> tuple[str, str] | None:
    """(what to use, evidence) for a user whose tags mix their pair's with other pairs', from
    :func:`supervised.pooled_results` (None until it compares the pool's own trees with the
    ro-en ones): the trees fitted on the pair's tags alone when the pooled trees are below
    them, with the pooled head against the pool's best opponent beside."""
    post = pool.get("post_hoc", {})
    t = post.get("gbm - gbm_roen")
    if t is None:
        return None
    sc, n, best = pool["scores"], pool["n_boot"], pool["best"]
    heads = pool["heads"]
    use = ("gradient-boosted trees as in the row above, fitted on your pair's tags only"
           if t["delta"] < 0 else "gradient-boosted trees fitted on all the tags you have")
    vs = ", ".join(f"{pool['tests'][f'{h} - {best}']['delta']:+.3f} (Holm p "
                   f"{fmt_p(pool['tests'][f'{h} - {best}']['p_holm'], n)})" for h in heads)
    evidence = (f"trees on the pooled tags of the five MLQE-PE English-target pairs "
                f"({pool['counts']['train_sentences']:,} sentences) {sc['gbm']['mcc']:.3f} against "
                f"{sc['gbm_roen']['mcc']:.3f} on their ro-en part alone ({t['delta']:+.3f}, Holm p "
                f"{fmt_p(t['p_holm'], n)}, a comparison added after the results); the head trained on the "
                f"pooled tags {np.mean([sc[h]['mcc'] for h in heads]):.3f} (mean of {len(heads)} seeds), minus "
                f"{best}, the best pooled opponent on dev: {vs}")
    return use, evidence


def in_pair_points(lopo: dict[str, Any]) -> str:
    """The leave-one-pair-out study's in-pair points with a head (:mod:`lopo`: the pair's own
    first 2,000 tags, then all of them, added to the four other pairs' 500): per pair, the
    head minus the dev-better of ``lr`` and ``gbm`` refitted on the same tags ("" before)."""
    out = []
    for key in ("more_tests", "all_tests"):
        tests = lopo.get(key) or {}
        # the opponent test is the one whose right-hand side is lr or gbm ("pair: head +N - gbm +N")
        vs = [(name.split(":")[0], t) for name, t in tests.items()
              if name.split(" - ")[-1].split(" ")[0] in CURVED]
        if not vs:
            continue
        bound = any("bound" in t for _, t in vs)
        per = ", ".join(f"{pair} {t['delta']:+.3f} ({'bound on ' if bound else ''}Holm p "
                        f"{fmt_p(t['p_holm'], lopo['n_boot'])})" for pair, t in vs)
        what = "its first 2,000 tagged sentences" if key == "more_tests" else "all its tagged sentences"
        out.append(f"with {what} added to 500 of each other pair's ({len(vs)} of 5 pairs"
                   + (f", {len(tests)} of the declared {lopo['all_size']} tests run" if bound else "")
                   + f"), the head minus the dev-better of lr and gbm on the same tags: {per}")
    return ("; leave one pair out, the held-out pair " + "; and ".join(out)) if out else ""


def block(sup: dict[str, Any], lopo: dict[str, Any] | None = None, pool: dict[str, Any] | None = None) -> str:
    main = _json("mlqe-roen-word", "results.json")
    soft, head = (main["word"]["methods"][m]["mcc"][0] for m in ("softmax", "sigmoid"))
    p0 = main["paired"]["softmax"]
    curve = _json("curve", "curve.json")
    seeds = [k for k in ("pe-all", "pe-all_s1", "pe-all_s2") if k in curve]
    big = np.mean([curve[k]["mlqe-roen-word"]["mcc"]["sigmoid"][0] for k in seeds])
    big_p = [curve[k]["mlqe-roen-word"]["paired"]["p_holm"] for k in seeds]
    comb = _json("combination-pe-all.json")
    seg = comb["sets"]["mlqe-roen-word"]["segment"]
    seg_t = comb["tests"]["mlqe-roen-word segment Pearson"]
    use, evidence = tags_row(sup)
    if lopo:
        other = other_pairs_row(lopo)
    else:  # before the leave-one-pair-out study: the ro-en tag head on et-en
        et_m = _json("user-eten", "labelled_roen_unfiltered", "results.json")["word"]["methods"]
        et_best = max(("softmax", "boostedprob", "rauq"), key=lambda m: et_m[m]["mcc"][0])
        other = ("the softmax side (the tag head does not carry over)",
                 f"WMT 2021 et-en: the ro-en tag head (trained before the issue-58 filter) "
                 f"{et_m['sigmoid']['mcc'][0]:.3f} against {et_best} {et_m[et_best]['mcc'][0]:.3f}")
    rows = [
        ("nothing but the model", "the softmax side's word score (`softmax` per word, `score --with-tokens`)",
         f"softmax {soft:.3f}; the unsupervised head (2,000 post-edits) {head:.3f} ({p0['delta']:+.3f}, "
         f"Holm p {fmt_p(p0['p_holm'], p0['n_boot'])})"),
        ("post-edits (references) of your domain",
         "words: the softmax side; segments: a head trained on them (`train --train-file`) inside "
         "`calibrate --quality --quality-model`",
         f"words: the 28,115-pair head {big:.3f} (mean of {len(seeds)} seeds; Holm p "
         + ", ".join(f"{p:.2g}" for p in big_p) + f"); segment Pearson {seg['with']['pearson']:.3f} with "
         f"the head's columns against {seg['without']['pearson']:.3f} without (Holm p "
         f"{fmt_p(seg_t['p_holm'], seg_t['n_boot'])}, seed 0)"),
        ("word tags of your language pair", use, evidence),
        *((("word tags of your pair and of other pairs", mixed[0], mixed[1] + (in_pair_points(lopo) if lopo else "")),)
          if (mixed := pool and pooled_row(pool)) else ()),
        ("word tags of other pairs only", *other),
    ]
    lines = ["| you have | use | test word MCC on WMT 2021 ro-en (unless named) |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join([*lines, "", "SmolLM2-135M-Instruct, thresholds and settings chosen on dev, test "
                      "scored once, sources resampled, two-sided; every figure from the committed "
                      "results of docs/human_labels.md (`python -m recipes.human_qe.tables --write`).", ""])
