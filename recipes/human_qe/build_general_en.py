"""Build the learning curve's ``general-en`` point: general English text from OpenStax books.

Issue 49, item 2: a general English corpus, of the kind a small LM is trained on, against
which the curve's MT post-edit points are compared. The text is the running prose of six
OpenStax textbooks (``BOOKS``), each read from its public CNXML repository at a pinned
commit whose ``LICENSE`` is the Creative Commons Attribution 4.0 International licence (the
repositories' newer commits carry a NonCommercial licence: never read HEAD). The build
refuses a book whose ``LICENSE`` at the commit does not start with the CC BY 4.0 text, or
whose collection does not name the CC BY 4.0 licence URL.

Extraction (one book): the modules of its ``collections/*.collection.xml`` in reading order
(collections in the order of ``canonical.json`` where there is one, else by name), only the
modules inside a chapter or unit (``col:subcollection``): front and back matter (preface,
appendices, glossary, maps, reading lists) are dropped, and a module shared by two
collections is read once. Of each module's ``<content>`` the paragraphs (``para``), list
items (``item``) and quotes are kept as paragraphs, with the text of their inline markup
(terms, emphasis, links, sub/superscripts); titles and labels are dropped (a record holds
prose only), and so are math, equations, media, figures (with captions), tables, exercises
(problems and solutions), footnotes, glossaries, metadata (with the abstract), citation
notes (``note class="reference"``), the link-only boxes (``link-to-learning``, ``interactive``,
``click-and-explore``, ``beyond-book``), the end-of-section question, reference and objective
sections (``review-questions``, ``references``, ``learning-objectives``, ...) and
``critical-thinking`` question lists. A cross-reference that is an empty link
(``<link target-id=".."/>``, pointing at a dropped figure or table) and inline math leave
nothing; the parentheses around them go with them (``cells (see <link/>).`` -> ``cells.``),
and a sentence still holding one is dropped. Whitespace is collapsed to single spaces.

Records: within each module, whole paragraphs are packed greedily, joined by a newline, into
records of at most ``MAX_TOKENS`` tokens of the embedded SmolLM2 tokenizer (text only, no
special tokens); a paragraph longer than that is cut at sentence ends (and a sentence longer
than that is dropped); records under ``MIN_TOKENS`` tokens and repeated texts are dropped.
Each book's records are ``<book>-<n>`` in reading order, shuffled with ``random.Random(0)``,
and taken round-robin across the books (in ``BOOKS`` order) until the next record would
pass ``BUDGET`` tokens. Written: ``<out>/train.jsonl.gz`` (``{"id", "text"}`` records, the
field ``sigmoid-head train --task text`` reads; gzip with mtime 0, so the bytes are
reproducible) and ``<out>/README.md`` (sources, licence, attribution, counts, sha256).

Usage::

    python -m recipes.human_qe.build_general_en --clones DIR [--out recipes/human_qe/data/general-en]
        [--tokenizer PATH]   # default: the embedded SmolLM2-135M-Instruct

``DIR`` holds one folder per repository named ``<owner>+<name>``: a folder with a bare
clone in ``repo/``, or a git directory (a checkout's ``.git`` or a bare clone) itself; files
are always read at the pinned commit (``git show <commit>:<path>``).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import random
import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent

NAME = "general-en"
MAX_TOKENS = 150
MIN_TOKENS = 8
BUDGET = 1_000_000
LICENCE_HEAD = "Attribution 4.0 International"
LICENCE_URL = "https://creativecommons.org/licenses/by/4.0/"
BOOKS: dict[str, dict[str, str]] = {
    "psychology": {
        "repo": "openstax/osbooks-psychology",
        "commit": "e061043bf2f9e86ace51c4e8dc9555160f60a99d",
    },
    "american-government": {
        "repo": "openstax/osbooks-american-government",
        "commit": "5c90dd7907dbf25f42266417e63ca3bb0012f031",
    },
    "introduction-sociology": {
        "repo": "openstax/osbooks-introduction-sociology",
        "commit": "d35d5f3bdac40f93607d600134865d4f13ce1f9b",
    },
    "us-history": {
        "repo": "openstax/osbooks-us-history",
        "commit": "046331cfcea0ac1b1a8fd461b3e6aae638845af3",
    },
    "anatomy-physiology": {
        "repo": "openstax/osbooks-anatomy-physiology",
        "commit": "b0058a743bdd2cc08196abaaa7d5469970c0d80c",
    },
    "world-history": {
        "repo": "openstax/osbooks-world-history",
        "commit": "3e17beda9130380d24be881e6d1942dfcc1be845",
    },
}
"""The books, each at a commit whose LICENSE is CC BY 4.0 (checked by the build)."""

# element names (namespace stripped) dropped with everything inside them
DROP_TAGS = frozenset({
    "metadata", "title", "label", "math", "equation", "media", "image", "iframe", "figure",
    "subfigure", "caption", "table", "exercise", "problem", "solution", "commentary",
    "footnote", "glossary", "definition", "code", "preformat",
})  # fmt: skip
# classes (any word of the class attribute) of sections, notes and lists dropped whole
DROP_CLASSES = frozenset({
    "reference", "references", "link-to-learning", "interactive", "click-and-explore",
    "beyond-book", "review-questions", "critical-thinking", "check-understanding",
    "reflection-questions", "personal-application", "interactive-exercise", "section-quiz",
    "short-answer", "multiple-choice", "free-response", "further-research", "suggested-reading",
    "learning-objectives", "chapter-objectives", "sr-contrib-auth", "contrib-auth",
})  # fmt: skip
BLOCK_TAGS = frozenset({"para", "list", "item", "quote", "section", "note", "div", "content"})
GAP = "\x00"  # stands for an empty cross-reference or inline math until cleaned away
_PAREN = re.compile(r"\s*\([^()]*\)")
# what may stand beside a gap in parentheses that go with it: "(see <link/>b)", "(<link/>, <link/>)"
_FILLER = re.compile(
    r"\x00(?:[a-z](?![a-z]))?|\b(?:see|also|and|or|e\.g\.|i\.e\.|cf\.)\b|[\s,;:.]", re.I
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”’')\]]*\s+(?=[\"“‘'(\[]*[A-Z0-9])")
_SPACE = re.compile(r"\s+")
_ONLINE = re.compile(r"https://openstax\.org/details/books/[\w-]+")
_INITIAL = re.compile(r"(?:^|[\s(“\"'])[A-Z]\.$|\.[A-Za-z]\.$")  # J. / U.S. / e.g.
_ABBREVIATIONS = frozenset({
    "mr.", "mrs.", "ms.", "dr.", "st.", "jr.", "sr.", "vs.", "no.", "gen.", "gov.", "rev.",
    "sen.", "rep.", "pres.", "lt.", "col.", "capt.", "ca.", "approx.", "fig.", "vol.", "ed.",
})  # fmt: skip


class LicenceError(ValueError):
    """A book's LICENSE (or its collection's licence) at the commit is not CC BY 4.0."""


# --------------------------------------------------------------------------- git


def git_dir(clones: Path, repo: str) -> Path:
    """The git directory of ``repo`` under ``clones`` (``<owner>+<name>/repo``, its ``.git``,
    or the folder itself)."""
    folder = Path(clones) / repo.replace("/", "+")
    for cand in (folder / "repo", folder / ".git"):
        if cand.exists():
            return cand
    if (folder / "HEAD").is_file() and (folder / "objects").is_dir():
        return folder
    raise FileNotFoundError(f"no clone of {repo} under {clones}")


def git_show(gitdir: Path, commit: str, path: str) -> bytes:
    """The bytes of ``path`` at ``commit``."""
    return subprocess.run(
        ["git", "--git-dir", str(gitdir), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
    ).stdout


def git_ls(gitdir: Path, commit: str, folder: str) -> list[str]:
    """The paths of the files directly in ``folder`` at ``commit``."""
    out = subprocess.run(
        ["git", "--git-dir", str(gitdir), "ls-tree", "--name-only", commit, f"{folder}/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split("\n")[:-1] if out else []


def check_licence(licence: bytes, where: str) -> None:
    """Refuse a LICENSE that does not start with the CC BY 4.0 legal code's title."""
    text = licence.decode("utf-8", errors="replace").lstrip("\ufeff").strip()
    first = text.split("\n", 1)[0].strip()
    if first != LICENCE_HEAD or "NonCommercial" in text or "NoDerivatives" in text:
        raise LicenceError(f"{where}: LICENSE is not CC BY 4.0 (starts {first[:60]!r})")


# --------------------------------------------------------------------------- CNXML


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _dropped(el: ET.Element) -> bool:
    return _local(el.tag) in DROP_TAGS or bool(DROP_CLASSES & set(el.get("class", "").split()))


def _has_block(el: ET.Element) -> bool:
    return any(_local(c.tag) in BLOCK_TAGS for c in el)


def _is_block(el: ET.Element) -> bool:
    """A paragraph-level element (a quote only when it holds paragraphs)."""
    tag = _local(el.tag)
    return tag in BLOCK_TAGS and (tag != "quote" or _has_block(el))


def _inline(el: ET.Element) -> str:
    """The text of ``el`` and its inline children (dropped and block children left out)."""
    out = [el.text or ""]
    for c in el:
        tag = _local(c.tag)
        if tag in ("math", "equation"):
            out.append(GAP)
        elif _dropped(c) or _is_block(c):
            pass
        elif tag == "newline":
            out.append(" ")
        elif tag == "link" and not (c.text or "").strip() and not len(c):
            out.append(GAP)
        else:
            out.append(_inline(c))
        out.append(c.tail or "")
    return "".join(out)


def _blocks(el: ET.Element, out: list[str]) -> None:
    if _dropped(el):
        return
    tag = _local(el.tag)
    if tag in ("para", "item") or (tag == "quote" and not _has_block(el)):
        out.append(_inline(el))
        for c in el:
            if _is_block(c):
                _blocks(c, out)
        return
    for c in el:
        _blocks(c, out)


def clean(text: str, stats: dict[str, int] | None = None) -> str:
    """Collapse whitespace; remove empty cross-references and inline math with the
    parentheses around them, and drop a sentence that still holds one."""
    text = _SPACE.sub(" ", text.replace("\u00ad", "")).strip()
    if GAP not in text:
        return text

    def paren(m: re.Match) -> str:
        inner = m.group(0)
        return "" if GAP in inner and not _FILLER.sub("", inner.strip()[1:-1]) else inner

    text = _PAREN.sub(paren, text)
    if GAP in text:
        sentences = split_sentences(text)
        text = " ".join(s for s in sentences if GAP not in s)
        if stats is not None:
            stats["sentences_with_gap"] = stats.get("sentences_with_gap", 0) + sum(
                GAP in s for s in sentences
            )
    return _SPACE.sub(" ", text).strip()


def module_paragraphs(cnxml: bytes, stats: dict[str, int] | None = None) -> list[str]:
    """The kept paragraphs of one module's ``index.cnxml``, in document order (``stats``
    counts the sentences dropped for an empty cross-reference or math they hold)."""
    root = ET.fromstring(cnxml)
    out: list[str] = []
    for c in root:
        if _local(c.tag) == "content":
            _blocks(c, out)
    return [p for p in (clean(x, stats) for x in out) if p]


def collection_paths(gitdir: Path, commit: str) -> list[str]:
    """The book's collection files, in the order of ``canonical.json`` when there is one."""
    paths = sorted(p for p in git_ls(gitdir, commit, "collections") if p.endswith(".xml"))
    try:
        slugs = json.loads(git_show(gitdir, commit, "canonical.json"))
    except subprocess.CalledProcessError:
        return paths
    rank = {f"collections/{s}.collection.xml": k for k, s in enumerate(slugs)}
    return sorted(paths, key=lambda p: (rank.get(p, len(rank)), p))


def chapter_modules(collection: bytes) -> tuple[str, str, list[str]]:
    """(title, licence URL, modules inside a subcollection in reading order) of a collection."""
    root = ET.fromstring(collection)
    title = url = ""
    for el in root.iter():
        if _local(el.tag) == "title" and not title:
            title = (el.text or "").strip()
        if _local(el.tag) == "license" and not url:
            url = el.get("url", "")
    modules: list[str] = []

    def walk(el: ET.Element, inside: bool) -> None:
        for c in el:
            tag = _local(c.tag)
            if tag == "module" and inside:
                modules.append(c.get("document", ""))
            walk(c, inside or tag == "subcollection")

    walk(root, False)
    return title, url, modules


def read_book(
    gitdir: Path, commit: str, where: str, stats: dict[str, int] | None = None
) -> tuple[list[str], list[list[str]]]:
    """(collection titles, each chapter module's paragraphs) of one book at ``commit``;
    refuses a book not licensed CC BY 4.0 there."""
    check_licence(git_show(gitdir, commit, "LICENSE"), where)
    titles: list[str] = []
    seen: set[str] = set()
    modules: list[list[str]] = []
    for path in collection_paths(gitdir, commit):
        title, url, docs = chapter_modules(git_show(gitdir, commit, path))
        if url.rstrip("/").split("//")[-1] != LICENCE_URL.rstrip("/").split("//")[-1]:
            raise LicenceError(f"{where}:{path}: collection licence {url!r} is not CC BY 4.0")
        titles.append(title)
        for doc in docs:
            if doc not in seen:
                seen.add(doc)
                cnxml = git_show(gitdir, commit, f"modules/{doc}/index.cnxml")
                modules.append(module_paragraphs(cnxml, stats))
    return titles, modules


# --------------------------------------------------------------------------- records


def split_sentences(text: str) -> list[str]:
    """Cut at sentence ends: . ! or ? (and closing quotes or brackets), a space, then a capital
    letter or digit; not after a known abbreviation or an initial (``U.S.``, ``Dr.``, ``J.``)."""
    out, last = [], 0
    for m in _SENTENCE_END.finditer(text):
        word = text[last : m.start()].rsplit(" ", 1)[-1]
        if word.lower() in _ABBREVIATIONS or _INITIAL.search(word):
            continue
        out.append(text[last : m.end()].rstrip())
        last = m.end()
    out.append(text[last:])
    return [s for s in out if s.strip()]


def _pack(pieces: list[str], sep: str, count: Callable[[str], int], cap: int) -> list[str]:
    """Greedy: join consecutive pieces with ``sep`` while the whole fits ``cap`` tokens."""
    out: list[str] = []
    cur = ""
    for p in pieces:
        cand = f"{cur}{sep}{p}" if cur else p
        if count(cand) <= cap:
            cur = cand
            continue
        if cur:
            out.append(cur)
        cur = p if count(p) <= cap else ""
    if cur:
        out.append(cur)
    return out


def cut_records(
    modules: list[list[str]],
    count: Callable[[str], int],
    cap: int = MAX_TOKENS,
    min_tokens: int = MIN_TOKENS,
) -> tuple[list[str], dict[str, int]]:
    """Records of whole paragraphs (each module on its own), at most ``cap`` tokens each,
    and counts of what was cut or dropped."""
    counts = {"paragraphs": 0, "paragraphs_split": 0, "sentences_too_long": 0, "records_short": 0}
    records: list[str] = []
    for paras in modules:
        pieces: list[str] = []
        for p in paras:
            counts["paragraphs"] += 1
            if count(p) <= cap:
                pieces.append(p)
                continue
            counts["paragraphs_split"] += 1
            sents = split_sentences(p)
            counts["sentences_too_long"] += sum(count(s) > cap for s in sents)
            pieces.extend(_pack(sents, " ", count, cap))
        for rec in _pack(pieces, "\n", count, cap):
            if count(rec) < min_tokens:
                counts["records_short"] += 1
            else:
                records.append(rec)
    return records, counts


def interleave(
    by_book: dict[str, list[dict]], count: Callable[[str], int], budget: int = BUDGET
) -> list[dict]:
    """Each book's records shuffled (``random.Random(0)``), then taken round-robin across the
    books until the next record would pass ``budget`` tokens."""
    queues = []
    for rows in by_book.values():
        rows = list(rows)
        random.Random(0).shuffle(rows)
        queues.append(rows)
    out: list[dict] = []
    total = 0
    for k in range(max((len(q) for q in queues), default=0)):
        for q in queues:
            if k < len(q):
                n = count(q[k]["text"])
                if total + n > budget:
                    return out
                total += n
                out.append(q[k])
    return out


def gzip_jsonl(rows: list[dict]) -> bytes:
    """JSONL, gzipped with mtime 0 and no file name (reproducible bytes)."""
    raw = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as f:
        f.write(raw.encode("utf-8"))
    return buf.getvalue()


def build(clones: Path, count: Callable[[str], int]) -> tuple[list[dict], dict]:
    """The selected records and a summary (per book: commit, titles, counts)."""
    by_book: dict[str, list[dict]] = {}
    summary: dict = {"books": {}}
    seen: set[str] = set()
    for book, spec in BOOKS.items():
        gd = git_dir(clones, spec["repo"])
        gaps: dict[str, int] = {"sentences_with_gap": 0}
        titles, modules = read_book(gd, spec["commit"], f"{spec['repo']}@{spec['commit']}", gaps)
        texts, counts = cut_records(modules, count)
        counts = {**gaps, **counts}
        rows = []
        for n, text in enumerate(texts):
            if text in seen:
                counts["records_repeated"] = counts.get("records_repeated", 0) + 1
                continue
            seen.add(text)
            rows.append({"id": f"{book}-{n}", "text": text})
        by_book[book] = rows
        licence = git_show(gd, spec["commit"], "LICENSE")
        about = git_show(gd, spec["commit"], "README.md").decode("utf-8", errors="replace")
        summary["books"][book] = {
            **spec,
            "titles": titles,
            "online": sorted(set(_ONLINE.findall(about)), key=about.index),
            "modules": len(modules),
            "licence_sha256": hashlib.sha256(licence).hexdigest(),
            **counts,
            "records": len(rows),
            "tokens": sum(count(r["text"]) for r in rows),
        }
    chosen = interleave(by_book, count)
    for book in BOOKS:
        mine = [r for r in chosen if r["id"].startswith(f"{book}-")]
        summary["books"][book]["records_taken"] = len(mine)
        summary["books"][book]["tokens_taken"] = sum(count(r["text"]) for r in mine)
    summary["records"] = len(chosen)
    summary["tokens"] = sum(count(r["text"]) for r in chosen)
    return chosen, summary


# --------------------------------------------------------------------------- README


def readme(summary: dict, sha256: str, size: int) -> str:
    """The data folder's README: sources, licence and attribution, what was done, counts."""
    books = summary["books"]
    lines = [
        "# general-en: English prose of six OpenStax textbooks (the learning curve's general-English point)",
        "",
        "Built by `python -m recipes.human_qe.build_general_en --clones DIR` (see its docstring) from",
        "local clones of the books' public CNXML repositories, each read at a pinned commit:",
        "",
        "| book | repository | commit | title (collections) | modules read | records taken"
        " (of those built) | tokens taken |",
        "|---|---|---|---|---|---|---|",
    ]
    for book, b in books.items():
        cols = "; ".join(f"*{t}*" for t in b["titles"])
        lines.append(
            f"| {book} | https://github.com/{b['repo']} | `{b['commit']}` | {cols} | {b['modules']} "
            f"| {b['records_taken']:,} (of {b['records']:,}) | {b['tokens_taken']:,} |"
        )
    lines += [
        "",
        "Paths read at each commit: `LICENSE`, `README.md` (for the links below), `canonical.json`",
        "(where present), `collections/*.collection.xml`, and `modules/<id>/index.cnxml` of every",
        "module inside a chapter or unit.",
        "",
        "## Licence and attribution",
        "",
        "The text is from textbooks by **OpenStax, Rice University**, licensed under the Creative",
        f"Commons Attribution 4.0 International licence (CC BY 4.0, {LICENCE_URL}):",
        "",
    ]
    for b in books.values():
        for k, t in enumerate(b["titles"]):
            link = f", {b['online'][k]}" if k < len(b["online"]) else ""
            lines.append(f"- *{t}*, OpenStax, Rice University{link}")
    licences = {b["licence_sha256"] for b in books.values()}
    lines += [
        "",
        "The `LICENSE` file at each commit above is the CC BY 4.0 legal code (the build checks that it",
        'starts with "Attribution 4.0 International" and does not name NonCommercial or NoDerivatives,',
        "and that each collection names the CC BY 4.0 URL; sha256 of the LICENSE "
        + ("file, the same for all the books" if len(licences) == 1 else "files")
        + ": "
        + ", ".join(f"`{x}`" for x in sorted(licences))
        + "). Later commits of these repositories",
        "carry a NonCommercial licence; only the commits above are used. Text the books quote from",
        "others (historical documents, speeches, letters; mostly public domain) is kept as the books",
        "quote it; the books' images, whose licences vary, are not used.",
        "",
        "**Changes made** (as the licence requires saying): the text was extracted from the CNXML",
        "sources, figures, tables, math, exercises, footnotes, glossaries, titles and other parts were",
        "left out (below), empty cross-references to figures and tables were removed with their",
        "parentheses (a sentence that still held one, or inline math, was left out),",
        "whitespace was normalised, and the paragraphs were cut into short records and shuffled.",
        "",
        "## What is kept",
        "",
        "Kept: paragraphs, list items and quotations of every module inside a chapter, with the text",
        "of their inline markup (terms, emphasis, links). Dropped: front and back matter (preface,",
        "appendices, glossary, maps, reading lists), titles and labels, math and equations, media,",
        "figures and captions, tables, exercises (review, critical-thinking and other question",
        "sections), footnotes, citation notes, reference lists, learning objectives, link-only boxes",
        "(Link to Learning, Interactive Link, Click and Explore, Beyond the Book), metadata and abstracts,",
        "and a sentence still holding an empty cross-reference or inline math.",
        "",
        f"Records: whole paragraphs of one module joined by a newline, at most {MAX_TOKENS} tokens of",
        "the embedded SmolLM2-135M-Instruct tokenizer each (text only, no special tokens); a longer",
        f"paragraph is cut at sentence ends; records under {MIN_TOKENS} tokens and repeated texts",
        "dropped. Each book's records (`<book>-<n>`, n in reading order) are shuffled with",
        "`random.Random(0)` and taken round-robin across the books (in the table's order) until the",
        f"next record would pass {BUDGET:,} tokens.",
        "",
        "## Files",
        "",
        f'- `train.jsonl.gz`: {summary["records"]:,} records `{{"id", "text"}}`, {summary["tokens"]:,}',
        f"  tokens; {size:,} bytes; sha256 `{sha256}`.",
        "",
        "Per book (sentences dropped for an empty cross-reference or math; paragraphs kept;",
        "paragraphs cut at sentence ends; sentences over the cap dropped; short records dropped;",
        "repeated records dropped):",
        "",
    ]
    for book, b in books.items():
        lines.append(
            f"- {book}: {b['sentences_with_gap']:,}; {b['paragraphs']:,}; {b['paragraphs_split']:,}; {b['sentences_too_long']:,}; "
            f"{b['records_short']:,}; {b.get('records_repeated', 0):,}"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clones", required=True, type=Path, help="folder of local clones")
    ap.add_argument("--out", type=Path, default=HERE / "data" / NAME)
    ap.add_argument("--tokenizer", help="tokenizer folder (default: embedded SmolLM2)")
    args = ap.parse_args(argv)
    from transformers import AutoTokenizer

    from sigmoid_head.embedded.default_model import default_model_path

    tok = AutoTokenizer.from_pretrained(args.tokenizer or str(default_model_path()))

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    rows, summary = build(args.clones, count)
    data = gzip_jsonl(rows)
    sha = hashlib.sha256(data).hexdigest()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "train.jsonl.gz").write_bytes(data)
    (args.out / "README.md").write_text(readme(summary, sha, len(data)), encoding="utf-8")
    print(
        NAME,
        json.dumps(
            {
                "n": len(rows),
                "tokens": summary["tokens"],
                "sha256": sha,
                "bytes": len(data),
                "books": summary["books"],
            },
            ensure_ascii=False,
        ),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
