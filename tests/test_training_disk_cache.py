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
    assert sorted(p.name for p in (cache / "train").iterdir())[:3] == [
        "dominant-0.bin", "dominant.idx", "filled.u8"]
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
