"""Where the docs' figures come from: readers of the committed data, the generated tables and
the library's settings, and :class:`Claim` (a piece of prose with the source of each of its
figures). The claims themselves are data in the sibling modules; tests/test_docs_figures.py
checks them against the pages."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


FIGURE = re.compile(r"(?:(?<![\w.\-+])[-+]?|(?<=\d-))\d*\.\d+(?![\d.]*\.\d)(?:e-?\d+)?")


NUMBER = re.compile(r"[-+]?\d*\.\d+(?:e-?\d+)?")


@cache
def data(name: str) -> dict:
    with gzip.open(
        ROOT / "docs" / "results" / "data" / f"{name}.json.gz", "rt", encoding="utf-8"
    ) as f:
        return json.load(f)


def metric(name: str, method: str, which: str) -> float:
    """A metric of one method on one committed data file, over all its items."""
    from sigmoid_head.evaluation.metrics import METRICS

    d = data(name)
    return float(
        METRICS[which].fn(np.asarray(d["scores"][method], float), np.asarray(d["gold"], float))
    )


@cache
def _page(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def row(path: str, anchor: str, first_cell: str) -> list[str]:
    """The cells of the Markdown table row whose first cell is ``first_cell``, in the first
    table after ``anchor`` (a generated block's ``<!-- table:NAME -->`` or a heading line)."""
    text = _page(path)
    at = text.index(anchor)
    for line in text[at:].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            return cells
    raise KeyError(f"{path}: no row {first_cell!r} after {anchor!r}")


def cell(
    path: str, anchor: str, first_cell: str, col: int, *, take: slice = slice(None)
) -> list[str]:
    """The decimal figures of one cell (``take`` picks some of them)."""
    return NUMBER.findall(row(path, anchor, first_cell)[col])[take]


def t(name: str) -> str:
    return f"<!-- table:{name} -->"


RES, COMBO = "docs/results.md", "docs/results/default_combination.md"


def combo(test: str, head: str, col: int, take: slice = slice(None)) -> list[str]:
    """A cell of default_combination.md's test table for ``test`` (mt_suite_test, ...)."""
    return cell(COMBO, f"Test books ({test})", head, col, take=take)


def weight(command: str) -> list[float]:
    from sigmoid_head.evaluation.combination import DEFAULTS

    return [DEFAULTS[command].weight]


def ratio(a: float, b: float) -> float:
    return a / b


def human_qe(name: str, *keys: str) -> float:
    """A figure of recipes/human_qe/results/<name>/results.json (docs/human_labels.md)."""
    import json

    node = json.loads(
        (ROOT / "recipes" / "human_qe" / "results" / name / "results.json").read_text()
    )
    for k in keys:
        node = node[k]
    return node


def hq_json(name: str, *keys: str) -> Any:
    """A value of recipes/human_qe/results/<name>.json (the page's analyses: supervised.json,
    combination*.json, dev-choices.json), ``keys`` the path into it."""
    import json

    node = json.loads((ROOT / "recipes" / "human_qe" / "results" / f"{name}.json").read_text())
    for k in keys:
        node = node[k]
    return node


def human_qe_pair(name: str, base: str) -> list:
    """Head minus ``base`` on the set's primary figure, and its Holm p (a bound when 0)."""
    t = human_qe(name, "paired", base)
    p = t["p_holm"]
    return [t["delta"], *(bound(p, "0.001") if p < 0.001 else [p])]


HQ = "docs/human_labels.md"


def hq_cell(heading: str, first_cell: str, *cols: int) -> list[str]:
    """The first figure of each column ``cols`` of one row of a generated table on the
    human-label page, the table under the ``#### <heading>`` line."""
    cells = row(HQ, f"#### {heading}", first_cell)
    return [re.findall(r"[-+]?\d*\.?\d+(?:e-?\d+)?", cells[c])[0] for c in cols]  # a p of 1 too


@dataclass(frozen=True)
class Claim:
    """A piece of a page's prose and where each of its decimal figures comes from."""

    doc: str
    text: str
    values: Callable[[], list] | None = None
    """Each figure of ``text`` in order (str: exact; float: rounded as written)."""
    kind: str = "data"
    """``data`` or ``setting`` (checked by ``values``), ``measured`` (a timing; its command
    is on the page)."""


def at_most_apart(a: float, b: float, gap: float) -> float | str:
    """``b`` when it lies within ``gap`` of ``a``, else a marker that fails the check."""
    return b if abs(a - b) <= gap else "apart"


def threshold_ps() -> list[float]:
    """The p of each fixed-share row of the seed-0/seed-1 threshold table (human_labels.md)."""
    block = (
        _page(HQ).split(t("human-qe-thresholds:mlqe-roen-word"), 1)[1].split("<!-- /table", 1)[0]
    )
    rows = [line.split("|") for line in block.splitlines() if line.startswith("| flags")]
    return [float(NUMBER.findall(cells[6])[0]) for cells in rows]


def vocab_cell(*cols: int, point: str = "pe2k") -> list[str]:
    """Figures of the vocabulary diagnostic's row of ``point`` (human_labels.md)."""
    cells = row(HQ, "#### Vocabulary diagnostic", point)
    return [x for c in cols for x in NUMBER.findall(cells[c].replace(",", ""))]


def _softmax_min_test() -> list[str]:
    return cell(RES, t("llm_suite_test"), "softmax@min", 1)


def demo(method: str, which: str = "roc_auc") -> float:
    return metric("demo_eval_other", method, which)


def eval_self_gap() -> float:
    """The largest |combined - softmax geo-mean| over every head in both Eval Self test
    tables of default_combination.md (``generate``'s mix against its baseline alone)."""
    text = _page(COMBO).split("## Eval Self", 1)[1]
    deltas = [
        float(NUMBER.findall(line.split("|")[4])[0])
        for line in text.splitlines()
        if line.startswith("| ") and not line.startswith("| head") and line.count("|") > 5
    ]
    return max(abs(d) for d in deltas)


def bound(value: float, written: str) -> list[str]:
    """``written`` when ``value`` is within it, else the value (so the check fails)."""
    return [written] if value <= float(written) else [f"{value:.3f}"]


def at_least(value: float, written: str) -> str | float:
    """``written`` when ``value`` is at least it, else the value (so the check fails)."""
    return written if value >= float(written) else value


def holm_max(path: str, name: str, prefix: str) -> float:
    """The largest Holm p of the rows starting with ``prefix`` in a generated table."""
    block = _page(path).split(t(name), 1)[1].split(f"<!-- /table:{name} -->", 1)[0]
    ps = [
        float(NUMBER.findall(line.split("Holm p", 1)[1])[0])
        for line in block.splitlines()
        if line.startswith(f"| {prefix}") and "Holm p" in line
    ]
    return max(ps)


def in_performance(figure: str) -> list[str]:
    """A figure repeated from docs/performance.md, where its command is: it must be there."""
    return FIGURE.findall(figure) if figure in _page("docs/performance.md") else ["missing"]


def requires_python() -> list[str]:
    return NUMBER.findall(
        re.search(r'requires-python = ">=([\d.]+)"', _page("pyproject.toml")).group(1)
    )


def dominant_defaults() -> list[float]:
    from sigmoid_head.lm.dominant import DominantConfig

    return [DominantConfig().p_jump, DominantConfig().epsilon]


def rauq_alphas() -> list[float]:
    from sigmoid_head.scoring.rauq import RauqConfig

    return [RauqConfig().weight, RauqConfig(instruct=True).weight]


def words(setting: str, head: str, col: int, n: int = 1) -> list[str]:
    """A cell of a word-level table: col 3 ROC-AUC, 4 AP, 5 and 6 the paired tests."""
    return cell(RES, t(f"{setting}_words_test"), head, col, take=slice(0, n))


W = weight  # short names for the registry below


LLM_SUITE, MT_WORDS, LLM_WORDS = t("llm_suite_test"), t("mt_words_test"), t("llm_words_test")


DEMO_FULL = t("demo_eval_other")


def sat(name: str, head: str, statistic: str, col: int) -> list[str]:
    """A cell of a saturation table, whose rows are (head, statistic)."""
    block = _page(RES).split(t(name), 1)[1]
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:2] == [head, statistic]:
            return NUMBER.findall(cells[col])[:1]
    raise KeyError((name, head, statistic))


def margin_gap() -> float:
    """The largest difference between the ranking loss at margin 0 and at margin 1 in the
    test-book comparison tables of results.md (the point estimates of the table's metric:
    Pearson, ROC-AUC; ROC-AUC and AP for word level)."""
    gaps = []
    for m in re.finditer(r"<!-- table:([^ ]+) -->(.*?)<!-- /table:\1 -->", _page(RES), re.S):
        rows = {}
        for line in m.group(2).splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| sigmoid:token_freq+avoid+rank_loss"):
                rows[cells[0].removesuffix("@mean").endswith("_m0")] = cells
        if len(rows) == 2 and m.group(1).endswith("_test"):
            cols = (3, 4) if "MCC" in m.group(2) else (1,)
            gaps += [
                abs(
                    float(NUMBER.findall(rows[True][c])[0])
                    - float(NUMBER.findall(rows[False][c])[0])
                )
                for c in cols
            ]
    return max(gaps)


def paper(setting: str, method: str, col: int, n: int = 1) -> list[str]:
    return cell(RES, t(f"{setting}_paper_suite_test"), method, col, take=slice(0, n))


def analytic_max(cells: list[tuple[str, str, int]], written: str) -> list[str]:
    """``written`` when the largest analytic Holm p of these word-table cells (setting, head,
    column: 5 ROC-AUC, 6 AP) is within it, else that p (so the check fails)."""
    ps = [
        float(
            re.search(r"analytic Holm p = ([0-9.e-]+)", row(RES, t(f"{s}_words_test"), head)[col])[
                1
            ]
        )
        for s, head, col in cells
    ]
    return bound(max(ps), written)


MT_SUITE = t("mt_suite_test")


SOFTMAX_HEADS = (
    "softmax",
    "softmax+avoid",
    "softmax_t2+avoid",
    "softmax_t2+token_freq+avoid",
    "softmax_t2+token_freq+avoid_if_target_dominant",
)


@cache
def rerank(name: str) -> dict:
    """Per selection score of a committed reranking pack: its mean pick and Kendall taus
    (``recipes/bible/tables.py``'s :func:`rerank_table`, which makes the table)."""
    from recipes.bible.tables import rerank_table

    return rerank_table(data(name))


def block(name: str, path: str = RES) -> str:
    """The text of a generated block (made from its data file by tables.py)."""
    return _page(path).split(t(name), 1)[1].split(f"<!-- /table:{name} -->", 1)[0]


def says(name: str, phrase: str) -> list[str]:
    """The figures of ``phrase`` when the generated block ``name`` says it (else a value
    that fails the check)."""
    return FIGURE.findall(phrase) if phrase in block(name) else [f"not in {name}: {phrase}"]


def mt_model(*keys: str) -> float:
    """A figure of docs/results/mt_model_fingerprint.json (the MT tables' model)."""
    node = json.loads((ROOT / "docs" / "results" / "mt_model_fingerprint.json").read_text())
    for k in keys:
        node = node[k]
    return node


def primary_seed_sd() -> float:
    """The largest SD across seeds of the declared primary family's comparisons that ran."""
    from recipes.bible.tables import primary_scores
    from sigmoid_head.evaluation.metrics import roc_auc

    d, sds = data("primary_test"), []
    for part in d["parts"].values():
        runs, _, gold, _ = primary_scores(d, part)
        sds.append(np.std([roc_auc(r, gold) for r in runs], ddof=1))
    return max(sds)


def tab(name: str, first: str, col: int, n: int = 1, start: int = 0) -> list[str]:
    """``n`` figures of one cell of a generated table of results.md, from the ``start``-th."""
    return cell(RES, t(name), first, col, take=slice(start, start + n))


def holm(name: str, first: str) -> list[str]:
    """The Holm p of one row of a generated table (the second figure of its p column)."""
    return tab(name, first, 5, 1, 1)


def holm_of(name: str, firsts: tuple[str, ...], pick: Callable = max) -> float:
    return pick(float(holm(name, f)[0]) for f in firsts)


def same(*values: float | str, decimals: int = 3) -> list:
    """One figure the page gives for several rows: the first value when all print alike
    to ``decimals`` places (else all of them, so the check fails)."""
    printed = {f"{float(v):.{decimals}f}" for v in values}
    return [values[0]] if len(printed) == 1 else list(values)


def token_labels(labels: str, score: str, col: int, n: int = 1, start: int = 0) -> list[str]:
    """A cell of the self-labelled token table, whose rows are (label set, score)."""
    for line in block("mt_self_token_labels").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] == labels and cells[2] == score:
            return NUMBER.findall(cells[col])[start : start + n]
    raise KeyError((labels, score))


def remedy(line_start: str) -> list[str]:
    """The delta, interval and Holm p of one remedy line of the untrained-rows block."""
    for line in block("untrained_rows").splitlines():
        if line.startswith(f"- {line_start}: "):
            got = NUMBER.findall(line.split(": ", 1)[1])
            return [*got[:3], got[4]]
    raise KeyError(line_start)


@cache
def combination_dev_curve(weight: float) -> float:
    """The dev ROC-AUC of ``score``'s mix (the softmax minimum baseline) at one weight on
    the head, averaged over the two settings' dev suites as default_combination.py does."""
    from recipes.bible import default_combination as dc
    from sigmoid_head.evaluation.metrics import roc_auc

    choice = dc.choose([dc.packed(n)[:2] for n in ("mt_suite_dev", "llm_suite_dev")], roc_auc)
    return choice["curves"]["softmax_min"][int(np.flatnonzero(np.isclose(dc.GRID, weight))[0])]


def grid_step() -> list[float]:
    from recipes.bible import default_combination as dc

    return [float(dc.GRID[1] - dc.GRID[0])]


ES, SUITE, SELF_T = "mt_eval_self_test", "mt_suite_test", "mt_self_labelled_test"


RR_MT, RR_LLM = "rerank_mt", "rerank_llm"


HEAD_ONLY = ("sigmoid", "sigmoid_mean_log", "sigmoid_min")


PRIOR_ONLY = tuple(f"prior 0.01: {h}" for h in HEAD_ONLY)


SELF_HEADS = tuple(f"self_{r}ref_w{w}" for r in (1, 2) for w in ("0.3", "1", "3"))


def _rows(name: str) -> dict[str, list[str]]:
    """The rows of a generated table of results.md, by first cell."""
    out: dict[str, list[str]] = {}
    for line in block(name).splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            out.setdefault(cells[0], cells)
    return out


def sample_temperature() -> list:
    """The temperature of the sampled candidates, as both reranking packs name them."""
    return same(
        *(
            k.split("@")[1]
            for n in (RR_MT, RR_LLM)
            for k in data(n)["dominant_share"]
            if k.startswith("sample@")
        )
    )


def rr(name: str, first: str, col: int, n: int = 1) -> list[str]:
    return tab(name, first, col, n)


@cache
def mt_parameters() -> float:
    """The recipe's Marian model's trainable parameters, in millions, built from its default
    settings (``train_mt.py``; the vocabulary at its configured size)."""
    from recipes.bible import train_mt

    class Vocab:
        pad_token_id, eos_token_id = 0, 1

        def __len__(self) -> int:
            return train_mt.MTConfig().vocab_size

    return train_mt.count_parameters(train_mt.build_model(train_mt.MTConfig(), Vocab())) / 1e6


def sample_megabytes() -> list[float]:
    """The size of the bundled Bible sample (its gzipped files), in MB."""
    folder = ROOT / "src" / "sigmoid_head" / "bible_sample"
    return [sum(f.stat().st_size for f in folder.glob("*.gz")) / 1e6]


def self_weights() -> list[str]:
    """The smallest self weight of the self-labelled heads, as their committed names give it."""
    names = data("mt_self_token_labels")["scores"]
    return [min((n.rsplit("_w", 1)[1] for n in names if n.startswith("self_")), key=float)]


def self_temperature() -> list[str]:
    """The sampling temperature of ``self_labelled.py``'s decoding (its default)."""
    src = _page("recipes/bible/self_labelled.py")
    return re.findall(r'"--temperature", type=float, default=([\d.]+)\)', src)[:1]


def token_bce(labels: str, head: str) -> float:
    """A head's BCE on the held-out self-labelled tokens (the pack keeps its logits)."""
    from sigmoid_head.evaluation.metrics import METRICS

    part = data("mt_self_token_labels")["parts"][labels]
    logits = np.asarray(part["scores"][head], float)
    return float(METRICS["bce"].fn(1 / (1 + np.exp(-logits)), np.asarray(part["gold"], float)))


def token_probability(head: str) -> float:
    """A head's mean probability on the held-out self-labelled tokens (the model's own
    outputs; both label sets hold the same tokens and scores)."""
    part = data("mt_self_token_labels")["parts"]["2ref"]
    return float(np.mean(1 / (1 + np.exp(-np.asarray(part["scores"][head], float)))))


def _default_prior() -> float:
    """The untrained prior new full heads get by default (sigmoid_head.head.model)."""
    from sigmoid_head.head.model import DEFAULT_UNTRAINED_PRIOR

    return DEFAULT_UNTRAINED_PRIOR
