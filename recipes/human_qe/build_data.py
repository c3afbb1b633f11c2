"""Build the human-labelled QE sets (issue 38) from local clones of their public repositories.

Every source file is named by repository, commit and path in ``sources.json`` beside this
script, with its sha256; the build refuses a file whose checksum differs. Each set is
written as ``<out>/<set>/{dev,test}.jsonl.gz``, one JSON record per scored text:

* ``mlqe-roen-word`` (MLQE-PE, CC0-1.0; committed): WMT 2021 word-level QE ro-en. Test:
  the WMT 2021 test set's gold (MT word tags, gap tags, source tags); dev: MLQE-PE's
  post-editing dev split (MT tags with gaps interleaved, source tags). Records:
  ``{id, group, source, candidate, word_bad, gap_bad, source_bad, hter}`` (tags 1 = BAD,
  ``candidate`` = the tokenized MT the tags refer to). Also ``train_pe``: 2,000
  ``{id, source, target}`` pairs of MLQE-PE's train split with the English post-edit as
  target, for training a head on English data that is neither dev nor test.
* ``mqm-ted-zhen`` (google/wmt-mqm-human-evaluation, Apache-2.0; committed): Google's MQM
  of the WMT 2021 TED talks test suite, zh-en, 15 systems (incl. two human references).
  Dev: talks 5 and 7; test: talks 2, 6 and 9 (split by talk, every system of one talk on
  the same side). Records: ``{id, group, source, candidate, mqm, spans, rater_spans,
  omissions, system, doc}``.
* ``mushroom-en`` (Helsinki-NLP/mu-shroom; the repository states no licence, so the built
  files are not committed): the English part of Mu-SHROOM. Dev: validation v2 (50
  answers); test: the labelled test split (154 answers). Records: ``{id, group, source,
  candidate, spans, soft_labels, model_id}``.

Usage::

    python -m recipes.human_qe.build_data --clones DIR [--out recipes/human_qe/data]
        [--sets mlqe-roen-word,mqm-ted-zhen,mushroom-en]

``DIR`` holds one folder per repository named ``<owner>+<name>``: either a checkout (files
read from its work tree; check out the commit in ``sources.json``) or a folder with a bare
clone in ``repo/`` (files read with ``git show <commit>:<path>``).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "sources.json"
SETS = ("mlqe-roen-word", "mqm-ted-zhen", "mushroom-en")


def _src() -> Path:
    return HERE.parents[1] / "src"


def source_bytes(clones: Path, repo: str, commit: str, path: str, sha256: str) -> bytes:
    """The file's bytes from a local clone, checked against ``sha256``.

    Raises:
        ValueError: the checksum differs (another version of the file).
        FileNotFoundError: no clone of ``repo`` under ``clones``.
    """
    folder = clones / repo.replace("/", "+")
    if (folder / "repo").is_dir():
        data = subprocess.run(
            ["git", "-C", str(folder / "repo"), "show", f"{commit}:{path}"],
            check=True,
            capture_output=True,
        ).stdout
    elif (folder / path).is_file():
        data = (folder / path).read_bytes()
    else:
        raise FileNotFoundError(f"no clone of {repo} with {path} under {clones}")
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise ValueError(f"{repo}:{path}: sha256 {got} differs from {sha256} (commit {commit})")
    return data


def _fetch(clones: Path, name: str) -> dict[str, bytes]:
    spec = json.loads(SOURCES.read_text())[name]
    return {
        f["path"]: source_bytes(clones, spec["repo"], spec["commit"], f["path"], f["sha256"])
        for f in spec["files"]
    }


def _untar(data: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and "/._" not in f"/{m.name}"]
        tar.extractall(dest, members=members, filter="data")


def _hter(path: Path) -> list[float | None]:
    return [float(x) for x in path.read_text().split()] if path.exists() else []


def build_mlqe_roen(clones: Path) -> dict[str, list[dict]]:
    """MLQE-PE ro-en word level: test = WMT 2021 test gold, dev = post-editing dev."""
    from sigmoid_head.evaluation.gold_wmt import read_wmt_word_level

    files = _fetch(clones, "mlqe-roen-word")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for data in files.values():
            _untar(data, t)
        test, gold = t / "ro-en-test21", t / "ro-en-test21" / "goldlabels"
        out["test"] = read_wmt_word_level(
            test / "test21.tok.mt",
            gold / "task2_wordlevel_mt.tags",
            gap_tags=gold / "task2_wordlevel_gaps.tags",
            source=test / "test21.tok.src",
            source_tags=gold / "task2_wordlevel_src.tags",
        )
        hters = {"test": _hter(gold / "test21.hter")}
        dev = t / "ro-en-dev"
        out["dev"] = read_wmt_word_level(
            dev / "dev.mt",
            dev / "dev.tags",
            source=dev / "dev.src",
            source_tags=dev / "dev.source_tags",
        )
        hters["dev"] = _hter(dev / "dev.hter")
        train = t / "ro-en-train"
        pairs = list(zip(_lines(train / "train.src"), _lines(train / "train.pe"), strict=True))
    out_rows = {
        split: [
            {
                "id": f"roen-{split}-{k}",
                "group": it.group,
                "source": it.source,
                "candidate": it.text,
                "word_bad": it.word_bad,
                "gap_bad": it.gap_tags,
                "source_bad": it.source_bad,
                "hter": hters[split][k] if k < len(hters[split]) else None,
            }
            for k, it in enumerate(items)
        ]
        for split, items in out.items()
    }
    # head training data: the first TRAIN_PAIRS source / post-edit pairs of MLQE-PE's train
    # split (no sentence of it is in dev or test); the post-edit is English, tokenized as the MT
    out_rows["train_pe"] = [
        {"id": f"roen-train-{k}", "source": s, "target": pe}
        for k, (s, pe) in enumerate(pairs[:TRAIN_PAIRS])
    ]
    return out_rows


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


TRAIN_PAIRS = 2000
DEV_TALKS = ("talk.5", "talk.7")


def build_mqm_ted(clones: Path) -> dict[str, list[dict]]:
    """Google MQM TED zh-en, split by talk."""
    from sigmoid_head.evaluation.gold_mqm import read_google_mqm

    (data,) = _fetch(clones, "mqm-ted-zhen").values()
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "mqm.tsv"
        p.write_bytes(data)
        items = read_google_mqm(p)
    out: dict[str, list[dict]] = {"dev": [], "test": []}
    for it in items:
        split = "dev" if it.doc in DEV_TALKS else "test"
        out[split].append(
            {
                "id": f"{it.system}/{it.doc}/{it.seg_id}",
                "group": it.group,
                "source": it.source,
                "candidate": it.text,
                "mqm": it.mqm,
                "spans": it.spans,
                "rater_spans": it.rater_spans,
                "omissions": it.omissions,
                "system": it.system,
                "doc": it.doc,
            }
        )
    return out


def build_mushroom_en(clones: Path) -> dict[str, list[dict]]:
    """Mu-SHROOM English: dev = validation v2, test = labelled test."""
    from sigmoid_head.evaluation.gold_shroom import read_mushroom

    files = _fetch(clones, "mushroom-en")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path, data in files.items():
            split = "dev" if "/val/" in path else "test"
            p = Path(tmp) / f"{split}.jsonl"
            p.write_bytes(data)
            out[split] = [
                {
                    "id": it.item_id,
                    "group": it.group,
                    "source": it.question,
                    "candidate": it.text,
                    "spans": it.spans,
                    "soft_labels": it.soft_labels,
                    "model_id": it.model_id,
                }
                for it in read_mushroom(p)
            ]
    return out


BUILDERS = {
    "mlqe-roen-word": build_mlqe_roen,
    "mqm-ted-zhen": build_mqm_ted,
    "mushroom-en": build_mushroom_en,
}


def write_set(out: Path, name: str, splits: dict[str, list[dict]]) -> dict[str, dict]:
    """Write ``<out>/<name>/<split>.jsonl.gz`` (reproducible bytes) -> {split: {n, sha256}}."""
    (out / name).mkdir(parents=True, exist_ok=True)
    manifest = {}
    for split, rows in splits.items():
        raw = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as f:
            f.write(raw.encode())
        (out / name / f"{split}.jsonl.gz").write_bytes(buf.getvalue())
        manifest[split] = {"n": len(rows), "sha256": hashlib.sha256(buf.getvalue()).hexdigest()}
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clones", required=True, type=Path, help="folder of local clones")
    ap.add_argument("--out", type=Path, default=HERE / "data")
    ap.add_argument("--sets", default=",".join(SETS))
    args = ap.parse_args(argv)
    for name in args.sets.split(","):
        if name not in BUILDERS:
            ap.error(f"unknown set {name!r}; one of {', '.join(SETS)}")
        manifest = write_set(args.out, name, BUILDERS[name](args.clones))
        print(name, json.dumps(manifest))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
