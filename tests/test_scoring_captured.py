"""scoring/captured.py: a method that reads the pass (``reads="attention"``) is an ordinary
registered method: its capture runs around the pass only when it is asked for, and its values
come from what it recorded, the tokens' softmax log-probabilities and each sequence's earlier
tokens, in force-decoding and generation alike. RAUQ is one (tests/test_scoring_rauq.py).

The toy method here records nothing but the model's forward calls; its value of a token is
the log-probability of the sequence so far (the cumulative sum of the softmax log-probabilities),
which needs the earlier tokens of its sequence.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch

from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.registry import methods as registry
from sigmoid_head.scoring import generate as generation
from sigmoid_head.scoring.captured import asked_methods
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.force_decode import score_records

RECORDS = [{"source": "el perro", "candidate": "the dog eats"},
           {"source": "la casa", "candidate": "a house here now"},
           {"source": "el gato", "candidate": "the cat"}]


class CallRecorder:
    """The toy recorder: the (batch, queries) shape of every forward call of the model."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def clear(self) -> None:
        self.calls.clear()

    def at(self, row: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        assert len(self.calls) == 1 and int(query.max()) < self.calls[0][1]
        return torch.zeros(row.numel(), 1)

    def per_step(self) -> torch.Tensor:
        return torch.zeros(self.calls[-1][0], len(self.calls), 1)


ENTERED: list[object] = []


@contextlib.contextmanager
def record_calls(model: torch.nn.Module, config: object):
    ENTERED.append(config)
    recorder = CallRecorder()
    handle = model.register_forward_pre_hook(
        lambda _m, _args, kwargs: recorder.calls.append(tuple(kwargs["input_ids"].shape)),
        with_kwargs=True)
    try:
        yield recorder
    finally:
        handle.remove()


def so_far(rows) -> torch.Tensor:
    """(B, T) log-probability of each sequence up to and including each token."""
    assert rows.captured.shape[:2] == rows.logp.shape
    return rows.logp.cumsum(1)


@pytest.fixture
def toyseq():
    ENTERED.clear()
    method = registry.register(registry.Method("toyseq", reads="attention", token_values=so_far,
                                               capture=record_calls))
    yield method
    registry.unregister("toyseq")


def test_it_is_computed_when_asked_for_and_only_then(toyseq, causal) -> None:
    plain = score_records(causal, RECORDS, progress=False)
    assert ENTERED == [] and "toyseq" not in plain[0]
    rows = score_records(causal, RECORDS, with_tokens=True, batch_size=2, progress=False,
                         toyseq=True)
    assert ENTERED == [True]  # one capture around the whole pass, with what was asked for
    for row, before in zip(rows, plain, strict=True):
        logs = np.log([t["softmax"] for t in row["tokens"]])
        np.testing.assert_allclose(np.log([t["toyseq"] for t in row["tokens"]]),
                                   np.cumsum(logs), rtol=1e-5, atol=1e-6)
        assert row["toyseq_min"] == pytest.approx(row["softmax"])  # the whole sequence's
        for k, v in before.items():
            assert row[k] == pytest.approx(v, rel=1e-5, abs=1e-6), k


def test_generation_reads_its_steps_as_force_decoding_reads_the_pass(toyseq, causal,
                                                                     monkeypatch) -> None:
    prompts = prompt_ids([{"source": r["source"]} for r in RECORDS], causal.tokenizer,
                         is_encoder_decoder=False)
    forced = []
    score = generation.score_generated
    monkeypatch.setattr(generation, "score_generated",
                        lambda *a, **k: forced.append(len(a[1])) or score(*a, **k))
    outs = generation.generate_outputs(causal, prompts, DecodingConfig(max_new_tokens=6),
                                       batch_size=2, progress=False, toyseq=True)
    assert forced == []  # read during generation, not force-decoded
    for g in outs:
        np.testing.assert_allclose(g.scores.values["toyseq_log"], np.cumsum(g.scores.softmax_log),
                                   rtol=1e-5, atol=1e-6)
    beams = generation.generate_outputs(causal, prompts, DecodingConfig(max_new_tokens=4,
                                                                        num_beams=2),
                                        progress=False, toyseq=True)
    assert forced == [len(prompts)]  # beam search: force-decoded, the capture around that pass
    for g in beams:
        np.testing.assert_allclose(g.scores.values["toyseq_log"], np.cumsum(g.scores.softmax_log),
                                   rtol=1e-5, atol=1e-6)


def test_a_name_that_reads_no_attention_is_refused(toyseq) -> None:
    assert [m.name for m, _ in asked_methods({"toyseq": True, "rauq": None})] == ["toyseq"]
    with pytest.raises(TypeError, match="unexpected keyword argument 'softmax'"):
        asked_methods({"softmax": True})
    with pytest.raises(TypeError, match="unexpected keyword argument 'nosuch'"):
        score_records(object(), RECORDS, nosuch=1)


def test_the_declaration_says_what_it_reads() -> None:
    with pytest.raises(ValueError, match="declares its capture"):
        registry.Method("x", reads="attention", token_values=so_far)
    with pytest.raises(ValueError, match="declares its capture"):
        registry.Method("x", reads="lm_logits", token_values=so_far, capture=record_calls)
    with pytest.raises(ValueError, match="needs its token_values"):
        registry.Method("x", reads="attention", token_values=None, capture=record_calls)
    rauq = registry.METHODS["rauq"]
    assert rauq.reads == "attention" and rauq.capture_function().__module__.endswith(".rauq")
