"""Re-score only the texts whose prompt or candidate changed in a rebuilt set, and splice
them into the committed per-item scores (issue 49/50: the MQM reader fix).

Two steps::

    # 1. the rows of the set whose source or candidate differ from an earlier commit's data
    python -m recipes.human_qe.splice subset --set mqm-ted-zhen --since COMMIT --out DIR
    # 2. score DIR with the committed head (run.py's path and settings), then splice it in
    python -m recipes.human_qe.run --set mqm-ted-zhen --data DIR --head HEAD --out RUN
    python -m recipes.human_qe.splice adopt RUN --set mqm-ted-zhen

``adopt`` replaces the committed rows with the same ``id`` (rounded as ``tables.py --adopt``
rounds), refuses a run row whose id is not in the set or whose candidate differs from the
gold, keeps every other row byte for byte, and writes the replaced ids to
``results/<set>/rescored.json``. Then ``tables.py --write``.

A head variant (``results/<set>/heads/<variant>/``, packed by ``tables.py --pack``, often on
the first N texts of each split) is re-scored the same way with its retrained head::

    python -m recipes.human_qe.splice subset --set S --since C --out DIR --limit 500 --check 8
    python -m recipes.human_qe.run --set S --data DIR --head HEAD --out RUN
    python -m recipes.human_qe.splice adopt RUN --set S --since C --variant V

``--limit N`` keeps the changed rows among the first N of each split; ``--check K`` adds the
first K unchanged rows of each split (of those N). With ``--since``, ``adopt`` splices only
the rows changed since that commit and compares the others (the check rows) with the
committed columns: it prints the largest relative difference of the head's sequence scores
and word probabilities and refuses to write anything when one passes ``--tolerance``
(default 1e-4): a retrained head that does not reproduce the committed one is not spliced.
A variant's replaced ids go to ``heads/<variant>/rescored.json``.

Nothing is half-replaced (issue 59): ``adopt`` writes every file it changes (both splits'
scores and ``rescored.json``) whole to a hidden temporary file beside it, flushed to disk,
and renames them over the committed ones only once all are written
(:func:`committed.replace_files`); ``subset`` writes its two files the same way and refuses
an ``--out`` that is committed data (the gold or results folder, or files git tracks). A
check row whose score is missing, NaN or infinite counts as not reproduced; ``--tolerance``
must be a finite number >= 0. Every bad input (an unknown ``--set``, ``--variant`` or
``--since`` commit, a missing or cut run) is one line naming it, exit 2. An ``adopt`` killed
between its renames (a window of a few system calls) leaves each file whole, old or new;
running the same ``adopt`` again gives the same files.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import subprocess
import sys
from pathlib import Path

from .committed import (
    RESULTS,
    committed_row,
    gold_rows,
    head_columns,
    read_jsonl_gz,
    refuse_committed,
    replace_files,
)
from .evaluate_sets import KIND
from .run import jsonl_gz_bytes, write_jsonl_gz  # noqa: F401 - write_jsonl_gz: the tests' writer

HERE = Path(__file__).resolve().parent
SPLITS = ("dev", "test")


def _old_rows(name: str, split: str, commit: str) -> list[dict]:
    rel = (HERE / "data" / name / f"{split}.jsonl.gz").relative_to(HERE.parents[1])
    try:
        raw = subprocess.run(["git", "-C", str(HERE), "show", f"{commit}:{rel}"], check=True,
                             capture_output=True).stdout
    except subprocess.CalledProcessError as err:
        why = (err.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise ValueError(f"--since {commit}: git has no {rel} there ({why[0] if why else 'git show failed'})") from None
    except OSError as err:
        raise ValueError(f"--since {commit}: cannot run git ({err.strerror or err})") from None
    with gzip.open(io.BytesIO(raw), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _gold(name: str, split: str) -> list[dict]:
    """The set's committed gold of one split (a set without gold here is refused)."""
    rows = gold_rows(name, split, None)
    if rows is None:
        raise ValueError(f"--set {name}: no {split} gold here (data/{name}/{split}.jsonl.gz)")
    return rows


def changed(name: str, split: str, commit: str) -> list[dict]:
    """The set's rows (today's) whose source or candidate differ from ``commit``'s."""
    old = {r["id"]: r for r in _old_rows(name, split, commit)}
    new = _gold(name, split)
    if set(old) != {r["id"] for r in new}:
        raise SystemExit(f"{name} {split}: the ids differ from {commit}'s; rescore the whole set")
    return [
        r
        for r in new
        if (old[r["id"]]["source"], old[r["id"]]["candidate"]) != (r["source"], r["candidate"])
    ]


def subset(name: str, commit: str, out: Path, limit: int | None = None, check: int = 0) -> None:
    """Write the rows changed since ``commit`` (among the first ``limit`` of each split) and
    the first ``check`` unchanged ones of those, as ``run.py --data`` reads them (both files
    written whole, then put in place; an ``out`` of committed data refused first)."""
    refuse_committed(out / name, "--out")
    files, notes = {}, []
    for split in SPLITS:
        rows = _gold(name, split)[:limit]
        moved = {r["id"] for r in changed(name, split, commit)}
        keep = [r for r in rows if r["id"] in moved]
        same = [r for r in rows if r["id"] not in moved][:check]
        ids = {r["id"] for r in keep + same}
        path = out / name / f"{split}.jsonl.gz"
        files[path] = jsonl_gz_bytes(path, [r for r in rows if r["id"] in ids])
        notes.append(f"{name} {split}: {len(keep)} rows changed since {commit}"
                     f"{f' among the first {limit}' if limit else ''}, {len(same)} unchanged to check")
    for folder in (out, out / name):
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise ValueError(f"--out {out}: {folder} is not a folder (a file or a link)")
    (out / name).mkdir(parents=True, exist_ok=True)
    replace_files(files)
    print("\n".join(notes))


def _target(name: str, variant: str | None, split: str) -> Path:
    base = RESULTS / name / ("heads/" + variant if variant else "")
    return base / f"{split}.scores.jsonl.gz"


def _check_variant(name: str, variant: str | None) -> None:
    """Refuse a ``--variant`` that is not a packed head variant of the set (a folder of
    ``RESULTS/<set>/heads/``; no path)."""
    if variant is None:
        return
    heads = RESULTS / name / "heads"
    have = sorted(p.name for p in heads.iterdir() if p.is_dir()) if heads.is_dir() else []
    if variant not in have:
        raise ValueError(f"--variant {variant[:60]!r}: not a head variant of {name} "
                         f"(have: {', '.join(have) or 'none'})")


def _rel(a: object, b: object) -> float:
    """The relative difference of two scores; infinite when one is missing, not a number,
    NaN or infinite (and they differ): such a check row never passes."""
    if isinstance(a, bool) or isinstance(b, bool) or not (
            isinstance(a, int | float) and isinstance(b, int | float)):
        return math.inf
    if a == b:
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def _head_view(row: dict) -> dict:
    """The head's columns of a score row (words as dicts) or of a packed row (as floats)."""
    words = row.get("words", [])
    packed = isinstance(words, list) and all(not isinstance(w, dict) for w in words)
    return row if packed else head_columns(row)


def column_gap(new: dict, old: dict) -> tuple[float, float]:
    """Largest relative difference of the head's sequence scores and of its word
    probabilities between a run row and a committed (or packed) row of the same text
    (infinite where a column is missing on one side, the word counts differ, or a value is
    not a finite number: :func:`_rel`)."""
    a, b = _head_view(new), _head_view(old)
    keys = (set(a) | set(b)) - {"id", "words", "candidate"}
    seq = max((_rel(a.get(k), b.get(k)) for k in keys), default=0.0)
    wa, wb = a.get("words", []), b.get("words", [])
    if len(wa) != len(wb):
        return seq, math.inf
    return seq, max((_rel(x, y) for x, y in zip(wa, wb, strict=True)), default=0.0)


def _run_rows(run_dir: Path, split: str, gold: dict[str, dict], name: str) -> dict[str, dict]:
    """A run's rows of one split by id, each checked against the set's gold."""
    path = run_dir / f"{split}.scores.jsonl.gz"
    if not run_dir.is_dir():
        raise ValueError(f"{run_dir}: no such run folder (run.py --out)")
    new: dict[str, dict] = {}
    for k, r in enumerate(read_jsonl_gz(path), 1):
        i = r.get("id")
        if not isinstance(i, str):
            raise ValueError(f"{path}: row {k} has no id")
        if i not in gold:
            raise SystemExit(f"{i}: not a row of {name} {split}")
        if r.get("candidate", gold[i]["candidate"]) != gold[i]["candidate"]:
            raise SystemExit(f"{i}: the run's candidate differs from the gold's")
        new[i] = r
    return new


def _check(new: dict[str, dict], old: list[dict], moved: set[str]) -> tuple[list[float], int]:
    """([sequence gap, word gap], number) of the run's check rows (those not in ``moved``)
    against the committed rows."""
    by_id, gaps = {r["id"]: r for r in old}, [0.0, 0.0]
    checked = set(new) - moved
    for i in checked:
        if i not in by_id:
            raise SystemExit(f"{i}: a check row that the committed rows lack")
        gaps = [max(g, x) for g, x in zip(gaps, column_gap(new[i], by_id[i]), strict=True)]
    return gaps, len(checked)


def _new_files(name: str, variant: str | None, new_rows: dict, targets: dict) -> dict[Path, bytes]:
    """Each split's spliced rows and ``rescored.json``, as the bytes to put in place."""
    files, record = {}, {}
    for split, new in new_rows.items():
        path, rows = _target(name, variant, split), targets[split]
        if variant:
            out = [head_columns(new[r["id"]]) if r["id"] in new else r for r in rows]
        else:
            out = [committed_row(new[r["id"]], name) | {"group": r["group"]}
                   if r["id"] in new else r for r in rows]
        files[path] = jsonl_gz_bytes(path, out)
        record[split] = sorted(new)
    files[path.parent / "rescored.json"] = (json.dumps(record, indent=1) + "\n").encode()
    return files


def adopt(run_dir: Path, name: str, since: str | None = None, variant: str | None = None,
          tolerance: float = 1e-4) -> None:
    """Splice a run's rows into the committed rows (module docstring); with ``since``, only
    those changed since that commit, the others compared first."""
    if variant and not since:
        raise SystemExit("adopt --variant needs --since (which rows changed)")
    _check_variant(name, variant)
    new_rows, targets, gaps, n_check = {}, {}, [0.0, 0.0], 0
    for split in SPLITS:
        new = _run_rows(run_dir, split, {g["id"]: g for g in _gold(name, split)}, name)
        targets[split] = read_jsonl_gz(_target(name, variant, split))
        if since:
            moved = {r["id"] for r in changed(name, split, since)}
            split_gaps, n = _check(new, targets[split], moved)
            gaps, n_check = [max(g, x) for g, x in zip(gaps, split_gaps, strict=True)], n_check + n
            new = {i: r for i, r in new.items() if i in moved}
        if missing := set(new) - {r["id"] for r in targets[split]}:
            raise SystemExit(f"{sorted(missing)[0]} (and {len(missing) - 1} more): rows of the "
                             f"run that the committed {split} rows lack; nothing spliced")
        new_rows[split] = new
    if since:
        if not n_check:
            raise SystemExit("no unchanged row to check the run against (subset --check K): "
                             "nothing spliced")
        print(f"check: {n_check} unchanged rows agree with the committed ones within a relative "
              f"{gaps[0]:.2g} (sequence scores) and {gaps[1]:.2g} (word probabilities)"
              f"{' (inf: a missing, NaN or infinite value)' if math.inf in gaps else ''}")
        if not all(g <= tolerance for g in gaps):
            raise SystemExit(f"the run does not reproduce the committed rows (tolerance "
                             f"{tolerance:g}): nothing spliced")
    files = _new_files(name, variant, new_rows, targets)
    replace_files(files)
    where = next(iter(files)).parent
    print(f"spliced {sum(map(len, new_rows.values()))} rows of {run_dir} into "
          f"{where.relative_to(RESULTS.parent)}: now tables.py --write")


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number >= 0")
    return value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("subset", "adopt"))
    ap.add_argument("run", nargs="?", type=Path, help="adopt: the run.py output folder")
    ap.add_argument("--set", required=True, choices=sorted(KIND))
    ap.add_argument("--since", help="the commit of the earlier data (subset; adopt: splice "
                    "only the rows changed since, check the others)")
    ap.add_argument("--out", type=Path, help="subset: the folder to write")
    ap.add_argument("--limit", type=int, help="subset: only the first N rows of each split")
    ap.add_argument("--check", type=int, default=0,
                    help="subset: add the first K unchanged rows of each split")
    ap.add_argument("--variant", help="adopt: a head variant's packed columns (heads/NAME)")
    ap.add_argument("--tolerance", type=_tolerance, default=1e-4,
                    help="adopt: largest relative difference allowed on the check rows")
    args = ap.parse_args(argv)
    if args.step == "subset":
        if not (args.since and args.out):
            ap.error("subset needs --since and --out")
        if (args.limit is not None and args.limit < 1) or args.check < 0:
            ap.error("--limit must be >= 1 and --check >= 0")
    elif args.run is None:
        ap.error("adopt needs the run folder")
    try:
        if args.step == "subset":
            subset(args.set, args.since, args.out, args.limit, args.check)
        else:
            adopt(args.run, args.set, args.since, args.variant, args.tolerance)
    except SystemExit as stop:  # a refusal raised with its message
        if not isinstance(stop.code, str):
            raise
        print(f"splice.py: error: {' '.join(stop.code.split())}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as err:
        print(f"splice.py: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
