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
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import subprocess
from pathlib import Path

from .committed import RESULTS, committed_row, gold_rows, head_columns, read_jsonl_gz
from .run import write_jsonl_gz

HERE = Path(__file__).resolve().parent


def _old_rows(name: str, split: str, commit: str) -> list[dict]:
    rel = (HERE / "data" / name / f"{split}.jsonl.gz").relative_to(HERE.parents[1])
    raw = subprocess.run(
        ["git", "-C", str(HERE), "show", f"{commit}:{rel}"], check=True, capture_output=True
    ).stdout
    with gzip.open(io.BytesIO(raw), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def changed(name: str, split: str, commit: str) -> list[dict]:
    """The set's rows (today's) whose source or candidate differ from ``commit``'s."""
    old = {r["id"]: r for r in _old_rows(name, split, commit)}
    new = gold_rows(name, split, None) or []
    if set(old) != {r["id"] for r in new}:
        raise SystemExit(f"{name} {split}: the ids differ from {commit}'s; rescore the whole set")
    return [
        r
        for r in new
        if (old[r["id"]]["source"], old[r["id"]]["candidate"]) != (r["source"], r["candidate"])
    ]


def subset(name: str, commit: str, out: Path, limit: int | None = None, check: int = 0) -> None:
    """Write the rows changed since ``commit`` (among the first ``limit`` of each split) and
    the first ``check`` unchanged ones of those, as ``run.py --data`` reads them."""
    (out / name).mkdir(parents=True, exist_ok=True)
    for split in ("dev", "test"):
        rows = (gold_rows(name, split, None) or [])[:limit]
        moved = {r["id"] for r in changed(name, split, commit)}
        keep = [r for r in rows if r["id"] in moved]
        same = [r for r in rows if r["id"] not in moved][:check]
        ids = {r["id"] for r in keep + same}
        write_jsonl_gz(out / name / f"{split}.jsonl.gz", [r for r in rows if r["id"] in ids])
        print(f"{name} {split}: {len(keep)} rows changed since {commit}"
              f"{f' among the first {limit}' if limit else ''}, {len(same)} unchanged to check")


def _target(name: str, variant: str | None, split: str) -> Path:
    base = RESULTS / name / ("heads/" + variant if variant else "")
    return base / f"{split}.scores.jsonl.gz"


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def _head_view(row: dict) -> dict:
    """The head's columns of a score row (words as dicts) or of a packed row (as floats)."""
    packed = all(not isinstance(w, dict) for w in row.get("words", []))
    return row if packed else head_columns(row)


def column_gap(new: dict, old: dict) -> tuple[float, float]:
    """Largest relative difference of the head's sequence scores and of its word
    probabilities between a run row and a committed (or packed) row of the same text."""
    a, b = _head_view(new), _head_view(old)
    seq = max((_rel(v, b[k]) for k, v in a.items() if k not in ("id", "words")), default=0.0)
    words = max((_rel(x, y) for x, y in zip(a.get("words", []), b.get("words", []),
                                            strict=True)), default=0.0)
    return seq, words


def adopt(run_dir: Path, name: str, since: str | None = None, variant: str | None = None,
          tolerance: float = 1e-4) -> None:
    """Splice a run's rows into the committed rows (module docstring); with ``since``, only
    those changed since that commit, the others compared first."""
    if variant and not since:
        raise SystemExit("adopt --variant needs --since (which rows changed)")
    new_rows, targets, record, gaps, n_check = {}, {}, {}, [0.0, 0.0], 0
    for split in ("dev", "test"):
        gold = {g["id"]: g for g in gold_rows(name, split, None) or []}
        new = {r["id"]: r for r in read_jsonl_gz(run_dir / f"{split}.scores.jsonl.gz")}
        for i, r in new.items():
            if i not in gold:
                raise SystemExit(f"{i}: not a row of {name} {split}")
            if r.get("candidate", gold[i]["candidate"]) != gold[i]["candidate"]:
                raise SystemExit(f"{i}: the run's candidate differs from the gold's")
        targets[split] = read_jsonl_gz(_target(name, variant, split))
        if since:
            moved = {r["id"] for r in changed(name, split, since)}
            old = {r["id"]: r for r in targets[split]}
            for i in set(new) - moved:
                if i not in old:
                    raise SystemExit(f"{i}: a check row that the committed rows lack")
                gaps = [max(g, x) for g, x in zip(gaps, column_gap(new[i], old[i]), strict=True)]
            n_check += len(new) - len(moved & set(new))
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
              f"{gaps[0]:.2g} (sequence scores) and {gaps[1]:.2g} (word probabilities)")
        if max(gaps) > tolerance:
            raise SystemExit(f"the run does not reproduce the committed rows (tolerance "
                             f"{tolerance:g}): nothing spliced")
    for split, new in new_rows.items():
        path, rows = _target(name, variant, split), targets[split]
        if variant:
            out = [head_columns(new[r["id"]]) if r["id"] in new else r for r in rows]
        else:
            out = [committed_row(new[r["id"]], name) | {"group": r["group"]}
                   if r["id"] in new else r for r in rows]
        write_jsonl_gz(path, out)
        record[split] = sorted(new)
    (path.parent / "rescored.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"spliced {sum(map(len, record.values()))} rows of {run_dir} into "
          f"{path.parent.relative_to(RESULTS.parent)}: now tables.py --write")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("subset", "adopt"))
    ap.add_argument("run", nargs="?", type=Path, help="adopt: the run.py output folder")
    ap.add_argument("--set", required=True)
    ap.add_argument("--since", help="the commit of the earlier data (subset; adopt: splice "
                    "only the rows changed since, check the others)")
    ap.add_argument("--out", type=Path, help="subset: the folder to write")
    ap.add_argument("--limit", type=int, help="subset: only the first N rows of each split")
    ap.add_argument("--check", type=int, default=0,
                    help="subset: add the first K unchanged rows of each split")
    ap.add_argument("--variant", help="adopt: a head variant's packed columns (heads/NAME)")
    ap.add_argument("--tolerance", type=float, default=1e-4,
                    help="adopt: largest relative difference allowed on the check rows")
    args = ap.parse_args(argv)
    if args.step == "subset":
        if not (args.since and args.out):
            ap.error("subset needs --since and --out")
        if (args.limit is not None and args.limit < 1) or args.check < 0:
            ap.error("--limit must be >= 1 and --check >= 0")
        subset(args.set, args.since, args.out, args.limit, args.check)
    else:
        if args.run is None:
            ap.error("adopt needs the run folder")
        adopt(args.run, args.set, args.since, args.variant, args.tolerance)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
