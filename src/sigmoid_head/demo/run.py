"""``sigmoid-head demo``: train a head on SmolLM2 and compare it with softmax and BoostedProb.

The task is rewriting King James verses into modern English (World English Bible), from
the public-domain sample shipped inside the package (``sigmoid_head/bible_sample``). The head is trained on the
model's own task data with the hidden-state cache, then held-out verses from books never
seen in training are force-decoded with three candidates each: the WEB reference (good,
label 1), the next verse's WEB text (wrong content, 0), and the reference with its
longest word swapped for another verse's longest word (0). Every method's sequence
score is compared with those labels (ROC-AUC, BCE, Pearson, with bootstrap CIs).

It then shows what a user sees: calibrated probabilities and error-span settings fitted
on candidates of dev verses and measured on the held-out ones (ECE and BCE before and
after, character-level span F1 on the word swaps' known locations), per-label score
distributions, ROC curves and reliability figures, a token page (``tokens.html``), and two
generations streamed with their token scores.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import Any

from ..registry import methods as registry
from ..safe.files import write_atomic
from ..safe.json_io import dumps

PROMPT = "Rewrite this verse in modern English:\n{source}"
CALIBRATED = ("sigmoid_platt", "sigmoid_isotonic")
"""The calibrated head, shown in the figures beside every method's product."""
COMBINED = ("combined", "combined_dev")


def present(rows: list[dict]) -> list[str]:
    """The registered methods scored in ``rows`` (registry order)."""
    return [m for m in registry.names() if rows and m in rows[0]]


def baselines(rows: list[dict]) -> list[str]:
    """The softmax-side scores of the table (every method reading the LM's logits, in every
    aggregation it has, and ``neg_entropy``), each a probability-like number in [0, 1]."""
    lm = [m for m in registry.methods("lm_logits") if rows and m.name in rows[0]]
    return [*(k for m in lm for k in m.probability_keys()), "neg_entropy"]


def table_scores(rows: list[dict]) -> dict[str, list[float]]:
    """Every method of the demo's table, in every aggregation (higher = better, in [0, 1]):
    products (the paper's), ``_geo_mean`` (the geometric mean of the token probabilities,
    ``exp`` of the rows' ``_mean_log``), minima, ``exp(-mean entropy)``, the combined scores
    and the calibrated head."""
    out = {}
    for m in present(rows):
        for a in registry.METHODS[m].aggregations:
            agg = registry.AGGREGATIONS[a]
            if agg.distinct:
                out[agg.probability_key(m)] = [agg.probability(float(r[agg.key(m)])) for r in rows]
    out["neg_entropy"] = [math.exp(-float(r["entropy_mean"])) for r in rows]
    for name in (*COMBINED, *CALIBRATED):
        if name in rows[0]:
            out[name] = [float(r[name]) for r in rows]
    return out


def can_plot() -> bool:
    """Whether matplotlib is installed (the ``plots`` extra): without it the demo writes
    its tables, page and files, and skips the figures with a one-line notice."""
    from importlib.util import find_spec

    return find_spec("matplotlib") is not None


PLOTS_SKIPPED = ("figures skipped: matplotlib is not installed "
                 "(pip install 'sigmoid-head[plots]' draws them)")


def sample_dir() -> Path:
    """The Bible sample shipped as package data (``sigmoid_head/bible_sample``), found the
    same way in a source checkout and in an installed wheel."""
    from importlib.resources import files

    path = Path(str(files("sigmoid_head") / "bible_sample"))
    if not (path / "para_train.jsonl.gz").is_file():
        raise FileNotFoundError(f"the Bible sample is missing from the installed package ({path}); "
                                "reinstall sigmoid-head")
    return path


def short(records: list[dict], max_words: int) -> list[dict]:
    return [r for r in records if len(r["source"].split()) <= max_words
            and len(r["target"].split()) <= max_words]


def candidates(test: list[dict], seed: int) -> list[dict]:
    """Three candidates per held-out verse: the reference (1) and two hard negatives (0)."""
    rng = random.Random(seed)
    out = []
    for i, rec in enumerate(test):
        ref, other = rec["target"], test[(i + 1) % len(test)]["target"]
        out.append({"source": rec["source"], "candidate": ref, "label": 1, "kind": "reference",
                    "error_spans": []})
        out.append({"source": rec["source"], "candidate": other, "label": 0, "kind": "next verse"})
        words = ref.split()
        donor = max(test[rng.randrange(len(test))]["target"].split(), key=len)
        j = max(range(len(words)), key=lambda k: len(words[k]))
        if donor.strip(".,;:!?").lower() != words[j].strip(".,;:!?").lower():
            swapped = " ".join(words[:j] + [donor] + words[j + 1 :])
            start = len(" ".join(words[:j])) + (1 if j else 0)  # the known error location
            out.append({"source": rec["source"], "candidate": swapped, "label": 0, "kind": "word swap",
                        "error_spans": [[start, start + len(donor)]]})
    return out


def unseen_swaps(model, cands: list[dict]) -> tuple[int, int]:
    """(word swaps whose new word has a token with zero training count, word swaps)."""
    refs = {c["source"]: c["candidate"] for c in cands if c["kind"] == "reference"}
    hits = total = 0
    for c in cands:
        if c["kind"] != "word swap":
            continue
        ref, new = refs[c["source"]].split(), c["candidate"].split()
        words = [w for i, w in enumerate(new) if i >= len(ref) or w != ref[i]]
        ids = model.tokenizer(" " + " ".join(words), add_special_tokens=False)["input_ids"]
        total += 1
        hits += any(float(model.token_counts[i]) == 0 for i in ids)
    return hits, total


def _elapsed(t0: float) -> str:
    """``(m:ss)`` since ``t0``: when each step of the demo starts."""
    s = int(time.perf_counter() - t0)
    return f"({s // 60}:{s % 60:02d})"


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Write ``records`` as JSON lines, whole or not at all (never through a link planted at
    ``path``; non-finite numbers as ``null``)."""
    return write_atomic(path, "".join(dumps(r, ensure_ascii=False) + "\n" for r in records))


def run_demo(out_dir: str | Path, n_train: int = 600, n_test: int = 100, epochs: float = 12.0,
             lr: float = 1e-3, seed: int = 0, model: str | None = None,
             freq_smoothing: float = 0.0, n_dev: int = 60, n_val: int = 64) -> list[dict]:
    """Train, score, compare; returns the metric rows and writes results under ``out_dir``.

    ``freq_smoothing`` is added to every token count of the token_freq sampler (0 = the
    paper), so tokens that are never a training target can be drawn as negatives.
    ``n_dev`` dev verses (not the ``n_val`` of the validation loss) give the candidates on
    which the calibration and the error-span settings are fitted.
    """
    import numpy as np

    from ..data.records import read_jsonl
    from ..evaluation.metrics import evaluate_methods
    from ..evaluation.report import format_table, write_report
    from ..scoring.force_decode import score_records
    from ..training.config import TrainConfig
    from ..training.loop import train

    out, data, t0 = Path(out_dir), sample_dir(), time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    train_recs = short(read_jsonl(data / "para_train.jsonl.gz"), 40)
    random.Random(seed).shuffle(train_recs)
    test = short(read_jsonl(data / "para_test.jsonl.gz"), 40)[:n_test]
    print(f"[1/5] training a Sigmoid Head on {min(n_train, len(train_recs))} verse pairs "
          f"(SmolLM2-135M-Instruct, token_freq negatives, dominant tokens avoided)", flush=True)
    config = TrainConfig(
        train_file=str(write_jsonl(out / "train.jsonl", train_recs[:n_train])),
        validation_file=str(write_jsonl(out / "dev.jsonl", short(read_jsonl(data / "para_dev.jsonl.gz"), 40)[:n_val])),
        output_dir=str(out / "head"), model=model, use_chat_template=True, prompt_template=PROMPT,
        max_length=192, batch_size=16, epochs=epochs, lr=lr, eval_every=50, patience=3,
        cache_hidden=True, seed=seed, freq_smoothing=freq_smoothing,
    )
    head_model = train(config)
    print(f"      {_elapsed(t0)} head saved to {out / 'head'} ({folder_mib(out / 'head'):.0f} MiB)",
          flush=True)
    cands = candidates(test, seed)
    print(f"[2/5] {_elapsed(t0)} scoring {len(cands)} candidates for {len(test)} held-out verses "
          f"(books never seen in training)", flush=True)
    dev = candidates(short(read_jsonl(data / "para_dev.jsonl.gz"), 40)[64:64 + n_dev], seed)  # never validation
    scored = [{**c, **s} for c, s in zip(cands, score_records(head_model, cands, batch_size=16,
                                                              with_tokens=True), strict=True)]
    print(f"[3/5] {_elapsed(t0)} calibrating and choosing error-span settings on {len(dev)} dev candidates "
          f"({n_dev} dev verses, not the test books)", flush=True)
    dev_scored = [{**c, **s} for c, s in zip(dev, score_records(head_model, dev, batch_size=16,
                                                                with_tokens=True), strict=True)]
    plots = can_plot()
    if not plots:
        print(PLOTS_SKIPPED, flush=True)
    page = explain(head_model, dev_scored, scored, out, plots=plots)
    choice = combine(dev_scored, scored, out)
    write_jsonl(out / "scores.jsonl", scored)
    gold = np.array([c["label"] for c in cands], dtype=float)
    scores = {m: np.array(v, dtype=float) for m, v in table_scores(scored).items()}
    verse = np.array([c["source"] for c in cands])  # the bootstrap resamples verses
    print(f"[4/5] {_elapsed(t0)} comparing with the labels (95% bootstrap CIs over verses)", flush=True)
    rows = evaluate_methods(scores, gold, metrics=["roc_auc", "bce", "pearson"], n_boot=1000, seed=seed,
                            groups=verse)
    print(format_table(rows, ["roc_auc", "bce", "pearson"], fmt="terminal"))
    print(read_table(dev_scored, scores, gold, choice, seed, verse))
    methods = present(scored)  # the figures: combined, products, length-normalised, minima, calibrated
    reported = [*COMBINED[:1], *methods,
                *(registry.AGGREGATIONS[a].probability_key(m) for a in ("mean_log", "min")
                  for m in methods), *CALIBRATED]
    reported = [m for m in reported if m in scores]
    paths = write_report(rows, {m: scores[m] for m in reported}, gold, out, ["roc_auc", "bce", "pearson"],
                         figures=plots)
    if plots:
        paths["calibration"] = out / "calibration.png"
    paths["page"] = page
    print(f"[5/5] {_elapsed(t0)} streaming: generating for two held-out verses, scores as each token appears", flush=True)
    paths["stream"] = stream_demo(head_model, test[:2], out / "stream.jsonl")
    unseen = unseen_swaps(head_model, cands)
    print(f"{unseen[0]} of {unseen[1]} word swaps bring in a token never seen as a training target "
          + ("(token_freq never draws such rows as negatives; see --freq-smoothing)" if not freq_smoothing
             else f"(drawn as negatives thanks to --freq-smoothing {freq_smoothing:g})"))
    minutes = (time.perf_counter() - t0) / 60
    print(f"wrote {', '.join(str(p) for p in paths.values())}; took {minutes:.1f} min")
    return rows


def combine(dev: list[dict], test: list[dict], out: Path) -> Any:
    """Add ``combined`` (the default of ``sigmoid-head score``) and ``combined_dev`` (the
    baseline and weight fitted on the dev candidates) to every candidate; the fitted mix is
    saved with the head only when it beats the default on the dev candidates (else later
    ``score --head`` runs keep the default); one line says which. Returns the fitted
    combination."""
    from ..evaluation.combination import DEFAULTS, fit_combination
    from ..head.files import COMBINATION_NAME, remove_extra

    for rows in (dev, test):
        DEFAULTS["score"].apply(rows)
    fitted, info = fit_combination(dev, [c["label"] for c in dev])
    value, default = info["per_baseline"][info["best"]]["value"], info["default"]["value"]
    remove_extra(out / "head", COMBINATION_NAME)  # from an earlier run
    if info["beats_default"]:
        fitted.save(out / "head")
        print(f"combined: the mix fitted on {len(dev)} dev candidates, {fitted.describe()}, beats "
              f"the default on them (dev ROC-AUC {value:.3f} against {default:.3f}): saved with the "
              f"head, `score --head {out / 'head'}` uses it")
    else:
        print(f"combined: the default of score, {DEFAULTS['score'].describe()}, is as good on the "
              f"{len(dev)} dev candidates as any fitted mix (dev ROC-AUC {default:.3f}, best fit "
              f"{value:.3f}): nothing saved, the head keeps the default")
    for rows in (dev, test):
        for r in rows:
            r["combined_dev"] = math.exp(fitted.log_score(r))
    return fitted


def folder_mib(path: Path) -> float:
    """The size of the files under ``path``, MiB."""
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 2**20


def read_table(dev: list[dict], scores: dict, gold: Any, fitted: Any, seed: int,
               groups: Any = None) -> str:
    """How to read the table: the best baseline chosen on the dev candidates against each
    combined score, on the test candidates (paired bootstrap of the ROC-AUC over ``groups``,
    the candidates' verses)."""
    import numpy as np

    from ..evaluation.bootstrap import paired_bootstrap
    from ..evaluation.combination import DEFAULTS
    from ..evaluation.metrics import roc_auc
    from ..evaluation.pvalues import describe_p

    dev_scores = table_scores(dev)
    dev_gold = np.array([c["label"] for c in dev], dtype=float)
    base = max(baselines(dev), key=lambda m: roc_auc(np.array(dev_scores[m]), dev_gold))
    lines = ["How to read it: products are the paper's aggregation, _geo_mean the length-normalised one",
             "(the geometric mean of the token probabilities, exp of the rows' _mean_log), _min the weakest token,",
             "neg_entropy exp(-mean entropy). Chosen on the dev candidates",
             f"(never the test ones), the best softmax-side score is {base} (dev ROC-AUC "
             f"{roc_auc(np.array(dev_scores[base]), dev_gold):.3f}). On the test candidates, ROC-AUC against it",
             "(paired bootstrap over verses, two-sided p of no difference):"]
    for name, comb, where in (("combined", DEFAULTS["score"], "the default of `sigmoid-head score`, chosen on "
                               "the dev books of docs/results.md"),
                              ("combined_dev", fitted, "fitted on these dev candidates")):
        pb = paired_bootstrap(roc_auc, scores[name], scores[base], gold, n=1000, seed=seed, groups=groups)
        lines.append(f"  {name:<13} {pb['delta']:+.3f} [{pb['ci_low']:+.3f}, {pb['ci_high']:+.3f}], "
                     f"{describe_p(pb)}: {comb.describe()} ({where})")
    return "\n".join(lines)


def explain(model, dev: list[dict], test: list[dict], out: Path, plots: bool = True) -> Path:
    """Fit calibration and error spans on the dev candidates, save them with the head, apply
    them to the test candidates (in place), print before/after figures, write the page and
    (with ``plots``) ``calibration.png``; returns the page's path. The saved error-span
    setting is the method with the best dev span F1, every method being fitted on dev."""
    import numpy as np

    from ..evaluation.calibration import KINDS, Calibrator, format_report
    from ..evaluation.html import write_page
    from ..evaluation.plots import calibration_plot
    from ..evaluation.spans import add_errors, fit_span_method, predict_spans, span_prf

    methods = present(dev)
    cal = Calibrator.fit(dev, [c["label"] for c in dev], methods)
    cal.save(out / "head")
    gold = np.array([c["label"] for c in test], dtype=float)
    print(format_report(cal.report(test, gold),
                        f"calibration fitted on {len(dev)} dev candidates; held-out test "
                        f"({len(test)} candidates), ECE and BCE before (raw) and after:"))
    if plots:
        calibration_plot({m: {"raw product": [c[m] for c in test],
                              **{k: cal.predict(test, m, k) for k in KINDS}} for m in methods},
                         gold, out / "calibration.png")
    cal.apply(test)
    known = [c for c in test if "error_spans" in c]  # references and word swaps
    dev_known = [c for c in dev if "error_spans" in c]
    print(f"error spans on {len(known)} held-out candidates with a known error location "
          f"(references and word swaps), character-level, settings chosen on dev:")
    chosen, fitted = fit_span_method(dev_known, [c["error_spans"] for c in dev_known], methods)
    for method, cfg in fitted.items():
        res = span_prf(predict_spans(known, cfg), [c["error_spans"] for c in known],
                       [c["candidate"] for c in known])
        print(f"  {method:<12} P {res['precision']:.3f}  R {res['recall']:.3f}  "
              f"F1 {res['f1']:.3f}  ({cfg.describe()}; dev F1 {cfg.dev['f1']:.3f})")
    chosen.save(out / "head")
    add_errors(test, chosen)
    found_with = chosen.describe()
    print(f"saved with the head: {chosen.method}'s setting, the best dev span F1 "
          f"({chosen.dev['f1']:.3f})")
    page = [c for c in test if c["kind"] != "next verse"][:8] + \
        [c for c in test if c["kind"] == "next verse"][:2]
    return write_page(out / "tokens.html", page, model.tokenizer,
                      title="sigmoid-head demo: token scores", spans_from=found_with)


def stream_demo(model, verses: list[dict], path: Path) -> Path:
    """Generate for a few verses, printing each token as it comes (coloured on a terminal);
    writes every token event to ``path``."""
    import sys

    from ..scoring.decoding import DecodingConfig
    from ..scoring.streaming import TokenEvent, stream_generate
    from ..terminal import legend, show_stream, uses_colour

    if uses_colour(sys.stdout):
        print(legend("sigmoid"))
    events = stream_generate(model, [{"source": v["source"]} for v in verses],
                             DecodingConfig(max_new_tokens=40))
    tokens = [{"input": e.input_index, "position": e.position, "token": e.text, **e.scores}
              for e in show_stream(events, "sigmoid", sys.stdout) if isinstance(e, TokenEvent)]
    return write_jsonl(path, tokens)
