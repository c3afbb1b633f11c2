"""Where the human-label recipes keep their committed results, and the readers of them.

One home for what :mod:`.tables` and the side tables (talks, thresholds, labelled heads, the
curve, the analyses) all read: the results folder (:data:`RESULTS`; a test points it at a
copy by patching this module), the gzip JSONL reader, the gold of a named set, rows joined
with their gold or with another head's packed columns, and the committed precision.

And the two guards of every writer of committed results (issue 59): :func:`refuse_committed`
(a destination inside the committed data or results, or holding files git tracks, is
refused) and :func:`replace_files` (several files staged whole and durable beside their
destinations, renamed over them only once all are written).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from .evaluate_sets import KIND

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
"""The committed results: ``<set>/{dev,test}.scores.jsonl.gz``, ``results.json``, ``heads/``."""
REPO_FOLDERS = (HERE / "data", HERE / "results")
"""This checkout's committed gold and results, refused as a destination even while a test
points :data:`RESULTS` (or ``HERE``) at a copy."""
HEAD_KEY = re.compile(r"^sigmoid(_|$)")
"""The head's own sequence columns in a score row (``sigmoid``, ``sigmoid_mean_log``, ...)."""


def read_jsonl_gz(path: Path) -> list[dict]:
    """The JSON objects of a ``.jsonl.gz`` file (a missing, truncated or malformed file is a
    ValueError naming it and the line)."""
    from sigmoid_head.data.records import read_jsonl

    if not Path(path).is_file():
        raise ValueError(f"{path} is missing")
    return read_jsonl(path, objects=True)


def gold_rows(name: str, split: str, shroom_data: Path | None) -> list[dict] | None:
    """The set's gold records of one split (None: not available here)."""
    base = (shroom_data if KIND[name] == "shroom" else HERE / "data")
    if base is None:
        return None
    path = base / name / f"{split}.jsonl.gz"
    return read_jsonl_gz(path) if path.exists() else None


def joined(gold: list[dict], scored: list[dict]) -> list[dict]:
    """Scored rows aligned with the gold by ``id``; the candidate text restored where the
    committed rows drop it (Mu-SHROOM). Rows whose candidate is not the gold's are refused."""
    if [g["id"] for g in gold] != [s.get("id") for s in scored]:
        raise SystemExit("committed scores and gold differ in their ids or order")
    for g, s in zip(gold, scored, strict=True):
        if "candidate" in s and s["candidate"] != g["candidate"]:
            raise SystemExit(f"{g['id']}: the scored candidate differs from the gold's")
    return [{**s, "candidate": s.get("candidate", g["candidate"])} for g, s in zip(gold, scored, strict=True)]


def with_head(base: list[dict], head: list[dict]) -> list[dict]:
    """``base`` rows with the head columns (sequence keys and per-word ``sigmoid``) of
    another head's packed rows."""
    out = []
    for b, h in zip(base, head, strict=True):
        if b["id"] != h["id"]:
            raise SystemExit(f"{h['id']}: packed head rows are not in the set's order")
        row = {k: v for k, v in b.items() if not HEAD_KEY.match(k)}
        row.update({k: v for k, v in h.items() if HEAD_KEY.match(k)})
        if "words" in b:
            row["words"] = [{**w, "sigmoid": hw} for w, hw in zip(b["words"], h["words"], strict=True)]
        out.append(row)
    return out


def fmt_p(p: float, n_boot: int) -> str:
    return f"< {1 / n_boot:.3g}" if p == 0 else f"{p:.3g}"


def head_columns(row: dict) -> dict:
    kept = {"id": row["id"], **{k: v for k, v in row.items() if HEAD_KEY.match(k)}}
    if "words" in row:
        kept["words"] = [w["sigmoid"] for w in row["words"]]
    return kept


def committed_row(row: dict, name: str) -> dict:
    """A run's row as committed: floats to 6 significant digits; Mu-SHROOM's without text
    (its repository states no licence: scores only)."""
    if KIND[name] == "shroom":
        row = {k: v for k, v in row.items() if k != "candidate"}
        row["words"] = [{k: v for k, v in w.items() if k != "word"} for w in row["words"]]
    return sig6(row)


def sig6(value):
    """``value`` with every float rounded to 6 significant digits (the committed precision)."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: sig6(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sig6(v) for v in value]
    return value


def committed_folders() -> list[Path]:
    """The folders that hold committed data: the gold (``HERE/data``), :data:`RESULTS`, and
    this checkout's own two (read at call time: a test may point them at a copy)."""
    return [HERE / "data", RESULTS, *REPO_FOLDERS]


def tracked_files(folder: Path) -> list[str]:
    """The files under ``folder`` that git tracks (none when it is missing, not in a
    work tree, or git is not installed)."""
    if not Path(folder).is_dir():
        return []
    try:
        done = subprocess.run(["git", "-C", str(folder), "ls-files", "-z", "--", "."],
                              capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return [n for n in done.stdout.decode("utf-8", "replace").split("\0") if n] if done.returncode == 0 else []


def refuse_committed(path: Path, option: str) -> None:
    """Refuse a destination folder that is committed data (before any work).

    Raises:
        ValueError: ``path`` is (inside) the committed gold or results folder, or holds
            files that git tracks; one line naming ``option`` and the folder.
    """
    where = Path(path).resolve()
    for root in committed_folders():
        if where.is_relative_to(root.resolve()):
            raise ValueError(f"{option} {path}: inside the committed {root.name}/ folder "
                             f"({root}); write elsewhere (committed results change only through "
                             "tables.py --adopt/--pack, splice.py adopt, labelled_tables.py --keep)")
    if tracked := tracked_files(where):
        raise ValueError(f"{option} {path} holds {len(tracked)} file(s) that git tracks "
                         f"({tracked[0]}, ...): committed data; write elsewhere")


def replace_files(files: dict[Path, bytes]) -> None:
    """Write several files as one change: each goes whole to a hidden temporary file beside
    its destination, flushed to disk; only when every one is written are they renamed over
    their destinations (each rename durable). A failure or a kill before the renames leaves
    every destination as it was and removes the temporary files; each file is at every
    moment either its old or its new content, never cut."""
    from sigmoid_head.safe.files import fault_point, replace, write_durable

    staged: dict[Path, Path] = {}
    try:
        for path, data in files.items():
            tmp = path.with_name(f".{path.name}.staged")
            staged[path] = tmp
            write_durable(tmp, data)
            fault_point(f"staged {path.name}")
        for path, tmp in staged.items():
            replace(tmp, path)
    finally:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
