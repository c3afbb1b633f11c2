"""Good/bad labels for the model's own outputs, from their alignment with references.

WMT word-level QE derives OK/BAD tags for a translation from its TER alignment with a
post-edit: a word the alignment matches to an identical reference word is OK, every other
word is BAD. Here the reference(s) take the post-edit's place, and the alignment is TER's
without shifts (a word-level Levenshtein alignment, substitutions, insertions and
deletions at cost 1, a match at 0). With several references (the Bible MT data has two
English translations of every Spanish verse) a word is OK when

- ``union`` (default): some reference's alignment matches it, so a valid alternative
  wording found in either reference counts as good;
- ``best``: the alignment with the closest reference (fewest edits; the first on a tie)
  matches it.

Words are runs of letters/digits or single punctuation marks (:func:`words`), compared
case-insensitively unless asked otherwise. Token labels (:func:`token_labels`) follow from
the words' character spans: a token is good when every word it overlaps is OK, bad when
one is BAD, and unlabelled (-1) when it spells no word (the EOS, a chat template's
end-of-turn token, bare whitespace).

A self-labelled data file (``sigmoid-head self-label`` writes one; ``sigmoid-head train
--self-generated`` reads it) holds one JSON object per line: ``source`` (or ``messages``
for a chat prompt), ``target`` (the model's output) and ``word_labels``, one ``"OK"`` /
``"BAD"`` per word of :func:`words` (``target``); ``references`` and ``origin`` are kept
for the record. :func:`sigmoid_head.training.self_generated.load_self_examples` tokenizes it
exactly as the paper's training data is tokenized and adds each example's per-position
labels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

RULES = ("union", "best")
OK, BAD = "OK", "BAD"
IGNORE_LABEL = -1
"""A position that spells no word: trained by neither label."""
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def words(text: str) -> list[tuple[str, int, int]]:
    """The words of ``text``: ``(word, start, end)`` for every run of letters/digits and
    every single punctuation mark, in order."""
    return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


def align_matches(hyp: Sequence[str], ref: Sequence[str]) -> tuple[set[int], int]:
    """TER without shifts: the hypothesis words that a minimum-edit alignment matches to an
    identical reference word, and the number of edits.

    Of the alignments with the fewest edits, the one with the most matches is taken (ties
    broken towards a match, then a substitution, then a deleted hypothesis word), so the
    matched set is deterministic and no word is called bad that some minimum-edit
    alignment matches alongside as many others.

    Returns:
        (indices of matched hypothesis words, edit distance).
    """
    n, m = len(hyp), len(ref)
    # cost[i][j] = (edits, -matches) of the best alignment of hyp[:i] with ref[:j]
    cost = [[(0, 0)] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        cost[i][0] = (i, 0)
    for j in range(m + 1):
        cost[0][j] = (j, 0)
    for i in range(1, n + 1):
        row, prev, hi = cost[i], cost[i - 1], hyp[i - 1]
        for j in range(1, m + 1):
            e, g = prev[j - 1]
            diag = (e, g - 1) if hi == ref[j - 1] else (e + 1, g)
            up, left = prev[j], row[j - 1]
            row[j] = min(diag, (up[0] + 1, up[1]), (left[0] + 1, left[1]))
    matched: set[int] = set()
    i, j = n, m
    while i > 0 or j > 0:
        here = cost[i][j]
        if i > 0 and j > 0:
            e, g = cost[i - 1][j - 1]
            if hyp[i - 1] == ref[j - 1] and here == (e, g - 1):
                matched.add(i - 1)
                i, j = i - 1, j - 1
                continue
            if here == (e + 1, g):
                i, j = i - 1, j - 1
                continue
        if i > 0 and here == (cost[i - 1][j][0] + 1, cost[i - 1][j][1]):
            i -= 1
        else:
            j -= 1
    return matched, cost[n][m][0]


def word_labels(output: str, references: Sequence[str], rule: str = "union",
                case_sensitive: bool = False) -> list[str]:
    """``"OK"`` or ``"BAD"`` for every word of ``output`` (:func:`words`), by its alignment
    with ``references`` under ``rule`` (module docstring)."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if not references:
        raise ValueError("at least one reference is needed to label an output")

    def norm(text: str) -> list[str]:
        return [w if case_sensitive else w.lower() for w, _, _ in words(text)]

    hyp = norm(output)
    aligned = [align_matches(hyp, norm(ref)) for ref in references]
    if rule == "union":
        ok = set().union(*(m for m, _ in aligned))
    else:
        ok = min(aligned, key=lambda a: a[1])[0]  # min() keeps the first on a tie
    return [OK if i in ok else BAD for i in range(len(hyp))]


def token_labels(spans: Sequence[tuple[int, int]], text: str, labels: Sequence[str]) -> list[int]:
    """1 (good), 0 (bad) or -1 (no word) for every token, from its character span in
    ``text`` and the labels of the words of ``text`` (module docstring)."""
    found = words(text)
    if len(found) != len(labels):
        raise ValueError(f"{len(labels)} word labels for {len(found)} words")
    out = []
    for start, end in spans:
        hit = [lab for (_, a, b), lab in zip(found, labels, strict=True) if a < end and start < b]
        out.append(IGNORE_LABEL if not hit else int(all(lab == OK for lab in hit)))
    return out
