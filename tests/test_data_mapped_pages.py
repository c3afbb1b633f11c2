"""Issue 16: the resident pages of the memory-mapped Arrow files are given back
(``madvise(MADV_DONTNEED)``), and what is read afterwards is the same data."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("datasets")

from sigmoid_head.data import mapped_pages  # noqa: E402
from sigmoid_head.data.arrow_tokenize import tokenize_dataset  # noqa: E402
from sigmoid_head.data.datasets_io import (  # noqa: E402
    ArrowExamples,
    batches_of,
    examples_at,
    load_examples_arrow,
)
from sigmoid_head.data.tokenize import load_examples  # noqa: E402

LINUX = sys.platform.startswith("linux") and Path("/proc/self/smaps").exists()
linux_only = pytest.mark.skipif(not LINUX, reason="reads /proc/self/smaps; madvise as on Linux")

KW = dict(is_encoder_decoder=False, max_length=40, prompt_template="Translate: {source}\n")


@pytest.fixture(scope="module")
def pairs_file(pairs_maker, tmp_path_factory) -> Path:
    """2,000 pairs: Arrow files of a few hundred KiB, so many pages."""
    path = tmp_path_factory.mktemp("mapped") / "pairs.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for rec in pairs_maker(2000, seed=3):
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return path


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    """One ``datasets`` cache for the module: the first load tokenizes, the others reuse it."""
    return tmp_path_factory.mktemp("arrow_cache")


def _load(path: Path, tokenizer, cache: Path) -> ArrowExamples:
    """A fresh view (and fresh mappings' state) of the tokenized examples of ``path``."""
    return load_examples_arrow(str(path), tokenizer, cache_dir=str(cache), **KW)


def resident_kib(ranges: list[tuple[int, int]]) -> int:
    """Rss (KiB) of this process's mappings that start where ``ranges`` start (smaps)."""
    starts, total, current = {start for start, _ in ranges}, 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and not head[0].endswith(":"):  # a mapping's header line
            current = int(head[0].split("-")[0], 16) in starts
        elif current and head[0] == "Rss:":
            total += int(head[1])
    return total


@linux_only
def test_release_lowers_the_resident_pages_of_the_mapping(pairs_file, tiny_tokenizer, cache):
    examples = _load(pairs_file, tiny_tokenizer, cache)
    pages = examples.pages
    ranges = pages.ranges()
    assert len(ranges) == len(examples.dataset.cache_files) >= 1  # read-only, one per file
    # opening the files read the headers of their record batches: given back
    assert resident_kib(ranges) == 0
    examples[0]
    assert resident_kib(ranges) > 0
    # the pass over the numbers (lengths, trained positions) gives its pages back
    assert examples.lengths.sum() > 0
    assert resident_kib(ranges) == 0
    pages.every = 10**9  # no release while reading
    first = [examples[i] for i in range(len(examples))]
    touched = resident_kib(ranges)
    assert touched >= 64  # reading every example mapped the files' pages
    assert pages.release() == sum(end - start for start, end in ranges)
    assert resident_kib(ranges) == 0
    assert examples[7] == first[7]  # read again from the page cache
    assert resident_kib(ranges) > 0

    pages.every = 5  # a release every 5 examples read one by one
    pages.release()
    for i in range(4):
        examples[i]
    assert resident_kib(ranges) > 0
    examples[4]
    assert resident_kib(ranges) == 0

    # the pass over every label gives its pages back too
    examples.token_counts(len(tiny_tokenizer))
    assert resident_kib(ranges) == 0


def test_examples_and_batches_read_after_a_release_equal_those_before(pairs_file, tiny_tokenizer,
                                                                      cache):
    examples = _load(pairs_file, tiny_tokenizer, cache)
    examples.pages.every = 10**9
    before = [examples[i] for i in range(len(examples))]
    kw = dict(batch_size=None, max_tokens=200, shuffle=True, seed=3, epoch=1)
    batches = [list(b) for b in batches_of(examples, **kw)]
    batched = [[examples[j] for j in b] for b in batches]
    counts = examples.token_counts(len(tiny_tokenizer))

    advised = examples.pages.release()
    if LINUX:
        assert advised > 0
    examples.pages.every = 1  # and a release after every example read
    assert [examples[i] for i in range(len(examples))] == before
    assert [list(b) for b in batches_of(examples, **kw)] == batches
    assert [[examples[j] for j in b] for b in batches] == batched
    assert [examples_at(examples, b) for b in batches] == batched  # one read per group
    np.testing.assert_array_equal(examples.token_counts(len(tiny_tokenizer)), counts)
    ref = load_examples(pairs_file, tiny_tokenizer, **KW)
    assert [e["input_ids"] for e in before] == [e["input_ids"] for e in ref]
    assert [e["labels"] for e in before] == [e["labels"] for e in ref]


def test_release_is_a_no_op_for_a_dataset_in_memory(tiny_tokenizer, tiny_pairs_jsonl):
    import datasets

    rows = [json.loads(line) for line in tiny_pairs_jsonl.read_text().splitlines()]
    in_memory = tokenize_dataset(datasets.Dataset.from_list(rows), tiny_tokenizer,
                                 {**KW, "source_name": "rows"})
    assert in_memory.cache_files == []
    examples = ArrowExamples(in_memory, False)
    pages = examples.pages
    assert (pages.files, pages.ranges(), pages.release()) == ([], [], 0)
    pages.every = 1
    ref = load_examples(tiny_pairs_jsonl, tiny_tokenizer, **KW)
    assert [examples[i]["labels"] for i in range(len(examples))] == [e["labels"] for e in ref]
    assert examples.lengths.tolist() == [len(e["input_ids"]) for e in ref]


@pytest.mark.parametrize("missing", ["madvise", "proc"])
def test_without_madvise_or_proc_nothing_is_released_and_the_data_is_read(
        missing, pairs_file, tiny_tokenizer, cache, monkeypatch):
    if missing == "madvise":
        monkeypatch.setattr(mapped_pages, "_MADVISE", False)
    else:
        def no_proc(*args, **kwargs):
            raise FileNotFoundError("/proc/self/maps")

        monkeypatch.setattr(mapped_pages, "open", no_proc, raising=False)
    examples = _load(pairs_file, tiny_tokenizer, cache)
    assert examples.pages.ranges() == []
    assert examples.pages.release() == 0
    examples.pages.every = 1
    ref = load_examples(pairs_file, tiny_tokenizer, **KW)
    assert [examples[i]["labels"] for i in (0, 1, len(ref) - 1)] == \
        [ref[i]["labels"] for i in (0, 1, len(ref) - 1)]
