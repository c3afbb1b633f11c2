"""Build the learning curve's training pool: every English-target post-edit of MLQE-PE's train splits.

Issue 49, item 2: the paper's head (the committed ``prior001`` command) trained on growing
English data of the right kind. The pool is MLQE-PE's train post-edits of the five
English-target pairs (ro-en, et-en, ne-en, si-en, ru-en; 7,000 each; CC0-1.0), as
``{id, source, target}`` pairs with the English post-edit as target, in one fixed order:

1. the first 2,000 ro-en train pairs, exactly ``data/mlqe-roen-word/train_pe.jsonl.gz``
   (the committed head's training file, so the curve's 2k point is that head);
2. every other train pair of the five pairs, in a seeded shuffle (``random.Random(0)``),
   without the pairs whose source, or whose post-edit, matches a dev or test sentence of
   any of the five pairs (MLQE-PE dev, test20, WMT 2021 test21) after lower-casing and
   dropping everything but letters and digits (so a comma does not hide a duplicate),
   without repeated sources, and without the pairs that do not fit the training command's
   ``--max-length 192`` whole (prompt, post-edit and end token with the SmolLM2 tokenizer:
   the trainer would cut their post-edit or drop them; byte-level BPE spends about three
   tokens on a Sinhala or Nepali character, so most of these are si-en and ne-en).

The curve's point ``n`` trains on the first ``n`` pairs (nested points). Written:
``<out>/mlqe-en-pool/train.jsonl.gz`` and a line of counts (per pair kept). The first 2,000 are kept as
they are even where they match a dev or test sentence; the build prints how many do.

Usage::

    python -m recipes.human_qe.curve_data --clones DIR [--out recipes/human_qe/data]
        [--tokenizer PATH]   # default: the embedded SmolLM2-135M-Instruct
"""

from __future__ import annotations

import argparse
import io
import json
import random
import re
import tarfile
from pathlib import Path

from .build_data import TRAIN_PAIRS, source_bytes, write_set

HERE = Path(__file__).resolve().parent

NAME = "mlqe-en-pool"
PROMPT = "Translate this sentence into English.\n{source}\n"
MAX_LENGTH = 192
PAIRS = ("ro-en", "et-en", "ne-en", "si-en", "ru-en")
_NOT_WORD = re.compile(r"[\W_]+")


def norm(text: str) -> str:
    """Lower case, letters and digits only (the duplicate key)."""
    return _NOT_WORD.sub("", text.lower())


def _members(data: bytes) -> dict[str, list[str]]:
    """Every regular file of a .tar.gz, by base name, as lines."""
    out: dict[str, list[str]] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for m in tar.getmembers():
            name = m.name.rsplit("/", 1)[-1]
            if m.isfile() and not name.startswith("._"):
                f = tar.extractfile(m)
                assert f is not None
                out[name] = f.read().decode("utf-8").splitlines()
    return out


def _files(clones: Path) -> dict[str, dict[str, list[str]]]:
    spec = json.loads((HERE / "sources.json").read_text())[NAME]
    return {
        f["path"]: _members(
            source_bytes(clones, spec["repo"], spec["commit"], f["path"], f["sha256"])
        )
        for f in spec["files"]
    }


def held_out_keys(files: dict[str, dict[str, list[str]]]) -> set[str]:
    """The normalised sources and English sides of every dev and test file."""
    keys: set[str] = set()
    for path, members in files.items():
        if "/train/" in path:
            continue
        for name in (
            "dev.src",
            "dev.pe",
            "dev.mt",
            "test20.src",
            "test20.pe",
            "test20.mt",
            "test21.src",
            "test21.tok.src",
            "test21.mt",
            "test21.tok.mt",
        ):
            keys.update(norm(line) for line in members.get(name, []))
    keys.discard("")
    return keys


def fits(rows: list[dict], tokenizer: object) -> list[bool]:
    """Whether each pair tokenizes, as the trainer builds it, to at most MAX_LENGTH tokens."""
    from sigmoid_head.data.tokenize import tokenize_records

    out = []
    for r in rows:
        _, stats = tokenize_records(
            [r],
            tokenizer,
            is_encoder_decoder=False,
            task="pairs",
            max_length=MAX_LENGTH,
            prompt_template=PROMPT,
        )
        out.append(stats.truncated == 0 and stats.dropped == 0)
    return out


def build_pool(clones: Path, tokenizer: object) -> tuple[list[dict], dict[str, int]]:
    """The ordered pool (see the module docstring) and its counts."""
    files = _files(clones)
    held = held_out_keys(files)
    train: dict[str, list[tuple[str, str]]] = {}
    for path, members in files.items():
        if "/train/" in path:
            pair = path.rsplit("/", 1)[-1].split("-train")[0]
            train[pair] = list(zip(members["train.src"], members["train.pe"], strict=True))
    head = [
        {"id": f"roen-train-{k}", "source": s, "target": t}
        for k, (s, t) in enumerate(train["ro-en"][:TRAIN_PAIRS])
    ]
    seen = {norm(r["source"]) for r in head}
    counts = {"prefix_matching_held_out": sum(norm(r["source"]) in held for r in head)}
    rest, dropped_held, dropped_dup = [], 0, 0
    for pair in PAIRS:
        start = TRAIN_PAIRS if pair == "ro-en" else 0
        for k, (s, t) in enumerate(train[pair][start:], start=start):
            key = norm(s)
            if key in held or norm(t) in held:
                dropped_held += 1
            elif key in seen:
                dropped_dup += 1
            else:
                seen.add(key)
                rest.append({"id": f"{pair.replace('-', '')}-train-{k}", "source": s, "target": t})
    ok = fits(rest, tokenizer)
    counts["dropped_too_long"] = ok.count(False)
    rest = [r for r, keep in zip(rest, ok, strict=True) if keep]
    random.Random(0).shuffle(rest)
    counts.update(
        n=len(head) + len(rest), dropped_held_out=dropped_held, dropped_repeats=dropped_dup
    )
    counts["prefix_too_long"] = fits(head, tokenizer).count(False)
    for pair in PAIRS:
        counts[pair] = sum(r["id"].startswith(pair.replace("-", "")) for r in head + rest)
    return head + rest, counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clones", required=True, type=Path, help="folder of local clones")
    ap.add_argument("--out", type=Path, default=HERE / "data")
    ap.add_argument("--tokenizer", help="tokenizer folder or id (default: embedded SmolLM2)")
    args = ap.parse_args(argv)
    from transformers import AutoTokenizer

    from sigmoid_head.embedded.default_model import default_model_path

    tok = AutoTokenizer.from_pretrained(args.tokenizer or str(default_model_path()))
    rows, counts = build_pool(args.clones, tok)
    manifest = write_set(args.out, NAME, {"train": rows})
    print(NAME, json.dumps({**manifest, "counts": counts}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
