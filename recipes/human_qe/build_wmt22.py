"""WMT 2022 QE word level, km-en and ps-en: gold, every team's official predictions, and the
leaderboard computed with this project's metric code (issue 49, item 5).

Sources (``wmt22.json`` beside this script: repository, commit, path and sha256 of every
file; the build refuses a file whose checksum differs):

* WMT-QE-Task/wmt-qe-2022-data: the test gold (``test.2022.mt_tok``, the tags, the
  source) and each team's official ``predictions.txt``. The repository states no licence
  (no LICENSE file), so nothing of it is committed here: this script rebuilds it from a
  clone, and only the figures computed from it (``results/wmt22-word.json``) are.
* sheffieldnlp/mlqe-pe (CC0-1.0): the WMT 2021 test gold of the same pairs
  (``test21_goldlabels/zero-shot``), the earlier labelled data of km-en and ps-en, used as
  dev (thresholds for the model's rows). No test sentence is in it (checked).

Writes ``<out>/<pair>/{dev,test}.{tags,mt,src}`` (word tags of the tokenized MT, one line per
sentence; the layout ``evaluate`` and ``run.py --test-gold`` read) and
``<out>/<pair>/submissions/<team>.tags``; with ``--leaderboard``, the MCC of every
submission (BAD = positive, over all test words, :func:`sigmoid_head.evaluation.span_metrics.mcc`)
beside the figure the task published (``results/quality-estimation-task_results.html``,
same commit), into ``results/wmt22-word.json``.

Usage::

    python -m recipes.human_qe.build_wmt22 --clones DIR [--out runs/wmt22] [--leaderboard]

``DIR``: as for ``build_data.py`` (``<owner>+<name>/repo`` bare clones, or checkouts).
"""

from __future__ import annotations

import argparse
import io
import json
import re
import tarfile
from pathlib import Path

from .build_data import source_bytes

HERE = Path(__file__).resolve().parent

SOURCES = HERE / "wmt22.json"
PAIRS = ("km-en", "ps-en")
LEADERBOARD = HERE / "results" / "wmt22-word.json"


def _files(clones: Path, key: str) -> dict[str, bytes]:
    spec = json.loads(SOURCES.read_text())[key]
    return {
        f["path"]: source_bytes(clones, spec["repo"], spec["commit"], f["path"], f["sha256"])
        for f in spec["files"]
    }


def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8")
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def parse_predictions(data: bytes, n_words: list[int], where: str) -> tuple[str, list[list[str]]]:
    """(method name, tags per sentence) of one official submission file.

    The file: three header lines (disk footprint, parameters, ensemble size), then
    ``pair, method, MT, sentence, word, token, tag`` per line (tab-separated).

    Raises:
        ValueError: a line of another shape, or a sentence whose tag count differs from the
            gold's.
    """
    tags: list[list[str | None]] = [[None] * n for n in n_words]
    method = ""
    for k, line in enumerate(_lines(data)[3:], start=4):
        cols = line.split("\t")
        if len(cols) != 7 or cols[2] != "MT":
            raise ValueError(f"{where}:{k}: expected 7 tab-separated columns with type MT")
        method, s, w, tag = cols[1], int(cols[3]), int(cols[4]), cols[6].strip()
        if tag not in ("OK", "BAD") or s >= len(tags) or w >= len(tags[s]):
            raise ValueError(
                f"{where}:{k}: tag {tag!r} at sentence {s}, word {w} is outside the gold"
            )
        tags[s][w] = tag
    missing = sum(t is None for row in tags for t in row)
    if missing:
        raise ValueError(f"{where}: {missing} gold words have no predicted tag")
    return method, tags  # type: ignore[return-value]


def team_name(path: str) -> str:
    """``official_submissions/.../<Team> - N submission/predictions.txt`` -> ``Team``."""
    folder = path.split("/")[-2]
    return re.sub(r"\s+-\s+\d+\s+submission$", "", folder).strip()


def _dev(clones: Path, pair: str) -> tuple[list[str], list[str], list[str]]:
    """(tags, tokenized MT, tokenized source) lines of the WMT 2021 test gold of ``pair``."""
    (data,) = _files(clones, f"mlqe-pe:{pair}").values()
    got = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for m in tar.getmembers():
            for key in ("goldlabels/task2_wordlevel_mt.tags", "test21.tok.mt", "test21.tok.src"):
                if m.isfile() and m.name.endswith(key) and "/._" not in f"/{m.name}":
                    got[key] = _lines(tar.extractfile(m).read())  # type: ignore[union-attr]
    mt = got["test21.tok.mt"]
    table: dict[int, dict[int, str]] = {}
    for k, line in enumerate(got["goldlabels/task2_wordlevel_mt.tags"]):  # the long layout
        cols = line.split("\t")
        if len(cols) != 7 or cols[6].strip() not in ("OK", "BAD"):
            raise ValueError(f"{pair} dev tags line {k + 1}: expected 7 columns ending OK or BAD")
        table.setdefault(int(cols[3]), {})[int(cols[4])] = cols[6].strip()
    tags = []
    for k, text in enumerate(mt):
        row = table.get(k, {})
        if sorted(row) != list(range(len(text.split()))):
            raise ValueError(
                f"{pair} dev sentence {k}: tags for {len(row)} of {len(text.split())} words"
            )
        tags.append(" ".join(row[i] for i in range(len(row))))
    return tags, mt, got["test21.tok.src"]


def build(clones: Path, out: Path) -> dict[str, dict]:
    """Write every pair's files (module docstring); returns pair -> {team: method name}."""
    methods: dict[str, dict] = {}
    for pair in PAIRS:
        files = _files(clones, f"wmt22:{pair}")
        base = f"test_data-gold_labels/task1_word-level/{pair}/test.2022."
        mt, tags, src = (_lines(files[base + x]) for x in ("mt_tok", f"{pair}.tags", "src_tok"))
        n_words = [len(line.split()) for line in mt]
        if [len(t.split()) for t in tags] != n_words or len(src) != len(mt):
            raise ValueError(f"{pair}: the test tags, MT and source do not line up")
        dev_tags, dev_mt, dev_src = _dev(clones, pair)
        shared = set(zip(dev_src, dev_mt, strict=True)) & set(zip(src, mt, strict=True))
        if shared:
            raise ValueError(f"{pair}: {len(shared)} test pairs are also in the dev set")
        folder = out / pair
        (folder / "submissions").mkdir(parents=True, exist_ok=True)
        for split, rows in (("test", (tags, mt, src)), ("dev", (dev_tags, dev_mt, dev_src))):
            for ext, lines in zip(("tags", "mt", "src"), rows, strict=True):
                (folder / f"{split}.{ext}").write_text(
                    "".join(x + "\n" for x in lines), encoding="utf-8"
                )
        methods[pair] = {}
        for path, data in files.items():
            if path.endswith("predictions.txt"):
                team = team_name(path)
                methods[pair][team], pred = parse_predictions(data, n_words, path)
                (folder / "submissions" / f"{team}.tags").write_text(
                    "".join(" ".join(t) + "\n" for t in pred), encoding="utf-8"
                )
    return methods


def published(clones: Path) -> dict[str, dict[str, float]]:
    """pair -> Codalab user name -> the MCC the task's results page published."""
    (html,) = _files(clones, "wmt22:results").values()
    text = html.decode("utf-8")
    out = {}
    for pair in PAIRS:
        table = re.search(rf"T1_word_{pair.replace('-', '')}\.addRows\(\[(.*?)\]\);", text, re.S)
        rows = re.findall(r"\['([^']*)', '([^']*)', '[^']*', [\d.]+, ([\d.]+),", table.group(1))  # type: ignore[union-attr]
        out[pair] = {user: float(m) for _, user, m in rows}
    return out


USERS = {
    "Team papago": "JeonghyeokPark",
    "IST-Unbabel": "IST-Unbabel",
    "Team NJUQE": "gengxiang",
    "OrganizersBaselines": "OrganizersBaselines",
    "Team HW-TSC": "Abulice",
}
"""Submission folder's team -> its Codalab user name on the results page."""


def leaderboard(out: Path, methods: dict[str, dict], clones: Path) -> dict:
    """Every submission's MCC (this project's code) beside the published one."""
    from sigmoid_head.evaluation.span_metrics import mcc

    pub = published(clones)
    res: dict = {
        "metric": "MCC of BAD over all test words (sigmoid_head.evaluation.span_metrics.mcc)",
        "pairs": {},
    }
    for pair in PAIRS:
        gold = [
            t == "BAD"
            for line in (out / pair / "test.tags").read_text().split("\n")
            for t in line.split()
        ]
        rows = {}
        for team, method in sorted(methods[pair].items()):
            pred = [
                t == "BAD"
                for line in (out / pair / "submissions" / f"{team}.tags").read_text().split("\n")
                for t in line.split()
            ]
            rows[team] = {
                "method": method,
                "mcc": round(mcc(pred, gold), 6),
                "published_mcc": pub[pair].get(USERS.get(team, "")),
            }
        res["pairs"][pair] = {"n_words": len(gold), "n_bad": int(sum(gold)), "submissions": rows}
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clones", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=HERE.parents[1] / "runs" / "wmt22")
    ap.add_argument("--leaderboard", action="store_true", help=f"write {LEADERBOARD.name}")
    args = ap.parse_args(argv)
    methods = build(args.clones, args.out)
    print(f"wrote {', '.join(PAIRS)} under {args.out}")
    if args.leaderboard:
        res = leaderboard(args.out, methods, args.clones)
        old = json.loads(LEADERBOARD.read_text()) if LEADERBOARD.exists() else {}
        res["ours"] = old.get("ours", {})  # the model's rows, written by wmt22_rows.py
        LEADERBOARD.write_text(json.dumps(res, indent=1) + "\n")
        for pair, p in res["pairs"].items():
            for team, r in p["submissions"].items():
                print(f"{pair} {team:22s} MCC {r['mcc']:.4f} (published {r['published_mcc']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
