"""data/batching.py: length-bucketed batches, dynamic padding, collated batches train."""

from __future__ import annotations

import pytest
import torch

from sigmoid_head.data.batching import IGNORE_INDEX, Collator, example_length, make_batches
from sigmoid_head.data.tokenize import load_examples, tokenize_records

LENGTHS = [((i * 37) % 50) + 1 for i in range(503)]


def ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def flat(batches: list[list[int]]) -> list[int]:
    return [i for b in batches for i in b]


@pytest.mark.parametrize("kw", [{"batch_size": 8}, {"max_tokens": 120}])
def test_make_batches_every_index_once(kw):
    for shuffle in (True, False):
        batches = make_batches(LENGTHS, shuffle=shuffle, **kw)
        assert sorted(flat(batches)) == list(range(len(LENGTHS)))


def test_make_batches_token_budget():
    lengths = LENGTHS + [300]
    batches = make_batches(lengths, max_tokens=120, seed=3)
    for b in batches:
        cost = len(b) * max(lengths[i] for i in b)
        assert cost <= 120 or len(b) == 1
    assert [len(lengths) - 1] in batches  # the long example is alone
    assert all(len(b) <= 8 for b in make_batches(LENGTHS, batch_size=8))


def test_make_batches_deterministic_and_epoch_dependent():
    a = make_batches(LENGTHS, max_tokens=120, seed=1, epoch=0)
    assert a == make_batches(LENGTHS, max_tokens=120, seed=1, epoch=0)
    assert a != make_batches(LENGTHS, max_tokens=120, seed=1, epoch=1)
    assert a != make_batches(LENGTHS, max_tokens=120, seed=2, epoch=0)


def test_make_batches_no_shuffle_keeps_order():
    batches = make_batches(LENGTHS, batch_size=7, shuffle=False)
    assert flat(batches) == list(range(len(LENGTHS)))
    assert all(len(b) == 7 for b in batches[:-1])
    assert flat(make_batches(LENGTHS, max_tokens=100, shuffle=False)) == list(range(len(LENGTHS)))


def test_make_batches_bucketing_cuts_padding():
    def padding(batches):
        return sum(
            len(b) * max(LENGTHS[i] for i in b) - sum(LENGTHS[i] for i in b) for b in batches
        )

    bucketed = make_batches(LENGTHS, batch_size=8, seed=0)
    unsorted = make_batches(LENGTHS, batch_size=8, shuffle=False)
    assert padding(bucketed) < padding(unsorted) / 3


def test_make_batches_needs_exactly_one_budget():
    with pytest.raises(ValueError):
        make_batches(LENGTHS)
    with pytest.raises(ValueError):
        make_batches(LENGTHS, batch_size=2, max_tokens=10)


def test_collator_causal_dynamic_padding(tiny_tokenizer):
    tok = tiny_tokenizer
    records = [{"source": "el perro", "target": "the dog"}, {"text": "el gato come el pan hoy"}]
    examples, _ = tokenize_records(records, tok, is_encoder_decoder=False, max_length=512)
    longest = max(len(ex["input_ids"]) for ex in examples)
    for side in ("right", "left"):
        batch = Collator(tok.pad_token_id, is_encoder_decoder=False, padding_side=side)(examples)
        assert set(batch) == {"input_ids", "attention_mask", "labels"}
        assert batch["input_ids"].shape == batch["labels"].shape == (2, longest)
        assert batch["input_ids"].dtype == torch.long
        for row, ex in enumerate(examples):
            n = len(ex["input_ids"])
            sl = slice(0, n) if side == "right" else slice(longest - n, longest)
            assert batch["input_ids"][row, sl].tolist() == ex["input_ids"]
            assert batch["labels"][row, sl].tolist() == ex["labels"]
            assert batch["attention_mask"][row].sum() == n
            pad = batch["attention_mask"][row] == 0
            assert (batch["input_ids"][row][pad] == tok.pad_token_id).all()
            assert (batch["labels"][row][pad] == IGNORE_INDEX).all()


def test_collator_seq2seq_dynamic_padding(tiny_tokenizer):
    tok = tiny_tokenizer
    records = [
        {
            "source": "el perro",
            "target": "the dog eats the bread here today, the cat reads a book now",
        },
        {"source": "el gato come el pan aquí hoy ahora", "target": "the cat"},
    ]
    examples, _ = tokenize_records(records, tok, is_encoder_decoder=True, max_length=512)
    batch = Collator(tok.pad_token_id, is_encoder_decoder=True)(examples)
    s = max(len(ex["input_ids"]) for ex in examples)
    lab = max(len(ex["labels"]) for ex in examples)
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, s)
    assert batch["labels"].shape == (2, lab)
    assert s != lab
    assert batch["labels"][1, len(examples[1]["labels"]) :].eq(IGNORE_INDEX).all()
    assert batch["input_ids"][0, len(examples[0]["input_ids"]) :].eq(tok.pad_token_id).all()


@pytest.mark.parametrize(
    ("fixture", "seq2seq"),
    [
        ("tiny_causal_path", False),
        ("tiny_gpt2_path", False),
        ("tiny_seq2seq_path", True),
        ("tiny_t5_path", True),
    ],
)
def test_tiny_models_train_on_collated_batches(request, tiny_pairs_jsonl, fixture, seq2seq):
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    path = request.getfixturevalue(fixture)
    tok = AutoTokenizer.from_pretrained(path)
    auto = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
    model = auto.from_pretrained(path)
    examples = load_examples(tiny_pairs_jsonl, tok, is_encoder_decoder=seq2seq)
    batches = make_batches([example_length(ex) for ex in examples], max_tokens=400)
    batch = Collator(tok.pad_token_id, is_encoder_decoder=seq2seq)(
        [examples[i] for i in batches[0]]
    )
    with torch.no_grad():
        loss = model(**batch).loss
    assert torch.isfinite(loss)
    assert 5.0 < loss.item() < 9.0  # ~log(1000) for a random model
