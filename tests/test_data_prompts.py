"""data/prompts.py: one renderer for scoring and generation, and the head's own settings."""

from __future__ import annotations

import pytest

from sigmoid_head.data.batching import IGNORE_INDEX
from sigmoid_head.data.prompts import ScoreInputError, make_examples, prompt_ids, render_settings

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


def test_render_settings_fall_back_to_the_heads_training():
    class Config:
        training = {"prompt_template": "Q: {source}\n", "use_chat_template": True}

    class Model:
        config = Config()

    assert render_settings(Model(), None, None) == {"prompt_template": "Q: {source}\n",
                                                    "use_chat_template": True}
    assert render_settings(Model(), "{source}", False) == {"prompt_template": "{source}",
                                                           "use_chat_template": False}
    assert render_settings(object(), None, None) == {"prompt_template": "{source}\n",
                                                     "use_chat_template": False}
