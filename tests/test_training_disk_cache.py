"""The disk-backed hidden-state cache (training/disk_cache.py): same training as no cache."""

import json

import numpy as np
import pytest
import torch

from sigmoid_head.training.loop import train

pytest.importorskip("datasets")


@pytest.mark.parametrize("engine", ["memory", "datasets"])
def test_disk_cache_gives_the_same_training_and_is_reused(engine, train_config, train_history,
                                                          tiny_causal_path, tiny_pairs_jsonl,
                                                          tmp_path):
    kw = dict(negatives="token_freq", epochs=3, eval_every=10, validation_fraction=0.1,
              data_engine=engine)
    plain = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "plain", **kw))
    cache = tmp_path / "hidden"
    disk = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "disk", cache_hidden=True,
                      cache_dir=str(cache), disk_cache_dtype="float32", **kw))
    a, b = train_history(tmp_path / "plain"), train_history(tmp_path / "disk")
    assert [h["step"] for h in a] == [h["step"] for h in b] and len(a) > 3
    for x, y in zip(a, b, strict=True):
        assert x["val_loss"] == pytest.approx(y["val_loss"], rel=1e-4)
    torch.testing.assert_close(plain.head.weight, disk.head.weight, rtol=1e-3, atol=1e-4)
    assert sorted(p.name for p in (cache / "train").iterdir())[:4] == [
        ".sigmoid-head-cache", "dominant-0.bin", "dominant.idx", "filled.u8"]
    assert np.fromfile(cache / "train" / "filled.u8", np.uint8).all()
    # a second run reuses every cached example: the backbone body never runs
    calls = []
    from sigmoid_head.lm.backbone import Backbone
    original = Backbone.positions

    def counting(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    Backbone.positions = counting
    try:
        again = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "again",
                           cache_hidden=True, cache_dir=str(cache), disk_cache_dtype="float32", **kw))
    finally:
        Backbone.positions = original
    assert calls == []
    torch.testing.assert_close(again.head.weight, disk.head.weight)


def test_disk_cache_bfloat16_default_is_close(train_config, train_history, tiny_causal_path,
                                              tiny_pairs_jsonl, tmp_path):
    kw = dict(negatives="token_freq", epochs=2, eval_every=10, validation_fraction=0.1)
    train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "plain", **kw))
    train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "disk", cache_hidden=True,
                      cache_dir=str(tmp_path / "hidden"), **kw))
    meta = json.loads((tmp_path / "hidden" / "train" / "meta.json").read_text())
    assert meta["dtype"] == "torch.bfloat16"
    for x, y in zip(train_history(tmp_path / "plain"), train_history(tmp_path / "disk"),
                    strict=True):
        assert x["val_loss"] == pytest.approx(y["val_loss"], rel=2e-2)


def _count_backbone(monkeypatch) -> list[int]:
    from sigmoid_head.lm.backbone import Backbone

    calls, original = [], Backbone.positions

    def counting(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    monkeypatch.setattr(Backbone, "positions", counting)
    return calls


def test_cache_from_another_seed_copies_instead_of_running(train_config, train_history, tiny_causal_path,
                                                           tiny_pairs_jsonl, tmp_path, monkeypatch, capsys):
    """A second seed (another shuffle and validation split of the same file) takes every
    example's rows from the first run's cache by its token ids: the frozen model never runs,
    and the training equals the same seed run without the donor."""
    kw = dict(negatives="token_freq", epochs=2, eval_every=10, validation_fraction=0.2,
              cache_hidden=True, disk_cache_dtype="float32")
    train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "s0",
                       cache_dir=str(tmp_path / "c0"), seed=0, **kw))
    alone = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "s1",
                               cache_dir=str(tmp_path / "c1"), seed=1, **kw))
    calls = _count_backbone(monkeypatch)
    copied = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "s1-copied",
                                cache_dir=str(tmp_path / "c1-copied"), cache_from=str(tmp_path / "c0"),
                                seed=1, **kw))
    assert calls == []
    n = sum(1 for line in tiny_pairs_jsonl.read_text().splitlines() if line.strip())
    assert f"--cache-from: {n} examples copied" in capsys.readouterr().out
    for part in ("train", "validation"):  # the seed-1 split differs, every example was found
        assert np.fromfile(tmp_path / "c1-copied" / part / "filled.u8", np.uint8).all()
    a, b = train_history(tmp_path / "s1"), train_history(tmp_path / "s1-copied")
    assert [h["step"] for h in a] == [h["step"] for h in b] and len(a) > 2
    for x, y in zip(a, b, strict=True):
        assert x["val_loss"] == pytest.approx(y["val_loss"], rel=1e-4)
    torch.testing.assert_close(alone.head.weight, copied.head.weight, rtol=1e-3, atol=1e-4)
    # the seed-0 and seed-1 validation sets differ, else this would test nothing
    v0 = np.fromfile(tmp_path / "c0" / "validation" / "keys.bin", np.uint8).reshape(-1, 16)
    v1 = np.fromfile(tmp_path / "c1-copied" / "validation" / "keys.bin", np.uint8).reshape(-1, 16)
    assert {r.tobytes() for r in v0} != {r.tobytes() for r in v1}


def test_a_cache_without_its_keys_is_refused_as_a_donor_and_rebuilt_by_its_run(
        train_config, tiny_causal_path, tiny_pairs_jsonl, tmp_path, monkeypatch, caplog):
    """A cache whose keys.bin is gone cannot show whose rows it holds: --cache-from refuses
    it with a one-line error naming the file, nothing wiped; its own run rebuilds it, with
    a notice naming the file (issue 59: rows are never trusted without their keys)."""
    kw = dict(negatives="token_freq", epochs=1, eval_every=10, validation_fraction=0.2,
              cache_hidden=True, disk_cache_dtype="float32")
    train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "s0",
                       cache_dir=str(tmp_path / "c0"), **kw))
    for part in ("train", "validation"):
        (tmp_path / "c0" / part / "keys.bin").unlink()
    with pytest.raises(ValueError, match=r"keys\.bin is missing; the cache is damaged"):
        train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "s1",
                           cache_dir=str(tmp_path / "c1"), cache_from=str(tmp_path / "c0"), seed=1, **kw))
    assert np.fromfile(tmp_path / "c0" / "train" / "filled.u8", np.uint8).all()
    calls = _count_backbone(monkeypatch)
    with caplog.at_level("WARNING", logger="sigmoid_head.training.disk_cache"):
        train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "s0-again",
                           cache_dir=str(tmp_path / "c0"), **kw))
    assert calls and "keys.bin is missing" in caplog.text
    keys = np.fromfile(tmp_path / "c0" / "train" / "keys.bin", np.uint8).reshape(-1, 16)
    assert keys.any(axis=1).all()
    calls.clear()
    train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "s1",
                       cache_dir=str(tmp_path / "c1"), cache_from=str(tmp_path / "c0"), seed=1, **kw))
    assert calls == []


def test_cache_from_needs_a_disk_cache(train_config, tiny_causal_path, tiny_pairs_jsonl, tmp_path):
    with pytest.raises(ValueError, match="cache_from needs cache_hidden and cache_dir"):
        train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "x", cache_hidden=True,
                     cache_from=str(tmp_path))


def test_a_cache_an_older_version_made_is_rebuilt_with_a_notice(train_config, tiny_causal_path,
                                                                tiny_pairs_jsonl, tmp_path, caplog):
    """A cache of the layout before issue 59 (no marker, no model content, no checksums) is
    taken as a cache (its folder holds only a cache's files), rebuilt with a notice saying
    why, and marked as one; a file of the user's beside it stays."""
    kw = dict(negatives="token_freq", epochs=1, eval_every=10, validation_fraction=0.2,
              cache_hidden=True, disk_cache_dtype="float32", cache_dir=str(tmp_path / "c"))
    train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "s0", **kw))
    part = tmp_path / "c" / "train"
    meta = json.loads((part / "meta.json").read_text())
    meta["version"] = 1
    del meta["model"]
    (part / "meta.json").write_text(json.dumps(meta))
    for name in (".sigmoid-head-cache", "sums.bin"):
        (part / name).unlink()
    (tmp_path / "c" / "notes.txt").write_text("mine\n")
    with caplog.at_level("WARNING", logger="sigmoid_head.training.disk_cache"):
        train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "s1", **kw))
    assert f"hidden-state cache {part} is rebuilt: an older version made it" in caplog.text
    assert (part / ".sigmoid-head-cache").is_file()
    assert json.loads((part / "meta.json").read_text())["version"] == 2
    assert np.fromfile(part / "filled.u8", np.uint8).all()
    assert (tmp_path / "c" / "notes.txt").read_text() == "mine\n"
