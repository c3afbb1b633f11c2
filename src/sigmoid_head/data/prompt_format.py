"""How a record is rendered into token ids: one :class:`PromptFormat` for tokenisation,
force-decoding and generation.

A PromptFormat is the *rendering*: the kind of model, the prompt template, the chat template
or not, and the longest input. Training data (:func:`sigmoid_head.data.tokenize.tokenize_records`),
scoring (:func:`sigmoid_head.data.prompts.make_examples`) and generation prompts
(:func:`sigmoid_head.data.prompts.prompt_ids`) all take one. What a user asks for, where None
means "what the head was trained with", is the *settings*
(:class:`sigmoid_head.scoring.corpus_config.PromptConfig`, the ``prompt_template`` /
``use_chat_template`` arguments of ``score_records``); :meth:`PromptFormat.for_model` turns
them, the model and the head's saved training settings into a PromptFormat.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

DEFAULT_TEMPLATE = "{source}\n"
"""The prompt template when neither the caller nor the head's training settings give one."""
SCORING_MAX_LENGTH = 2048
"""The longest scored input when neither the caller nor the head's training settings say
longer."""


@dataclass(frozen=True)
class PromptFormat:
    """How records become token ids."""

    is_encoder_decoder: bool
    """Seq2seq (pairs only: the source is the encoder input) or causal."""
    prompt_template: str = DEFAULT_TEMPLATE
    """Causal pairs: ``prompt_template.format(source=...)`` is the prompt."""
    use_chat_template: bool = False
    """Causal pairs: rendered as a user/assistant chat with the tokenizer's chat template."""
    max_length: int = SCORING_MAX_LENGTH
    """The longest input in tokens (what each function does past it is in its docstring)."""

    def cut_to(self, max_length: int) -> PromptFormat:
        """The same rendering with another ``max_length``."""
        return replace(self, max_length=max_length)

    @classmethod
    def for_model(cls, model: Any, prompt_template: str | None = None,
                  use_chat_template: bool | None = None, max_length: int | None = None
                  ) -> PromptFormat:
        """The rendering of a model's inputs: what the caller asked for, else what the head was
        trained with (its saved training settings, :func:`training_defaults`), else the defaults.

        Args:
            model: a SigmoidHeadModel or a Backbone (its ``is_encoder_decoder``).
            prompt_template: None = the head's training template, else :data:`DEFAULT_TEMPLATE`;
                checked with :func:`sigmoid_head.data.templates.check_template`.
            use_chat_template: None = the head's training setting, else False.
            max_length: None = the longer of :data:`SCORING_MAX_LENGTH` and the head's training
                ``max_length``.
        """
        from .templates import check_template

        defaults = training_defaults(model)
        backbone = getattr(model, "backbone", model)
        return cls(
            is_encoder_decoder=bool(getattr(backbone, "is_encoder_decoder", False)),
            prompt_template=check_template(
                prompt_template or defaults.get("prompt_template", DEFAULT_TEMPLATE)),
            use_chat_template=bool(use_chat_template if use_chat_template is not None
                                   else defaults.get("use_chat_template", False)),
            max_length=max_length or max(SCORING_MAX_LENGTH, defaults.get("max_length", 0)),
        )

    @classmethod
    def given(cls, prompt_format: PromptFormat | None, *,
              default_max_length: int = SCORING_MAX_LENGTH, **fields: Any) -> PromptFormat:
        """``prompt_format``, or one built from its fields given as keywords: the keyword form
        of the public functions (``make_examples(records, tokenizer, is_encoder_decoder=False,
        max_length=64)``). A field given as None takes its default (``max_length``:
        ``default_max_length``).

        Raises:
            TypeError: both a PromptFormat and fields, or neither it nor ``is_encoder_decoder``.
        """
        named = {k: v for k, v in fields.items() if v is not None}
        if prompt_format is not None:
            if named:
                raise TypeError(f"give a PromptFormat or its fields as keywords, not both "
                                f"({', '.join(sorted(named))})")
            return prompt_format
        if "is_encoder_decoder" not in named:
            raise TypeError("missing is_encoder_decoder (or a PromptFormat)")
        return cls(**{"max_length": default_max_length, **named})


def training_defaults(model: Any) -> dict[str, Any]:
    """prompt_template / use_chat_template / max_length the model's head was trained with."""
    training = getattr(getattr(model, "config", None), "training", None) or {}
    keys = ("prompt_template", "use_chat_template", "max_length")
    return {k: training[k] for k in keys if k in training}
