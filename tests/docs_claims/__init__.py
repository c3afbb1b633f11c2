"""The docs' figure claims as data: each :class:`~docs_claims.sources.Claim` is a piece of a
page's prose and the source of each of its figures (tests/test_docs_figures.py checks them).

Add a claim to the module of its page's section (``pages`` for the rest); a helper that
reads a new kind of data goes to ``sources``."""

from .pages import CLAIMS
from .sources import FIGURE, NUMBER, ROOT, Claim

__all__ = ["CLAIMS", "FIGURE", "NUMBER", "ROOT", "Claim"]
