"""Training: the loss falls, only the head changes, resume is exact."""

import importlib
import json

import pytest
import torch
from safetensors.torch import load_file

from sigmoid_head.lm.backbone import load_backbone
from sigmoid_head.training.config import TrainConfig
from sigmoid_head.training.loop import train


@pytest.mark.parametrize("fixture", ["tiny_causal_path", "tiny_seq2seq_path"])
def test_training_reduces_validation_loss_and_touches_only_the_head(train_config, train_history,
                                                                    fixture, request,
                                                                    tiny_pairs_jsonl, tmp_path):
    path = request.getfixturevalue(fixture)
    before = {k: v.clone() for k, v in load_backbone(str(path), device="cpu").model.state_dict().items()}
    model = train(train_config(path, tiny_pairs_jsonl, tmp_path, negatives="token_freq+softmax"))
    hist = train_history(tmp_path)
    assert hist[-1]["val_loss"] < 0.8 * hist[0]["val_loss"], hist
    after = model.backbone.model.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before), "backbone changed"
    initial = model.backbone.output_weight().float()
    changed = (model.head.weight != initial).any(1)  # rows that moved
    counts = model.token_counts
    assert bool(changed[counts > 0].all()), "a target row never changed"
    assert changed.float().mean() > 0.0


@pytest.mark.parametrize("optimizer", ["sparse_adam", "sparse_adamw"])
def test_rows_with_gradient_change_and_others_do_not(train_config, tiny_causal_path,
                                                     tiny_pairs_jsonl, tmp_path, optimizer):
    # With lazy sparse Adam (and row-sparse AdamW) exactly the rows that received gradient move.
    model = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, optimizer=optimizer,
                               negatives="token_freq", avoid_dominant=False, max_steps=3,
                               validation_fraction=0.0, eval_every=None,
                               untrained_prior=0.0))  # the prior would set untrained rows
    initial = model.backbone.output_weight().float()
    changed = (model.head.weight != initial).any(1)
    seen = model.token_counts > 0  # token_freq only ever draws training targets
    assert bool(changed[seen].any()) and not bool(changed[~seen].any())


def test_deferred_adamw_trains_the_head_dense_adamw_trains(train_config, train_history, tiny_causal_path,
                                                         tiny_pairs_jsonl, tmp_path):
    """deferred_adamw (sparse row gradients, the skipped rows' steps applied before the rows are
    read again) gives dense AdamW's head: atol 1e-6 on weights of size ~0.16 (3e-8 here:
    float32 in another order) and rtol 1e-5 on the validation losses. The lazy sparse_adamw
    does not (3.8e-3 here)."""
    kw = dict(negatives="token_freq", max_steps=24, eval_every=8, validation_fraction=0.1, lr=1e-2,
              untrained_prior=0.0, weight_decay=0.01)
    from sigmoid_head.lm.profiles import device_profile

    heads = {o: train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / o, optimizer=o, **kw)).head.weight
             for o in ("adamw", "deferred_adamw", "sparse_adamw")}
    with device_profile("cuda"):  # the accelerator's fixed-shape path, forced on the CPU
        fixed = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "fixed", optimizer="deferred_adamw",
                                   **kw)).head.weight
    assert torch.allclose(fixed, heads["adamw"], rtol=0, atol=1e-6)
    assert torch.allclose(heads["deferred_adamw"], heads["adamw"], rtol=0, atol=1e-6)
    assert not torch.allclose(heads["sparse_adamw"], heads["adamw"], rtol=0, atol=1e-3)
    dense, deferred = train_history(tmp_path / "adamw"), train_history(tmp_path / "deferred_adamw")
    assert [h["step"] for h in dense] == [h["step"] for h in deferred]
    assert [h["val_loss"] for h in deferred] == pytest.approx([h["val_loss"] for h in dense], rel=1e-5)


def test_best_head_is_selected_and_files_written(train_config, tiny_causal_path, tiny_pairs_jsonl,
                                                 tmp_path):
    train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, max_steps=20))
    rec = json.loads((tmp_path / "head_config.json").read_text())["training"]
    best = min(h["val_loss"] for h in rec["history"])
    assert rec["best_val_loss"] == pytest.approx(best)
    final = load_file(str(tmp_path / "head.safetensors"))["weight"]
    assert torch.equal(final, load_file(str(tmp_path / "best" / "head.safetensors"))["weight"])
    assert (tmp_path / "checkpoint" / "trainer_state.json").is_file()


@pytest.mark.parametrize("optimizer", ["adamw", "sparse_adamw", "deferred_adamw"])
def test_interrupted_then_resumed_equals_uninterrupted(train_config, train_history,
                                                       tiny_causal_path, tiny_pairs_jsonl, tmp_path,
                                                       monkeypatch, optimizer):
    train_module = importlib.import_module("sigmoid_head.training.step")  # where micro_loss finds it

    kw = dict(negatives="token_freq+softmax", max_steps=16, eval_every=4, validation_fraction=0.1,
              optimizer=optimizer)
    full = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "a", **kw))
    # kill the second run part-way through step 11 (its last checkpoint is from step 8)
    real, calls = train_module.batch_loss, {"n": 0}

    def dying(ctx, batch, gen, *labels):
        calls["n"] += 1
        if calls["n"] == 17:
            raise KeyboardInterrupt
        return real(ctx, batch, gen, *labels)

    monkeypatch.setattr(train_module, "batch_loss", dying)
    with pytest.raises(KeyboardInterrupt):
        train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "b", **kw))
    monkeypatch.setattr(train_module, "batch_loss", real)
    state = json.loads((tmp_path / "b" / "checkpoint" / "trainer_state.json").read_text())
    assert 0 < state["state"]["step"] < 16
    resumed = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "b", **kw))
    assert torch.equal(full.head.weight, resumed.head.weight)
    ck_a = torch.load(tmp_path / "a" / "checkpoint" / "state.pt", weights_only=True)
    ck_b = torch.load(tmp_path / "b" / "checkpoint" / "state.pt", weights_only=True)
    assert torch.equal(ck_a["head"]["weight"], ck_b["head"]["weight"])
    assert train_history(tmp_path / "a") == train_history(tmp_path / "b")


def test_resume_refuses_other_settings(train_config, tiny_causal_path, tiny_pairs_jsonl, tmp_path):
    train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, max_steps=2))
    with pytest.raises(ValueError, match="different settings"):
        train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, max_steps=4, lr=1e-3))


def test_config_validation():
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(train_file="x", output_dir="y", optimizer="sgd")
    with pytest.raises(ValueError, match="unknown negative sampler"):
        TrainConfig(train_file="x", output_dir="y", negatives="token_freq+nope")
    with pytest.raises(ValueError, match="source"):
        TrainConfig(train_file="x", output_dir="y", prompt_template="no placeholder")


@pytest.mark.parametrize("negatives", ["token_freq", "token_freq+softmax"])
def test_hidden_state_cache_gives_the_same_training(train_config, train_history, negatives,
                                                    tiny_causal_path, tiny_pairs_jsonl, tmp_path):
    kw = dict(negatives=negatives, epochs=3, eval_every=10, validation_fraction=0.1)
    plain = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "plain", **kw))
    cached = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path / "cached",
                                cache_hidden=True, **kw))
    a, b = train_history(tmp_path / "plain"), train_history(tmp_path / "cached")
    assert [h["step"] for h in a] == [h["step"] for h in b] and len(a) > 3
    for x, y in zip(a, b, strict=True):
        assert x["val_loss"] == pytest.approx(y["val_loss"], rel=1e-4)
    torch.testing.assert_close(plain.head.weight, cached.head.weight, rtol=1e-3, atol=1e-4)


def test_token_batches_with_accumulation_train(train_config, train_history, tiny_seq2seq_path,
                                               tiny_pairs_jsonl, tmp_path):
    model = train(train_config(tiny_seq2seq_path, tiny_pairs_jsonl, tmp_path, batch_size=None,
                               max_tokens=256, grad_accum=2, max_steps=8, eval_every=4))
    hist = train_history(tmp_path)
    assert [h["step"] for h in hist] == [0, 4, 8] and hist[-1]["val_loss"] < hist[0]["val_loss"]
    assert model.config.training["max_tokens"] == 256 and model.config.training["batch_size"] is None


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_backbone_trains_a_float32_head(train_config, train_history,
                                                       tiny_causal_path, tiny_pairs_jsonl, tmp_path,
                                                       dtype, device, skip_unless_cpu_runs):
    if device == "cpu":
        skip_unless_cpu_runs(dtype)
    model = train(train_config(tiny_causal_path, tiny_pairs_jsonl, tmp_path, dtype=dtype,
                               max_steps=6, eval_every=3, device=device))
    assert model.backbone.dtype == getattr(torch, dtype) and model.head.weight.dtype == torch.float32
    assert model.head.weight.device.type == device
    hist = train_history(tmp_path)
    assert hist[-1]["val_loss"] < hist[0]["val_loss"]

