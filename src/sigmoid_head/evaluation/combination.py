"""One combined sequence score: the Sigmoid Head mixed with a softmax-side score of the same pass.

    combined_log = weight * sigmoid_mean_log + (1 - weight) * <baseline, in log space>

Both parts are log-confidences in nats per token (higher = more confident), so a weight in
[0, 1] mixes them without any statistics of the data set; ``combined = exp(combined_log)``.
The baselines are read from the score record that ``score`` and ``generate`` write (each
registered method's ``combination_parts``, :mod:`sigmoid_head.registry.methods`, and the entropy):

* ``softmax_min``: log of the lowest softmax token probability (the weakest token);
* ``softmax_mean_log``: the softmax's length-normalised log-probability;
* ``boostedprob_mean_log``: BoostedProb's;
* ``neg_entropy``: minus the mean token entropy of the softmax (``-entropy_mean``).

Which baseline and weight are best depends on the task. The defaults were chosen on the
**dev books** of the Bible experiments, never the test books (docs/results.md, "The
combined score"; ``recipes/bible/default_combination.py`` recomputes the choice):

* ``score`` (force-decoded candidates, Eval Other): weight 0.70 on the head
  (``sigmoid_mean_log``), 0.30 on the softmax's weakest token (``softmax_min``) (the error-kind suites of the MT model and of
  SmolLM2, each run counting once);
* ``generate`` (the model's own outputs, Eval Self): weight 0.10 on the head, 0.90 on the
  softmax's ``softmax_mean_log`` (the two settings' Eval Self studies; on the test books
  this mix is within 0.02 Pearson of ``softmax_mean_log`` alone for every head).

``docs/results/default_combination.md`` is that choice, rebuilt from committed data, and a
test fails when these defaults differ from it.

``sigmoid-head calibrate --quality`` (or ``--gold``) fits the baseline and the weight on the
user's own dev scores and saves them as ``combination.json`` in the head folder only when
the fit beats the command's default on those dev scores (else it says so and saves
nothing); ``score``, ``generate`` and ``rerank`` then use it instead of the default, and
every one of them prints which mix made ``combined`` (:func:`mix_line`). A ``score`` or
``generate`` run writing a file (``--to-json out.jsonl``) records that mix beside it, in
``out.jsonl.mix.json`` (:func:`mix_record`), where ``evaluate`` finds it
(:func:`read_mix_record`); a stream (``--to-json /dev/stdout``, a pipe) has no such record. Pure Python and
numpy, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ..head.extras import HeadExtra
from ..head.files import COMBINATION_NAME
from ..registry import methods as registry
from .metrics import pearson, roc_auc

_TINY = 1e-300  # log of a probability that underflowed to 0

HEAD_KEY = registry.AGGREGATIONS["mean_log"].key("sigmoid")
"""The head's part: its length-normalised score (mean token log-probability)."""
ENTROPY_PART = "neg_entropy"


def baseline_parts() -> dict[str, tuple[str, Callable[[Mapping], float]]]:
    """Baseline name -> (the record field it needs, its log-confidence read from one
    record): every registered method's ``combination_parts``, then ``neg_entropy``."""
    out: dict[str, tuple[str, Callable[[Mapping], float]]] = {}
    for m in registry.methods():
        for a in m.combination_parts:
            agg, key = registry.AGGREGATIONS[a], registry.AGGREGATIONS[a].key(m.name)
            out[key] = (key, _log_reader(key, agg.stored_as_log))
    out[ENTROPY_PART] = ("entropy_mean", lambda r: -float(r["entropy_mean"]))
    return out


def _log_reader(key: str, is_log: bool) -> Callable[[Mapping], float]:
    if is_log:
        return lambda r: float(r[key])
    return lambda r: math.log(max(float(r[key]), _TINY))


@dataclass(frozen=True)
class Combination(HeadExtra):
    """``weight`` on the head's ``sigmoid_mean_log``, ``1 - weight`` on ``baseline``, in
    log space.

    Attributes:
        weight: in [0, 1].
        baseline: a key of :func:`baseline_parts`.
        chosen_on: where the two were chosen (for the record and the summary line).
    """

    FILE: ClassVar[str] = COMBINATION_NAME

    weight: float
    baseline: str
    chosen_on: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"combination weight must be in [0, 1], got {self.weight}")
        if self.baseline not in baseline_parts():
            raise ValueError(f"unknown combination baseline {self.baseline!r}; one of {sorted(baseline_parts())}")

    def describe(self) -> str:
        """The mix with its parts under their row names, e.g. ``0.1 x sigmoid_mean_log +
        0.9 x softmax_mean_log (log space)`` (a probability part such as ``softmax_min``
        enters as its log)."""
        return f"{self.weight:g} x {HEAD_KEY} + {1 - self.weight:g} x {self.baseline} (log space)"

    def log_score(self, row: Mapping) -> float | None:
        """The combined log-confidence of one score record, or None when the record lacks
        a part (a head-only ``--sigmoid-only`` run has no softmax fields)."""
        needs, read = baseline_parts()[self.baseline]
        if HEAD_KEY not in row or needs not in row:
            return None
        head = float(row[HEAD_KEY]) if self.weight > 0 else 0.0
        return self.weight * head + (1.0 - self.weight) * read(row)

    def apply(self, rows: Sequence[dict]) -> None:
        """Add ``combined_log`` and ``combined`` (its exp) to every record that has both parts."""
        for r in rows:
            v = self.log_score(r)
            if v is not None:
                r["combined_log"] = v
                r["combined"] = math.exp(v)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str | Path | None = None) -> Combination:
        """A combination from the JSON object :meth:`save` wrote (``source`` names it in errors)."""
        source = source or cls.FILE
        try:
            return cls(float(data["weight"]), str(data["baseline"]), str(data.get("chosen_on", "")))
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"{source}: not a saved combination ({e})") from None


DEFAULTS = {
    "score": Combination(0.70, "softmax_min", "dev books, Bible MT and LLM, Eval Other error suites (ROC-AUC)"),
    "generate": Combination(0.10, "softmax_mean_log", "dev books, Bible MT and LLM, Eval Self (Pearson with chrF)"),
    # reranking picks by "combined" with score's mix: the best selection score on the dev
    # verses of the MT and LLM reranking studies (mean pick chrF; docs/results.md)
    "rerank": Combination(0.75, "softmax_min", "dev books, Bible MT and LLM, best-of-7 reranking (pick chrF)"),
}
"""The default per command; see the module docstring for the evidence."""

RERANK_SELECT = "combined"
"""The default score by which ``sigmoid-head rerank`` picks one of a source's candidates:
the combined score with ``DEFAULTS["rerank"]`` (or the head folder's fitted combination),
the best selection score on the dev verses of the MT and LLM reranking studies (mean pick
chrF 0.414 over the two; docs/results.md, "Best-of-N reranking")."""
RERANK_SELECT_NO_HEAD = "softmax_min"
"""The default without a head: the best score that does not read the head on the same dev
verses (0.409; BoostedProb's minimum, 0.410, reads the same dominant sets)."""


def for_command(command: str, head_dir: str | Path | None) -> Combination:
    """The head folder's fitted combination, else the command's default."""
    return Combination.load(head_dir) or DEFAULTS[command]


def help_text(command: str) -> str:
    """What ``combined`` is, for the ``--help`` of ``command`` (score, generate or rerank)."""
    d = DEFAULTS[command]
    return (f"combined, the recommended score, is the head's length-normalised score "
            f"({HEAD_KEY}) mixed with a softmax-side score in log space; for {command} by "
            f"default {d.describe()} (chosen on {d.chosen_on}; docs/results.md). A head folder's "
            f"{COMBINATION_NAME} (sigmoid-head calibrate, saved only when it beats this default "
            "on the dev data) replaces it; every run prints which mix made combined.")


def mix_line(comb: Combination, command: str) -> str:
    """One line saying which mix made ``combined``: its baseline and weight, and where it
    was chosen (the head folder's ``combination.json``, or the command's default)."""
    default = DEFAULTS.get(command)
    where = (f"the default of {command}, chosen on {comb.chosen_on}" if comb == default
             else f"the head's {COMBINATION_NAME}, fitted on {comb.chosen_on or 'dev data'}")
    return f"combined = {comb.describe()} ({where})"


MIX_RECORD_SUFFIX = ".mix.json"
"""The record of the mix that made a score file's ``combined``: ``<file>.mix.json``."""


def mix_record_path(scores: str | Path) -> Path:
    """Where the mix of the score file ``scores`` is recorded."""
    path = Path(scores)
    return path.with_name(path.name + MIX_RECORD_SUFFIX)


def mix_record(comb: Combination, command: str, rows: int) -> dict[str, Any]:
    """The record of the mix that made ``combined`` in a score file of ``rows`` rows: the
    :func:`mix_line`, the weight, the baseline, where they were chosen and whether that is
    the command's default or the head's fitted ``combination.json``."""
    return {"line": mix_line(comb, command), "describe": comb.describe(), **asdict(comb),
            "source": "default" if comb == DEFAULTS.get(command) else COMBINATION_NAME,
            "command": command, "rows": rows}


def read_mix_record(scores: str | Path, rows: int) -> tuple[dict[str, Any] | None, str]:
    """The recorded mix of the score file ``scores`` (of ``rows`` rows) and the line saying
    it: ``combined = <mix> (<where chosen>)``, or why there is none (an older score file, a
    record of another file)."""
    from ..safe.json_io import read_json

    path = mix_record_path(scores)
    if not path.is_file():
        return None, "combined: mix not recorded (older score file)"
    try:
        data = read_json(path)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("line"), str) \
            or data.get("rows") != rows:
        return None, f"combined: mix record {path.name} is not of this file ({rows} rows), ignored"
    if "scores_sha256" in data and data["scores_sha256"] != file_digest(scores):
        return None, (f"combined: mix record {path.name} is of another run's rows (the score "
                      "file was replaced), ignored")
    return data, data["line"]


def file_digest(path: str | Path) -> str:
    """The SHA-256 of the file's bytes (a score file's, recorded in its mix record so that a
    file replaced by another run's rows is not read under the old mix)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _metric(gold: np.ndarray) -> tuple[str, Callable[[ArrayLike, ArrayLike], float]]:
    binary = bool(np.isin(gold, (0.0, 1.0)).all()) and len(np.unique(gold)) == 2
    return ("roc_auc", roc_auc) if binary else ("pearson", pearson)


def fit_combination(rows: Sequence[Mapping], gold: ArrayLike, *, step: float = 0.05,
                    baselines: Sequence[str] | None = None) -> tuple[Combination, dict]:
    """The baseline and weight (grid of ``step``) with the best dev metric: ROC-AUC when
    ``gold`` is 0/1 labels, else Pearson with it (higher gold = better output). Ties go to
    the smaller weight on the head.

    Returns:
        (the combination, ``{"metric", "n", "best", "per_baseline": {name: {"weight", "value",
        "head_alone", "baseline_alone"}}}``).
    """
    g = np.asarray(gold, dtype=np.float64)
    if len(rows) != g.size:
        raise ValueError(f"{len(rows)} scored items but {g.size} gold values")
    if g.size < 3 or np.unique(g).size < 2:
        raise ValueError("need at least 3 dev items with at least two different gold values")
    if any(HEAD_KEY not in r for r in rows):
        raise ValueError(f"the scores have no {HEAD_KEY}: score the dev set with a head, not --sigmoid-only")
    name, metric = _metric(g)
    head = np.array([float(r[HEAD_KEY]) for r in rows])
    grid = np.round(np.arange(0.0, 1.0 + step / 2, step), 6)
    per: dict[str, dict] = {}
    parts = baseline_parts()
    for b in baselines or parts:
        needs, read = parts[b]
        if any(needs not in r for r in rows):
            continue
        base = np.array([read(r) for r in rows])
        vals = np.array([metric(w * head + (1.0 - w) * base, g) for w in grid])
        i = int(np.nanargmax(vals))
        per[b] = {"weight": float(grid[i]), "value": float(vals[i]),
                  "head_alone": float(vals[-1]), "baseline_alone": float(vals[0])}
    if not per:
        raise ValueError("the scores have none of the baselines' fields: "
                         + ", ".join(sorted({needs for needs, _ in parts.values()})))
    best = max(per, key=lambda b: (per[b]["value"], -per[b]["weight"]))
    comb = Combination(per[best]["weight"], best, f"{g.size} dev items ({name} {per[best]['value']:.3f})")
    # the default this fit would replace: score's for labels, generate's for quality scores
    command = "score" if name == "roc_auc" else "generate"
    default = DEFAULTS[command]
    logs = [default.log_score(r) for r in rows]
    value = float(metric(np.array(logs, dtype=float), g)) if None not in logs else float("nan")
    return comb, {"metric": name, "n": int(g.size), "best": best, "per_baseline": per,
                  "default": {"command": command, "describe": default.describe(), "value": value},
                  "beats_default": not value >= per[best]["value"]}
