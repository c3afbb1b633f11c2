"""The training bar's time left when steps are of two kinds.

With ``cache_hidden`` the first epoch of a run fills the hidden-state cache (the frozen
model runs on every example) and the later ones read it, tens of times faster. tqdm's
single rate then promises hours for a run that ends in minutes (issue 39:
``32/456 [26:54<7:45:35]`` for a run that finished at 38:03). :class:`StepClock` keeps
one rate per kind and estimates what is left from each kind's remaining steps; until a
cached step has been timed, the estimate covers the filling steps and says so.
"""

from __future__ import annotations

FILL, CACHED = "fill", "cached"


def clock_text(seconds: float) -> str:
    s = int(round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


class StepClock:
    """Seconds per step of each kind, and the time left."""

    def __init__(self) -> None:
        self.seconds = {FILL: 0.0, CACHED: 0.0}
        self.steps = {FILL: 0, CACHED: 0}

    def add(self, kind: str, seconds: float) -> None:
        self.seconds[kind] += seconds
        self.steps[kind] += 1

    def rate(self, kind: str) -> float | None:
        """Mean seconds per step of ``kind`` (None before one was timed)."""
        return self.seconds[kind] / self.steps[kind] if self.steps[kind] else None

    def left(self, fill_left: int, cached_left: int) -> str:
        """The time left for ``fill_left`` filling and ``cached_left`` cached steps, as
        ``m:ss`` (``h:mm:ss``); ``m:ss + N cached steps`` while no cached step was timed."""
        fill_rate, cached_rate = self.rate(FILL), self.rate(CACHED)
        total = fill_left * (fill_rate or 0.0)
        if cached_left and cached_rate is None:
            if fill_rate is None:
                return "?"
            return f"{clock_text(total)} + {cached_left} cached steps"
        return clock_text(total + cached_left * (cached_rate or 0.0))
