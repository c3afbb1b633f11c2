"""sigmoid-head: a sigmoid unembedding head for quality estimation on frozen language models."""

from ._version import __version__
from .backbone import load_backbone
from .dominant import boosted_prob, find_dominant
from .head import HeadConfig, SigmoidHead
from .model import SigmoidHeadModel
from .training.config import TrainConfig
from .training.loop import train

__all__ = [
    "__version__",
    "HeadConfig",
    "SigmoidHead",
    "SigmoidHeadModel",
    "TrainConfig",
    "boosted_prob",
    "find_dominant",
    "load_backbone",
    "train",
]
