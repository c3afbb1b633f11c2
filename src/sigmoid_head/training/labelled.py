"""Human labels as training data: the gold files ``evaluate`` reads, as labelled examples.

In the spirit of the authors' MQM training mode (``mqm_training_mode`` in their research
code): a translation that people labelled teaches the head at every token. A token of a
BAD word (word-tag formats) or of a word inside an error span (span formats) is a
negative, and only that token is (its BCE times ``bad_weight``); every other token is a
positive with sampled negatives, the paper's objective (dominant tokens avoided when the
sampler avoids them). The loss itself is :func:`sigmoid_head.training.step.head_loss`.

Reading reuses the gold readers of :mod:`sigmoid_head.evaluation.gold_formats` (so a file
``evaluate`` accepts trains as it evaluates) and the example builder of the self-labelled
term (:func:`.self_generated.labelled_example`): each item becomes ``{source, target,
word_labels}`` with one OK/BAD label per word of :func:`sigmoid_head.data.self_labels.words`
(a word is BAD when it overlaps an error span), then tokens get 1 / 0 / -1 (-1: no word,
special tokens; skipped).

The source text is the prompt, so every item needs one: ``wmt-tags`` reads the ``.src``
file beside the tags (with the ``.mt`` file), the span formats their ``src``/``source``
field, Google's MQM TSV its ``source`` column (the raters' ``<v>…</v>`` marks removed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..data.prompt_format import PromptFormat
from ..data.records import DataError
from ..data.self_labels import BAD, OK, words
from ..evaluation.gold_mqm import strip_marks, tsv_rows
from .config import LABEL_FORMATS
from .self_generated import labelled_example, warn_dropped

"""Gold formats a labelled file may have (those with a source text to prompt with)."""


def word_labels_from_spans(text: str, spans: list[dict[str, Any]]) -> list[str]:
    """OK/BAD per word of ``text`` (:func:`~sigmoid_head.data.self_labels.words`): BAD
    when the word overlaps one of the character ``spans`` (``start``/``end``, end
    exclusive)."""
    return [
        BAD if any(s["start"] < b and a < s["end"] for s in spans) else OK
        for _, a, b in words(text)
    ]


def _source_beside(path: Path) -> Path:
    base = path.with_suffix("") if path.suffix.lower() == ".gz" else path
    plain = base.with_suffix(".src")
    gz = plain.with_name(plain.name + ".gz")
    return gz if not plain.exists() and gz.exists() else plain


def not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a labelled file ("does not exist", "is a directory",
    "is a FIFO, not a regular file", ...), or None for a regular file (a link followed)."""
    import stat

    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    kind = next((name for test, name in kinds if test(mode)), "a special file")
    return f"is {kind}, not a regular file"


def labelled_records(path: str | Path, fmt: str | None = None) -> list[tuple[int, dict]]:
    """``(line, {source, target, word_labels})`` of every item of a gold file, ``line``
    the item's line in the file (its first row for Google's TSV, where a segment spans
    rows of several raters).

    Raises:
        ValueError: an unreadable gold file (the reader's message names file and line),
            a format without a source text, or an item without one (``file:line``).
    """
    from ..evaluation.gold_formats import detect_format, read_gold_items

    path = Path(path)
    what = not_a_file(path)
    if what:
        raise ValueError(f"labelled file {path} {what}")
    fmt = fmt or detect_format(path)
    if fmt not in LABEL_FORMATS:
        raise ValueError(
            f"{path}: labelled training reads {', '.join(LABEL_FORMATS)}; "
            f"{fmt} has no source text to prompt with"
        )
    source = None
    if fmt == "wmt-tags":
        source = _source_beside(path)
        if not source.is_file():
            raise ValueError(
                f"{path}: labelled training needs the source sentences beside the "
                f"tags file ({source}, one per line, as the .mt file)"
            )
    items = read_gold_items(path, fmt, source=source)
    lines = _google_lines(path) if fmt == "google-mqm" else None
    out = []
    for k, item in enumerate(items):
        line = lines[k] if lines else k + 1
        if not isinstance(item.source, str) or not item.source.strip():
            raise DataError(f"{path}:{line}: no source text (the prompt of labelled training)")
        src = strip_marks(item.source)[0]  # raters' marks are not the source
        out.append(
            (
                line,
                {
                    "source": src,
                    "target": item.text,
                    "word_labels": word_labels_from_spans(item.text, item.spans),
                },
            )
        )
    if not out:
        raise DataError(f"{path}: no labelled item")
    return out


def _google_lines(path: Path) -> list[int]:
    """The line of every segment's first row in a Google MQM TSV, in the order of
    :func:`~sigmoid_head.evaluation.gold_mqm.read_google_mqm`."""
    first: dict[tuple[str, str, str], int] = {}
    for k, row in tsv_rows(path):  # keyed as the reader keys a segment
        first.setdefault((row["system"], row["doc"], row["seg_id"]), k)
    return list(first.values())


def load_labelled_examples(
    path: str | Path,
    tokenizer: Any,
    prompt_format: PromptFormat,
    *,
    fmt: str | None = None,
) -> list[dict]:
    """A gold file's items (in the gold format ``fmt``, see :func:`labelled_records`) as
    training examples (``input_ids``, ``labels``, ``good``), rendered as ``prompt_format`` says.

    Items whose tokens carry no label after truncation are dropped, with one warning that
    counts them and names their lines (:func:`.self_generated.warn_dropped`).

    Raises:
        ValueError: see :func:`labelled_records`; also when no item is left.
    """
    out, dropped = [], []
    for line, rec in labelled_records(path, fmt):
        ex = labelled_example(rec, tokenizer, str(path), line, prompt_format)
        if ex is None:
            dropped.append(line)
        else:
            out.append(ex)
    if not out:
        raise DataError(f"{path}: no labelled item with a labelled token")
    warn_dropped(path, dropped, len(out) + len(dropped), prompt_format)
    return out


def load_labelled(config: Any, model: Any) -> tuple[list[dict], list[dict]]:
    """The labelled train and validation examples of a run (``labelled_file``; its
    validation ``labelled_validation_file``, else ``validation_fraction`` held out with
    the run's seed, capped at ``max_validation_examples``)."""
    from .config import split_validation

    form, gold = config.prompt_format(model.backbone.is_encoder_decoder), config.labelled_format
    train = load_labelled_examples(config.labelled_file, model.tokenizer, form, fmt=gold)
    if config.labelled_validation_file:
        val = load_labelled_examples(config.labelled_validation_file, model.tokenizer, form,
                                     fmt=gold)
    else:
        train, val = split_validation(config, train)
    return train, val[: config.max_validation_examples]
