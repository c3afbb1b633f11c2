"""Build the Bible corpus: Spanish (RV 1909) -> English (KJV, WEB) and KJV <-> WEB.

Reads three public-domain SWORD modules from the Debian packages
``sword-text-kjv``, ``sword-text-web`` and ``sword-text-sparv`` with ``pysword``,
cleans the OSIS markup, aligns verses by (book, chapter, verse) and splits by
book. See ``recipes/bible/README.md``.

Usage::

    python -m recipes.bible.build_data --out data/bible [--install] \
        [--sample-out src/sigmoid_head/bible_sample]

The cleaning functions (:func:`clean_osis` and friends) are importable so that
the tests can check them on raw strings taken from the modules.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import importlib
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import unicodedata
from collections.abc import Iterable
from pathlib import Path

# ----------------------------------------------------------------------------
# Sources
# ----------------------------------------------------------------------------

#: Debian package -> SWORD module key (the ``[section]`` of its ``mods.d`` conf).
PACKAGES: dict[str, str] = {
    "sword-text-sparv": "spaRV1909eb",
    "sword-text-kjv": "engKJV2006eb",
    "sword-text-web": "engWEB2015eb",
}
#: Record field -> SWORD module key.
FIELDS: dict[str, str] = {"es": "spaRV1909eb", "kjv": "engKJV2006eb", "web": "engWEB2015eb"}

# ----------------------------------------------------------------------------
# Split by book (pysword's English book names)
# ----------------------------------------------------------------------------

TEST_BOOKS: tuple[str, ...] = (
    "Ruth", "Jonah", "Obadiah", "Joel", "Haggai", "Philemon", "Titus", "Jude",
)  # fmt: skip
DEV_BOOKS: tuple[str, ...] = (
    "Lamentations", "Micah", "Nahum", "Habakkuk", "Zephaniah",
    "Colossians", "I Thessalonians", "II Thessalonians", "II John", "III John",
)  # fmt: skip
#: Whole train books kept in the committed (gzipped) sample.
SAMPLE_TRAIN_BOOKS: tuple[str, ...] = ("Genesis", "Proverbs", "Mark", "John", "Acts")

#: Chapters where the SpaRV module's verse numbers do not match KJV/WEB: RV 1909
#: follows the Hebrew verse division there (e.g. Jonah 2:1 = KJV 1:17) and the
#: module squeezes it into KJV slots, so ``es`` holds a neighbouring verse.
#: Found with ``--diagnose`` (chapter level) and with the same length test per
#: verse (Judges 14, I Kings 16/22, I Chronicles 21, Job 40 are only partly
#: shifted), each checked by reading. II Corinthians 13: RV merges KJV 12-13.
MISALIGNED_CHAPTERS: frozenset[tuple[str, int]] = frozenset({
    ("Numbers", 13), ("Numbers", 30), ("Judges", 14), ("I Samuel", 24),
    ("I Kings", 16), ("I Kings", 22), ("I Chronicles", 21), ("II Chronicles", 33),
    ("Job", 39), ("Job", 40), ("Hosea", 12), ("Jonah", 2), ("II Corinthians", 13),
})  # fmt: skip
#: Single verses with extra content in one version: WEB puts the doxology
#: (KJV Romans 16:25-27) at the end of Romans 14:23.
MISALIGNED_VERSES: frozenset[tuple[str, int, int]] = frozenset({("Romans", 14, 23)})

# ----------------------------------------------------------------------------
# Cleaning (OSIS as pysword returns it with clean=False)
# ----------------------------------------------------------------------------

_NOTE = "\x00"  # placeholder for a removed footnote / cross reference
_RE_GLOSSARY = re.compile(r'<div[^>]*type="glossary".*', re.S)  # WEB appends it to Rev 22:21
_RE_NOTE = re.compile(r"<note\b[^>]*/>|<note\b.*?</note>", re.S)
_RE_DROP = re.compile(
    r'<title\b(?![^>]*canonical="true")[^>]*>.*?</title>'  # section headings (not psalm titles)
    r"|<speaker\b[^>]*>.*?</speaker>",  # speaker labels in WEB's Song of Solomon
    re.S,
)
_RE_CLOSE_OPEN = re.compile(r"</[^>]+>(?=<[^/])")  # `</a><b`: two elements, a word boundary
_RE_SELF_CLOSING = re.compile(r"<[^>]*/>")  # milestones: paragraph, line, chapter, ...
_RE_TAG = re.compile(r"<[^>]*>")  # everything else (<w>, <transChange>, <q>, ...) vanishes
_RE_USFM = re.compile(r"\\\+?[a-z]+[0-9]*\*?")  # stray USFM markers in KJV, e.g. `\nd LORD`
_RE_NOTE_SPAN = re.compile(r"\s*\x00[\s\x00]*")
_RE_SPACE_PUNCT = re.compile(r"\s+([,.;:!?])")
_RE_SPACE = re.compile(r"\s+")
_JUNK = str.maketrans({"¶": " ", "[": "", "]": ""})
#: RV 1909 appends the traditional subscription to the last verse of the
#: epistles ("Amén. Escrita de Roma á los Efesios por Tichîco."); KJV/WEB do not.
_RE_SUBSCRIPTION = re.compile(r"(Amén\.) [^.]*\b(?:[Ee]scrita|[Ee]nviada)\b[^.]*\.$")


def _join_note(match: re.Match[str]) -> str:
    """Replace a removed note by a space or nothing, from the text around it.

    WEB puts footnotes between two words without any space (``God<note>..</note>
    created``), so a note must become a space there, but not before punctuation.
    """
    text, end = match.string, match.end()
    if match.group(0).strip(_NOTE):  # whitespace on a side already separates
        return " "
    if match.start() == 0 or end == len(text) or text[end] in ",.;:!?’”)":
        return ""
    return " "


def strip_markup(raw: str) -> str:
    """Remove OSIS markup and notes from one raw verse; whitespace left as is.

    Order matters: notes go first (they contain text and tags of their own),
    and become a placeholder that is resolved only after all tags are gone.
    """
    text = _RE_GLOSSARY.sub("", raw)
    text = _RE_NOTE.sub(_NOTE, text)
    text = _RE_DROP.sub(" ", text)
    text = _RE_CLOSE_OPEN.sub(" ", text)
    text = _RE_SELF_CLOSING.sub(" ", text)
    text = _RE_TAG.sub("", text)
    text = _RE_USFM.sub("", text)
    return _RE_NOTE_SPAN.sub(_join_note, text)


def normalize_text(text: str) -> str:
    """Drop pilcrows and brackets, NFC-normalise, collapse whitespace."""
    text = unicodedata.normalize("NFC", text.translate(_JUNK))
    text = _RE_SPACE.sub(" ", text).strip()
    return _RE_SPACE_PUNCT.sub(r"\1", text)


def clean_osis(raw: str) -> str:
    """Raw OSIS verse text (as from ``pysword`` with ``clean=False``) -> plain text."""
    return normalize_text(strip_markup(raw))


def strip_subscription(es: str) -> str:
    """Drop an epistle subscription after the final "Amén." of a Spanish verse."""
    return _RE_SUBSCRIPTION.sub(r"\1", es)


# ----------------------------------------------------------------------------
# Installing and reading the modules
# ----------------------------------------------------------------------------


def _missing_packages() -> list[str]:
    missing = []
    for pkg in PACKAGES:
        res = subprocess.run(["dpkg", "-s", pkg], capture_output=True, text=True)
        if res.returncode != 0 or "Status: install ok installed" not in res.stdout:
            missing.append(pkg)
    return missing


def ensure_sources(install: bool) -> None:
    """Install missing Debian packages and ``pysword`` when asked to; else explain."""
    missing = _missing_packages() if shutil.which("dpkg") else list(PACKAGES)
    if missing and install:
        env_cmd = ["env", "DEBIAN_FRONTEND=noninteractive"]
        subprocess.run([*env_cmd, "apt-get", "update", "-q"], check=True)
        subprocess.run([*env_cmd, "apt-get", "install", "-y", "-q", *missing], check=True)
    elif missing:
        sys.exit(
            f"missing Debian packages: {' '.join(missing)}\n"
            f"install them (as root): apt-get install {' '.join(missing)}\n"
            "or rerun with --install"
        )
    try:
        importlib.import_module("pysword")
    except ImportError:
        if not install:
            sys.exit("pysword is not installed: pip install pysword (or rerun with --install)")
        subprocess.run([sys.executable, "-m", "pip", "install", "pysword"], check=True)


def sword_roots() -> list[str]:
    """SWORD library roots (folders holding ``mods.d``) of the Debian packages."""
    roots: set[str] = set()
    for pkg in PACKAGES:
        out = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True, check=True)
        for line in out.stdout.splitlines():
            if line.endswith(".conf") and Path(line).parent.name == "mods.d":
                roots.add(str(Path(line).parent.parent))
    if not roots:
        sys.exit("no SWORD mods.d folder found in the installed packages")
    return sorted(roots)


def read_module(modules: object, key: str) -> dict[tuple[str, int, int], tuple[str, str]]:
    """All verses of one module: (book, chapter, verse) -> (osis book id, raw OSIS)."""
    bible = modules.get_bible_from_module(key)  # type: ignore[attr-defined]
    # pysword decompresses the whole (book-sized) block for every verse; cache it.
    bible._decompressed_text = functools.lru_cache(maxsize=4)(bible._decompressed_text)
    verses = {}
    for books in bible.get_structure().get_books().values():
        for book in books:
            refs = [(c, v) for c, n in enumerate(book.chapter_lengths, 1) for v in range(1, n + 1)]
            texts = list(bible.get_iter(books=[book.name], clean=False))
            assert len(texts) == len(refs), (key, book.name)
            for (c, v), text in zip(refs, texts, strict=True):
                verses[(book.name, c, v)] = (book.osis_name, text)
    return verses


def load_raw() -> dict[str, dict[tuple[str, int, int], tuple[str, str]]]:
    """Raw verses of the three modules, keyed by record field (es, kjv, web)."""
    from pysword.modules import SwordModules

    modules = SwordModules(sword_roots())
    found = modules.parse_modules()
    for key in FIELDS.values():
        if key not in found:
            sys.exit(f"SWORD module {key} not found")
    return {field: read_module(modules, key) for field, key in FIELDS.items()}


# ----------------------------------------------------------------------------
# Aligning, splitting, writing
# ----------------------------------------------------------------------------


def align(raw: dict[str, dict[tuple[str, int, int], tuple[str, str]]]) -> tuple[list[dict], dict]:
    """Verses present and non-empty in all three versions, in canonical (KJV) order."""
    records, dropped = [], {"missing_or_empty": 0, "misaligned": 0}
    for ref, (osis, _) in raw["kjv"].items():  # dicts keep the canonical book order
        book, chapter, verse = ref
        texts = {f: clean_osis(raw[f][ref][1]) if ref in raw[f] else "" for f in FIELDS}
        texts["es"] = strip_subscription(texts["es"])
        if not all(texts.values()):
            dropped["missing_or_empty"] += 1
            continue
        if (book, chapter) in MISALIGNED_CHAPTERS or ref in MISALIGNED_VERSES:
            dropped["misaligned"] += 1
            continue
        rec = {"id": f"{osis}.{chapter}.{verse}", "book": book, "chapter": chapter}
        records.append({**rec, "verse": verse, **texts})
    return records, dropped


def split_of(book: str) -> str:
    """test / dev / train for a book name."""
    return "test" if book in TEST_BOOKS else "dev" if book in DEV_BOOKS else "train"


def _write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    """Write rows as JSON lines; gzip (reproducibly: no name, mtime 0) if ``*.gz``."""
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    payload = data.encode("utf-8")
    if path.suffix == ".gz":
        with path.open("wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as f:
            f.write(payload)
    else:
        path.write_bytes(payload)
    return data.count("\n")


def read_jsonl(path: str | Path) -> list[dict]:
    """Read a ``.jsonl`` or ``.jsonl.gz`` file written by this script."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def write_split(out: Path, split: str, records: list[dict], ext: str) -> dict[str, int]:
    """Write ``{split}{ext}`` and the derived MT / paraphrase files; return counts."""
    mt = ({"source": r["es"], "target": r[ref]} for r in records for ref in ("kjv", "web"))
    para = ({"source": r["kjv"], "target": r["web"]} for r in records)
    para_rev = ({"source": r["web"], "target": r["kjv"]} for r in records)
    return {
        "verses": _write_jsonl(out / f"{split}{ext}", records),
        "mt_pairs": _write_jsonl(out / f"mt_{split}{ext}", mt),
        "para_pairs": _write_jsonl(out / f"para_{split}{ext}", para),
        "para_rev_pairs": _write_jsonl(out / f"para_rev_{split}{ext}", para_rev),
    }


def write_corpus(out: Path, records: list[dict], info: dict, ext: str = ".jsonl") -> dict:
    """Write all splits and ``stats.json`` (``info`` + counts) under ``out``; return it."""
    out.mkdir(parents=True, exist_ok=True)
    stats: dict = {**info, "splits": {}}
    for split in ("train", "dev", "test"):
        rows = [r for r in records if split_of(r["book"]) == split]
        books = list(dict.fromkeys(r["book"] for r in rows))
        stats["splits"][split] = {**write_split(out, split, rows, ext), "books": books}
    (out / "stats.json").write_text(json.dumps(stats, indent=2, ensure_ascii=False) + "\n")
    return stats


def module_versions() -> dict[str, str]:
    """Debian package versions of the three sources (recorded in stats.json)."""
    versions = {}
    for pkg in PACKAGES:
        res = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True
        )
        versions[pkg] = res.stdout.strip()
    return versions


def diagnose(records: list[dict]) -> None:
    """Print chapters where es fits KJV better shifted by one verse than in place.

    Uses the length ratio only: ``mean |log(len(es) / (rho * len(kjv)))|`` over a
    chapter at shift 0 versus shift +-1. Candidates need reading before listing
    them in ``MISALIGNED_CHAPTERS``.
    """
    rho = statistics.median(len(r["es"]) / len(r["kjv"]) for r in records)
    chapters: dict[tuple[str, int], list[dict]] = {}
    for r in records:
        chapters.setdefault((r["book"], r["chapter"]), []).append(r)

    def cost(es: list[dict], en: list[dict]) -> float:
        pairs = zip(es, en, strict=False)
        return statistics.mean(
            abs(math.log(len(a["es"]) / (rho * len(b["kjv"])))) for a, b in pairs
        )

    for ref, rows in chapters.items():
        if len(rows) >= 3:
            shifted = min(cost(rows[1:], rows), cost(rows, rows[1:]))
            if shifted < 0.8 * cost(rows, rows):
                print(f"possibly shifted: {ref[0]} {ref[1]} ({shifted / cost(rows, rows):.2f})")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="output folder for the full corpus")
    p.add_argument("--install", action="store_true", help="apt-get / pip install what is missing")
    p.add_argument("--sample-out", type=Path, help="also write the compact committed sample here")
    p.add_argument("--diagnose", action="store_true", help="print badly aligned chapters")
    args = p.parse_args(argv)

    ensure_sources(args.install)
    records, dropped = align(load_raw())
    if args.diagnose:
        diagnose(records)
    info = {"sources": module_versions(), "dropped_from_full_corpus": dropped}
    stats = write_corpus(args.out, records, info)
    print(json.dumps({s: {k: v for k, v in d.items() if k != "books"}
                      for s, d in stats["splits"].items()}))  # fmt: skip
    if args.sample_out:
        keep = set(SAMPLE_TRAIN_BOOKS)
        sample = [r for r in records if split_of(r["book"]) != "train" or r["book"] in keep]
        info["sample"] = {"train_books": list(SAMPLE_TRAIN_BOOKS), "dev_test": "complete"}
        write_corpus(args.sample_out, sample, info, ext=".jsonl.gz")
        print(f"sample written to {args.sample_out}")


if __name__ == "__main__":
    main()
