"""Early stopping and best-checkpoint selection."""

import json

from sigmoid_head.training.config import TrainConfig
from sigmoid_head.training.loop import train


def test_early_stopping_keeps_the_best_head(tiny_causal_path, tiny_pairs_jsonl, tmp_path):
    # a learning rate far too large makes the validation loss climb after the start
    config = TrainConfig(train_file=str(tiny_pairs_jsonl), output_dir=str(tmp_path), model=str(tiny_causal_path),
                         lr=50.0, warmup_ratio=0.0, batch_size=16, max_steps=40, eval_every=2, patience=2,
                         progress=False, validation_fraction=0.15, device="cpu")
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
