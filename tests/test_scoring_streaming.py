"""Streaming: the per-token scores emitted during generation equal the non-streamed ones."""

from __future__ import annotations

import numpy as np
import pytest

from sigmoid_head.data.prompts import prompt_ids
from sigmoid_head.scoring.decoding import DecodingConfig
from sigmoid_head.scoring.generate import generate_and_score, generate_outputs
from sigmoid_head.scoring.streaming import OutputEvent, TokenEvent, stream_generate

SOURCES = [{"source": "el perro come"}, {"source": "la casa grande es roja hoy"}]
KEYS = ("sigmoid_log", "softmax_log", "boostedprob", "entropy")


def _split(events):
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    outputs = [e for e in events if isinstance(e, OutputEvent)]
    return tokens, outputs


@pytest.mark.parametrize("kind", ["causal", "seq2seq"])
@pytest.mark.parametrize(
    "decoding",
    [DecodingConfig(max_new_tokens=7),
     DecodingConfig(max_new_tokens=7, do_sample=True, temperature=0.8, top_p=0.9,
                    num_return_sequences=2, seed=5)],
    ids=["greedy", "sampling"],
)
def test_streamed_scores_equal_non_streamed(kind, decoding, request) -> None:
    model = request.getfixturevalue(kind)
    events = list(stream_generate(model, SOURCES, decoding))
    tokens, outputs = _split(events)
    prompts = prompt_ids(SOURCES, model.tokenizer,
                         is_encoder_decoder=model.backbone.is_encoder_decoder)
    reference = generate_outputs(model, prompts, decoding, batch_size=1, progress=False)
    assert len(outputs) == len(reference) == len(SOURCES) * decoding.num_return_sequences
    for out, ref in zip(outputs, reference, strict=True):
        g = out.generated
        assert (g.input_index, g.output, g.finished) == (ref.input_index, ref.output, ref.finished)
        np.testing.assert_array_equal(g.scores.ids, ref.scores.ids)
        for key in KEYS:
            np.testing.assert_allclose(getattr(g.scores, key), getattr(ref.scores, key),
                                       rtol=1e-5, atol=1e-6, err_msg=key)
        np.testing.assert_array_equal(g.scores.n_dominant, ref.scores.n_dominant)
        # the token events of this output carry the same values, in order
        mine = [t for t in tokens if (t.input_index, t.sample) == (out.input_index, out.sample)]
        assert [t.token_id for t in mine] == ref.output
        assert [t.position for t in mine] == list(range(len(ref.output)))
        np.testing.assert_allclose([t.scores["sigmoid"] for t in mine],
                                   np.exp(ref.scores.sigmoid_log), rtol=1e-5)
        np.testing.assert_allclose([t.scores["boostedprob"] for t in mine],
                                   ref.scores.boostedprob, rtol=1e-5)
        assert [t.eos for t in mine] == [False] * (len(mine) - 1) + [ref.finished]
        text = "".join(t.text for t in mine)
        assert text == model.tokenizer.decode(ref.output, skip_special_tokens=True)


@pytest.mark.parametrize("kind", ["causal", "seq2seq"])
def test_stream_records_match_generate_and_score(kind, request) -> None:
    """Against the default, batched generate_and_score (padded prompts): the same records."""
    model = request.getfixturevalue(kind)
    decoding = DecodingConfig(max_new_tokens=5)
    streamed = [e.record for e in stream_generate(model, SOURCES, decoding, with_tokens=True)
                if isinstance(e, OutputEvent)]
    plain = generate_and_score(model, SOURCES, decoding, with_tokens=True, progress=False)
    assert [r["candidate"] for r in streamed] == [r["candidate"] for r in plain]
    for a, b in zip(streamed, plain, strict=True):
        assert a.keys() == b.keys()
        for key in ("sigmoid_logprob", "softmax_logprob", "boostedprob_logprob", "entropy_mean"):
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6)
        assert [t["token"] for t in a["tokens"]] == [t["token"] for t in b["tokens"]]
        assert [w["word"] for w in a["words"]] == [w["word"] for w in b["words"]]
        np.testing.assert_allclose([t["sigmoid"] for t in a["tokens"]],
                                   [t["sigmoid"] for t in b["tokens"]], rtol=1e-5)


def test_closing_the_stream_early_stops_the_worker(causal) -> None:
    import threading

    stream = stream_generate(causal, SOURCES, DecodingConfig(max_new_tokens=6))
    first = next(stream)
    assert isinstance(first, TokenEvent) and (first.input_index, first.position) == (0, 0)
    stream.close()
    assert not any(t.name == "sigmoid-head-stream" for t in threading.enumerate())


def test_beam_search_refused(causal) -> None:
    with pytest.raises(ValueError, match="num_beams"):
        list(stream_generate(causal, SOURCES, DecodingConfig(num_beams=2)))
