"""sigmoid-head: a sigmoid unembedding head for quality estimation on frozen language models."""

__version__ = "0.1.0"
