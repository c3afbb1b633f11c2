"""Issue 26: no output file is written through a link planted by someone else (item 4)."""

from __future__ import annotations

import json

import pytest

from sigmoid_head.io_utils import LOCK_NAME, DirectoryLock, ResumableJsonlWriter, write_atomic


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "victim.txt"
    v.write_text("precious\n")
    return v


def test_write_atomic_does_not_follow_a_planted_tmp_link(tmp_path, victim):
    out = tmp_path / "out" / "calibration.json"
    out.parent.mkdir()
    (out.parent / "calibration.json.tmp").symlink_to(victim)
    write_atomic(out, "{}\n")
    assert victim.read_text() == "precious\n"
    assert out.read_text() == "{}\n" and not out.is_symlink()


def test_directory_lock_does_not_truncate_a_planted_lock_link(tmp_path, victim):
    d = tmp_path / "run"
    d.mkdir()
    (d / LOCK_NAME).symlink_to(victim)
    with DirectoryLock(d, "train"):
        pass
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("planted", [".partial.meta", ".partial"])
def test_resumable_writer_does_not_follow_planted_links(tmp_path, victim, planted):
    out = tmp_path / "o.jsonl"
    (tmp_path / ("o.jsonl" + planted)).symlink_to(victim)
    with ResumableJsonlWriter(out, key="k", total=2) as w:
        w.write_many([{"i": 0}, {"i": 1}])
    assert victim.read_text() == "precious\n"
    assert [json.loads(x)["i"] for x in out.read_text().splitlines()] == [0, 1]
