"""Reliability round 5 (issue 59), the committed-results writers: ``recipes.human_qe.splice``,
``recipes.human_qe.run`` on users' files and ``recipes.human_qe.labelled_tables --keep``, tried
as a hostile user and a crashing machine would: kills while committed files are written,
destinations that are committed data or another run, NaN in the reproduction check, dev
gold that is the test gold, unknown names and missing runs.

Every bad case must end in a clear error (exit 2, one line naming the culprit) with the
committed files untouched; every valid one must run and give the right result. A case whose
committed (or earlier) files changed or no longer read is a loss. The outcomes per class::

    PYTHONPATH=src python tests/fuzz/test_round5_results.py

Nothing here touches ``recipes/human_qe/data`` or ``results``: every case works on copies
(the module globals that name them are pointed at the copies for the case's duration).
"""

from __future__ import annotations

import contextlib
import gzip
import importlib
import io
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

CLEAR, OK, TRACEBACK, SILENT, LOSS = (
    "clear error", "correct run", "traceback", "silent wrong", "loss")
ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes" / "human_qe"
FIXTURE = ROOT / "tests" / "data" / "head_v0_1_0"
MQM, WORDS, VARIANT = "mqm-ted-zhen", "mlqe-roen-word", "paper"
Case = Callable[[Path], tuple[str, str]]
CASES: dict[str, dict[str, Case]] = {}


class Killed(BaseException):
    """A kill of the process, injected at a write."""


def _mod(name: str):
    return importlib.import_module(f"recipes.human_qe.{name}")


@contextlib.contextmanager
def patched(*changes: tuple[object, str, object]) -> Iterator[None]:
    """Set ``(object, attribute, value)`` for the block, then put every one back."""
    saved = [(obj, attr, getattr(obj, attr)) for obj, attr, _ in changes]
    try:
        for obj, attr, value in changes:
            setattr(obj, attr, value)
        yield
    finally:
        for obj, attr, value in reversed(saved):
            setattr(obj, attr, value)


def call(module: str, argv: list[str]) -> tuple[int, str]:
    """(exit code, stderr) of ``recipes.human_qe.<module>.main(argv)`` in this process; a
    ``SystemExit`` with a message is exit 2 with that message, an escaping exception -1."""
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        try:
            code = _mod(module).main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
            if not isinstance(e.code, int):
                err.write(f"{e.code}\n")
        except BaseException:  # noqa: BLE001 - measured
            traceback.print_exc(file=err)
            code = -1
    return code, err.getvalue()


def judge(code: int, err: str, *names: str) -> tuple[str, str]:
    """A refusal: exit 2 and one line naming ``names`` (argparse's usage block aside: its
    ``usage:`` line and the indented lines that continue it)."""
    lines = [ln for ln in err.splitlines() if ln.strip()
             and not (ln.startswith("usage: ") or ln.startswith(" "))]
    if "Traceback" in err or code not in (0, 2):
        return TRACEBACK, err[-300:]
    if code == 0:
        return SILENT, "exit 0"
    if len(lines) != 1 or not all(n in lines[0] for n in names):
        return TRACEBACK, f"not one line naming {names}: {lines}"
    return CLEAR, lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def kept(before: dict[str, bytes], folder: Path, verdict: tuple[str, str],
         changed_is: str = LOSS) -> tuple[str, str]:
    """``verdict``, unless ``folder`` changed: then ``changed_is`` (a loss: committed files
    cut or replaced by other data; silent: a wrong input accepted and written)."""
    after = snapshot(folder)
    if after == before:
        return verdict
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return changed_is, f"{verdict[0]}, and {len(changed)} file(s) changed: {', '.join(changed[:3])}"


def rows_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(x) for x in f if x.strip()]


def write_gz(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


# -- splice ----------------------------------------------------------------------------------


def _old_rows(name: str, split: str, commit: str) -> list[dict]:
    """An "earlier commit" of the gold whose sources of rows 3 and 7 differ (no git)."""
    rows = [dict(r) for r in _mod("committed").gold_rows(name, split, None)]
    for k in (3, 7):
        rows[k]["source"] += " <v>marked</v>"
    return rows


KEPT_ROWS = 12
"""Rows of each committed split that :func:`_results` copies: the cases pick rows 0 to 7, and
splice reads and rewrites whole files (the committed ones are MBs, seconds per write)."""
_HEADS: dict[Path, list[dict]] = {}


def _first_rows(path: Path) -> list[dict]:
    if path not in _HEADS:  # read once per process: every case starts from the same rows
        with gzip.open(path, "rt", encoding="utf-8") as f:
            _HEADS[path] = [json.loads(line) for line in itertools.islice(f, KEPT_ROWS)]
    return _HEADS[path]


def _results(tmp: Path) -> Path:
    """A copy of the MQM set's committed scores and its ``paper`` variant, each split cut to
    its first ``KEPT_ROWS`` rows."""
    src, dest = RECIPE / "results" / MQM, tmp / "results" / MQM
    for folder in ("", "heads/" + VARIANT):
        (dest / folder).mkdir(parents=True, exist_ok=True)
        for split in ("dev", "test"):
            name = Path(folder) / f"{split}.scores.jsonl.gz"
            write_gz(dest / name, _first_rows(src / name))
        for extra in ("rescored.json", "settings.json"):
            if (src / folder / extra).is_file():
                shutil.copy2(src / folder / extra, dest / folder / extra)
    return tmp / "results"


def _run_dir(tmp: Path, results: Path, picks=(0, 1, 3, 7), edit=None, variant=True) -> Path:
    """A run.py output of the rows ``picks`` of each split: the committed (or the variant's
    packed) head columns as run rows; ``edit(k, row)`` changes row ``k``."""
    run, committed = tmp / "run", _mod("committed")
    base = results / MQM / ("heads/" + VARIANT if variant else "")
    for split in ("dev", "test"):
        gold = {g["id"]: g for g in committed.gold_rows(MQM, split, None)}
        rows, out = rows_gz(base / f"{split}.scores.jsonl.gz"), []  # read once: a split is MBs
        for k in picks:
            r = rows[k]
            if variant:
                r = {**{a: b for a, b in r.items() if a != "words"}, "candidate": gold[r["id"]]["candidate"],
                     "words": [{"sigmoid": w, "softmax": 0.5} for w in r["words"]]}
            out.append(edit(k, r) if edit else r)
        write_gz(run / f"{split}.scores.jsonl.gz", out)
    return run


def _seq(value: Callable[[float], float], changed: bool = False):
    """An edit of the head's sequence scores (and word scores) of the check rows (0, 1), or
    of the changed rows (3, 7) with ``changed``."""
    def edit(k: int, r: dict) -> dict:
        if (k in (3, 7)) != changed:
            return r
        r = {a: (value(b) if a.startswith("sigmoid") else b) for a, b in r.items()}
        r["words"] = [{**w, "sigmoid": value(w["sigmoid"])} for w in r["words"]]
        return r
    return edit


def splice_case(argv: Callable[[Path, Path], list[str]], *named: str, edit=None,
                picks=(0, 1, 3, 7), variant=True, fake_git=True, changed_is: str = LOSS) -> Case:
    """``splice`` on a copy of the committed results; a refusal naming ``named``, nothing
    changed."""
    def case(tmp: Path) -> tuple[str, str]:
        splice, committed = _mod("splice"), _mod("committed")
        results = _results(tmp)
        run = _run_dir(tmp, results, picks, edit, variant)
        before = snapshot(results)
        fake = [(splice, "_old_rows", _old_rows)] if fake_git else []
        with patched((splice, "RESULTS", results), (committed, "RESULTS", results), *fake):
            code, err = call("splice", argv(run, tmp))
        return kept(before, results, judge(code, err, *named), changed_is)
    return case


def _adopt(*extra: str) -> Callable[[Path, Path], list[str]]:
    return lambda run, tmp: ["adopt", str(run), "--set", MQM, *extra]


VARIANT_ARGS = ("--since", "earlier", "--variant", VARIANT)


def adopt_killed(tmp: Path) -> tuple[str, str]:
    """The issue's repro: a kill while adopt writes the committed test scores."""
    splice, committed = _mod("splice"), _mod("committed")
    results = _results(tmp)
    run = _run_dir(tmp, results, (3, 7), _seq(lambda v: v / 2, changed=True), variant=False)
    before = snapshot(results)
    real_write = gzip.GzipFile.write

    def write(self, data):
        if str(getattr(self, "name", "")).endswith("test.scores.jsonl.gz"):
            raise Killed("killed while writing the test scores")
        return real_write(self, data)

    with patched((splice, "RESULTS", results), (committed, "RESULTS", results),
                 (gzip.GzipFile, "write", write)):
        code, err = call("splice", ["adopt", str(run), "--set", MQM])
    for p in sorted((results / MQM).glob("*.gz")):
        try:
            rows_gz(p)
        except (OSError, EOFError, ValueError) as e:
            return LOSS, f"{p.name} no longer reads ({type(e).__name__}: {e})"
    return kept(before, results, (OK, f"killed (exit {code}): every committed file as it was"))


def subset_into_data(tmp: Path) -> tuple[str, str]:
    """``splice subset --out`` the folder of the committed gold (a copy of it)."""
    splice, committed = _mod("splice"), _mod("committed")
    here = tmp / "human_qe"
    shutil.copytree(RECIPE / "data" / MQM, here / "data" / MQM)
    before = snapshot(here / "data")
    with patched((committed, "HERE", here), (splice, "_old_rows", _old_rows)):
        code, err = call("splice", ["subset", "--set", MQM, "--since", "earlier",
                                    "--out", str(here / "data")])
    return kept(before, here / "data", judge(code, err, "--out"))


def subset_valid(tmp: Path) -> tuple[str, str]:
    splice = _mod("splice")
    with patched((splice, "_old_rows", _old_rows)):
        code, err = call("splice", ["subset", "--set", MQM, "--since", "earlier", "--out",
                                    str(tmp / "sub"), "--limit", "5", "--check", "2"])
    if code != 0:
        return (TRACEBACK if "Traceback" in err else SILENT), err[-300:]
    gold = _mod("committed").gold_rows(MQM, "test", None)
    got = [r["id"] for r in rows_gz(tmp / "sub" / MQM / "test.jsonl.gz")]
    left = [p.name for p in (tmp / "sub" / MQM).iterdir() if p.name.startswith(".")]
    ok = got == [gold[k]["id"] for k in (0, 1, 3)] and not left
    return (OK, "rows 0, 1 (check) and 3 (changed)") if ok else (SILENT, f"{got} {left}")


def adopt_valid(tmp: Path) -> tuple[str, str]:
    """The variant's changed rows spliced, every other row and file kept, no temp file."""
    splice, committed = _mod("splice"), _mod("committed")
    results = _results(tmp)
    folder = results / MQM / "heads" / VARIANT
    run = _run_dir(tmp, results, edit=_seq(lambda v: v / 2, changed=True))
    before = {s: rows_gz(folder / f"{s}.scores.jsonl.gz") for s in ("dev", "test")}
    top = snapshot(results / MQM)
    with patched((splice, "RESULTS", results), (committed, "RESULTS", results),
                 (splice, "_old_rows", _old_rows)):
        code, err = call("splice", ["adopt", str(run), "--set", MQM, *VARIANT_ARGS])
    if code != 0:
        return (TRACEBACK if "Traceback" in err else SILENT), err[-300:]
    for split, rows in before.items():
        after = rows_gz(folder / f"{split}.scores.jsonl.gz")
        bad = [k for k, (a, b) in enumerate(zip(after, rows, strict=True))
               if (a == b) == (k in (3, 7))]
        if len(after) != len(rows) or bad:
            return SILENT, f"{split}: rows {bad[:3]} wrong"
    after = snapshot(results / MQM)
    changed = {k for k in set(top) | set(after) if top.get(k) != after.get(k)}
    expected = {f"heads/{VARIANT}/{n}" for n in ("dev.scores.jsonl.gz", "test.scores.jsonl.gz",
                                                 "rescored.json")}
    return (OK, "rows 3 and 7 spliced") if changed == expected else (SILENT, f"changed: {changed}")


CASES["splice"] = {
    "adopt_killed_while_writing_test": adopt_killed,
    "subset_out_is_the_committed_gold": subset_into_data,
    "adopt_variant_check_rows_nan": splice_case(
        _adopt(*VARIANT_ARGS), "reproduce", edit=_seq(lambda v: math.nan), changed_is=SILENT),
    "adopt_tolerance_nan": splice_case(
        _adopt(*VARIANT_ARGS, "--tolerance", "nan"), "--tolerance", edit=_seq(lambda v: v * 2),
        changed_is=SILENT),
    "adopt_tolerance_inf": splice_case(
        _adopt(*VARIANT_ARGS, "--tolerance", "inf"), "--tolerance", edit=_seq(lambda v: v * 2),
        changed_is=SILENT),
    "adopt_tolerance_negative": splice_case(
        _adopt(*VARIANT_ARGS, "--tolerance", "-1"), "--tolerance"),
    "adopt_since_unknown_commit": splice_case(
        _adopt("--since", "0000000deadbeef", "--variant", VARIANT), "--since", "0000000deadbeef",
        fake_git=False),
    "adopt_missing_run": splice_case(
        lambda run, tmp: ["adopt", str(tmp / "no-run"), "--set", MQM], "no-run"),
    "adopt_partial_run": splice_case(
        lambda run, tmp: ((run / "test.scores.jsonl.gz").unlink(), _adopt()(run, tmp))[1],
        "test.scores.jsonl.gz"),
    "adopt_cut_run": splice_case(
        lambda run, tmp: ((run / "test.scores.jsonl.gz").write_bytes(
            (run / "test.scores.jsonl.gz").read_bytes()[:200]), _adopt()(run, tmp))[1],
        "test.scores.jsonl.gz"),
    "adopt_unknown_set": splice_case(
        lambda run, tmp: ["adopt", str(run), "--set", "no-such-set"], "--set"),
    "adopt_unknown_variant": splice_case(
        _adopt("--since", "earlier", "--variant", "no-such-variant"), "--variant",
        "no-such-variant"),
    "adopt_candidate_differs": splice_case(
        _adopt(*VARIANT_ARGS), "candidate",
        edit=lambda k, r: {**r, "candidate": r["candidate"] + " (edited)"} if k == 3 else r),
    "adopt_head_not_reproduced": splice_case(
        _adopt(*VARIANT_ARGS), "reproduce", edit=_seq(lambda v: v * 1.01)),
    "adopt_valid_variant": adopt_valid,
    "subset_valid": subset_valid,
}


# -- run.py ----------------------------------------------------------------------------------


def _gold(name: str, split: str, n: int = 8) -> list[dict]:
    return rows_gz(RECIPE / "data" / name / f"{split}.jsonl.gz")[:n]


def tags_file(tmp: Path, stem: str, rows: list[dict]) -> Path:
    """``stem.tags`` (gap, word, gap, ... tags) with ``stem.mt`` and ``stem.src`` beside."""
    tags = []
    for r in rows:
        seq = [r["gap_bad"][0]]
        for w, g in zip(r["word_bad"], r["gap_bad"][1:], strict=True):
            seq += [w, g]
        tags.append(" ".join("BAD" if t else "OK" for t in seq))
    (tmp / f"{stem}.mt").write_text("".join(r["candidate"] + "\n" for r in rows))
    (tmp / f"{stem}.src").write_text("".join(r["source"] + "\n" for r in rows))
    (tmp / f"{stem}.tags").write_text("".join(t + "\n" for t in tags))
    return tmp / f"{stem}.tags"


def _user(tmp: Path, dev_rows=None) -> list[str]:
    """--test-gold/--dev-gold options of 8 ro-en test and 8 dev texts (``dev_rows`` instead)."""
    test = tags_file(tmp, "test", _gold(WORDS, "test"))
    dev = tags_file(tmp, "dev", dev_rows if dev_rows is not None else _gold(WORDS, "dev"))
    return ["--test-gold", str(test), "--dev-gold", str(dev)]


def run_argv(out: Path, *extra: str, quick: bool = True) -> list[str]:
    return [*(["--quick"] if quick else []), "--out", str(out), "--model", str(FIXTURE / "base"),
            "--head", str(FIXTURE / "head"), "--device", "cpu", "--batch-size", "4", *extra]


def _named_data(tmp: Path, dev_rows=None) -> Path:
    data = tmp / "data"
    write_gz(data / WORDS / "dev.jsonl.gz", dev_rows if dev_rows is not None else _gold(WORDS, "dev"))
    write_gz(data / WORDS / "test.jsonl.gz", _gold(WORDS, "test"))
    return data


def _ran(code: int, err: str) -> tuple[str, str] | None:
    """None for a run that ended well, else its outcome."""
    return None if code == 0 else ((TRACEBACK if "Traceback" in err else SILENT), err[-300:])


def out_committed_run(tmp: Path) -> tuple[str, str]:
    """The issue's repro: --out a committed et-en run (of a copy of the results)."""
    committed = _mod("committed")
    results = tmp / "results"
    shutil.copytree(RECIPE / "results" / "user-eten", results / "user-eten")
    before = snapshot(results)
    with patched((committed, "RESULTS", results)):
        code, err = call("run", run_argv(results / "user-eten" / "labelled_roen_mix1", *_user(tmp)))
    return kept(before, results, judge(code, err, "--out"))


def out_git_tracked(tmp: Path) -> tuple[str, str]:
    """--out a run folder that another checkout's git tracks."""
    repo = tmp / "repo"
    kept_run = repo / "results" / "kept"
    shutil.copytree(RECIPE / "results" / "user-eten" / "prior001", kept_run)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    before = snapshot(repo / "results")
    code, err = call("run", run_argv(kept_run, *_user(tmp)))
    return kept(before, repo / "results", judge(code, err, "--out"))


def out_another_run(tmp: Path) -> tuple[str, str]:
    """--out the folder of a run of another set."""
    out = tmp / "out"
    if bad := _ran(*call("run", run_argv(out, "--set", WORDS, "--data", str(_named_data(tmp))))):
        return bad
    before = snapshot(out)
    code, err = call("run", run_argv(out, *_user(tmp)))
    return kept(before, out, judge(code, err, "--out"))


def rerun_same_run(tmp: Path) -> tuple[str, str]:
    """The same run again into its folder, on fewer texts and resamples: replaced."""
    out, user = tmp / "out", _user(tmp)
    if bad := _ran(*call("run", run_argv(out, *user))):
        return bad
    if bad := _ran(*call("run", run_argv(out, *user, "--limit", "4", "--n-boot", "7", quick=False))):
        return bad
    res = json.loads((out / "results.json").read_text())
    names = sorted(p.name for p in out.iterdir())
    ok = (res["n_test"], res["settings"]["n_boot"]) == (4, 7) and names == sorted(_mod("run").RUN_FILES)
    return (OK, "replaced") if ok else (SILENT, f"{res['n_test']} texts, {names}")


def leak_refused(make: Callable[[Path], list[str]], *named: str) -> Case:
    """A run whose dev texts are its test texts: refused, counted, nothing written."""
    def case(tmp: Path) -> tuple[str, str]:
        code, err = call("run", run_argv(tmp / "out", *make(tmp)))
        verdict = judge(code, err, *named)
        return verdict if not (tmp / "out").exists() else (SILENT, f"{verdict[0]}; wrote the run")
    return case


def _same_path(tmp: Path) -> list[str]:
    test = tags_file(tmp, "test", _gold(WORDS, "test"))
    return ["--test-gold", str(test), "--dev-gold", str(test)]


def _byte_copy(tmp: Path) -> list[str]:
    argv = _user(tmp, _gold(WORDS, "test"))  # dev.{tags,mt,src}: copies of test's
    return argv


def _same_items_named(tmp: Path) -> list[str]:
    rows = [{**r, "id": f"dev-{k}"} for k, r in enumerate(_gold(WORDS, "test"))]
    return ["--set", WORDS, "--data", str(_named_data(tmp, rows))]


def partial_overlap(tmp: Path) -> tuple[str, str]:
    """One test text among six dev texts: the run goes on, with a warning counting it."""
    dev = [*_gold(WORDS, "dev", 5), _gold(WORDS, "test")[2]]
    code, err = call("run", run_argv(tmp / "out", *_user(tmp, dev)))
    if bad := _ran(code, err):
        return bad
    warned = [ln for ln in err.splitlines() if "warning" in ln and "1 of 6 test texts" in ln]
    return (OK, warned[0]) if warned else (SILENT, "no word of the shared text")


def run_refused(make: Callable[[Path], list[str]], *named: str) -> Case:
    def case(tmp: Path) -> tuple[str, str]:
        return judge(*call("run", run_argv(tmp / "out", *make(tmp))), *named)
    return case


def valid_user_run(tmp: Path) -> tuple[str, str]:
    if bad := _ran(*call("run", run_argv(tmp / "out", *_user(tmp)))):
        return bad
    res = json.loads((tmp / "out" / "results.json").read_text())
    ok = res["n_test"] == 6 and res["kind"] == "wmt" and res["paired"]
    return (OK, "6 test texts") if ok else (SILENT, f"{res['n_test']} {res['kind']}")


def _out_file(tmp: Path) -> list[str]:
    (tmp / "out").write_text("x")
    return _user(tmp)


CASES["run.py"] = {
    "out_a_committed_run": out_committed_run,
    "out_a_folder_git_tracks": out_git_tracked,
    "out_another_runs_folder": out_another_run,
    "rerun_of_the_same_run": rerun_same_run,
    "dev_gold_same_path_as_test": leak_refused(_same_path, "--dev-gold", "6 of 6"),
    "dev_gold_byte_copy_of_test": leak_refused(_byte_copy, "--dev-gold", "6 of 6"),
    "dev_split_same_items_other_ids": leak_refused(_same_items_named, "dev.jsonl.gz", "6 of 6"),
    "dev_shares_one_text": partial_overlap,
    "test_gold_missing": run_refused(
        lambda tmp: ["--test-gold", str(tmp / "nope.tags"), "--dev-share", "0.5"], "nope.tags"),
    "out_is_a_file": run_refused(_out_file, "--out"),
    "dev_gold_and_dev_share": run_refused(
        lambda tmp: [*_user(tmp), "--dev-share", "0.5"], "--dev-gold", "--dev-share"),
    "valid_user_files": valid_user_run,
}


# -- labelled_tables --keep ------------------------------------------------------------------


def keep_case(make: Callable[[Path], Path], *named: str) -> Case:
    """``--keep`` a run into a copy of the committed et-en runs: refused, nothing changed."""
    def case(tmp: Path) -> tuple[str, str]:
        committed = _mod("committed")
        results = tmp / "results"
        shutil.copytree(RECIPE / "results" / "user-eten", results / "user-eten")
        run = make(tmp)
        before = snapshot(results)
        with patched((committed, "RESULTS", results)):
            code, err = call("labelled_tables", ["--keep", str(run), "--head", "labelled_roen"])
        return kept(before, results, judge(code, err, *named), SILENT)
    return case


def _quick_other_set(tmp: Path) -> Path:
    out = tmp / "quick"
    code, err = call("run", run_argv(out, "--set", WORDS, "--data", str(_named_data(tmp))))
    assert code == 0, err
    return out


def _full_other_set(tmp: Path) -> Path:
    shutil.copytree(RECIPE / "results" / WORDS, tmp / "full",
                    ignore=shutil.ignore_patterns("heads", "*.gz"))
    return tmp / "full"


def _eten_run(tmp: Path, drop: str | None = None) -> Path:
    run = tmp / "run"
    shutil.copytree(RECIPE / "results" / "user-eten" / "labelled_roen", run)
    res = json.loads((run / "results.json").read_text())
    res["settings"]["head"] = str(tmp / "heads" / "roen-lab")
    (run / "results.json").write_text(json.dumps(res))
    if drop:
        (run / drop).unlink()
    return run


def keep_valid(tmp: Path) -> tuple[str, str]:
    committed = _mod("committed")
    results = tmp / "results"
    shutil.copytree(RECIPE / "results" / "user-eten", results / "user-eten")
    with patched((committed, "RESULTS", results)):
        code, err = call("labelled_tables", ["--keep", str(_eten_run(tmp)), "--head", "labelled_roen"])
    if bad := _ran(code, err):
        return bad
    res = json.loads((results / "user-eten" / "labelled_roen" / "results.json").read_text())
    return (OK, "kept") if res["settings"]["head"] == "heads/roen-lab" else (SILENT, str(res["settings"]))


CASES["labelled_tables --keep"] = {
    "keep_a_quick_run_of_another_set": keep_case(_quick_other_set, "results.json"),
    "keep_a_run_without_report": keep_case(lambda tmp: _eten_run(tmp, "report.md"), "report.md"),
    "keep_a_run_without_results": keep_case(lambda tmp: _eten_run(tmp, "results.json"), "results.json"),
    "keep_a_whole_run_of_another_set": keep_case(_full_other_set, "results.json", "et-en"),
    "keep_a_whole_eten_run": keep_valid,
}

ALL = [(group, name, fn) for group, cases in CASES.items() for name, fn in cases.items()]


# -- pytest ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("group", "name", "fn"), ALL, ids=[f"{g}:{n}" for g, n, _ in ALL])
def test_case(tmp_path, group, name, fn):
    outcome, detail = fn(tmp_path)
    assert outcome in (CLEAR, OK), f"{group} / {name}: {outcome}: {detail}"


@pytest.mark.parametrize("at", ["staged dev.scores.jsonl.gz", "staged test.scores.jsonl.gz",
                                "staged rescored.json", "replace test.scores.jsonl.gz",
                                "replace rescored.json"])
def test_a_kill_at_each_step_of_adopt_leaves_every_file_whole(tmp_path, at):
    """A kill injected at each write of adopt: before the renames nothing changes; once they
    began, each file is whole (old or new) and running adopt again completes the splice."""
    from sigmoid_head.safe import files

    splice, committed = _mod("splice"), _mod("committed")
    results = _results(tmp_path)
    run = _run_dir(tmp_path, results, (3, 7), _seq(lambda v: v / 2, changed=True), variant=False)
    before = snapshot(results)

    def fault(name: str) -> None:
        if name == at:
            raise Killed(name)

    argv = ["adopt", str(run), "--set", MQM]
    with patched((splice, "RESULTS", results), (committed, "RESULTS", results)):
        with patched((files, "fault_point", fault)):
            assert call("splice", argv)[0] == -1
        if at.startswith("staged"):
            assert snapshot(results) == before  # no temp file left either
        for p in (results / MQM).glob("*.gz"):
            assert rows_gz(p)
        assert call("splice", argv)[0] == 0
    after = rows_gz(results / MQM / "test.scores.jsonl.gz")
    assert after[3]["sigmoid"] == pytest.approx(rows_gz(run / "test.scores.jsonl.gz")[0]["sigmoid"],
                                                rel=1e-5)
    assert not [p for p in (results / MQM).iterdir() if p.name.startswith(".")]


def test_column_gap_counts_a_missing_or_non_finite_score_as_not_reproduced():
    splice = _mod("splice")
    row = {"id": "a", "sigmoid": 0.5, "words": [0.5, 0.25]}
    for bad in (math.nan, math.inf, None, "0.5"):
        assert splice.column_gap({**row, "sigmoid": bad}, row)[0] == math.inf
        assert splice.column_gap({**row, "words": [bad, 0.25]}, row)[1] == math.inf
    assert splice.column_gap({"id": "a", "words": [0.5, 0.25]}, row)[0] == math.inf
    assert splice.column_gap({**row, "words": [0.5]}, row)[1] == math.inf
    assert splice.column_gap(row, dict(row)) == (0.0, 0.0)


# -- the table ---------------------------------------------------------------------------------


def table() -> str:
    """Run every case; the outcomes per class as a markdown table, then the failures."""
    rows: dict[str, Counter] = {}
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for k, (group, name, fn) in enumerate(ALL):
            tmp = Path(d) / f"case{k}"
            tmp.mkdir()
            try:
                outcome, detail = fn(tmp)
            except Exception:  # noqa: BLE001 - a case that crashed the harness
                outcome, detail = TRACEBACK, traceback.format_exc()[-300:]
            rows.setdefault(group, Counter())[outcome] += 1
            print(f"{group} / {name}: {outcome}: {' '.join(detail.split())[:160]}", file=sys.stderr)
            if outcome not in (CLEAR, OK):
                failures.append(f"{group} / {name}: {outcome}: {' '.join(detail.split())[:300]}")
    cols = (CLEAR, OK, TRACEBACK, SILENT, LOSS)
    lines = ["| surface | cases | clear | right | traceback | silent | loss |",
             "|---|---:|" + "---:|" * len(cols)]
    total: Counter = Counter()
    for group, counts in rows.items():
        total.update(counts)
        lines.append(f"| `{group}` | {sum(counts.values())} | "
                     + " | ".join(str(counts[c]) for c in cols) + " |")
    lines.append(f"| **all** | **{sum(total.values())}** | "
                 + " | ".join(f"**{total[c]}**" for c in cols) + " |")
    return "\n".join(lines + [""] + failures)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.path.insert(0, str(ROOT))
    print(table())
