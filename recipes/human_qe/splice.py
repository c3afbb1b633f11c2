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
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import subprocess
from pathlib import Path

from .committed import RESULTS, committed_row, gold_rows, read_jsonl_gz
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


def subset(name: str, commit: str, out: Path) -> None:
    (out / name).mkdir(parents=True, exist_ok=True)
    for split in ("dev", "test"):
        rows = changed(name, split, commit)
        write_jsonl_gz(out / name / f"{split}.jsonl.gz", rows)
        print(f"{name} {split}: {len(rows)} rows changed since {commit}")


def adopt(run_dir: Path, name: str) -> None:
    record = {}
    for split in ("dev", "test"):
        gold = {g["id"]: g for g in gold_rows(name, split, None) or []}
        new = {r["id"]: r for r in read_jsonl_gz(run_dir / f"{split}.scores.jsonl.gz")}
        for i, r in new.items():
            if i not in gold:
                raise SystemExit(f"{i}: not a row of {name} {split}")
            if r.get("candidate", gold[i]["candidate"]) != gold[i]["candidate"]:
                raise SystemExit(f"{i}: the run's candidate differs from the gold's")
        path = RESULTS / name / f"{split}.scores.jsonl.gz"
        rows = read_jsonl_gz(path)
        out = [
            committed_row(new[r["id"]], name) | {"group": r["group"]} if r["id"] in new else r
            for r in rows
        ]
        write_jsonl_gz(path, out)
        record[split] = sorted(new)
    (RESULTS / name / "rescored.json").write_text(json.dumps(record, indent=1) + "\n")
    print(
        f"spliced {sum(map(len, record.values()))} rows of {run_dir} into {name}: now tables.py --write"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("subset", "adopt"))
    ap.add_argument("run", nargs="?", type=Path, help="adopt: the run.py output folder")
    ap.add_argument("--set", required=True)
    ap.add_argument("--since", help="subset: the commit of the earlier data")
    ap.add_argument("--out", type=Path, help="subset: the folder to write")
    args = ap.parse_args(argv)
    if args.step == "subset":
        if not (args.since and args.out):
            ap.error("subset needs --since and --out")
        subset(args.set, args.since, args.out)
    else:
        if args.run is None:
            ap.error("adopt needs the run folder")
        adopt(args.run, args.set)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
