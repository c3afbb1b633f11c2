"""sigmoid-head: a sigmoid unembedding head for quality estimation on frozen language models.

The public API, importable from here (each name is imported on first use, so that
``import sigmoid_head`` and the torch-free parts, such as ``sigmoid-head evaluate``, stay
light):

* :class:`SigmoidHeadModel`, :class:`SigmoidHead`, :class:`HeadConfig`, :func:`load_backbone`;
* training: :class:`TrainConfig`, :func:`train`;
* scoring: :func:`score_corpus` / :func:`generate_corpus` with :class:`CorpusConfig` (what
  ``sigmoid-head score`` / ``generate`` do: baselines, combined score, calibration, spans,
  streamed resumable output), :func:`rerank_corpus` with :class:`RerankConfig` (what
  ``sigmoid-head rerank`` does: best-of-N candidates per source, scored, one picked),
  :func:`score_records` (Eval Other), :func:`generate_and_score` (Eval Self),
  :func:`stream_generate` (Eval Self, each token's scores as it is generated),
  :class:`DecodingConfig`;
* evaluation: :func:`evaluate_scores`;
* the method's pieces: :func:`find_dominant`, :func:`boosted_prob`.

Package layout, lowest layer first (each imports only from its own layer and those
before it; ``tests/test_layout.py`` holds the same list):

* ``_version``, ``embedded/`` (the offline default model), ``io_utils`` (durable writes),
  ``head_files`` (the names of a head folder's files), ``methods`` (the registry of
  scoring methods and aggregations, torch-free), ``columns`` (the registry of output
  columns, torch-free), ``baseline_settings`` (the opt-in baselines' settings),
  ``text_safety`` (text made safe to
  print, to put in HTML and in a model card), ``json_safety`` (always-valid JSON out,
  depth-safe JSON in), ``finite`` (finite and representable numbers), ``config_types``
  (the type check of settings read from files), ``threads`` (the thread policy every
  command sets before torch starts), ``hub_access`` (whether the Hub can be reached),
  ``terminal`` (token colours in a terminal);
* ``output_safety`` (outputs that cannot overwrite inputs; resume keys from content),
  ``resumable_jsonl`` (the resumable JSONL writer and its reader);
* ``data/`` (records, tokenization, batching, prompt rendering);
* the paper's core, flat: ``head`` (module + loss), ``head_io`` (file format), ``hub`` and
  ``model_card`` (the Hub), ``push_config`` (push's settings),
  ``released`` (the authors' format), ``dominant``,
  ``profiles`` (execution profiles), ``negatives`` and ``inverse_cdf`` (its draws),
  ``backbone``, ``model``,
  ``token_adjust`` (token-level mixes of both heads), ``cpu_precision`` (the CPU's
  half-precision probe);
* the pipelines: ``training/``, ``scoring/``, ``evaluation/`` (numpy only), and
  ``integrations/`` beside them;
* ``demo`` (and ``demo_config``, its settings) and ``cli/`` on top.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._version import __version__

_EXPORTS = {
    "SigmoidHeadModel": "model",
    "SigmoidHead": "head",
    "HeadConfig": "head_io",
    "load_backbone": "backbone",
    "TrainConfig": "training.config",
    "train": "training.loop",
    "score_records": "scoring.force_decode",
    "score_corpus": "scoring.corpus",
    "generate_corpus": "scoring.corpus",
    "CorpusConfig": "scoring.corpus",
    "rerank_corpus": "scoring.rerank",
    "RerankConfig": "scoring.rerank",
    "generate_and_score": "scoring.generate",
    "DecodingConfig": "scoring.decoding",
    "stream_generate": "scoring.streaming",
    "evaluate_scores": "evaluation.evaluate",
    "find_dominant": "dominant",
    "boosted_prob": "dominant",
}

__all__ = [
    "__version__",
    "set_threads",
    "CorpusConfig",
    "DecodingConfig",
    "HeadConfig",
    "RerankConfig",
    "SigmoidHead",
    "SigmoidHeadModel",
    "TrainConfig",
    "boosted_prob",
    "evaluate_scores",
    "find_dominant",
    "generate_and_score",
    "generate_corpus",
    "load_backbone",
    "rerank_corpus",
    "score_corpus",
    "score_records",
    "stream_generate",
    "train",
]

if TYPE_CHECKING:
    from .backbone import load_backbone
    from .dominant import boosted_prob, find_dominant
    from .evaluation.evaluate import evaluate_scores
    from .head import SigmoidHead
    from .head_io import HeadConfig
    from .model import SigmoidHeadModel
    from .scoring.corpus import CorpusConfig, generate_corpus, score_corpus
    from .scoring.decoding import DecodingConfig
    from .scoring.force_decode import score_records
    from .scoring.generate import generate_and_score
    from .scoring.rerank import RerankConfig, rerank_corpus
    from .scoring.streaming import stream_generate
    from .training.config import TrainConfig
    from .training.loop import train


def set_threads(threads: int | None = None) -> str:
    """Apply the commands' thread policy to this Python process; returns the policy in one line.

    Best called before the first model is loaded (before torch is imported): it then sets
    ``OMP_WAIT_POLICY=PASSIVE`` and the thread count as every command does. Looking up a
    torch-using name of this package (``SigmoidHeadModel``, ``score_corpus``, ...) before
    torch is imported applies the same policy by itself; your own ``OMP_NUM_THREADS`` /
    ``OMP_WAIT_POLICY`` win over it. After torch is imported only the count can change.

    Args:
        threads: CPU threads (None: the usable CPUs less the machine's load, at least 1).
    """
    from .threads import apply_in_python

    return apply_in_python(threads)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sigmoid_head' has no attribute {name!r}")
    if "torch" not in sys.modules:  # the commands' policy, set before torch starts
        from .threads import apply

        apply()
    value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
