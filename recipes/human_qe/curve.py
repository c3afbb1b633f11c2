"""The learning curve (issue 49, item 2): the paper's head on growing English data.

Each point trains the committed head's command (``prior001``: untrained prior 0.01, lr 1e-3,
8 epochs, batch 16, patience 3, max length 192, 10% validation, SmolLM2-135M-Instruct) with
only the training file changed, then scores the head on fixed texts of every set:

* ``mlqe-roen-word``: the whole WMT 2021 ro-en test and dev (1,000 texts each);
* ``mqm-ted-zhen``: a fixed subset, ``MQM_PER_TALK`` rows of each talk (test: talks 2, 6, 9;
  dev: talks 5, 7) drawn with ``random.Random(0)``, kept in the set's order;
* ``mushroom-en``: every answer (its data is not committed; skipped without ``--shroom-data``).

Only the head's columns are kept (as ``tables.py --pack`` does) under
``results/curve/<point>/<set>/{dev,test}.scores.jsonl.gz`` with the point's
``settings.json``; the softmax-side columns are the committed run's (the same frozen model
scores them on the same texts), so ``curve_tables.py`` joins the two by ``id``. The points
(``POINTS``): ``pe2k`` (the committed head: its committed rows, no training), ``pe8k``,
``pe-all`` (every pair of ``data/mlqe-en-pool``) with seeds ``pe-all_s1``/``pe-all_s2``, and
``general-en`` (English passages of six OpenStax textbooks, ``data/general-en``, trained as
text with no prompt).

The hidden-state cache is kept on disk in float32 (``--cache-dir <work>/<point>-cache``, the
values the in-memory cache of the committed runs held), so a rerun resumes from the last
checkpoint without running the frozen model over the data again, and ``pe-all_s2`` (the
same pairs, another seed and validation split) copies every example's rows from ``pe-all``'s
cache (``--cache-from``) instead of running the frozen model at all.

Usage (long: run it in the background with one thread; it skips what is done and the
trainer resumes from its last checkpoint)::

    python -m recipes.human_qe.curve --work DIR [--points pe8k,pe-all] [--shroom-data D]
        [--train-only | --score-only]
    python -m recipes.human_qe.curve --count-tokens [--points ...]   # each point's data size
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from .run import read_split, score, write_jsonl_gz

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

CURVE = HERE / "results" / "curve"
PROMPT = "Translate this sentence into English.\n{source}\n"
VALIDATION_FRACTION = 0.1
"""The share of a point's records ``train`` holds out for the validation loss (its command's
``--validation-fraction``; at most 1,000 records, the library's default cap)."""
TRAIN_ARGS = [
    "--untrained-prior", "0.01", "--lr", "1e-3", "--epochs", "8", "--batch-size", "16",
    "--cache-hidden", "--patience", "3", "--max-length", "192", "--validation-fraction", str(VALIDATION_FRACTION),
    "--threads", "1",
]  # fmt: skip
"""The committed head's (``prior001``) training options, but the data, task and seed."""
POINTS: dict[str, dict[str, Any]] = {
    "pe2k": {"data": "mlqe-en-pool", "n": 2000, "seed": 0, "committed": "prior001"},
    "pe8k": {"data": "mlqe-en-pool", "n": 8000, "seed": 0},
    "pe-all": {"data": "mlqe-en-pool", "n": None, "seed": 0},
    "pe-all_s1": {"data": "mlqe-en-pool", "n": None, "seed": 1},
    "pe-all_s2": {"data": "mlqe-en-pool", "n": None, "seed": 2, "cache_from": "pe-all"},
    "general-en": {"data": "general-en", "n": None, "seed": 0},
}
MQM_PER_TALK = 150
SETS = ("mlqe-roen-word", "mqm-ted-zhen", "mushroom-en")


def train_rows(point: str) -> list[dict]:
    """The point's training records: the first ``n`` of its corpus (all when ``n`` is None)."""
    spec = POINTS[point]
    path = HERE / "data" / spec["data"] / "train.jsonl.gz"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing (see recipes/human_qe/README.md)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if spec["n"] and len(rows) < spec["n"]:
        raise ValueError(f"{path}: {len(rows)} records, the point needs {spec['n']}")
    return rows[: spec["n"]] if spec["n"] else rows


def fitted_rows(point: str) -> list[dict]:
    """The point's records the head's weights were fitted on: :func:`train_rows` less the
    validation share ``train`` held out, drawn as it draws it (the library's
    :func:`~sigmoid_head.training.config.split_validation`, same seed and share)."""
    from types import SimpleNamespace

    from sigmoid_head.training.config import split_validation

    rows = train_rows(point)
    cfg = SimpleNamespace(validation_fraction=VALIDATION_FRACTION, seed=POINTS[point]["seed"],
                          max_validation_examples=1000)
    return split_validation(cfg, rows)[0]


def train_command(point: str, train_file: Path, out: Path) -> list[str]:
    """The ``sigmoid-head train`` command of one point (pairs with the MT prompt, or text)."""
    task = (
        ["--task", "text"]
        if POINTS[point]["data"] == "general-en"
        else ["--task", "pairs", "--prompt-template", PROMPT, "--no-use-chat-template"]
    )
    return [
        sys.executable,
        "-m",
        "sigmoid_head.cli",
        "train",
        "--train-file",
        str(train_file),
        *task,
        *TRAIN_ARGS,
        "--seed",
        str(POINTS[point]["seed"]),
        "--output-dir",
        str(out),
        # the hidden-state cache on disk, float32 (the in-memory cache's values): a run cut
        # off after its first epoch resumes without running the frozen model again
        "--cache-dir",
        str(out.parent / f"{point}-cache"),
        "--disk-cache-dtype",
        "float32",
        # another seed of the same data copies the frozen model's rows from that point's cache
        *(["--cache-from", str(out.parent / f"{POINTS[point]['cache_from']}-cache")]
          if "cache_from" in POINTS[point] else []),
    ]


def train(point: str, work: Path) -> Path:
    """Train the point's head under ``work`` unless done (``<point>.DONE``); its folder."""
    head, done = work / point, work / f"{point}.DONE"
    if done.exists():
        return head
    work.mkdir(parents=True, exist_ok=True)
    train_file = work / f"train_{point}.jsonl"
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in train_rows(point))
    if not train_file.exists() or train_file.read_text(encoding="utf-8") != text:
        train_file.write_text(text, encoding="utf-8")
    cmd = train_command(point, train_file, head)
    print("training", point, ":", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT, env=_env())
    done.write_text(" ".join(cmd) + "\n")
    return head


def _env() -> dict[str, str]:
    import os

    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "OMP_WAIT_POLICY": "PASSIVE",
        "PYTHONPATH": str(ROOT / "src"),
    }


def subset_ids(name: str, split: str, gold: list[dict]) -> list[str]:
    """The ids of the curve's fixed texts of one split, in the set's order."""
    if name == "mlqe-roen-word":
        return [g["id"] for g in gold]
    if name == "mqm-ted-zhen":
        keep: set[str] = set()
        for doc in sorted({g["doc"] for g in gold}):
            ids = [g["id"] for g in gold if g["doc"] == doc]
            keep.update(random.Random(0).sample(ids, min(MQM_PER_TALK, len(ids))))
        return [g["id"] for g in gold if g["id"] in keep]
    return [g["id"] for g in gold]


def gold_split(name: str, split: str, shroom_data: Path | None) -> list[dict] | None:
    """The set's gold rows of one split (None: Mu-SHROOM without ``--shroom-data``)."""
    if name == "mushroom-en":
        if shroom_data is None:
            return None
        return read_split(shroom_data, name, split)
    return read_split(HERE / "data", name, split)


def trained_by(point: str, head: Path | None) -> dict[str, list[str]]:
    """The options the point's head was actually trained with, from its ``<point>.DONE``
    (the command :func:`train` ran, or the one written there by hand when a run was
    finished another way; no paths), when they differ from ``TRAIN_ARGS``."""
    done = None if head is None else head.parent / f"{point}.DONE"
    if done is None or not done.exists():
        return {}
    options = _words(done.read_text(encoding="utf-8").split())
    return {} if options == _words(train_command(point, Path("t/t"), Path("h/h"))) \
        else {"trained_with": options}


def _words(cmd: list[str]) -> list[str]:
    """A command's words after ``train``, split at whitespace, paths left out."""
    words = " ".join(cmd).split()
    start = words.index("train") + 1 if "train" in words else 0
    return [w for w in words[start:] if "/" not in w and "\\" not in w]


def _head_row(row: dict) -> dict:
    from .committed import head_columns, sig6

    return sig6(head_columns(row))


def score_point(point: str, head: Path | None, shroom_data: Path | None,
                sets: tuple[str, ...] = SETS) -> None:
    """Score the point's head on the curve texts of ``sets`` and keep the head's columns."""
    from sigmoid_head.cli.common import ModelOptions

    from .committed import RESULTS, read_jsonl_gz

    model = None
    for name in sets:
        dest = CURVE / point / name
        if (dest / "settings.json").exists():
            continue
        splits = {s: gold_split(name, s, shroom_data) for s in ("dev", "test")}
        if any(g is None for g in splits.values()):
            print(f"{point}: {name} skipped (no gold here: --shroom-data)")
            continue
        dest.mkdir(parents=True, exist_ok=True)
        for split, gold in splits.items():
            keep = set(subset_ids(name, split, gold))
            rows = [g for g in gold if g["id"] in keep]
            if POINTS[point].get("committed"):  # the committed head: its committed rows
                scored = [
                    r
                    for r in read_jsonl_gz(RESULTS / name / f"{split}.scores.jsonl.gz")
                    if r["id"] in keep
                ]
            else:
                if model is None:
                    model = ModelOptions(str(head), None).load()
                args = argparse.Namespace(
                    set=name, prompt_template=None, batch_size=16, no_rauq=False
                )
                scored = [
                    {"id": g["id"], **s}
                    for g, s in zip(rows, score(model, rows, args, True), strict=True)
                ]
            write_jsonl_gz(dest / f"{split}.scores.jsonl.gz", (_head_row(r) for r in scored))
        settings = {
            **POINTS[point],
            "point": point,
            "n_train": len(train_rows(point)),
            "train_options": TRAIN_ARGS,
            "prompt": PROMPT,
            **trained_by(point, head),
        }
        (dest / "settings.json").write_text(json.dumps(settings, indent=1) + "\n")
        print(f"{point}: scored {name}", flush=True)


def trained_text(record: dict) -> str:
    """What the head is trained on in a record: a pair's target, a text record's text."""
    return record.get("target") or record.get("text") or ""


def count_tokens(points: list[str]) -> dict[str, tuple[int, int]]:
    """Records and tokens of trained text (no special tokens, no prompt) of each point,
    printed and returned."""
    from transformers import AutoTokenizer

    from sigmoid_head.embedded.default_model import default_model_path

    tok = AutoTokenizer.from_pretrained(str(default_model_path()))
    out: dict[str, tuple[int, int]] = {}
    for point in points:
        rows = train_rows(point)
        ids = tok([trained_text(r) for r in rows], add_special_tokens=False)["input_ids"]
        out[point] = (len(rows), sum(map(len, ids)))
        print(f"{point}: {out[point][0]:,} records of {POINTS[point]['data']}, "
              f"{out[point][1]:,} tokens of trained text", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, help="heads and training files (not committed)")
    ap.add_argument("--points", default="pe2k,pe8k,pe-all,pe-all_s1,pe-all_s2,general-en")
    ap.add_argument("--shroom-data", type=Path, help="build_data.py's output with mushroom-en")
    ap.add_argument("--sets", default=",".join(SETS),
                    help="the sets to score (two processes may score different sets of a "
                         "trained point at once)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--train-only", action="store_true")
    mode.add_argument("--score-only", action="store_true", help="only points already trained")
    mode.add_argument("--count-tokens", action="store_true",
                      help="print each point's training records and the tokens of their "
                           "trained text (the embedded model's tokenizer), then stop")
    args = ap.parse_args(argv)
    points = [p for p in args.points.split(",") if p]
    if unknown := set(points) - set(POINTS):
        ap.error(f"unknown points {sorted(unknown)}; points: {', '.join(POINTS)}")
    sets = tuple(x for x in args.sets.split(",") if x)
    if bad := set(sets) - set(SETS):
        ap.error(f"unknown sets {sorted(bad)}; sets: {', '.join(SETS)}")
    if args.count_tokens:
        count_tokens(points)
        return 0
    if args.work is None:
        ap.error("--work is required (but with --count-tokens)")
    for point in points:
        if POINTS[point].get("committed"):
            head = None
        elif args.score_only:
            head = args.work / point
            if not (args.work / f"{point}.DONE").exists():
                print(f"{point}: not trained yet, skipped")
                continue
        else:
            try:
                head = train(point, args.work)
            except FileNotFoundError as e:
                print(f"{point}: {e}; skipped")
                continue
        if not args.train_only:
            score_point(point, head, args.shroom_data, sets)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
