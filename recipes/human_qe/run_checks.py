"""What ``run.py`` checks before it scores anything (issue 59): where it may write, and
whether dev and test are apart.

* :func:`check_out`: ``--out`` must be a new folder, or a folder of an earlier run of the
  same set on the same gold with the same model and head (a rerun, with other ``--limit``,
  ``--n-boot`` or batch settings, replaces it whole); never a folder of committed data
  (:func:`committed.refuse_committed`), never another run's folder, never a folder holding
  files ``run.py`` does not write.
* :func:`check_leak`: the dev texts (thresholds are chosen on them) must not be the test
  texts. A text is its source and candidate; when at least half of the dev texts or of the
  test texts are shared (the same file twice, a byte-identical copy, the same items under
  other ids) the run is refused with the counts; a smaller overlap (a short segment such as
  "Thank you." in both) is a warning with the counts, and the run goes on.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from . import committed

RUN_FILES = ("dev.scores.jsonl.gz", "test.scores.jsonl.gz", "results.json", "report.md")
"""What a run writes into ``--out`` (a folder holding anything else is refused)."""
REFUSE_SHARE = 0.5
"""The share of the dev (or the test) texts shared with the other split from which a run is
refused rather than warned about."""


def check_out(out: Path) -> None:
    """Refuse an ``--out`` that is a file, a link, committed data, or a folder holding more
    than a run's files (a committed results folder with its ``heads/``: ``tables.py --adopt``
    makes a run the committed one)."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ValueError(f"--out {out}: not a folder (a file or a link); give a folder")
    committed.refuse_committed(out, "--out")
    other = sorted(p.name for p in out.iterdir() if p.name not in RUN_FILES) if out.is_dir() else []
    if other:
        raise ValueError(f"--out {out} holds {', '.join(other[:3])}, not written by run.py: "
                         "give a new folder (tables.py --adopt makes a run the committed one)")


def gold_digest(rows: list[dict]) -> str:
    """The SHA-256 of a split's gold records (their JSON, keys sorted): the same texts and
    labels give the same digest, whatever file or folder they came from."""
    text = json.dumps(rows, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _same(a: Any, b: Any) -> bool:
    """Whether two settings values name the same model or head (paths resolved)."""
    if a == b:
        return True
    if not (isinstance(a, str) and isinstance(b, str)):
        return False
    return Path(a).exists() and Path(a).resolve() == Path(b).resolve()


def check_same_run(out: Path, name: str, settings: dict[str, Any], digests: dict[str, str]) -> None:
    """Refuse an ``--out`` that holds another run: one of another set, other gold texts, or
    another model or head (``settings``: the new run's, ``digests``: its gold's per split).

    Raises:
        ValueError: one line naming ``--out`` and what differs.
    """
    from sigmoid_head.safe.json_io import read_json

    if not out.is_dir() or not any(out.iterdir()):
        return
    path = out / "results.json"
    if not path.is_file():
        raise ValueError(f"--out {out} holds a run's files but no results.json (not a finished "
                         "run of run.py): give a new folder")
    try:
        old = read_json(path)
    except ValueError as err:
        raise ValueError(f"--out {out}: its results.json does not read ({err}); give a new folder") from None
    old = old if isinstance(old, dict) else {}
    was = old.get("settings") if isinstance(old.get("settings"), dict) else {}
    diffs = [f"set {old.get('set')!r}, not {name!r}"] if old.get("set") != name else []
    if old.get("gold_sha256") != digests:
        diffs.append("other gold texts" if old.get("gold_sha256") else "no record of its gold")
    diffs += [f"{k} {was.get(k)!r}, not {settings[k]!r}" for k in ("model", "head")
              if not _same(was.get(k), settings[k])]
    if diffs:
        raise ValueError(f"--out {out} holds another run ({'; '.join(diffs)}): give a new folder "
                         "(only a rerun of the same set, gold, model and head replaces a run)")


def _key(row: dict) -> tuple[str, str]:
    return (row.get("source") or "", row["candidate"])


def check_leak(dev: list[dict], test: list[dict], dev_name: str, test_name: str) -> None:
    """Refuse dev texts that are the test texts, warn about a few (module docstring).

    Raises:
        ValueError: at least :data:`REFUSE_SHARE` of the dev or of the test texts are in
            both; one line naming both files and counting the overlap.
    """
    dev_keys, test_keys = Counter(map(_key, dev)), Counter(map(_key, test))
    n_test = sum(n for k, n in test_keys.items() if k in dev_keys)
    if not n_test:
        return
    n_dev = sum(n for k, n in dev_keys.items() if k in test_keys)
    what = (f"{n_test} of {len(test)} test texts ({test_name}) are also dev texts "
            f"({n_dev} of {len(dev)}, {dev_name}; a text is its source and candidate)")
    if n_dev >= REFUSE_SHARE * len(dev) or n_test >= REFUSE_SHARE * len(test):
        raise ValueError(f"{what}: the thresholds would be chosen on the test texts; give a dev "
                         "set apart from test")
    print(f"warning: {what}: the thresholds are partly chosen on them", file=sys.stderr)
