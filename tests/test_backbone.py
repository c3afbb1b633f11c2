"""The captured hidden states are exactly what each LM head sees."""

import pytest
import torch

from sigmoid_head.data.batching import Collator
from sigmoid_head.data.tokenize import tokenize_records
from sigmoid_head.lm.backbone import load_backbone

PAIRS = [{"source": "el perro come pan", "target": "the dog eats bread"},
         {"source": "la casa", "target": "the house is big and red"}]


@pytest.mark.parametrize("fixture", ["tiny_causal_path", "tiny_gpt2_path", "tiny_seq2seq_path",
                                     "tiny_t5_path"])
def test_positions_match_model_logits(fixture, request):
    backbone = load_backbone(str(request.getfixturevalue(fixture)), device="cpu")
    examples, _ = tokenize_records(PAIRS, backbone.tokenizer,
                                   is_encoder_decoder=backbone.is_encoder_decoder)
    batch = Collator(backbone.tokenizer.pad_token_id, backbone.is_encoder_decoder)(examples)
    pos = backbone.positions(batch)
    kwargs = {k: batch[k] for k in ("input_ids", "attention_mask")}
    if backbone.is_encoder_decoder:
        kwargs["decoder_input_ids"] = backbone.decoder_inputs(batch["labels"])
    with torch.no_grad():
        ref = backbone.model(**kwargs).logits  # (B, T, V)
    labels = batch["labels"]
    if backbone.is_encoder_decoder:
        want_rows, want_cols = (labels != -100).nonzero(as_tuple=True)
        ref_logits = ref[want_rows, want_cols]
    else:
        want_rows, want_cols = (labels[:, 1:] != -100).nonzero(as_tuple=True)
        ref_logits = ref[want_rows, want_cols]  # position t predicts labels[t + 1]
        want_cols = want_cols + 1
    assert torch.equal(pos.row, want_rows) and torch.equal(pos.col, want_cols)
    assert torch.equal(pos.targets, labels[want_rows, want_cols])
    torch.testing.assert_close(pos.logits, ref_logits.float(), rtol=1e-5, atol=1e-5)
    # the head initialised from the LM head reproduces the LM logits on gathered rows
    from sigmoid_head.head.model import SigmoidHeadModel

    shm = SigmoidHeadModel.from_base(backbone, bias=True)
    got = shm.head.logits(pos.hidden, pos.targets.unsqueeze(1)).squeeze(1)
    want = ref_logits.gather(1, pos.targets.unsqueeze(1)).squeeze(1)
    torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-5)


def test_backbone_is_frozen(tiny_causal_path):
    backbone = load_backbone(str(tiny_causal_path), device="cpu")
    assert not backbone.model.training
    assert all(not p.requires_grad for p in backbone.model.parameters())


def test_bad_dtype_is_refused(tiny_causal_path):
    with pytest.raises(ValueError, match="unknown dtype"):
        load_backbone(str(tiny_causal_path), dtype="float8")


@pytest.mark.parametrize("content", ["evil", "garbage", "cut_zip"])
def test_a_refused_pickle_weights_file_ends_in_one_line(tiny_causal_path, tmp_path, content):
    """A base model whose pytorch_model.bin is refused by torch's safe loader (a pickle that
    would run code, garbage, a cut file): a one-line ValueError, and nothing of it ran."""
    import io
    import os
    import pickle
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(tiny_causal_path, folder)
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "RAN"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    if content == "evil":
        data = pickle.dumps(Evil())
    elif content == "garbage":
        data = b"garbage"
    else:
        buf = io.BytesIO()
        torch.save({"x": torch.ones(3)}, buf)
        data = buf.getvalue()[:200]
    (folder / "pytorch_model.bin").write_bytes(data)
    with pytest.raises(ValueError) as err:
        load_backbone(str(folder), device="cpu")
    assert str(folder) in str(err.value) and "\n" not in str(err.value)
    assert not marker.exists()


def test_loading_the_frozen_model_pulls_in_no_upload_or_card_code() -> None:
    """backbone asks hub_access whether the Hub can be reached; importing it must not
    import the Hub's upload code, the model card or the head file format."""
    import subprocess
    import sys

    code = ("import sys, sigmoid_head.lm.backbone; print(sorted(m for m in ('sigmoid_head.head.hub', "
            "'sigmoid_head.head.model_card', 'sigmoid_head.head.folder') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
