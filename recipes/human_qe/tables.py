"""Rebuild the human-label tables from the committed per-item scores (issue 38).

No model runs here: each set's ``results.json`` and ``report.md`` under
``recipes/human_qe/results/<set>/`` are made again from the committed gold
(``data/<set>/``) and the committed per-item scores (``{dev,test}.scores.jsonl.gz``) with
:func:`evaluate_sets.evaluate_set`, the same seed and resamples as the run that wrote them,
and the report blocks of ``docs/human_labels.md`` are compared with (or replaced by) them. A
figure edited by hand in a report, a results file or the page fails ``--check``.

Head variants (``results/<set>/heads/<variant>/{dev,test}.scores.jsonl.gz``, the head's own
columns of a ``run.py`` output, packed with ``--pack``) are scored into one more table per
set: each variant's primary figure beside the softmax's, with two-sided paired tests over
sources (bootstrap and analytic p) and Holm within the declared family of that table.
Variants may have run on the first N texts of each split (``run.py --limit N``) while the
committed run scored more: the variant block is then built on those N texts throughout, the
committed head's rows cut to the same prefix, and says so; variants on different N are
refused.

Usage::

    python -m recipes.human_qe.tables --check            # exit 1 with a diff if anything differs
    python -m recipes.human_qe.tables --write            # rewrite results, reports and the page
    python -m recipes.human_qe.tables --pack RUN_DIR --set mlqe-roen-word --variant paper
    python -m recipes.human_qe.tables --adopt RUN_DIR --set mqm-ted-zhen   # then --write

``--adopt`` checks both splits of the run against the gold (ids, order, candidates; for
``mushroom-en`` give ``--shroom-data``) before it writes anything, then replaces the set's
folder whole (its ``heads/`` kept); ``--pack`` writes the variant's folder whole. A missing
or broken file is one error line naming it (exit code 2).

``mushroom-en``'s gold is not committed (its repository states no licence): that set is
rebuilt only when ``--shroom-data`` (``build_data.py``'s output) is given, and skipped with a
notice otherwise.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from pathlib import Path

import numpy as np

from ..common.compare import FITTED_REL, REL, compare, tolerance_note
from . import committed, sparse_check
from .analyses import BLOCK as ANALYSIS_BLOCK
from .committed import (
    committed_row,
    fmt_p,
    gold_rows,
    head_columns,
    joined,
    read_jsonl_gz,
    with_head,
)
from .evaluate_sets import KIND, PRIMARY, evaluate_set
from .run import cell, jsonable, report, write_jsonl_gz

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


DOC = ROOT / "docs" / "human_labels.md"
README = ROOT / "README.md"
"""The project README: its "Which score to use" table on human labels is a block here too."""
VARIANTS_BLOCK = "human-qe-variants"
PUBLISHED_BLOCK = "human-qe-published"
PUBLISHED = HERE / "published.json"
"""The shared tasks' published figures, each with its source and the quoted row."""
EXTRA_BLOCKS = ("human-qe-talks", "human-qe-thresholds", "human-qe-curve", "human-qe-labelled")
"""Blocks made by side_tables.extra: MQM per talk, the seed-0/1 thresholds, the curve."""


def variant_limit(name: str, variant: str) -> int | None:
    """The ``--limit`` (first N texts per split; None: all) a packed head variant ran with."""
    from sigmoid_head.safe.json_io import read_json

    settings = read_json(committed.RESULTS / name / "heads" / variant / "settings.json")
    if not isinstance(settings, dict) or "limit" not in settings:
        raise ValueError(f"{committed.RESULTS / name / 'heads' / variant / 'settings.json'}: no limit")
    return settings["limit"]


def _prefix(rows: list, limit: int | None) -> list:
    return rows[:limit] if limit else rows


def rebuild(name: str, shroom_data: Path | None, variant: str | None = None,
            limit: int | None | str = "run") -> dict | None:
    """One set's results, made again from the committed data (None: gold not here).

    ``limit``: the first N texts of each split (None: all); by default the committed run's
    own (``"run"``), or a variant's own when ``variant`` is given. A prefix of a longer run
    is the same rows, so a variant scored on the first 500 texts is compared with the
    committed head on those 500 only.
    """
    folder = committed.RESULTS / name
    settings = _run_settings(folder)
    if limit == "run":
        limit = variant_limit(name, variant) if variant else settings["limit"]
    if settings["limit"] and (not limit or limit > settings["limit"]):
        raise SystemExit(f"{name}: the committed run has the first {settings['limit']} texts only, "
                         f"not {limit or 'all'}")
    splits = {}
    for split in ("dev", "test"):
        gold = gold_rows(name, split, shroom_data)
        if gold is None:
            return None
        gold = _prefix(gold, limit)
        scored = joined(gold, _prefix(read_jsonl_gz(folder / f"{split}.scores.jsonl.gz"), limit))
        if variant:
            scored = with_head(scored, read_jsonl_gz(folder / "heads" / variant / f"{split}.scores.jsonl.gz"))
        splits[split] = (gold, scored)
    res = evaluate_set(name, *splits["dev"], *splits["test"], n_boot=settings["n_boot"])
    res["settings"] = {**settings, "limit": limit}
    if "shroom" in res:
        res["shroom"].pop("per_item", None)
    return res


def head_against_head(name: str, base: str, per_variant: dict[str, dict],
                      shroom_data: Path | None) -> list[str]:
    """The committed head (``base``) against each other head variant on the set's primary
    figure (word MCC, segment Pearson of the mean log-probability, or IoU), each head at its
    own dev-chosen threshold; two-sided paired bootstrap over sources, the analytic p beside
    it, Holm over the variants."""
    from sigmoid_head.evaluation.bootstrap import paired_bootstrap
    from sigmoid_head.evaluation.gold_eval import gold_word_bad
    from sigmoid_head.evaluation.metrics import pearson
    from sigmoid_head.evaluation.pvalues import add_holm
    from sigmoid_head.evaluation.span_metrics import mcc

    from .evaluate_sets import flat_words, human_scores, item_groups, items_of, shroom_item_scores

    kind, others = KIND[name], [v for v in per_variant if v != base]
    gold = gold_rows(name, "test", shroom_data)
    if not others or gold is None:
        return []
    limit = per_variant[base]["settings"]["limit"]
    gold = _prefix(gold, limit)
    base_rows = joined(gold, _prefix(read_jsonl_gz(committed.RESULTS / name / "test.scores.jsonl.gz"), limit))
    items = items_of(kind, gold)

    def rows_of(v: str) -> list[dict]:
        return base_rows if v == base else with_head(
            base_rows, read_jsonl_gz(committed.RESULTS / name / "heads" / v / "test.scores.jsonl.gz"))

    if kind == "wmt":
        truth = np.concatenate([gold_word_bad(it) for it in items])
        groups = np.concatenate([[it.group] * len(gold_word_bad(it)) for it in items])
        metric = mcc

        def figure(v: str) -> np.ndarray:
            words = np.concatenate(flat_words(rows_of(v), items, "sigmoid")[0])
            return (words < per_variant[v]["word"]["thresholds"]["sigmoid"]).astype(float)
    elif kind == "mqm":
        truth, groups, metric = human_scores(kind, gold), item_groups(items), pearson

        def figure(v: str) -> np.ndarray:
            return np.asarray([float(r["sigmoid_mean_log"]) for r in rows_of(v)])
    else:
        truth, groups = np.zeros(len(items)), item_groups(items)

        def metric(per: np.ndarray, _: np.ndarray) -> float:
            return float(np.mean(per))

        def figure(v: str) -> np.ndarray:
            thr = per_variant[v]["shroom"]["thresholds"]["sigmoid"]
            return shroom_item_scores(rows_of(v), items, "sigmoid", thr)[:, 0]

    a = figure(base)
    tests = {v: paired_bootstrap(metric, a, figure(v), truth, n=per_variant[v]["settings"]["n_boot"],
                                 groups=groups) for v in others}
    add_holm(tests, f"{PRIMARY[kind]}: {base} head vs each other head (two-sided, Holm)")
    lines = [f"#### {name}: the {base} head against the others, {PRIMARY[kind]} (test)", "",
             f"| {base} vs | delta | 95% CI | p | p (normal) | Holm p (normal) |", "|---|---|---|---|---|---|"]
    for variant, t in tests.items():
        lines.append(f"| {variant} | {t['delta']:+.3f} | [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] "
                     f"| {fmt_p(t['p_value'], t['n_boot'])} | {t['p_normal']:.2g} | {t['p_holm_normal']:.2g} |")
    return [*lines, ""]


def primary_figure(res: dict) -> tuple[str, str]:
    """(table, row key) of the set's primary figure for the head and softmax."""
    return {"wmt": ("word", "mcc"), "mqm": ("segment", "pearson"), "shroom": ("shroom", "iou")}[res["kind"]]


def variants_table(name: str, per_variant: dict[str, dict]) -> list[str]:
    """Each head variant's primary figure beside softmax's, with its paired test."""
    kind = KIND[name]
    part, fig = primary_figure(next(iter(per_variant.values())))
    head_key, base_key = ("sigmoid_mean_log", "softmax_mean_log") if kind == "mqm" else ("sigmoid", "softmax")
    second = {"wmt": "roc_auc", "mqm": "kendall", "shroom": "spearman"}[kind]
    from sigmoid_head.evaluation.pvalues import holm

    every = [(v, b) for v, res in per_variant.items() for b in sorted(res["paired"])]  # the whole table
    table_holm = dict(zip(every, holm([per_variant[v]["paired"][b]["p_normal"] for v, b in every]), strict=True))
    lines = [f"#### {name}: head variants, {PRIMARY[kind]} (test; the head's {second} beside it)", "",
             f"| head | head | softmax | delta | 95% CI | p | p (normal) | Holm p (normal) "
             f"| Holm p (normal, whole table) | head {second} |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for variant, res in per_variant.items():
        rows = res[part] if part == "segment" else res[part]["methods"]
        t = res["paired"][base_key]
        lines.append(
            f"| {variant} | {rows[head_key][fig][0]:.3f} | {rows[base_key][fig][0]:.3f} "
            f"| {t['delta']:+.3f} | [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] "
            f"| {fmt_p(t['p_value'], t['n_boot'])} | {t['p_normal']:.2g} | {t['p_holm_normal']:.2g} "
            f"| {table_holm[(variant, base_key)]:.2g} | {cell(rows[head_key][second])} |")
    return [*lines, "",
            "p: two-sided paired bootstrap over sources; p (normal): the same delta over its "
            "bootstrap standard error; Holm within each variant's family (the head against "
            f"every baseline on this figure); whole table: Holm over all {len(every)} tests of "
            "every variant against every baseline (the family a reader scanning the table "
            "for a winner is in).", ""]


SEED_SUFFIX = re.compile(r"^(?P<setting>.+?)(?:_s(?P<seed>\d+))?$")
"""A head variant's name: its training setting, then ``_s<seed>`` for seeds other than 0."""


def seeds_table(name: str, per_variant: dict[str, dict]) -> list[str]:
    """Every training setting with two or more seeds: each seed's primary figure with its
    95% interval over sources, then the mean and the spread across seeds (sample SD, range)
    beside the interval's half-width, which resamples sources only and so leaves out the
    seed-to-seed spread."""
    kind = KIND[name]
    part, fig = primary_figure(next(iter(per_variant.values())))
    head_key = "sigmoid_mean_log" if kind == "mqm" else "sigmoid"
    settings: dict[str, dict[int, list[float]]] = {}
    for variant, res in per_variant.items():
        m = SEED_SUFFIX.match(variant)
        rows = res[part] if part == "segment" else res[part]["methods"]
        settings.setdefault(m["setting"], {})[int(m["seed"] or 0)] = rows[head_key][fig]
    settings = {k: v for k, v in settings.items() if len(v) >= 2}
    if not settings:
        return []
    lines = [f"#### {name}: seeds, {PRIMARY[kind]} of the head (test)", "",
             "| setting | seeds | each seed [95% CI over sources] | mean | SD across seeds "
             "| range across seeds | mean half-width of the source CI |", "|---|---|---|---|---|---|---|"]
    for setting, by_seed in sorted(settings.items()):
        seeds = sorted(by_seed)
        values = np.array([by_seed[k][0] for k in seeds])
        half = np.mean([(by_seed[k][2] - by_seed[k][1]) / 2 for k in seeds])
        each = "; ".join(f"{k}: {cell(by_seed[k])}" for k in seeds)
        lines.append(f"| {setting} | {len(seeds)} | {each} | {values.mean():.3f} | {values.std(ddof=1):.3f} "
                     f"| {values.max() - values.min():.3f} | {half:.3f} |")
    return [*lines, "",
            "Each seed trained with the same command and data, only `--seed` changed; each at "
            "its own dev-chosen threshold. The source interval covers the choice of test "
            "segments for one trained head; the SD across seeds is the spread that training "
            "alone adds.", ""]


def doc_blocks(text: str) -> dict[str, tuple[int, int]]:
    """Where each set's recorded report sits in the page: name -> (start, end) of the text
    inside its fence."""
    out = {}
    for m in re.finditer(r"<!-- recorded output: recipes/human_qe/results/([\w-]+)/report\.md[^\n]*-->\n```text\n(.*?)```",
                         text, re.S):
        out[m.group(1)] = (m.start(2), m.end(2))
    for block in (VARIANTS_BLOCK, PUBLISHED_BLOCK, ANALYSIS_BLOCK, *EXTRA_BLOCKS):
        for m in re.finditer(rf"<!-- table:({block}:[\w-]+) -->\n(.*?)<!-- /table:\1 -->", text, re.S):
            out[m.group(1)] = (m.start(2), m.end(2))
    return out


def published_table(name: str, res: dict) -> list[str]:
    """The shared task's published figures for one set, beside this head's and the best
    baseline's on the same test set (``res``: the set's rebuilt results)."""
    entry = json.loads(PUBLISHED.read_text()).get(name, {})
    lines = ["| system | figure | what it is | source |", "|---|---|---|---|"]
    if res["kind"] == "shroom":
        rows = res["shroom"]["methods"]
        best = max((m for m in rows if m != "sigmoid"), key=lambda m: rows[m]["iou"][0])
        for m, what in (("sigmoid", "this head (SmolLM2-135M-Instruct), dev-chosen threshold"),
                        (best, "best baseline of the same pass (dev-chosen threshold)")):
            lines.append(f"| {m} | IoU {rows[m]['iou'][0]:.3f}, rho "
                         f"{rows[m]['spearman'][0]:.3f} | {what} | this page |")
        ref = res["shroom"]["reference"]["mark all"]["iou"][0]
        lines.append(f"| mark all | IoU {ref:.3f} | every character marked, "
                     "computed here on the same test answers | this page |")
    else:
        part, fig = primary_figure(res)
        rows = res[part] if part == "segment" else res[part]["methods"]
        head = "sigmoid_mean_log" if part == "segment" else "sigmoid"
        others = [m for m in rows if not m.startswith("sigmoid") and not m.startswith("combined")
                  and (part != "segment" or m.endswith("_mean_log"))]
        best = max(others, key=lambda m: rows[m][fig][0])
        for m, what in ((head, "this head (SmolLM2-135M-Instruct)"),
                        (best, "best baseline of the same pass")):
            lines.append(f"| {m} | {fig} {rows[m][fig][0]:.3f} | {what} | this page |")
    for row in entry.get("rows", []):
        lines.append(f"| {row['system']} | IoU {row['iou']:.3f}, rho "
                     f"{row['spearman']:.3f} | {row['what']} | [{entry['source'].split(',')[0]}]"
                     f"({entry['url']}) |")
    if "missing" in entry:
        lines.append(f"| - | - | not quoted: {entry['missing']} | - |")
    return [*lines, ""]


VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
"""A head variant's name: one folder name under ``heads/`` (no ``/``, no ``..``)."""


def pack(run_dir: Path, name: str, variant: str) -> None:
    """Keep a run's head columns (sequence keys, per-word ``sigmoid``) as a variant (its
    folder written whole, then swapped in)."""
    from sigmoid_head.safe.outputs import staged_folder

    if not VARIANT_NAME.match(variant) or ".." in variant:
        raise ValueError(f"--variant {variant[:40]!r}: a name of letters, digits, '_', '.' "
                         "and '-' (one folder under heads/)")
    dest = committed.RESULTS / name / "heads" / variant
    rows = {split: read_jsonl_gz(run_dir / f"{split}.scores.jsonl.gz") for split in ("dev", "test")}
    settings = _run_settings(run_dir)
    if isinstance(settings.get("head"), str) and Path(settings["head"]).is_absolute():
        # a path of the machine that ran it stays there: the head's folder name is kept
        settings["head"] = f"heads/{Path(settings['head']).name}"
    with staged_folder(dest) as out:
        for split, split_rows in rows.items():
            write_jsonl_gz(out / f"{split}.scores.jsonl.gz", (head_columns(r) for r in split_rows))
        (out / "settings.json").write_text(json.dumps(settings, indent=1) + "\n")
    print(f"packed {variant} of {name} into {dest.relative_to(ROOT)}")


def _run_settings(run_dir: Path) -> dict:
    """The settings of a run.py output folder (a missing or broken results.json refused)."""
    from sigmoid_head.safe.json_io import read_json

    path = run_dir / "results.json"
    if not path.is_file():
        raise ValueError(f"{path} is missing: not a complete run.py output folder")
    data = read_json(path)
    settings = data.get("settings") if isinstance(data, dict) else None
    if not isinstance(settings, dict) or not isinstance(settings.get("limit"), (int, type(None))):
        raise ValueError(f"{path}: no run settings (with a limit)")
    return settings


def adopt(run_dir: Path, name: str, shroom_data: Path | None = None) -> None:
    """Make a ``run.py`` output the set's committed run: its per-item rows (floats to 6
    significant digits; Mu-SHROOM's without their text) and its settings; ``--write`` then
    rebuilds the tables from them. Both splits are checked against the gold (ids, order,
    candidates) before anything is written, and the set's folder is replaced whole."""
    from sigmoid_head.safe.outputs import staged_folder

    settings = _run_settings(run_dir)
    rows = {}
    for split in ("dev", "test"):
        rows[split] = read_jsonl_gz(run_dir / f"{split}.scores.jsonl.gz")
        gold = gold_rows(name, split, shroom_data)
        if gold is None:
            raise ValueError(f"{name}: no gold here to check the run against (--shroom-data)")
        joined(_prefix(gold, settings["limit"]), rows[split])  # ids, order and candidates
    with staged_folder(committed.RESULTS / name, copy_existing=True) as dest:
        for split, split_rows in rows.items():
            write_jsonl_gz(dest / f"{split}.scores.jsonl.gz",
                           (committed_row(r, name) for r in split_rows))
        (dest / "results.json").write_text(json.dumps({"settings": settings}, indent=1))
    print(f"adopted {run_dir} as the committed run of {name}: now run --write")


OWN_ANALYSIS = frozenset((*sparse_check.SPARSE, *sparse_check.DEFERRED))
"""Packed head variants that only their own analysis reads (:mod:`.sparse_check`: the same
head trained with another optimizer), kept out of the head-variant tables: they are no
candidate for a set's best head, and the whole-table Holm family is not grown by them."""


def build(shroom_data: Path | None, sets: tuple[str, ...] = tuple(KIND), with_variants: bool = True,
          with_analyses: bool = True) -> tuple[dict[Path, str], dict[str, str], list[str]]:
    """(file -> text, page block -> text, notices) of everything this script makes for
    ``sets`` (without the head-variant tables when ``with_variants`` is False)."""
    files: dict[Path, str] = {}
    blocks: dict[str, str] = {}
    notices: list[str] = []
    for name in (s for s in sets if s in KIND):  # "curve": only the learning curve's tables
        res = rebuild(name, shroom_data)
        if res is None:
            notices.append(f"{name}: gold not available here (--shroom-data), not rebuilt")
            continue
        folder = committed.RESULTS / name
        files[folder / "results.json"] = json.dumps(jsonable(res), indent=1)
        files[folder / "report.md"] = report(res, res["settings"])
        blocks[name] = files[folder / "report.md"].rstrip("\n") + "\n"
        blocks[f"{PUBLISHED_BLOCK}:{name}"] = "\n".join(published_table(name, res))
        variants = sorted(p.name for p in (folder / "heads").glob("*") if p.is_dir() and p.name not in OWN_ANALYSIS)
        if variants and with_variants:
            base = Path(res["settings"]["head"]).name
            limits = {variant_limit(name, v) for v in variants}
            if len(limits) > 1:
                raise SystemExit(f"{name}: the head variants ran on different --limit values {sorted(limits, key=str)}; "
                                 "rescore them on one")
            limit = limits.pop()
            # the committed head on the variants' texts: itself, or the same rows cut to their prefix
            per = {base: res if limit == res["settings"]["limit"] else rebuild(name, shroom_data, limit=limit)}
            per.update({v: rebuild(name, shroom_data, v) for v in variants})
            scope = ([] if limit == res["settings"]["limit"] else
                     [f"The head variants were scored on the first {limit} texts of each split: every "
                      f"table in this block, the {base} head's rows included, is on those texts.", ""])
            blocks[f"{VARIANTS_BLOCK}:{name}"] = "\n".join(
                scope + variants_table(name, per) + head_against_head(name, base, per, shroom_data)
                + seeds_table(name, per))
    if with_analyses:  # the analyses (issue 49) read the committed rows of their sets
        from . import analyses

        more_files, more_blocks = analyses.outputs(sets, committed.RESULTS)
        files.update(more_files)
        blocks.update(more_blocks)
    if with_variants:
        from .side_tables import extra

        more_files, more_blocks = extra(sets, shroom_data)
        files.update(more_files)
        blocks.update(more_blocks)
    return files, blocks, notices


FITTED_FILES = ("combination.json", "combination-pe-all.json", "combination-pe-all_s1.json",
                "combination-pe-all_s2.json", "supervised.json", "supervised-pool.json", "lopo.json")
"""Results files whose figures are statistics of models fitted during the rebuild (logistic
regressions, ridge): compared within :data:`recipes.common.compare.FITTED_REL`, every other
file within :data:`recipes.common.compare.REL` (raw floats) and as printed (rounded figures)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="exit 1 if a file or the page differs")
    mode.add_argument("--write", action="store_true", help="rewrite results, reports and the page")
    mode.add_argument("--pack", type=Path, metavar="RUN_DIR", help="a run.py output folder to keep as a head variant")
    mode.add_argument("--adopt", type=Path, metavar="RUN_DIR",
                      help="a run.py output folder to commit as the set's main run (then --write)")
    ap.add_argument("--set", choices=sorted(KIND), help="with --pack or --adopt: the set of the run")
    ap.add_argument("--variant", help="with --pack: the head variant's name (e.g. paper, smooth1)")
    ap.add_argument("--shroom-data", type=Path, help="build_data.py's output folder (for mushroom-en)")
    ap.add_argument("--sets", default=",".join(KIND),
                    help="comma-separated sets to rebuild (default: all; 'curve': the learning curve only)")
    ap.add_argument("--no-variants", action="store_true",
                    help="leave the head-variant tables out (each variant is a full rebuild of its set)")
    ap.add_argument("--no-analyses", action="store_true",
                    help="leave the analysis tables out (feature combination, error-free, WMT 2022)")
    args = ap.parse_args(argv)
    sets = tuple(s for s in args.sets.split(",") if s)
    if not sets:
        ap.error(f"--sets names no set; sets: {', '.join(KIND)}, curve")
    if not set(sets) <= {*KIND, "curve"}:
        ap.error(f"--sets: unknown {sorted(set(sets) - {*KIND, 'curve'})}; sets: {', '.join(KIND)}, curve")
    try:
        return _main(args, ap, sets)
    except (ValueError, OSError) as err:
        print(f"tables.py: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2


def _main(args: argparse.Namespace, ap: argparse.ArgumentParser, sets: tuple[str, ...]) -> int:
    """:func:`main` once the options are parsed."""
    if args.pack:
        if not (args.set and args.variant):
            ap.error("--pack needs --set and --variant")
        pack(args.pack, args.set, args.variant)
        return 0
    if args.adopt:
        if not args.set:
            ap.error("--adopt needs --set")
        adopt(args.adopt, args.set, args.shroom_data)
        return 0
    files, blocks, notices = build(args.shroom_data, sets, with_variants=not args.no_variants,
                                   with_analyses=not args.no_analyses)
    for n in notices:
        print(n)
    docs, found_any = {}, set()
    for page in (DOC, README):
        new_doc = page.read_text()
        found = doc_blocks(new_doc)
        found_any |= set(found)
        for key, (start, end) in sorted(found.items(), key=lambda kv: -kv[1][0]):
            if key in blocks:
                new_doc = new_doc[:start] + blocks[key] + new_doc[end:]
        docs[page] = new_doc
    missing = sorted(set(blocks) - found_any)
    stale, agree = [], []
    for path, text in [*files.items(), *docs.items()]:
        old = path.read_text() if path.exists() else ""
        same = compare(old, text, FITTED_REL if path.name in FITTED_FILES else REL)
        # numbers within a stated tolerance (recipes/common/compare.py)
        agree.append(same)
        if not same.ok:
            stale.append(path)
            if args.check:
                print(f"{path.relative_to(ROOT)}: {same.problem}")
                sys.stdout.writelines(list(difflib.unified_diff(
                    old.splitlines(True), text.splitlines(True), str(path.relative_to(ROOT)),
                    "rebuilt", n=1))[:60])
            else:
                path.write_text(text)
    if missing:
        print(f"neither docs/human_labels.md nor README.md has a block for: {', '.join(missing)}")
    if args.check and (stale or missing):
        print(f"{len(stale)} file(s) differ from the committed data: python -m recipes.human_qe.tables --write")
        return 1
    print("human-label tables " + ("match the committed data" if args.check else "written"))
    if args.check:
        print(tolerance_note(agree))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
