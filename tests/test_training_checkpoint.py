"""Early stopping, best-checkpoint selection, and resuming checkpoints of earlier versions."""

import json

import pytest

from sigmoid_head.training.config import TrainConfig
from sigmoid_head.training.loop import train


def test_early_stopping_keeps_the_best_head(tiny_causal_path, tiny_pairs_jsonl, tmp_path):
    # a learning rate far too large makes the validation loss climb after the start
    config = TrainConfig(train_file=str(tiny_pairs_jsonl), output_dir=str(tmp_path), model=str(tiny_causal_path),
                         lr=50.0, warmup_ratio=0.0, batch_size=16, max_steps=40, eval_every=2, patience=2,
                         progress=False, validation_fraction=0.15, device="cpu", untrained_prior=0.0)
    model = train(config)
    rec = json.loads((tmp_path / "head_config.json").read_text())["training"]
    hist = rec["history"]
    assert rec["steps"] < 40, "early stopping never triggered"
    best = min(hist, key=lambda h: h["val_loss"])
    assert rec["best_step"] == best["step"]
    # the two evaluations after the best one were both worse
    after = [h for h in hist if h["step"] > best["step"]]
    assert len(after) == 2 and all(h["val_loss"] >= best["val_loss"] for h in after)
    if best["step"] == 0:  # the untrained copy of the LM head was best: the head is that copy
        assert (model.head.weight == model.backbone.output_weight().float()).all()


def test_a_checkpoint_written_before_the_scale_settings_resumes(train_config, tiny_causal_path,
                                                                 tiny_pairs_jsonl, tmp_path,
                                                                 capsys):
    """The release before issue 16 stored no data_engine / disk_cache_dtype and stored
    cache_dtype "float32": such a checkpoint resumes, also onto the disk cache."""
    def config(**kw):
        return train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, eval_every=2,
                            cache_hidden=True, **kw)

    train(config(max_steps=2))
    state = tmp_path / "checkpoint" / "trainer_state.json"
    meta = json.loads(state.read_text())
    assert meta["key"]["cache_dtype"] == "float32"
    for added in ("data_engine", "disk_cache_dtype"):
        del meta["key"][added]
    state.write_text(json.dumps(meta))
    capsys.readouterr()
    train(config(max_steps=4, cache_dir=str(tmp_path / "hidden")))
    assert "resuming from step 2" in capsys.readouterr().out
    assert json.loads(state.read_text())["state"]["step"] == 4
    # a stored value that differs from the default is refused (the check is live): the
    # default "auto" an unmerged draft of this issue gave cache_dtype would have been
    meta = json.loads(state.read_text())
    meta["key"]["cache_dtype"] = "auto"
    state.write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"different settings \(cache_dtype\)"):
        train(config(max_steps=6))


@pytest.mark.parametrize("planted", ["evil_pickle", "garbage", "not_a_state"])
def test_a_planted_state_pt_ends_in_one_line(train_config, tiny_causal_path, tiny_pairs_jsonl,
                                             tmp_path, planted):
    """A checkpoint/state.pt replaced by someone else: refused with a one-line ValueError
    naming it (never unpickled beyond torch's safe loader), not an UnpicklingError traceback."""
    import os
    import pickle

    import torch

    def config(**kw):
        return train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, eval_every=2, **kw)

    train(config(max_steps=2))
    state = tmp_path / "checkpoint" / "state.pt"
    marker = tmp_path / "RAN"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    if planted == "evil_pickle":
        state.write_bytes(pickle.dumps(Evil()))
    elif planted == "garbage":
        state.write_bytes(b"\x80\x02garbage")
    else:
        torch.save({"head": {"weight": torch.ones(2)}}, state)
    with pytest.raises(ValueError) as err:
        train(config(max_steps=4))
    assert str(state) in str(err.value) and "--no-resume" in str(err.value)
    assert "\n" not in str(err.value) and not marker.exists()
