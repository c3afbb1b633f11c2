"""Corpus scoring: what ``sigmoid-head score`` and ``generate`` do, as library calls.

:func:`score_corpus` (Eval Other) and :func:`generate_corpus` (Eval Self) score a stream of
inputs batch by batch (:func:`.force_decode.score_records` /
:func:`.generate.generate_and_score`), add the extra baselines asked for
(:mod:`.baselines`), then what the head folder holds (:class:`Explanations`: the combined
score, calibrated probabilities, error spans), and write the rows with
:mod:`.corpus_output` (resumable ``to_json``, data-parallel under ``accelerate launch`` /
``torchrun``, an HTML page). Settings are :class:`~.corpus_config.CorpusConfig` (and
:class:`~.decoding.DecodingConfig`); the CLI's options are generated from their fields, so
a setting is documented once, under its field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..safe.files import is_stream
from ..safe.outputs import content_settings
from . import distributed
from .corpus_config import CorpusConfig
from .corpus_output import CorpusInputs, record_mix, run_streamed, write_page

__all__ = ["CorpusConfig", "CorpusResult", "Explanations", "add_baselines", "config_from",
           "generate_corpus", "score_corpus", "source_text"]

GENERATE_WINDOW_BATCHES = 16
"""Batches per window of ``generate`` (the unit written to disk; generation is slower)."""
KEEP = ("source", "messages", "candidate", "target")
"""Input fields copied into a score row."""
NOT_RESULT_SETTINGS = frozenset({"quiet", "to_json", "batch_size", "max_tokens"})
"""Settings that do not change the rows (scores are batch-invariant), left out of the
resume key."""


@dataclass
class Explanations:
    """What a head folder adds to every row: the combined score's
    :class:`~sigmoid_head.evaluation.combination.Combination` (the folder's fitted one, else
    the command's default), and the :class:`~sigmoid_head.evaluation.calibration.Calibrator`
    and :class:`~sigmoid_head.evaluation.spans.SpanConfig` that ``sigmoid-head calibrate``
    saved (None when absent)."""

    combination: Any = None
    calibrator: Any = None
    spans: Any = None
    command: str = ""
    """The command whose default combination applies ("score", "generate" or "rerank")."""
    quality: Any = None
    """The :class:`~sigmoid_head.evaluation.quality_model.QualityModel` that ``calibrate
    --quality-model`` saved (None when absent): adds ``learned_quality``."""

    word: Any = None
    """The :class:`~sigmoid_head.evaluation.word_model.WordModel` that ``calibrate
    --word-model`` saved (None when absent): adds ``learned_word`` to every word and
    ``learned_word_errors`` to every row."""
    word_lacking: Counter[str] = field(default_factory=Counter)
    """Rows left without ``learned_word``, per feature they lacked (by :meth:`apply`)."""

    quality_rows: int = 0
    """Rows this run offered the quality model (set by :meth:`apply`)."""
    quality_lacking: Counter[str] = field(default_factory=Counter)
    """Rows left without ``learned_quality``, per feature they lacked (by :meth:`apply`)."""
    quality_left: int = 0
    """Rows left without ``learned_quality`` (by :meth:`apply`)."""

    def mix(self) -> str | None:
        """The line naming the mix that makes ``combined`` (None without a combination)."""
        from ..evaluation.combination import mix_line

        return None if self.combination is None else mix_line(self.combination, self.command)

    def notices(self) -> list[str]:
        """One line per saved setting that leaves the head out (a mix giving it weight 0,
        error spans read off another method): :func:`~sigmoid_head.evaluation.extras.
        head_notices`."""
        from ..evaluation.extras import head_notices

        out = head_notices(self.combination, self.spans)
        if self.quality is not None and self.quality.head_sha256 is None:
            out.append("notice: quality_model.json names no head to check it against "
                       "(written before quality models were tied to their head, or for a head "
                       "without weights_sha256): learned_quality is added unchecked")
        if self.word is not None and self.word.head_sha256 is None:
            out.append("notice: word_model.json names no head to check it against: "
                       "learned_word is added unchecked")
        if self.word_lacking:
            lacked = ", ".join(f"{k} ({n})" for k, n in sorted(self.word_lacking.items()))
            out.append(f"notice: some rows got no learned_word: they lack what the saved word "
                       f"model needs (rows per feature: {lacked}); score them with the same "
                       "methods as the dev rows it was fitted on")
        if self.quality_left:
            lacked = ", ".join(f"{k} ({n})" for k, n in sorted(self.quality_lacking.items()))
            out.append(f"notice: {self.quality_left} of {self.quality_rows} rows got no "
                       f"learned_quality: they lack features the saved quality model needs "
                       f"(rows per feature: {lacked}); score them with the same methods "
                       "as the dev rows it was fitted on")
        return out

    @classmethod
    def load(cls, model: Any, command: str) -> Explanations:
        """The extras the loaded head carries (``SigmoidHeadModel.extras``, read once by
        ``from_pretrained``, local or Hub head alike; a bare backbone has none).
        ``command`` ("score", "generate" or "rerank") picks the default combination; the
        head's ``source`` (where it was loaded from) names it in errors.

        Raises:
            ValueError: a malformed extra file, named.
        """
        from ..evaluation.extras import head_extras, head_quality_model

        extras, source = getattr(model, "extras", None), str(getattr(model, "source", None) or "")
        cal, spans, comb = head_extras(extras, command, source)
        head_sha = getattr(getattr(model, "config", None), "weights_sha256", None)
        from ..head.files import WORD_MODEL_NAME

        return cls(comb, cal, spans, command, head_quality_model(extras, source, head_sha),
                   head_quality_model(extras, source, head_sha, WORD_MODEL_NAME))

    def apply(self, rows: list[dict], keep_tokens: bool) -> None:
        """Add ``combined``/``combined_log``, ``<method>_platt``/``_isotonic`` and ``errors``
        to the rows in place; drop the per-token and per-word scores the spans needed
        unless ``keep_tokens``."""
        from ..evaluation.spans import add_errors

        if self.combination is not None:
            self.combination.apply(rows)
        if self.calibrator is not None:
            self.calibrator.apply(rows)
        if self.quality is not None:
            self.quality_lacking.update(self.quality.apply(rows))
            self.quality_rows += len(rows)
            self.quality_left += sum("learned_quality" not in r for r in rows)
        if self.word is not None:
            self.word_lacking.update(self.word.apply(rows))
        if self.spans is not None:
            add_errors(rows, self.spans)
        if not keep_tokens:
            for r in rows:
                r.pop("tokens", None)
                r.pop("words", None)


@dataclass
class CorpusResult:
    """What a corpus run gives back (process 0)."""

    n: int
    """Outputs scored (an earlier, interrupted run's included)."""
    means: dict[str, float]
    """The mean of every numeric field over all outputs."""
    rows: list[dict] | None
    """The rows, in input order, when they were not written to ``to_json``."""
    mix: str | None = None
    """Which mix made ``combined``: baseline, weight, where chosen (:func:`~sigmoid_head.
    evaluation.combination.mix_line`)."""
    notices: list[str] = field(default_factory=list)
    """Saved settings that leave the head out, one line each (:meth:`Explanations.notices`)."""


def _run(model: Any, inputs: CorpusInputs, config: CorpusConfig, explain: Explanations,
         batch: Callable[[list[dict]], list[dict]], *, batch_size: int, window: int,
         settings: dict, rows_per_input: int = 1) -> CorpusResult:
    """Score, explain and write; the page; the result."""
    from .token_scores import unpack_model

    def score_batch(part: list[dict]) -> list[dict]:
        rows = batch(part)
        explain.apply(rows, config.keep_tokens())
        return rows

    kept: list[dict] = []
    means = run_streamed(inputs, score_batch, to_json=config.to_json, settings=settings,
                         batch_size=batch_size, window=window, rows_per_input=rows_per_input,
                         progress=not config.quiet,
                         on_rows=None if config.to_json and not is_stream(config.to_json)
                         else kept.extend)
    row = means.row()
    record_mix(config.to_json, explain.combination, explain.command, means.n, "combined" in row)
    if config.html:
        spans_from = explain.spans.describe() if explain.spans is not None else None
        write_page(config.html, kept, config.to_json, unpack_model(model)[0].tokenizer, spans_from,
                   explain.notices())
    return CorpusResult(means.n, row, None if config.to_json else kept, explain.mix(),
                        explain.notices())


def _settings(model: Any, config: CorpusConfig, **more: Any) -> dict:
    """What must match for an interrupted run to be resumed: the results' settings and
    which model and head score (the head by its fingerprint and where it was loaded from)."""
    from .token_scores import unpack_model

    backbone, head = unpack_model(model)
    head_config = getattr(model, "config", None)
    return content_settings({  # a local head and a local model folder by their content
        **{k: v for k, v in config.to_dict().items() if k not in NOT_RESULT_SETTINGS},
        "model": backbone.name_or_path, "dtype": str(backbone.dtype),
        "head_fingerprint": None if head is None else getattr(head_config, "fingerprint", ""),
        "head": getattr(model, "source", None), **more})


def score_corpus(model: Any, inputs: CorpusInputs, config: CorpusConfig | None = None) -> CorpusResult:
    """Eval Other on a corpus: score every ``{source, candidate}`` / ``{messages, candidate}``
    input as ``sigmoid-head score`` does.

    Args:
        model: a SigmoidHeadModel (its calibration, error spans and fitted combination come
            with ``model.extras``, where it came from with ``model.source``), or a Backbone
            for the baselines only.
        inputs: the records (a list, or anything sized and iterable more than once).
        config: the settings (default: :class:`CorpusConfig`'s).

    Returns:
        The count, the means, and the rows unless written to ``config.to_json``.
    """
    from .force_decode import score_records

    config = config or CorpusConfig()
    explain, opt_in = Explanations.load(model, "score"), config.opt_in()
    with_tokens = config.keep_tokens() or explain.spans is not None or explain.word is not None

    def batch(part: list[dict]) -> list[dict]:
        scores = score_records(model, part, prompt_template=config.prompt_template,
                               use_chat_template=config.chat, batch_size=config.batch_size,
                               max_tokens=config.max_tokens, with_tokens=with_tokens,
                               progress=False, **opt_in)
        rows = [{**{k: rec[k] for k in KEEP if k in rec}, **s}
                for rec, s in zip(part, scores, strict=True)]
        for r in rows:
            if "candidate" not in r:
                r["candidate"] = r.pop("target")
        add_baselines(model, part, rows, config, command="score")
        return rows

    return _run(model, inputs, config, explain, batch, batch_size=config.batch_size,
                window=distributed.DEFAULT_WINDOW_BATCHES * config.batch_size,
                settings=_settings(model, config))


def generate_corpus(model: Any, inputs: CorpusInputs, config: CorpusConfig | None = None,
                    decoding: Any = None, *,
                    generate_batch: Callable[[list[dict], bool], list[dict]] | None = None
                    ) -> CorpusResult:
    """Eval Self on a corpus: generate for every ``{source}`` / ``{messages}`` input and
    score the outputs as ``sigmoid-head generate`` does.

    Sampling (``decoding.do_sample``) and ``config.mc_samples`` draw from one seeded stream
    over all inputs, so the inputs then make one batch and one window.

    Args:
        model: a SigmoidHeadModel (its calibration, error spans and fitted combination come
            with ``model.extras``, where it came from with ``model.source``), or a Backbone
            for the baselines only.
        inputs: the records (a list, or anything sized and iterable more than once).
        config: the settings (default: :class:`CorpusConfig`'s).
        decoding: a :class:`~.decoding.DecodingConfig` (default: greedy).
        generate_batch: generates and scores one batch itself, ``(inputs, with_tokens) ->
            rows`` (the CLI's ``--stream`` prints tokens as they come); default
            :func:`~.generate.generate_and_score`.
    """
    from ..safe.finite import check_new_tokens
    from .decoding import DecodingConfig
    from .generate import generate_and_score
    from .token_scores import unpack_model

    config, decoding = config or CorpusConfig(), decoding or DecodingConfig()
    check_new_tokens(decoding.max_new_tokens, unpack_model(model)[0].model.config)  # before output
    explain, opt_in = Explanations.load(model, "generate"), config.opt_in()
    with_tokens = config.keep_tokens() or explain.spans is not None or explain.word is not None

    def batch(part: list[dict]) -> list[dict]:
        if generate_batch is not None:
            rows = generate_batch(part, with_tokens)
        else:
            rows = generate_and_score(model, part, decoding, prompt_template=config.prompt_template,
                                      use_chat_template=config.chat, batch_size=config.batch_size,
                                      with_tokens=with_tokens, progress=False, **opt_in)
        add_baselines(model, part, rows, config, decoding, command="generate")
        return rows

    one_stream = decoding.do_sample or config.mc_samples
    size = len(inputs) if one_stream else config.batch_size
    return _run(model, inputs, config, explain, batch, batch_size=size,
                window=len(inputs) if one_stream else GENERATE_WINDOW_BATCHES * size,
                settings=_settings(model, config, decoding=asdict(decoding)))


def source_text(rec: dict) -> str:
    """The source of an input (the last user turn of a chat)."""
    if "messages" in rec:
        users = [m["content"] for m in rec["messages"] if m.get("role") == "user"]
        return users[-1] if users else rec["messages"][-1]["content"]
    return rec.get("source", "")


def add_baselines(model: Any, inputs: list[dict], rows: list[dict], config: CorpusConfig,
                  decoding: Any = None, per_input: int = 1, command: str | None = None) -> None:
    """Add the columns of every active sequence baseline of the column registry
    (:func:`sigmoid_head.registry.columns.baselines`: self-judge, CometKiwi, Monte Carlo entropy, a
    plugin's, ...) to the rows in place, in registry order; ``command``: only the baselines
    that command computes."""
    from ..registry.columns import COLUMNS, BaselineInputs, active, baselines
    from ..registry.contract import row_values

    sources = [source_text(inputs[i // per_input]) for i in range(len(rows))]
    cands = [r["candidate"] for r in rows]
    for column in baselines(command):
        settings = config.baseline(column.name)
        if not active(settings):
            continue
        values = column.hook()(BaselineInputs(model, inputs, rows, sources, cands, settings,
                                              config, decoding, per_input))
        if values is None:
            continue
        values = row_values(column, values, len(rows), COLUMNS)  # the plugin contract
        for r, v in zip(rows, values, strict=True):
            r.update(v if isinstance(v, dict) else {column.name: v})


def config_from(values: dict, cls: type = CorpusConfig) -> Any:
    """A settings dataclass (or :class:`CorpusConfig`, from its flat names) from a flat dict
    holding its fields (and others, ignored)."""
    names = cls.field_names() if hasattr(cls, "field_names") else [f.name for f in fields(cls)]
    return cls(**{n: values[n] for n in names if n in values})
