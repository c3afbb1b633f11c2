"""The page's analysis tables beyond the per-set reports (issue 49): each made from the
committed per-item scores by its own module, collected here for ``tables.py``.

* ``human-qe-analysis:combination``: does the head add to a learned combination of the
  softmax side's features (:mod:`feature_combination`);
* ``human-qe-analysis:combination-pe-all``: the same with the learning curve's 28,115-pair
  head (seed 0) on the texts that point scored (all of WMT; MQM's fixed subset), and
  ``combination-pe-all_s1``/``_s2`` with its seeds 1 and 2 (issue 58);
* ``human-qe-analysis:supervised``: the ro-en tag heads against the models the same tags buy
  without them (:mod:`supervised`; once its training rows are committed);
* ``human-qe-analysis:supervised-pool``: the pooled-tag head against the probe fitted on the
  same pooled tags and the ro-en opponents (:mod:`supervised`; once the pooled probe and a
  clean pooled seed are packed);
* ``human-qe-analysis:lopo``: leave one pair out, the head and its opponents trained on
  four MLQE-PE pairs' tags and tested on the fifth's (:mod:`lopo`; once its rows are
  committed);
* ``human-qe-analysis:dev-choices``: the untrained prior's comparison read on dev
  (:mod:`dev_choices`);
* ``human-qe-analysis:error-free``: error-free segment detection on MQM zh-en
  (:mod:`error_free`);
* ``human-qe-analysis:sparse-check``: the ro-en tag heads trained with the row-sparse
  update against the dense ones, the quality check of issue 60 (:mod:`sparse_check`; once
  the sparse heads' columns are committed);
* ``human-qe-analysis:wmt22``: the WMT 2022 km-en/ps-en word-level leaderboard computed from
  the teams' official submissions, with this project's rows (:mod:`wmt22_rows`). Its gold is
  not committed (no licence stated): the table is rendered from the committed figures
  ``results/wmt22-word.json``, which ``build_wmt22.py --leaderboard`` and
  ``wmt22_rows.py`` write from the data.

All but the last write their figures to ``results/<name>.json`` beside their tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

BLOCK = "human-qe-analysis"
RESULTS = Path(__file__).resolve().parent / "results"


def _modules() -> dict[str, tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any]], str]]]:
    from . import dev_choices, error_free, feature_combination, lopo, sparse_check, supervised

    return {
        "lopo": (lopo.results, lopo.block),
        "dev-choices": (dev_choices.results, dev_choices.block),
        "supervised": (supervised.results, supervised.block),
        "supervised-pool": (supervised.pooled_results, supervised.pooled_block),
        "combination": (feature_combination.results, feature_combination.block),
        "combination-pe-all": (lambda: feature_combination.results(point="pe-all"),
                               feature_combination.block),
        "combination-pe-all_s1": (lambda: feature_combination.results(point="pe-all_s1"),
                                  feature_combination.block),
        "combination-pe-all_s2": (lambda: feature_combination.results(point="pe-all_s2"),
                                  feature_combination.block),
        "error-free": (error_free.results, error_free.block),
        "sparse-check": (sparse_check.results, sparse_check.block),
    }


def outputs(
    sets: tuple[str, ...], results_dir: Path = RESULTS, only: frozenset[str] | None = None
) -> tuple[dict[Path, str], dict[str, str]]:
    """(file -> text, page block -> text) of every analysis whose sets are all in ``sets``
    (and, with ``only``, whose name is in it; the WMT 2022 block is made when "wmt22" is);
    the figure files go to ``results_dir``."""
    from .run import jsonable

    files: dict[Path, str] = {}
    blocks: dict[str, str] = {}
    needed = {"combination": {"mlqe-roen-word", "mqm-ted-zhen"},
              "combination-pe-all": {"mlqe-roen-word", "mqm-ted-zhen"},
              "combination-pe-all_s1": {"mlqe-roen-word", "mqm-ted-zhen"},
              "combination-pe-all_s2": {"mlqe-roen-word", "mqm-ted-zhen"}, "error-free": {"mqm-ted-zhen"},
              "dev-choices": {"mlqe-roen-word"}, "supervised": {"mlqe-roen-word"},
              "supervised-pool": {"mlqe-roen-word"}, "lopo": {"mlqe-roen-word"},
              "sparse-check": {"mlqe-roen-word"}}
    from . import lopo, sparse_check, supervised

    absent = {"supervised": not supervised.kept().is_dir(),
              "supervised-pool": not (supervised.kept().is_dir() and supervised.pool_present()), "lopo": not lopo.folder().is_dir(),
              "sparse-check": not sparse_check.present()}

    done: dict[str, dict] = {}
    for name, (compute, render) in _modules().items():
        if not needed[name] <= set(sets) or absent.get(name) or (only is not None and name not in only):
            continue
        res = done[name] = compute()
        files[results_dir / f"{name}.json"] = json.dumps(jsonable(res), indent=1) + "\n"
        blocks[f"{BLOCK}:{name}"] = render(res)
    if "supervised" in done:  # the README's table by what the user has reads it
        from . import which_score

        def made(name: str) -> dict | None:  # rebuilt here, else the committed figures (rebuilt elsewhere)
            if name in done:
                return done[name]
            path = results_dir / f"{name}.json"
            return json.loads(path.read_text()) if path.is_file() and not absent[name] else None

        blocks[which_score.BLOCK] = which_score.block(done["supervised"], made("lopo"), made("supervised-pool"))
    from . import wmt22_rows

    if wmt22_rows.LEADERBOARD.exists() and (only is None or "wmt22" in only):
        blocks[f"{BLOCK}:wmt22"] = wmt22_rows.block(json.loads(wmt22_rows.LEADERBOARD.read_text()))
    return files, blocks
