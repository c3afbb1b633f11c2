"""How the files in this folder were made: run once with the code on main before the head
folder became one unit (sigmoid-head 0.1.0, commit e916b68), from this folder:

    PYTHONPATH=<that checkout>/src python make_fixture.py

It copies the 0.1.0 head (``../head_v0_1_0/head``) into ``head/``, scores its three pairs,
runs that release's ``sigmoid-head calibrate`` on them (the words the head scores lowest
are the gold error spans), so that ``head/`` also holds ``calibration.json``,
``error_spans.json`` and ``combination.json`` as that release wrote them, and keeps
that release's ``sigmoid-head score --head head --with-tokens`` rows in
``expected_rows.jsonl``. Only the extras and the rows are committed; the test puts them
beside a copy of the 0.1.0 head (the same weights). Not run by the test suite.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEGACY = HERE.parent / "head_v0_1_0"
PAIRS = [("el perro come pan", "the dog eats bread"), ("la casa es grande", "the house is big"),
         ("el gato duerme", "the cat is sleeping now")]


def main() -> None:
    from sigmoid_head.cli import main as cli

    os.chdir(HERE)
    shutil.copytree(LEGACY / "head", "head")
    Path("src.txt").write_text("".join(s + "\n" for s, _ in PAIRS))
    Path("cand.txt").write_text("".join(c + "\n" for _, c in PAIRS))
    model = ["--head", "head", "--model", str(LEGACY / "base"), "--device", "cpu", "--quiet"]
    assert cli(["score", "-s", "src.txt", "-t", "cand.txt", *model, "--with-tokens",
                "--to-json", "dev.jsonl"]) == 0
    rows = [json.loads(x) for x in Path("dev.jsonl").read_text().splitlines() if x]
    i, word = min(((i, w) for i, r in enumerate(rows) for w in r["words"]),
                  key=lambda iw: iw[1]["sigmoid"])
    start = rows[i]["candidate"].index(word["word"])
    spans = [[] for _ in rows]
    spans[i] = [[start, start + len(word["word"])]]
    Path("spans.jsonl").write_text("".join(json.dumps(s) + "\n" for s in spans))
    Path("gold.txt").write_text("1\n0\n1\n")
    assert cli(["calibrate", "--head", "head", "--scores", "dev.jsonl", "--gold", "gold.txt",
                "--gold-spans", "spans.jsonl"]) == 0
    assert cli(["score", "-s", "src.txt", "-t", "cand.txt", *model, "--with-tokens",
                 "--to-json", "expected_rows.jsonl"]) == 0
    for name in ("calibration.json", "error_spans.json", "combination.json"):
        shutil.copy(Path("head") / name, name)
    shutil.rmtree("head")
    for name in ("src.txt", "cand.txt", "dev.jsonl", "spans.jsonl", "gold.txt"):
        Path(name).unlink()


if __name__ == "__main__":
    main()
