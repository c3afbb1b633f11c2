"""Token colours in a terminal: ``sigmoid-head generate --stream`` and the demo's streamed
generations print each token as it is generated, coloured by its score (plain text when the
output is not a terminal). Library level, so that the demo needs nothing from the CLI."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from .safe.text import visible

BANDS: tuple[tuple[float, int, str], ...] = (
    (0.1, 196, "< 0.1"),
    (0.3, 208, "< 0.3"),
    (0.5, 220, "< 0.5"),
    (0.8, 148, "< 0.8"),
    (float("inf"), 34, ">= 0.8"),
)
"""(upper bound of the token probability, xterm-256 colour, label): red to green."""


def colour_code(p: float) -> int:
    """The xterm-256 colour of a token probability."""
    return next(code for bound, code, _ in BANDS if p < bound)


def paint(text: str, p: float | None, enabled: bool) -> str:
    """``text`` in the colour of ``p`` (unchanged when colours are off or ``p`` is None)."""
    if not enabled or p is None or not text:
        return text
    return f"\x1b[38;5;{colour_code(p)}m{text}\x1b[0m"


def legend(method: str) -> str:
    """One line naming the colours of the bands (coloured)."""
    bands = " ".join(paint(label, bound - 1e-9 if bound < 2 else 1.0, True)
                     for bound, _, label in BANDS)
    return f"token colour = {method} probability: {bands}"


def uses_colour(stream: TextIO) -> bool:
    """Colours only on an interactive terminal."""
    return bool(getattr(stream, "isatty", lambda: False)())


def show_stream(events: Iterable[Any], method: str, out: TextIO) -> Iterator[Any]:
    """Print the events of :func:`sigmoid_head.scoring.streaming.stream_generate` as they
    come: each token's text, coloured by ``scores[method]`` when ``out`` is a terminal, and
    a line break after each finished output. Yields every event on, after printing it."""
    colour = uses_colour(out)
    for event in events:
        if hasattr(event, "scores"):  # a TokenEvent
            out.write(paint(visible(event.text), event.scores.get(method), colour))
        else:  # an OutputEvent: the output is complete
            out.write("\n")
        out.flush()
        yield event
