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
* the method's pieces: :func:`find_dominant`, :func:`boosted_prob`;
* plugins (new scoring methods and baselines): ``sigmoid_head.plugin``.

Package layout, lowest layer first (each imports only from its own layer and those
before it; ``tests/test_layout.py`` holds the same list):

* ``_version``, ``embedded/`` (the offline default model), ``terminal`` (token colours in a
  terminal), ``safe/`` (durable writes, always-valid JSON, safe text, outputs that cannot
  overwrite inputs, finite numbers, settings' types, the resumable JSONL writer) and
  ``registry/`` (the scoring methods, the output columns and the baselines' settings,
  torch-free), with ``plugin`` (the stable import for plugin authors) and the deprecated
  aliases of its modules' old paths (``methods``, ``columns``, ``baseline_settings``);
* ``data/`` (records, tokenization, batching, prompt rendering);
* ``lm/`` (the frozen model: loading it, the Hub's reachability, dominant tokens, execution
  profiles, the CPU's half-precision probe);
* ``head/`` (the Sigmoid Head, the model that carries it, its folder and the files and
  extras it holds, the authors' released format, the Hub and the model card);
* the pipelines: ``training/`` (with the negative sampling), ``scoring/``, ``evaluation/``
  (numpy only), and ``integrations/`` beside them;
* ``demo/`` and ``cli/`` (with the thread policy every command sets) on top.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._version import __version__

_EXPORTS = {
    "SigmoidHeadModel": "head.model",
    "SigmoidHead": "head.layer",
    "HeadConfig": "head.folder",
    "load_backbone": "lm.backbone",
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
    "find_dominant": "lm.dominant",
    "boosted_prob": "lm.dominant",
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
    from .evaluation.evaluate import evaluate_scores
    from .head.folder import HeadConfig
    from .head.layer import SigmoidHead
    from .head.model import SigmoidHeadModel
    from .lm.backbone import load_backbone
    from .lm.dominant import boosted_prob, find_dominant
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
    from .cli.threads import apply_in_python

    return apply_in_python(threads)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sigmoid_head' has no attribute {name!r}")
    if "torch" not in sys.modules:  # the commands' policy, set before torch starts
        from .cli.threads import apply

        apply()
    value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
