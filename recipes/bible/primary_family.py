"""Pack the primary family declared in docs/results.md, with heads of several training seeds.

    # seeds 1 and 2 of the tables' head: only the training seed changes (--data-seed 0 keeps
    # the same 3,000 training pairs), then one error-kind suite run scores both heads
    python -m recipes.bible.experiments --setting llm --data data/bible --out runs/llm_s1 \\
        --train-only --settings token_freq+avoid --seed 1 --data-seed 0
    python -m recipes.bible.experiments ... --out runs/llm_s2 ... --seed 2 --data-seed 0
    mkdir -p runs/llm_seeds/heads
    ln -s ../../llm_s1/heads/token_freq+avoid runs/llm_seeds/heads/token_freq+avoid_s1
    ln -s ../../llm_s2/heads/token_freq+avoid runs/llm_seeds/heads/token_freq+avoid_s2
    python -m recipes.bible.eval_other_suite --setting llm --data data/bible \\
        --heads runs/llm_seeds/heads --split test --n-items 150 --boot 200 --full-vocab '' \\
        --out runs/llm_seeds_test
    python -m recipes.bible.primary_family --suite runs/llm_seeds_test \\
        --seed-head 1:token_freq+avoid_s1 --seed-head 2:token_freq+avoid_s2 --command "..."
    python -m recipes.bible.tables --write

The family (docs/results.md, "Confirmatory or exploratory"): per model, on the test books,
(1) the word-level ROC-AUC of the token freq + avoid head against the softmax's word
probability and (2) the combined score (the library's default weight, chosen on the dev
books: ``docs/results/default_combination.json``) against the softmax's weakest token on
Eval Other; Holm over the four comparisons of the two models.

Seed 0 is the head behind the committed tables: its scores are read from the committed
packs ``llm_suite_test`` and ``llm_words_test``. The other seeds come from the suite run
folder, which must hold the very same candidates and words: the labels and verses must be
equal and the softmax columns equal to the committed ones (to ``--tol``), else nothing is
written.

The MT half (``--mt-suite``, ``--mt-seed-head`` for every seed, 0 included): the model of
the MT tables is not committed, and the recipe does not always give the same weights in
another session (docs/results.md, "MT model"), so that half runs on a model trained again
by the same recipe (compare its ``eval.json`` fingerprint with
``docs/results/mt_model_fingerprint.json``). Every seed's head and the softmax baseline
then come from one suite run on that model; its candidates, words and labels must still be
the committed MT tables' (they are made from the references, not by the model), while its
softmax and seed-0 head may differ from the committed ones (other weights): the pack
records by how much. Without ``--mt-suite`` the MT half is listed as not run and
counted with p = 1::

    python -m recipes.bible.train_mt --data data/bible --out runs/mt_b --threads 1
    python -m recipes.bible.experiments --setting mt --model runs/mt_b/model --data data/bible \
        --out runs/mt_b_sK --train-only --settings token_freq+avoid --seed K --data-seed 0   # K = 0, 1, 2
    python -m recipes.bible.eval_other_suite --setting mt --model runs/mt_b/model --data data/bible \
        --heads runs/mt_b_seeds/heads --split test --n-items 400 --full-vocab '' --out runs/mt_b_seeds_test
    python -m recipes.bible.primary_family --suite runs/llm_seeds_test --seed-head 1:... --seed-head 2:... \
        --mt-suite runs/mt_b_seeds_test --mt-seed-head 0:token_freq+avoid_s0 --mt-seed-head 1:... \
        --mt-seed-head 2:... --mt-model "..." --mt-command "..."
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from .tables import DATA, ROOT, from_suite, from_words, load, save

HEAD = "token_freq+avoid"
NOT_RUN = {"mt_words": "MT: word ROC-AUC, token freq + avoid vs the softmax",
           "mt_other": "MT: Eval Other ROC-AUC, combined vs the softmax minimum"}
DECLARED = ("The family was written into docs/results.md before seeds 1 and 2 were trained; "
            "seed 0's test tables were already published then.")


def _gap(committed: list[float] | np.ndarray, new: list[float] | np.ndarray) -> float:
    """The largest absolute difference of two equally long score columns (0 when empty)."""
    a, b = np.asarray(committed, dtype=float), np.asarray(new, dtype=float)
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def _parts(model: str, key: str, other: dict, words: dict, other_baseline: list[float],
           other_heads: dict[str, list[float]], word_heads: dict[str, list[float]]) -> dict:
    """The two declared comparisons of one model (word ROC-AUC of the head against the
    softmax; the combined score against the softmax minimum), each seed's head by seed."""
    return {
        f"{key}_words": {"label": f"{model}: word ROC-AUC, token freq + avoid", "form": "words",
                         "baseline_name": "the softmax", "gold": words["gold"], "groups": words["groups"],
                         "baseline": words["scores"]["softmax"], "head": word_heads},
        f"{key}_other": {"label": f"{model}: Eval Other ROC-AUC, combined", "form": "combined",
                         "baseline_name": "the softmax minimum", "gold": other["gold"], "groups": other["groups"],
                         "baseline": other_baseline, "head": other_heads},
    }


def _same(name: str, committed: list[float], new: list[float], tol: float) -> float:
    a, b = np.asarray(committed, dtype=float), np.asarray(new, dtype=float)
    if a.shape != b.shape:
        raise SystemExit(f"{name}: {a.size} values committed, {b.size} in the run: not the same items")
    gap = _gap(a, b)
    if gap > tol:
        raise SystemExit(f"{name}: the run differs from the committed data by up to {gap:.3g} (> --tol {tol:g})")
    return gap


def _same_items(model: str, other0: dict, other: dict, words0: dict, words: dict) -> dict[str, float]:
    """Refuse a run whose candidates or words are not the committed ones (exactly)."""
    return {f"{model}{name}": _same(f"{model}{name}", old, new, 0.0)
            for name, old, new in (("Eval Other labels", other0["gold"], other["gold"]),
                                   ("Eval Other verses", other0["groups"], other["groups"]),
                                   ("word labels", words0["gold"], words["gold"]),
                                   ("word verses", words0["groups"], words["groups"]))}


def _heads_in(suite: Path, other: dict, seed_heads: dict[int, str]) -> None:
    missing = [h for h in seed_heads.values() if f"sigmoid:{h}@mean" not in other["scores"]]
    if missing:
        raise SystemExit(f"heads {missing} are not in {suite}; it has {sorted(other['scores'])}")


def mt_parts(suite: Path, seed_heads: dict[int, str], data_dir: Path = DATA) -> tuple[dict, dict]:
    """(parts, checks) of the MT half from one suite run on a retrained MT model: every seed's
    head and the baseline from that run, the items checked against the committed MT packs."""
    if 0 not in seed_heads:
        raise SystemExit("--mt-seed-head: the MT half needs seed 0's head too (its model is retrained)")
    other0, words0 = load(data_dir / "mt_suite_test.json.gz"), load(data_dir / "mt_words_test.json.gz")
    other, words = from_suite(suite), from_words(suite)
    checks = _same_items("MT ", other0, other, words0, words)
    _heads_in(suite, other, seed_heads)
    # a retrained model: how far its softmax and seed-0 head are from the tables' (recorded, not refused)
    info = {"MT softmax@min vs the tables' model": _gap(other0["scores"]["softmax@min"], other["scores"]["softmax@min"]),
            "MT softmax (words) vs the tables' model": _gap(words0["scores"]["softmax"], words["scores"]["softmax"]),
            "MT seed-0 head (words) vs the tables' head": _gap(words0["scores"][f"sigmoid:{HEAD}"],
                                                                words["scores"][f"sigmoid:{seed_heads[0]}"])}
    parts = _parts("MT", "mt", other, words, other["scores"]["softmax@min"],
                   {str(s): other["scores"][f"sigmoid:{h}@mean"] for s, h in seed_heads.items()},
                   {str(s): words["scores"][f"sigmoid:{h}"] for s, h in seed_heads.items()})
    return parts, {**checks, **info}


def build(suite: Path, seed_heads: dict[int, str], command: str, data_dir: Path = DATA,
          tol: float = 1e-4, n_boot: int = 1000, mt: dict | None = None) -> dict:
    """The ``primary`` pack: seed 0 from the committed packs, the others from ``suite``;
    with ``mt`` (keys ``suite``, ``seed_heads``, ``model``, ``command``) the MT half too."""
    other0, words0 = load(data_dir / "llm_suite_test.json.gz"), load(data_dir / "llm_words_test.json.gz")
    other, words = from_suite(suite), from_words(suite)
    choice = json.loads((ROOT / "docs" / "results" / "default_combination.json").read_text())["eval_other"]["choice"]
    if choice["baseline"] != "softmax_min":  # the family names the softmax's weakest token
        raise SystemExit(f"default_combination.json mixes the head with {choice['baseline']!r}, "
                         "not the softmax minimum the declared family compares against")
    base_other = "softmax@min"
    checks = _same_items("", other0, other, words0, words)
    checks[base_other] = _same(base_other, other0["scores"][base_other], other["scores"][base_other], tol)
    checks["softmax (words)"] = _same("softmax (words)", words0["scores"]["softmax"], words["scores"]["softmax"], tol)
    _heads_in(suite, other, seed_heads)
    seeds = [0, *sorted(seed_heads)]
    pick = {0: HEAD, **seed_heads}
    parts, not_run, notes = {}, dict(NOT_RUN), []
    if mt:
        if sorted(mt["seed_heads"]) != seeds:
            raise SystemExit(f"the MT seeds {sorted(mt['seed_heads'])} are not the SmolLM2 ones {seeds}")
        parts, mt_checks = mt_parts(Path(mt["suite"]), mt["seed_heads"], data_dir)
        checks.update(mt_checks)
        not_run = {}
        notes.append(mt["model"])
        command = f"SmolLM2: {command}; MT: {mt['command']}"
    return {
        "name": "primary_test", "kind": "primary", "model": "SmolLM2-135M-Instruct", "head": HEAD,
        "n_train": 3000, "seeds": seeds, "n_boot": n_boot, "seed": 0, "declared": DECLARED,
        "notes": notes, "command": command, "not_run": not_run, "max_gap_to_committed": checks,
        "combination": {"baseline": base_other, "weight": choice["weight"],
                        "chosen": "on the dev books of both models (docs/results/default_combination.json)"},
        "parts": {
            **_parts("SmolLM2", "llm", other, words, other0["scores"][base_other],
                     {str(s): (other0 if s == 0 else other)["scores"][f"sigmoid:{pick[s]}@mean"] for s in seeds},
                     {str(s): (words0 if s == 0 else words)["scores"][f"sigmoid:{pick[s]}"] for s in seeds}),
            **parts,
        },
    }


def _seed_heads(specs: list[str], flag: str, first: int) -> dict[int, str]:
    """``SEED:HEAD`` options -> {seed: head folder name}; seeds below ``first`` are refused."""
    out = {}
    for spec in specs:
        seed, _, head = spec.partition(":")
        if not seed.isdigit() or not head or int(seed) < first:
            raise SystemExit(f"{flag} {spec!r}: expected SEED:HEAD"
                             + (" with SEED > 0 (seed 0 is the committed head)" if first else ""))
        out[int(seed)] = head
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suite", required=True, help="eval_other_suite.py output (test split) scoring the other seeds' heads")
    p.add_argument("--seed-head", action="append", required=True, metavar="SEED:HEAD",
                   help="a training seed and its head's folder name in the suite run; repeat per seed")
    p.add_argument("--command", default="", help="the commands that made the suite run")
    p.add_argument("--tol", type=float, default=1e-4, help="largest allowed gap to the committed softmax scores")
    p.add_argument("--mt-suite", type=Path, help="eval_other_suite.py output (test split) of the MT seeds' heads "
                   "on a retrained MT model")
    p.add_argument("--mt-seed-head", action="append", default=[], metavar="SEED:HEAD",
                   help="with --mt-suite: a training seed (0, 1, 2) and its head's folder name in that run")
    p.add_argument("--mt-model", default="", help="with --mt-suite: one sentence on the retrained MT model")
    p.add_argument("--mt-command", default="", help="with --mt-suite: the commands that made that run")
    args = p.parse_args(argv)
    seed_heads = _seed_heads(args.seed_head, "--seed-head", first=1)
    mt = None
    if args.mt_suite:
        if not args.mt_model:
            raise SystemExit("--mt-suite needs --mt-model: say which MT model the run scored")
        mt = {"suite": args.mt_suite, "seed_heads": _seed_heads(args.mt_seed_head, "--mt-seed-head", first=0),
              "model": args.mt_model, "command": args.mt_command}
    elif args.mt_seed_head:
        raise SystemExit("--mt-seed-head needs --mt-suite")
    d = build(Path(args.suite), seed_heads, args.command, tol=args.tol, mt=mt)
    print(f"wrote {save(d)}; largest gaps to the committed data: {d['max_gap_to_committed']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
