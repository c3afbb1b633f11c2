"""Does the row-sparse update change the head? The quality check of issue 60, item 1.

``--optimizer sparse_adamw`` (:class:`sigmoid_head.training.optim.RowSparseAdamW`) updates
only the rows of the head that received a gradient; the default is dense fused AdamW, which
also moves every untouched row along its old momentum. Issue 60 makes the row-sparse update
the single-process default only after a quality check decided in advance. This is that
check's WMT half.

**Declared before the run** (this docstring was committed before any sparse head was
trained):

* Heads: the ro-en tag head of the page (``labelled_roen``, ``labelled_roen_s1``,
  ``labelled_roen_s2``: dense fused AdamW, seeds 0 / 1 / 2, the clean ro-en tag split)
  trained again with the very same command and seeds but ``--optimizer sparse_adamw``
  (one process, so its sparse row gradients), the frozen model's hidden states read from
  the dense runs' caches (``--cache-from``), scored by ``run.py --set mlqe-roen-word`` and
  packed as :data:`SPARSE` (``labelled_roen_sparse``, ``_sparse_s1``, ``_sparse_s2``).
* Figure: word MCC on the WMT 2021 ro-en test at each head's own dev-chosen threshold (as
  every table of the page).
* Primary test (equivalence, one test, no family): the mean over the three seeds of
  (sparse minus dense of the same seed), by a paired bootstrap over test sources (1,000
  resamples, dev thresholds fixed). The two updates are called **equivalent** when the
  90% interval of that mean lies inside :data:`MARGIN` (-0.01, +0.01): two one-sided tests
  at 0.05 (TOST). Otherwise the check fails, whatever the direction.
* Reported either way (descriptive, Holm over the 3 seeds, two-sided): each seed's sparse
  minus dense, with its 95% interval.
* What follows: ``sparse_adamw`` becomes the single-process default only if this half is
  equivalent **and** the Bible half is (the primary-family head ``token_freq+avoid`` of
  ``recipes/bible/primary_family.py``, seeds 0 / 1 / 2 retrained both ways, word ROC-AUC on
  the test books, the same kind of test with a margin of +-0.01 ROC-AUC). Speed is not part
  of this check: it is measured by ``benchmarks/train_throughput.py`` on a GPU.
"""

from __future__ import annotations

DENSE = ("labelled_roen", "labelled_roen_s1", "labelled_roen_s2")
"""The committed dense-AdamW heads, seeds 0 / 1 / 2."""
SPARSE = ("labelled_roen_sparse", "labelled_roen_sparse_s1", "labelled_roen_sparse_s2")
"""The same heads trained with ``--optimizer sparse_adamw``, seeds 0 / 1 / 2."""
MARGIN = 0.01
"""The equivalence margin on word MCC, stated before the run."""
EQUIVALENCE_LEVEL = 0.90
"""The level of the interval that must lie inside the margin (TOST at 0.05 each side)."""
