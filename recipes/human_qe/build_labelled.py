"""Build the human-labelled *training* sets for ``sigmoid-head train --labelled-file`` (issue 49).

Each set is written as span JSONL that the labelled-data mode reads (``mqm`` format: one
segment a line, ``{src, tgt, mqm_spans, ...}``, character spans into ``tgt``), split into
``train`` and ``dev`` (dev: held-out labelled data for the validation loss, never a test
set of ``run.py``):

* ``mlqe-roen-train`` (sheffieldnlp/mlqe-pe, CC0-1.0): MLQE-PE's ro-en *train* split, 7,000
  MT sentences with word tags (gap tags dropped); each BAD word becomes one span. Split by
  sentence: every 10th sentence is dev (before the clean-split filter below).
* ``mlqe-en-pool-train`` (sheffieldnlp/mlqe-pe, CC0-1.0): the word tags of every
  English-target pair's *train* split pooled (ro, et, ne, si, ru -> en: the pairs and files of
  the learning curve's ``mlqe-en-pool``, ``sources.json``), each BAD word one span. Dropped as
  ``curve_data.py`` drops them: a sentence whose source or MT matches a dev or test sentence
  of the five pairs (lower-cased, letters and digits only) and a repeated source. Split by
  sentence: every 10th kept sentence of each pair is dev.
* ``generalmt2023-zhen`` (google/wmt-mqm-human-evaluation, Apache-2.0): Google's
  side-by-side MQM of WMT 2023 general MT zh-en, news, three raters per segment. Rows whose
  severity is ``HOTW-test`` (the raters' attention checks) are dropped, and so are the few
  rows whose target differs from the segment's other rows (in whitespace); every other
  rater's marked span (``<v>…</v>`` in the target) is kept, ``Source error`` and
  ``No-error`` rows give none, and the raters' marks are removed from the source. A token
  is then BAD for training when any rater marked it. Split by document (every document
  of one news story on one side): every 10th document in sorted order is dev.

Clean splits (issue 58): whatever its set, a sentence is dropped when its source or its MT
matches (``curve_data.norm``: lower-cased, letters and digits only) a source or MT of any
dev or test text a labelled head is scored on: the committed ``mlqe-roen-word`` and
``mqm-ted-zhen`` sets, and every MLQE-PE English-target pair's dev, test20 and WMT 2021 test
files (``curve_data.held_out_keys``: the et-en table's set among them). A train sentence
that shares its source or MT with a sentence of the set's own ``dev`` split is dropped too.
The counts and ids dropped go to ``<out>/<set>/stats.json``; a set in which any overlap
remains is refused, not written.

Usage::

    python -m recipes.human_qe.build_labelled --clones DIR [--out DIR] [--sets ...]

``DIR`` as for ``build_data.py`` (``<owner>+<name>/repo`` bare clones or checkouts); the
sha256 of every source file is checked. The MLQE-PE clone is needed for every set (its dev
and test sentences are kept out of each).
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import re
import tarfile
from pathlib import Path

from . import curve_data
from .build_data import source_bytes, write_set
from .committed import read_jsonl_gz
from .curve_data import norm

HERE = Path(__file__).resolve().parent
SCORED = ("mlqe-roen-word", "mqm-ted-zhen")  # committed sets labelled heads are scored on
HELD = "sentences matching a scored dev or test sentence"
SPLIT = "train sentences matching a held-out validation sentence"

SOURCES = {
    "mlqe-roen-train": {
        "repo": "sheffieldnlp/mlqe-pe",
        "commit": "2a670a1140416cf80507b5a829659383c878feb8",
        "licence": "CC0-1.0",
        "path": "data/post-editing/train/ro-en-train.tar.gz",
        "sha256": "6ee883ef9544eb19522a480301c16ad16ffe3dd6d2fcb5c618ce8830ac0121dc",
    },
    "generalmt2023-zhen": {
        "repo": "google/wmt-mqm-human-evaluation",
        "commit": "7fadea281aff8db61cc72fc3d469a4dca78b82a6",
        "licence": "Apache-2.0",
        "path": "generalMT2023/zhen/sxs_mqm_generalMT2023_zhen.3ratingsPerSegment.tsv.tar.gz",
        "sha256": "beb5eb98a34a79ec36212488d9044361ec21c8a2c54f50d509c086246244b3e2",
    },
}
MARK = re.compile(r"</?v>")


def _members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {
            m.name.rsplit("/", 1)[-1]: tar.extractfile(m).read()
            for m in tar.getmembers()
            if m.isfile() and "/._" not in f"/{m.name}"
        }


def _fetch(clones: Path, name: str) -> dict[str, bytes]:
    s = SOURCES[name]
    return _members(source_bytes(clones, s["repo"], s["commit"], s["path"], s["sha256"]))


def build_mlqe_roen(clones: Path) -> dict[str, list[dict]]:
    """MLQE-PE ro-en train: each BAD MT word one span (see the module docstring)."""
    files = _fetch(clones, "mlqe-roen-train")
    src, mt, tags = (
        files[f"train.{k}"].decode("utf-8").splitlines() for k in ("src", "mt", "tags")
    )
    splits: dict[str, list[dict]] = {"train": [], "dev": []}
    for k, (s, m, t) in enumerate(zip(src, mt, tags, strict=True)):
        splits["dev" if k % 10 == 9 else "train"].append(
            {"id": k, "src": s, "tgt": m, "mqm_spans": _bad_spans(m, t, f"train.tags:{k + 1}")}
        )
    return splits


def _bad_spans(mt: str, tags: str, where: str) -> list[dict]:
    """One span per BAD MT word (gap tags dropped) of one tagged sentence."""
    from sigmoid_head.evaluation.gold_formats import whitespace_words

    words, tag = whitespace_words(mt), tags.split()
    if len(tag) == 2 * len(words) + 1:
        tag = tag[1::2]  # gap tags dropped
    if len(tag) != len(words):
        raise ValueError(f"{where}: {len(tag)} tags for {len(words)} MT words")
    return [{"start": a, "end": b, "severity": None, "category": None}
            for (a, b), x in zip(words, tag, strict=True) if x == "BAD"]


def build_mlqe_en_pool(clones: Path) -> tuple[dict[str, list[dict]], collections.Counter]:
    """Every English-target pair's MLQE-PE train tags, pooled (see the module docstring)."""
    from .curve_data import PAIRS, _files, held_out_keys

    files = _files(clones)
    held = held_out_keys(files)
    splits: dict[str, list[dict]] = {"train": [], "dev": []}
    dropped: collections.Counter = collections.Counter()
    seen: set[str] = set()
    for pair in PAIRS:
        members = files[f"data/post-editing/train/{pair}-train.tar.gz"]
        rows = zip(members["train.src"], members["train.mt"], members["train.tags"], strict=True)
        kept = 0
        for k, (src, mt, tags) in enumerate(rows):
            key = norm(src)
            if key in held or norm(mt) in held:
                dropped["sentences matching a dev or test sentence"] += 1
                continue
            if key in seen:
                dropped["repeated sources"] += 1
                continue
            seen.add(key)
            spans = _bad_spans(mt, tags, f"{pair} train.tags:{k + 1}")
            splits["dev" if kept % 10 == 9 else "train"].append(
                {"id": f"{pair.replace('-', '')}-train-{k}", "src": src, "tgt": mt,
                 "mqm_spans": spans})
            kept += 1
    return splits, dropped


def _marks(target: str) -> tuple[str, list[tuple[int, int]]]:
    out, spans, pos, start = [], [], 0, None
    for m in MARK.finditer(target):
        out.append(target[pos : m.start()])
        here = sum(map(len, out))
        if m.group() == "<v>":
            start = here
        elif start is not None:
            spans.append((start, here))
            start = None
        pos = m.end()
    out.append(target[pos:])
    return "".join(out), spans


def generalmt_segments(lines: list[str]) -> tuple[list[dict], collections.Counter]:
    """Segments ``{system, doc, seg_id, src, tgt, mqm_spans}`` of the side-by-side TSV, and
    counts of what was dropped (module docstring)."""
    header = lines[0].split("\t")
    if header[:9] != [
        "system",
        "doc",
        "docSegId",
        "globalSegId",
        "rater",
        "source",
        "target",
        "category",
        "severity",
    ]:
        raise ValueError(f"unexpected header {header[:9]}")
    rows = collections.defaultdict(list)
    dropped: collections.Counter = collections.Counter()
    for line in lines[1:]:
        if not line:
            continue
        r = dict(zip(header[:9], line.split("\t")[:9], strict=True))
        if r["severity"] == "HOTW-test":
            dropped["HOTW-test rows"] += 1
            continue
        rows[(r["system"], r["globalSegId"])].append(r)
    segs = []
    for (system, seg), group in rows.items():
        texts = collections.Counter(_marks(r["target"])[0] for r in group)
        tgt = texts.most_common(1)[0][0]
        spans = []
        for r in group:
            text, marks = _marks(r["target"])
            if text != tgt:
                dropped["rows whose target differs"] += 1
                continue
            if r["category"] in ("No-error", "Source error"):
                continue
            spans += [
                {
                    "start": a,
                    "end": b,
                    "severity": r["severity"].lower(),
                    "category": r["category"],
                    "rater": r["rater"],
                }
                for a, b in marks
                if b > a
            ]
        spans.sort(key=lambda s: (s["start"], s["end"], s["rater"]))
        segs.append(
            {
                "system": system,
                "doc": group[0]["doc"],
                "seg_id": seg,
                "src": MARK.sub("", group[0]["source"]),
                "tgt": tgt,
                "mqm_spans": spans,
            }
        )
    return segs, dropped


def build_generalmt_zhen(clones: Path) -> tuple[dict[str, list[dict]], collections.Counter]:
    """generalMT2023 zh-en side-by-side MQM, split by document (module docstring)."""
    (data,) = _fetch(clones, "generalmt2023-zhen").values()
    segs, dropped = generalmt_segments(data.decode("utf-8").split("\n"))
    docs = sorted({s["doc"] for s in segs})
    dev = {d for k, d in enumerate(docs) if k % 10 == 9}
    return (
        {
            "train": [s for s in segs if s["doc"] not in dev],
            "dev": [s for s in segs if s["doc"] in dev],
        },
        dropped,
    )


def scored_keys(clones: Path, data: Path = HERE / "data") -> set[str]:
    """The normalised sources and MT of every dev and test text a labelled head is scored on.

    Args:
        clones: the folder of clones (MLQE-PE's dev and test archives, ``curve_data._files``).
        data: the folder of the committed scored sets (``SCORED``).
    """
    return curve_data.held_out_keys(curve_data._files(clones)) | committed_keys(data)


def committed_keys(data: Path = HERE / "data") -> set[str]:
    """The normalised sources and MT of the committed scored sets' dev and test texts."""
    keys: set[str] = set()
    for name in SCORED:
        for split in ("dev", "test"):
            for r in read_jsonl_gz(data / name / f"{split}.jsonl.gz"):
                keys.update((norm(r["source"]), norm(r["candidate"])))
    keys.discard("")
    return keys


def _keys(row: dict) -> set[str]:
    return {norm(row["src"]), norm(row["tgt"])} - {""}


def _id(row: dict) -> str:
    return str(row["id"]) if "id" in row else f"{row['system']}/{row['seg_id']}"


def clean_splits(splits: dict[str, list[dict]], held: set[str]) -> dict[str, list]:
    """Drop, in place, every sentence whose source or MT is in ``held``, then every train
    sentence sharing its source or MT with a ``dev`` sentence -> {reason: [(split, id)]}."""
    dropped: dict[str, list] = collections.defaultdict(list)
    for split, rows in splits.items():
        dropped[HELD] += [(split, _id(r)) for r in rows if _keys(r) & held]
        rows[:] = [r for r in rows if not _keys(r) & held]
    dev = set().union(*(_keys(r) for r in splits.get("dev", [])))
    train = splits.get("train", [])
    dropped[SPLIT] += [("train", _id(r)) for r in train if _keys(r) & dev]
    train[:] = [r for r in train if not _keys(r) & dev]
    return {k: v for k, v in dropped.items() if v}


def overlaps(splits: dict[str, list[dict]], held: set[str]) -> list[str]:
    """Every overlap left: a sentence matching ``held`` or a train sentence matching dev."""
    out = [f"{split} {_id(r)} matches a scored dev or test sentence"
           for split, rows in splits.items() for r in rows if _keys(r) & held]
    dev = {k: _id(r) for r in splits.get("dev", []) for k in _keys(r)}
    out += [f"train {_id(r)} matches dev {dev[k]}"
            for r in splits.get("train", []) for k in sorted(_keys(r)) if k in dev]
    return out


def check_clean(name: str, splits: dict[str, list[dict]], held: set[str]) -> None:
    """Refuse a set that still overlaps (raises ValueError naming the set and the first)."""
    left = overlaps(splits, held)
    if left:
        raise ValueError(f"{name}: {len(left)} overlaps left ({left[0]}); not written")


def reference_rows(pool: list[dict], splits: dict[str, list[dict]], held: set[str]) -> list[dict]:
    """The mixed head's references: the post-edits (``data/mlqe-en-pool`` rows) of the ro-en
    tags' kept train sentences, without a row whose source or post-edit matches ``held`` or
    a held-out tag sentence."""
    train = {f"roen-train-{r['id']}" for r in splits["train"]}
    dev = set().union(*(_keys(r) for r in splits["dev"]))
    return [r for r in pool if r["id"] in train
            and not {norm(r["source"]), norm(r["target"])} & (held | dev)]


def _build(name: str, clones: Path) -> tuple[dict[str, list[dict]], collections.Counter]:
    if name == "mlqe-roen-train":
        return build_mlqe_roen(clones), collections.Counter()
    if name == "mlqe-en-pool-train":
        return build_mlqe_en_pool(clones)
    if name == "generalmt2023-zhen":
        return build_generalmt_zhen(clones)
    known = ", ".join([*SOURCES, "mlqe-en-pool-train"])
    raise SystemExit(f"unknown set {name!r}; known: {known}")


def _write_references(path: Path, splits: dict[str, list[dict]], held: set[str]) -> None:
    pool = read_jsonl_gz(HERE / "data" / "mlqe-en-pool" / "train.jsonl.gz")
    rows = reference_rows(pool, splits, held)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"mlqe-roen-train references: {len(rows)} post-edits -> {path.name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clones", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=HERE / "data" / "labelled")
    ap.add_argument("--sets", default=",".join(SOURCES))
    ap.add_argument("--references", type=Path, help="with mlqe-roen-train: write the mixed "
                    "head's reference pairs here (JSONL, reference_rows)")
    args = ap.parse_args(argv)
    held = scored_keys(args.clones)
    for name in args.sets.split(","):
        splits, dropped = _build(name, args.clones)
        ids = clean_splits(splits, held)
        dropped.update({k: len(v) for k, v in ids.items()})
        check_clean(name, splits, held)
        manifest = write_set(args.out, name, splits)
        stats = {"manifest": manifest, "dropped": dict(sorted(dropped.items())),
                 "dropped_ids": {k: [f"{s}:{i}" for s, i in v] for k, v in ids.items()}}
        (args.out / name / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
        if name == "mlqe-roen-train" and args.references:
            _write_references(args.references, splits, held)
        for split, m in manifest.items():
            n_spans = sum(len(r["mqm_spans"]) for r in splits[split])
            print(f"{name} {split}: {m['n']} segments, {n_spans} spans, sha256 {m['sha256']}")
        for what, n in sorted(dropped.items()):
            print(f"{name}: dropped {n} {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
