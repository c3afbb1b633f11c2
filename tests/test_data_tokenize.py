"""data/tokenize.py: label masks of pairs, chats and text; truncation; line numbers in errors."""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import pytest

from sigmoid_head.data.batching import IGNORE_INDEX, Collator, example_length
from sigmoid_head.data.records import DataError, read_records
from sigmoid_head.data.tokenize import TruncationStats, load_examples, tokenize_records


def ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def trained_runs(labels: list[int]) -> list[list[int]]:
    """Contiguous runs of trained label values."""
    runs: list[list[int]] = []
    prev = False
    for lab in labels:
        if lab != IGNORE_INDEX:
            if not prev:
                runs.append([])
            runs[-1].append(lab)
        prev = lab != IGNORE_INDEX
    return runs


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_causal_pair_masks_prompt_and_trains_target_plus_eos(tiny_tokenizer):
    tok = tiny_tokenizer
    rec = {"source": "el perro grande", "target": "the big dog"}
    (ex,), stats = tokenize_records([rec], tok, is_encoder_decoder=False)
    prompt = [tok.bos_token_id] + ids(tok, "el perro grande\n")
    target = ids(tok, "the big dog") + [tok.eos_token_id]
    assert ex["input_ids"] == prompt + target
    assert ex["labels"] == [IGNORE_INDEX] * len(prompt) + target
    assert ex["labels"][-1] == tok.eos_token_id
    assert len(ex["labels"]) == len(ex["input_ids"])
    assert ex["is_seq2seq"] is False
    assert stats == TruncationStats(total=1, truncated=0, dropped=0)


def test_causal_pair_prompt_template(tiny_tokenizer):
    tok = tiny_tokenizer
    rec = {"source": "el gato", "target": "the cat"}
    (ex,), _ = tokenize_records(
        [rec], tok, is_encoder_decoder=False, prompt_template="Translate: {source}\nEnglish:"
    )
    prompt = [tok.bos_token_id] + ids(tok, "Translate: el gato\nEnglish:")
    assert ex["input_ids"][: len(prompt)] == prompt
    assert trained_runs(ex["labels"]) == [ids(tok, "the cat") + [tok.eos_token_id]]


def test_causal_pair_tokenizer_without_bos(tiny_tokenizer):
    from tokenizers import processors

    tok = copy.deepcopy(tiny_tokenizer)
    tok.backend_tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    assert tok("el gato")["input_ids"] == ids(tok, "el gato")  # GPT-2 style: no bos
    (ex,), _ = tokenize_records([{"text": "el gato"}], tok, is_encoder_decoder=False)
    assert ex["input_ids"] == ids(tok, "el gato") + [tok.eos_token_id]
    assert ex["labels"] == [IGNORE_INDEX] + ex["input_ids"][1:]
    (ex,), _ = tokenize_records(
        [{"source": "el gato", "target": "the cat"}], tok, is_encoder_decoder=False
    )
    assert ex["input_ids"][0] != tok.bos_token_id
    assert trained_runs(ex["labels"]) == [ids(tok, "the cat") + [tok.eos_token_id]]


def test_tiny_pairs_have_ambiguous_sources(tiny_pairs_jsonl):
    targets: dict[str, set[str]] = {}
    for rec in read_records(tiny_pairs_jsonl):
        targets.setdefault(rec["source"], set()).add(rec["target"])
    assert sum(len(t) > 1 for t in targets.values()) >= 10


def test_causal_labels_never_use_pad_id_for_untrained(tiny_tokenizer, tiny_pairs_jsonl):
    tok = tiny_tokenizer
    examples = load_examples(tiny_pairs_jsonl, tok, is_encoder_decoder=False)
    assert len(examples) == 200
    batch = Collator(tok.pad_token_id, is_encoder_decoder=False)(examples[:16])
    assert not (batch["labels"] == tok.pad_token_id).any()
    assert (batch["labels"][batch["attention_mask"] == 0] == IGNORE_INDEX).all()


def chat_with_system() -> list[dict]:
    return [
        {"role": "system", "content": "You translate Spanish to English."},
        {"role": "user", "content": "Translate: el perro"},
        {"role": "assistant", "content": "the dog"},
        {"role": "user", "content": "Translate: la casa grande"},
        {"role": "assistant", "content": "the big house"},
        {"role": "user", "content": "Thanks!"},
    ]


def test_chat_trains_exactly_assistant_content_and_end_token(tiny_tokenizer):
    tok = tiny_tokenizer
    messages = chat_with_system()
    (ex,), _ = tokenize_records([{"messages": messages}], tok, is_encoder_decoder=False)
    text = tok.apply_chat_template(messages, tokenize=False)
    assert ex["input_ids"] == ids(tok, text)
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert trained_runs(ex["labels"]) == [
        ids(tok, "the dog") + [im_end],
        ids(tok, "the big house") + [im_end],
    ]
    # Trained labels equal the input tokens at the same positions (HF alignment).
    for inp, lab in zip(ex["input_ids"], ex["labels"], strict=True):
        assert lab in (IGNORE_INDEX, inp)
    # Nothing of the system/user turns or the assistant header is trained.
    trained = [lab for lab in ex["labels"] if lab != IGNORE_INDEX]
    assert tok.convert_tokens_to_ids("<|im_start|>") not in trained
    assert not set(ids(tok, "You translate Spanish")) & set(trained) - set(ids(tok, "the"))


def test_chat_without_assistant_is_dropped(tiny_tokenizer):
    rec = {"messages": [{"role": "user", "content": "hola"}]}
    examples, stats = tokenize_records([rec], tiny_tokenizer, is_encoder_decoder=False)
    assert examples == [] and stats.dropped == 1


def test_pairs_with_chat_template(tiny_tokenizer):
    tok = tiny_tokenizer
    rec = {"source": "el gato", "target": "the cat"}
    (ex,), _ = tokenize_records(
        [rec],
        tok,
        is_encoder_decoder=False,
        use_chat_template=True,
        prompt_template="Translate: {source}",
    )
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert trained_runs(ex["labels"]) == [ids(tok, "the cat") + [im_end]]
    expected = tok.apply_chat_template(
        [
            {"role": "user", "content": "Translate: el gato"},
            {"role": "assistant", "content": "the cat"},
        ],
        tokenize=False,
    )
    assert ex["input_ids"] == ids(tok, expected)


def test_chat_errors(tiny_tokenizer):
    rec = {"messages": chat_with_system()}
    with pytest.raises(DataError, match="causal"):
        tokenize_records([rec], tiny_tokenizer, is_encoder_decoder=True)
    no_template = copy.deepcopy(tiny_tokenizer)
    no_template.chat_template = None
    with pytest.raises(DataError, match="chat template"):
        tokenize_records([rec], no_template, is_encoder_decoder=False)


def test_chat_template_breaking_prefix_property_raises(tiny_tokenizer):
    tok = copy.deepcopy(tiny_tokenizer)
    # Marks the last message differently, so a turn rendered alone is no prefix.
    tok.chat_template = (
        "{% for m in messages %}{{ m['role'] + ': ' + m['content'] }}"
        "{% if loop.last %}{{ ' [end]' }}{% endif %}{{ '\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}"
    )
    with pytest.raises(DataError, match="bad.jsonl record 1.*prefix"):
        tokenize_records(
            [{"messages": chat_with_system()}],
            tok,
            is_encoder_decoder=False,
            source_name="bad.jsonl",
        )


def test_tiny_chat_file(tiny_tokenizer, tiny_chat_jsonl):
    examples = load_examples(tiny_chat_jsonl, tiny_tokenizer, is_encoder_decoder=False)
    assert len(examples) == 50
    records = read_records(tiny_chat_jsonl)
    im_end = tiny_tokenizer.convert_tokens_to_ids("<|im_end|>")
    for rec, ex in zip(records, examples, strict=True):
        answers = [m["content"] for m in rec["messages"] if m["role"] == "assistant"]
        assert trained_runs(ex["labels"]) == [ids(tiny_tokenizer, a) + [im_end] for a in answers]


def test_seq2seq_pair(tiny_tokenizer):
    tok = tiny_tokenizer
    rec = {"source": "el perro come", "target": "the dog eats"}
    (ex,), _ = tokenize_records([rec], tok, is_encoder_decoder=True)
    assert ex["input_ids"] == tok("el perro come")["input_ids"]
    assert ex["labels"] == tok(text_target="the dog eats")["input_ids"] + [tok.eos_token_id]
    assert IGNORE_INDEX not in ex["labels"]
    assert ex["is_seq2seq"] is True
    assert example_length(ex) == len(ex["input_ids"]) + len(ex["labels"])


def test_seq2seq_truncates_source_and_target_each(tiny_tokenizer):
    rec = {"source": "el perro come el pan " * 10, "target": "the dog eats the bread " * 10}
    (ex,), stats = tokenize_records([rec], tiny_tokenizer, is_encoder_decoder=True, max_length=7)
    assert len(ex["input_ids"]) == 7 and len(ex["labels"]) == 7
    assert stats.truncated == 1


def test_seq2seq_rejects_text(tiny_tokenizer):
    with pytest.raises(DataError, match="causal LM"):
        tokenize_records([{"text": "hola"}], tiny_tokenizer, is_encoder_decoder=True)


def test_text_trains_all_tokens_with_eos(tiny_tokenizer, tiny_text_txt):
    tok = tiny_tokenizer
    (ex,), _ = tokenize_records([{"text": "el gato come"}], tok, is_encoder_decoder=False)
    body = ids(tok, "el gato come") + [tok.eos_token_id]
    assert ex["input_ids"] == [tok.bos_token_id] + body
    assert ex["labels"] == [IGNORE_INDEX] + body
    examples = load_examples(tiny_text_txt, tok, is_encoder_decoder=False)
    assert len(examples) == 60


def test_causal_truncation_counts_and_drops(tiny_tokenizer):
    tok = tiny_tokenizer
    records = [
        {"text": "el perro come el pan hoy " * 5},  # truncated, kept
        {"source": "el perro come el pan hoy " * 5, "target": "the dog"},  # target cut away
        {"text": "hola"},  # short, untouched
    ]
    examples, stats = tokenize_records(records, tok, is_encoder_decoder=False, max_length=10)
    assert stats == TruncationStats(total=3, truncated=2, dropped=1)
    assert len(examples) == 2
    first = examples[0]
    assert len(first["input_ids"]) == len(first["labels"]) == 10
    full = [tok.bos_token_id] + ids(tok, records[0]["text"])
    assert first["input_ids"] == full[:10]


def test_load_examples_warns_once_with_counts(tiny_tokenizer, tmp_path, caplog):
    path = write(tmp_path / "long.txt", "el perro come el pan hoy " * 10 + "\nhola\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        examples = load_examples(path, tiny_tokenizer, is_encoder_decoder=False, max_length=8)
    assert len(examples) == 2
    msgs = [str(w.message) for w in caught]
    assert len(msgs) == 1
    assert "1 of 2 examples truncated" in msgs[0] and "long.txt" in msgs[0]
    assert any("truncated" in r.getMessage() for r in caplog.records)


def test_load_examples_no_warning_when_nothing_truncated(tiny_tokenizer, tiny_pairs_jsonl):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_examples(tiny_pairs_jsonl, tiny_tokenizer, is_encoder_decoder=True)


def test_record_errors_carry_line_numbers(tiny_tokenizer, tmp_path):
    path = write(tmp_path / "t.jsonl", '{"source": "a", "target": "b"}\n\n{"text": "b"}\n')
    with pytest.raises(DataError, match=r"t\.jsonl:3: plain text needs a causal LM"):
        load_examples(path, tiny_tokenizer, is_encoder_decoder=True)
