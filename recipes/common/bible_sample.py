"""The Bible sample shipped with the package, as the recipes read it.

``sigmoid-head demo`` trains on the same sample (``sigmoid_head/bible_sample``, package
data); these are the recipes' own readers of it, so a recipe does not reach into the demo.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from sigmoid_head.safe.files import write_atomic
from sigmoid_head.safe.json_io import dumps

PROMPT = "Rewrite this verse in modern English:\n{source}"
"""The demo's prompt for the KJV -> WEB task (tests/recipes checks that it is the demo's)."""


def sample_dir() -> Path:
    """The folder of the Bible sample (a source checkout and an installed wheel alike).

    Raises:
        FileNotFoundError: the installed package lacks it.
    """
    path = Path(str(files("sigmoid_head") / "bible_sample"))
    if not (path / "para_train.jsonl.gz").is_file():
        raise FileNotFoundError(f"the Bible sample is missing from the installed package ({path})")
    return path


def short(records: list[dict], max_words: int) -> list[dict]:
    """The records whose source and target both have at most ``max_words`` words."""
    return [r for r in records if len(r["source"].split()) <= max_words
            and len(r["target"].split()) <= max_words]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Write ``records`` as JSON lines, whole or not at all (non-finite numbers as ``null``)."""
    return write_atomic(path, "".join(dumps(r, ensure_ascii=False) + "\n" for r in records))
