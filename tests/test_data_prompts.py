"""data/prompts.py and data/prompt_format.py: one renderer for scoring and generation, one
PromptFormat for it, and the head's own settings."""

from __future__ import annotations

import pytest

from sigmoid_head.data.batching import IGNORE_INDEX
from sigmoid_head.data.prompts import PromptFormat, ScoreInputError, make_examples, prompt_ids

RECORDS = [
    {"source": "el perro come", "candidate": "the dog eats"},
    {"messages": [{"role": "user", "content": "la casa"}], "candidate": "the house"},
]


@pytest.mark.parametrize("chat", [False, True])
def test_generation_prompt_is_the_scored_example_up_to_its_first_scored_token(tiny_tokenizer, chat):
    kw = {"is_encoder_decoder": False, "prompt_template": "Translate: {source}\n",
          "use_chat_template": chat}
    examples = make_examples(RECORDS, tiny_tokenizer, **kw)
    prompts = prompt_ids(RECORDS, tiny_tokenizer, **kw)
    for ex, prompt in zip(examples, prompts, strict=True):
        first = next(i for i, t in enumerate(ex["labels"]) if t != IGNORE_INDEX)
        assert ex["input_ids"][:first] == prompt


def test_prompt_ids_keep_the_last_max_length_ids(tiny_tokenizer):
    full = prompt_ids(RECORDS[:1], tiny_tokenizer, is_encoder_decoder=False)[0]
    assert prompt_ids(RECORDS[:1], tiny_tokenizer, is_encoder_decoder=False, max_length=3)[0] == full[-3:]
    with pytest.raises(ScoreInputError, match="record 1: needs a string 'source'"):
        prompt_ids([{"text": "x"}], tiny_tokenizer, is_encoder_decoder=False)


def test_the_prompt_format_falls_back_to_the_heads_training():
    class Config:
        training = {"prompt_template": "Q: {source}\n", "use_chat_template": True, "max_length": 4096}

    class Model:
        config = Config()

    assert PromptFormat.for_model(Model()) == PromptFormat(False, "Q: {source}\n", True, 4096)
    assert PromptFormat.for_model(Model(), "{source}", False, 64) == PromptFormat(
        False, "{source}", False, 64)
    assert PromptFormat.for_model(object()) == PromptFormat(False, "{source}\n", False, 2048)
    with pytest.raises(ValueError):
        PromptFormat.for_model(object(), "no field")


def test_a_prompt_format_or_its_fields_as_keywords(tiny_tokenizer):
    form = PromptFormat(False, "Translate: {source}\n", max_length=64)
    assert make_examples(RECORDS, tiny_tokenizer, form) == make_examples(
        RECORDS, tiny_tokenizer, is_encoder_decoder=False, prompt_template="Translate: {source}\n",
        max_length=64)
    assert prompt_ids(RECORDS, tiny_tokenizer, form) == prompt_ids(
        RECORDS, tiny_tokenizer, is_encoder_decoder=False, prompt_template="Translate: {source}\n")
    with pytest.raises(TypeError, match="not both"):
        make_examples(RECORDS, tiny_tokenizer, form, max_length=8)
    with pytest.raises(TypeError, match="is_encoder_decoder"):
        prompt_ids(RECORDS, tiny_tokenizer, max_length=8)
