"""Streaming: every token's scores while the model generates it, with no second pass.

:func:`stream_generate` runs Hugging Face ``generate`` (greedy or sampling; causal or
encoder-decoder) in a worker thread with two light attachments:

* a forward hook on the LM's output layer (:func:`sigmoid_head.lm.backbone.on_head_call`)
  keeps the output layer's input ``h`` (R, d) and raw output (R, V) at the last position
  of every forward call, i.e. exactly the hidden state and the raw logits (before
  temperature, top-p or any other processor) of the token being chosen;
* a streamer (``generate(streamer=...)``) receives the chosen tokens (R,) of every step;
  from the step's ``h`` and logits, :func:`.token_scores.position_scores` (the function
  every scoring path uses) gives the sigmoid, softmax, BoostedProb and entropy of the
  chosen tokens at once.

The caller iterates over events as they happen: a :class:`TokenEvent` per generated
token, then an :class:`OutputEvent` per finished output carrying the same
:class:`~sigmoid_head.scoring.generate.Generated` object and output record that
:func:`~sigmoid_head.scoring.generate.generate_and_score` returns (tested equal).
Beam search reorders hypotheses between steps and cannot be streamed.
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..data.batching import pad_id
from ..data.prompts import ScoreInputError
from ..head.layer import SigmoidHead
from ..lm.backbone import Backbone, on_head_call
from ..lm.dominant import DominantConfig
from ..registry import methods as registry
from .decoding import DecodingConfig, Generated, eos_ids, generation_prompts, output_row
from .token_scores import TokenScores, position_scores, unpack_model

__all__ = ["OutputEvent", "TokenEvent", "stream_generate"]


@dataclass
class TokenEvent:
    """One generated token and its scores, emitted as soon as it is chosen.

    Attributes:
        input_index: which input it answers.
        sample: which of that input's outputs (``num_return_sequences``) it belongs to.
        position: its index in the output (0 = first generated token).
        token_id: the token.
        text: the text it adds to the decoded output (special tokens add "").
        scores: ``sigmoid`` (with a head), ``softmax``, ``boostedprob`` (probabilities),
            ``entropy`` (nats, an uncertainty), ``n_dominant``.
        eos: whether it is the end-of-sequence token that ends the output.
    """

    input_index: int
    sample: int
    position: int
    token_id: int
    text: str
    scores: dict[str, float]
    eos: bool

    @property
    def token(self) -> str:
        """The token's text (alias of :attr:`text`)."""
        return self.text


@dataclass
class OutputEvent:
    """One finished output: ``generated`` as from ``generate_outputs``, ``record`` as one
    row of ``generate_and_score``."""

    input_index: int
    sample: int
    generated: Generated
    record: dict[str, Any]


class _Cancelled(Exception):
    """The consumer stopped iterating: abandon the running ``generate``."""


class _Row:
    """What one output row has produced so far."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.values: dict[str, list[float]] = collections.defaultdict(list)
        self.text = ""
        self.done = False


class _ScoreStreamer:
    """A ``generate`` streamer that scores every chosen token from the hooked output layer.

    ``put`` is first called with the prompt (causal) or the decoder start ids
    (seq2seq), which are skipped; then once per step with the chosen tokens (R,).
    """

    def __init__(self, backbone: Backbone, head: SigmoidHead | None,
                 dominant: DominantConfig | None, eos: set[int], input_index: int,
                 emit: Any, stop: threading.Event) -> None:
        self.backbone, self.head, self.dominant, self.eos = backbone, head, dominant, eos
        self.input_index, self.emit, self.stop = input_index, emit, stop
        self.captured: collections.deque[tuple[torch.Tensor, torch.Tensor]] = collections.deque()
        self.rows: list[_Row] = []
        self.started = False

    def capture(self, h: torch.Tensor, z: torch.Tensor) -> None:
        self.captured.append((h[:, -1].detach(), z[:, -1].detach()))  # (R, d), (R, V)

    def put(self, value: torch.Tensor) -> None:
        if self.stop.is_set():
            raise _Cancelled
        if not self.started:
            self.started = True
            return
        tokens = value.reshape(-1).to(self.backbone.device)  # (R,)
        h, z = self.captured.popleft()
        self.captured.clear()  # the previous steps' states are no longer needed
        if not self.rows:
            self.rows = [_Row() for _ in range(tokens.shape[0])]
        logits = self.backbone.finish_logits(z)  # (R, V) the raw logits generate saw
        values = position_scores(self.backbone, self.head, h, tokens, logits, self.dominant)
        cpu = {k: v.cpu().tolist() for k, v in values.items()}
        for r, tok in enumerate(tokens.tolist()):
            row = self.rows[r]
            if row.done:
                continue
            row.ids.append(tok)
            for k, v in cpu.items():
                row.values[k].append(v[r])
            row.done = tok in self.eos
            self.emit(TokenEvent(self.input_index, r, len(row.ids) - 1, tok,
                                 self._new_text(row), _probabilities(cpu, r), row.done))

    def _new_text(self, row: _Row) -> str:
        text = self.backbone.tokenizer.decode(row.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):  # an incomplete multi-byte character: wait for the rest
            return ""
        piece, row.text = text[len(row.text):], text
        return piece

    def end(self) -> None:
        pass


def _probabilities(values: dict[str, list[float]], r: int) -> dict[str, float]:
    """Row ``r``'s probability under every registered method computed, entropy, n_dominant."""
    out = {}
    for m in registry.methods():
        if m.value_key in values:
            v = float(values[m.value_key][r])
            out[m.name] = float(np.exp(v)) if m.token_unit == "log" else v
    if "entropy" in values:
        out["entropy"] = float(values["entropy"][r])
        out["n_dominant"] = int(values["n_dominant"][r])
    return out


def _token_scores(row: _Row) -> TokenScores:
    """The row's scores in the form the non-streamed path returns (float64 / int64 arrays)."""
    values = {k: np.asarray(v, dtype=np.int64) if k == "n_dominant"
              else np.asarray(v, dtype=np.float32).astype(np.float64)
              for k, v in row.values.items()}
    return TokenScores.from_values(np.asarray(row.ids, dtype=np.int64), values)


@torch.no_grad()
def _stream_one(model: Any, prompt: list[int], index: int, record: dict, cfg: DecodingConfig,
                dominant: DominantConfig | None, with_tokens: bool, emit: Any,
                stop: threading.Event, truncated: bool = False) -> None:
    """Generate for one prompt, emitting TokenEvents, then one OutputEvent per output."""
    backbone, head = unpack_model(model)
    streamer = _ScoreStreamer(backbone, head, dominant, eos_ids(backbone, cfg), index, emit, stop)
    ids = torch.tensor([prompt], device=backbone.device)
    with on_head_call(backbone.model, streamer.capture), cfg.guidance(backbone, head) as guided:
        backbone.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                pad_token_id=pad_id(backbone.tokenizer), streamer=streamer,
                                **cfg.generate_kwargs(), **guided)
    for r, row in enumerate(streamer.rows):
        g = Generated(index, list(prompt), row.ids, row.done, _token_scores(row))
        emit(OutputEvent(index, r, g, output_row(g, record, backbone.tokenizer, with_tokens,
                                                 truncated=truncated)))


def stream_generate(
    model: Any,
    records: Sequence[dict] | Sequence[str],
    decoding: DecodingConfig | None = None,
    *,
    prompt_template: str | None = None,
    use_chat_template: bool | None = None,
    with_tokens: bool = False,
    dominant: DominantConfig | None = None,
) -> Iterator[TokenEvent | OutputEvent]:
    """Eval Self, streamed: generate for each input in turn and yield every token's scores.

    Args:
        model: a SigmoidHeadModel, or a Backbone (softmax, BoostedProb and entropy only).
        records: source strings, or ``{"source"}`` / ``{"messages"}`` dicts.
        decoding: greedy or sampling settings (``num_beams`` must be 1); sampling uses
            ``decoding.seed`` as :func:`~sigmoid_head.scoring.generate.generate_outputs`
            does, so with one input per call both draw the same outputs.
        prompt_template: prompt rendering (None: the head's setting).
        use_chat_template: chat rendering of the prompt (None: the head's setting).
        with_tokens: put per-token and per-word scores into the output records.
        dominant: dominant-token rule.

    Yields:
        :class:`TokenEvent` for every generated token as soon as it is chosen, and an
        :class:`OutputEvent` when an input's generation ends (one per output).
    """
    cfg = decoding or DecodingConfig()
    if cfg.num_beams > 1:
        raise ScoreInputError("streaming needs greedy decoding or sampling (num_beams=1)")
    backbone, _ = unpack_model(model)
    recs, prompts, cut = generation_prompts(model, records, cfg, prompt_template,
                                            use_chat_template)
    events: queue.Queue = queue.Queue()
    stop, done = threading.Event(), object()

    def work() -> None:
        devices = [backbone.device] if backbone.device.type == "cuda" else []
        try:
            with torch.random.fork_rng(devices=devices):
                torch.manual_seed(cfg.seed)
                for i, (p, rec) in enumerate(zip(prompts, recs, strict=True)):
                    _stream_one(model, list(p), i, rec, cfg, dominant, with_tokens,
                                events.put, stop, truncated=i in cut)
        except _Cancelled:
            pass
        except BaseException as err:  # handed to the consumer's thread
            events.put(err)
        finally:
            events.put(done)

    worker = threading.Thread(target=work, name="sigmoid-head-stream", daemon=True)
    worker.start()
    try:
        while (item := events.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()
