"""sigmoid-head: a sigmoid unembedding head for quality estimation on frozen language models."""

__version__ = "0.1.0"

from .backbone import load_backbone  # noqa: E402
from .config import TrainConfig  # noqa: E402
from .dominant import boosted_prob, find_dominant  # noqa: E402
from .head import HeadConfig, SigmoidHead  # noqa: E402
from .model import SigmoidHeadModel  # noqa: E402
from .train import train  # noqa: E402  (the function shadows the module name on purpose)

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
