"""scoring/corpus.py: corpus scoring as a library call gives the CLI's files byte for byte,
with the head folder's combined score, calibration and error spans; the ``score`` and
``generate`` options and their help come from the settings' dataclass fields."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_cli import FIXTURE, _pairs

from sigmoid_head.cli import build_parser, main
from sigmoid_head.evaluation.calibration import Calibrator
from sigmoid_head.evaluation.combination import Combination
from sigmoid_head.evaluation.spans import SpanConfig
from sigmoid_head.head.model import SigmoidHeadModel
from sigmoid_head.scoring.corpus import CorpusConfig, generate_corpus, score_corpus
from sigmoid_head.scoring.decoding import DecodingConfig


@pytest.fixture(scope="module")
def explained(tmp_path_factory) -> tuple[Path, list[dict], Path, Path]:
    """A copy of the 0.1.0 fixture head with a calibration, error-span settings and a
    combination saved in it; returns (head, the input records, sources, candidates)."""
    tmp = tmp_path_factory.mktemp("explained")
    head = tmp / "head"
    shutil.copytree(FIXTURE / "head", head)
    src, cand = _pairs(tmp)
    records = [{"source": s, "candidate": c} for s, c in zip(
        src.read_text(encoding="utf-8").splitlines(), cand.read_text(encoding="utf-8").splitlines(),
        strict=True)]
    rows = score_corpus(_model(head), records, CorpusConfig(quiet=True, with_tokens=True)).rows
    Calibrator.fit(rows, [1, 0, 1]).save(head)
    SpanConfig(threshold=0.2).save(head)
    Combination(0.5, "boostedprob_mean_log", "test").save(head)
    return head, records, src, cand


def _model(head: Path) -> SigmoidHeadModel:
    return SigmoidHeadModel.from_pretrained(head, str(FIXTURE / "base"), device="cpu")


def test_the_library_writes_the_files_the_cli_writes(explained, tmp_path: Path) -> None:
    head, records, src, cand = explained
    cli, lib = tmp_path / "cli", tmp_path / "lib"
    assert main(["score", "-s", str(src), "-t", str(cand), "--head", str(head), "--model",
                 str(FIXTURE / "base"), "--device", "cpu", "--quiet", "--batch-size", "2",
                 "--to-json", str(cli) + ".jsonl", "--html", str(cli) + ".html"]) == 0
    config = CorpusConfig(batch_size=2, quiet=True, to_json=str(lib) + ".jsonl", html=str(lib) + ".html")
    result = score_corpus(_model(head), records, config)
    for suffix in (".jsonl", ".html"):
        assert Path(str(lib) + suffix).read_bytes() == Path(str(cli) + suffix).read_bytes()
    rows = [json.loads(line) for line in Path(str(lib) + ".jsonl").read_text().splitlines()]
    assert result.n == 3 and result.rows is None
    assert result.means["sigmoid"] == pytest.approx(sum(r["sigmoid"] for r in rows) / 3)
    for r in rows:  # what the head folder adds
        assert {"combined", "combined_log", "sigmoid_platt", "softmax_isotonic", "errors", "tokens"} <= set(r)


def test_the_library_returns_the_explained_rows_without_a_file(explained) -> None:
    head, records, _, _ = explained
    result = score_corpus(_model(head), records, CorpusConfig(quiet=True))
    assert len(result.rows) == 3
    for r in result.rows:
        assert {"combined", "sigmoid_platt", "sigmoid_isotonic", "errors"} <= set(r)
        assert "tokens" not in r and "words" not in r  # the spans needed them, the rows do not
        assert r["combined_log"] == pytest.approx(0.5 * r["sigmoid_mean_log"] + 0.5 * r["boostedprob_mean_log"])


def test_generate_from_the_library_writes_the_cli_file(explained, tmp_path: Path) -> None:
    head, records, src, _ = explained
    cli, lib = tmp_path / "cli.jsonl", tmp_path / "lib.jsonl"
    assert main(["generate", "-s", str(src), "--head", str(head), "--model", str(FIXTURE / "base"),
                 "--device", "cpu", "--quiet", "--max-new-tokens", "4", "--to-json", str(cli)]) == 0
    sources = [{"source": r["source"]} for r in records]
    generate_corpus(_model(head), sources, CorpusConfig(quiet=True, to_json=str(lib)),
                    DecodingConfig(max_new_tokens=4))
    assert lib.read_bytes() == cli.read_bytes()


@pytest.mark.parametrize("command", ["score", "generate"])
def test_every_option_has_help_from_the_settings(command: str) -> None:
    parser = build_parser([command])
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    for action in sub._actions:
        assert action.help, f"{command} {action.option_strings} has no help"
    text = " ".join(sub.format_help().split())
    assert "--batch-size BATCH_SIZE Sequences per forward pass." in text
    if command == "generate":
        assert "--top-p TOP_P Nucleus sampling mass (1 = off)." in text


def test_settings_are_checked_before_any_model_is_loaded() -> None:
    with pytest.raises(ValueError, match="need --rauq"):
        CorpusConfig(rauq_alpha=0.5)
    with pytest.raises(ValueError, match=">= 1"):
        CorpusConfig(batch_size=0)
