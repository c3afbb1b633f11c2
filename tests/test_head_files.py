"""head_files owns the head folder for writing as well as reading: every extra that
``calibrate`` fits is written through it (atomically, one format), read back through it
into the same objects, and ``push_folder`` uploads exactly the list it gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hub import REPO, StandInHub, hub, trained_head  # noqa: F401 (fixtures)

from sigmoid_head.evaluation.calibration import Calibrator
from sigmoid_head.evaluation.combination import Combination
from sigmoid_head.evaluation.extras import EXTRA_CLASSES, head_extras, head_quality_model
from sigmoid_head.evaluation.quality_model import QualityModel
from sigmoid_head.evaluation.spans import SpanConfig
from sigmoid_head.evaluation.word_model import WordModel
from sigmoid_head.head import files as head_files
from sigmoid_head.safe import files as io_utils

ROWS = [{"sigmoid": p} for p in (0.9, 0.2, 0.8, 0.3, 0.7, 0.1)]


def _fitted() -> dict[str, object]:
    """One object of each extra, as ``calibrate`` makes them."""
    return {head_files.CALIBRATION_NAME: Calibrator.fit(ROWS, [1, 0, 1, 0, 1, 0], ["sigmoid"]),
            head_files.SPANS_NAME: SpanConfig(threshold=0.2, min_words=2),
            head_files.COMBINATION_NAME: Combination(0.4, "softmax_min", "test"),
            head_files.QUALITY_MODEL_NAME: QualityModel(("softmax_mean_log",), (-2.0,), (0.5,),
                                                        (1.5,), -0.3, 1.0, {"n": 10}),
            head_files.WORD_MODEL_NAME: WordModel(("word:softmax", "length"), (-2.0, 4.0), (0.5, 2.0),
                                                  (-1.5, 0.2), -0.3, 1.0, 0.4, {"n_rows": 10})}


def test_every_extra_is_written_through_head_files_and_round_trips(tmp_path: Path,
                                                                   monkeypatch) -> None:
    written: list[str] = []
    write_atomic = io_utils.write_atomic

    def spy(path, data, **kw):  # head_files writes through the module attribute
        written.append(Path(path).name)
        return write_atomic(path, data, **kw)

    monkeypatch.setattr(io_utils, "write_atomic", spy)
    fitted = _fitted()
    for name, obj in fitted.items():
        assert obj.save(tmp_path) == tmp_path / name  # type: ignore[attr-defined]
    assert written == list(fitted)
    assert not [p.name for p in tmp_path.iterdir() if p.name not in fitted]  # no .tmp left

    extras = head_files.read_extras(tmp_path)
    assert set(extras) == set(head_files.EXTRA_FILES)
    cal, spans, comb = head_extras(extras, "score", str(tmp_path))
    assert (cal, spans, comb) == tuple(fitted[n] for n in (
        head_files.CALIBRATION_NAME, head_files.SPANS_NAME, head_files.COMBINATION_NAME))
    assert head_quality_model(extras, str(tmp_path)) == fitted[head_files.QUALITY_MODEL_NAME]
    assert (head_quality_model(extras, str(tmp_path), None, head_files.WORD_MODEL_NAME)
            == fitted[head_files.WORD_MODEL_NAME])

    # the folder's writer and each class's save write the same bytes: one format
    copy = tmp_path / "copy"
    copy.mkdir()
    head_files.write_extras(copy, extras)
    for name in fitted:
        assert (copy / name).read_bytes() == (tmp_path / name).read_bytes(), name
    head_files.write_extras(copy, {head_files.SPANS_NAME: extras[head_files.SPANS_NAME]})
    assert head_files.extras_in(copy) == [head_files.SPANS_NAME]


def test_every_extra_file_has_the_class_that_parses_it() -> None:
    assert set(EXTRA_CLASSES) == set(head_files.EXTRA_FILES)
    with pytest.raises(ValueError, match="not a head folder extra"):
        head_files.write_extra(".", "notes.json", {})


def test_push_folder_uploads_the_list_head_files_gives(hub, trained_head,  # noqa: F811
                                                       monkeypatch) -> None:
    from sigmoid_head.head.hub import push_folder

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    _, head_dir = trained_head
    for obj in _fitted().values():
        obj.save(head_dir)  # type: ignore[attr-defined]
    assert head_files.push_files(head_dir) == [head_files.CONFIG_NAME, head_files.WEIGHTS_NAME,
                                               *head_files.EXTRA_FILES]
    kw = {"endpoint": hub.url, "token": "hf_test_token", "base_params": 1, "license": "mit"}
    push_folder(head_dir, REPO, **kw)
    files = StandInHub.repos[REPO]["files"]
    assert set(files) == {*head_files.push_files(head_dir), head_files.CARD_NAME}

    # a list without two of the extras: only it goes, and the repository drops the others
    listed = [head_files.CONFIG_NAME, head_files.WEIGHTS_NAME, head_files.SPANS_NAME]
    monkeypatch.setattr(head_files, "push_files", lambda d: listed)
    monkeypatch.setattr(head_files, "extras_in", lambda d: [head_files.SPANS_NAME])
    push_folder(head_dir, REPO, **kw)
    files = StandInHub.repos[REPO]["files"]
    assert set(files) == {*listed, head_files.CARD_NAME}
    assert b"`error_spans.json`" in files["README.md"]
    assert b"`calibration.json`" not in files["README.md"]
