"""Eval Other with the error kinds real outputs have, each at a known place.

Every corrupted candidate is a reference with one error put in on purpose, following the
top levels of the MQM typology (accuracy: mistranslation, omission, addition, polarity,
number; fluency: word order, repetition, spelling), plus the whole-sentence error of the
paper's Eval Other (the next verse's reference). Each records which of its
whitespace-separated words carry the error (``bad_words``, indices into
``candidate.split()``) and their character span, so word-level scores and error spans can
be measured, not only sequence scores. An omission leaves nothing to point at: its two
neighbouring words are marked, as word-level QE marks the gap.

Everything is plain Python and deterministic under a seed; :func:`make_suite` builds the
candidates and :func:`pairwise_accuracy` / :func:`kind_rows` measure them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

# function words: never picked as the "content word" an error is put on
FUNCTION_WORDS = set(["a", "an", "the", "and", "or", "but", "nor", "of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "unto", "upon", "as", "that", "this", "these", "those", "it", "its", "he", "him", "his", "she", "her", "they", "them", "their", "we", "us", "our", "you", "your", "i", "me", "my", "is", "was", "are", "were", "be", "been", "am", "shall", "will", "would", "should", "not", "no", "so", "then", "there", "which", "who", "whom", "whose", "what", "when", "where", "if", "than", "all", "also", "have", "has", "had", "do", "did"])
NEGATABLE = ("is", "was", "are", "were", "shall", "will", "would", "should", "can", "could", "may",
             "might", "must", "did", "do", "does", "have", "has", "had")
NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
           "twelve", "twenty", "thirty", "forty", "fifty", "hundred", "thousand"]
KINDS = {  # kind -> MQM category
    "mistranslation": "accuracy/mistranslation", "omission": "accuracy/omission",
    "addition": "accuracy/addition", "polarity": "accuracy/polarity", "number": "accuracy/number",
    "word order": "fluency/word order", "repetition": "fluency/repetition",
    "spelling": "fluency/spelling", "next verse": "accuracy/whole sentence",
}


def _core(word: str) -> str:
    return re.sub(r"^\W+|\W+$", "", word).lower()


def _content(words: list[str]) -> list[int]:
    return [i for i, w in enumerate(words) if len(_core(w)) > 2 and _core(w) not in FUNCTION_WORDS]


def _with_punct(old: str, new_core: str) -> str:
    """``new_core`` wearing ``old``'s leading/trailing punctuation and capitalisation."""
    m = re.match(r"^(\W*)(.*?)(\W*)$", old)
    lead, core, trail = m.group(1), m.group(2), m.group(3)
    if core[:1].isupper():
        new_core = new_core[:1].upper() + new_core[1:]
    return lead + new_core + trail


def mistranslation(words, donors, rng):
    """A content word replaced by a content word of another verse."""
    slots, pool = _content(words), [w for w in donors if len(_core(w)) > 2 and _core(w) not in FUNCTION_WORDS]
    if not slots or not pool:
        return None
    i = rng.choice(slots)
    new = next((_core(w) for w in rng.sample(pool, min(len(pool), 20)) if _core(w) != _core(words[i])), None)
    if new is None:
        return None
    return words[:i] + [_with_punct(words[i], new)] + words[i + 1:], [i]


def omission(words, donors, rng):
    """One to three consecutive words deleted (not the first or last word); the two neighbours are marked."""
    if len(words) < 6:
        return None
    n = rng.randint(1, 3)
    i = rng.randrange(1, len(words) - n)
    out = words[:i] + words[i + n:]
    return out, [i - 1, i]


def addition(words, donors, rng):
    """Two to four consecutive words of another verse inserted."""
    if len(donors) < 4:
        return None
    n = rng.randint(2, 4)
    j = rng.randrange(0, len(donors) - n + 1)
    phrase = [_core(w) or w for w in donors[j : j + n]]
    i = rng.randrange(1, len(words) + 1)
    return words[:i] + phrase + words[i:], list(range(i, i + n))


def polarity(words, donors, rng):
    """'not' removed where there is one, else inserted after an auxiliary."""
    nots = [i for i, w in enumerate(words) if _core(w) == "not"]
    if nots:
        i = rng.choice(nots)
        out = words[:i] + words[i + 1:]
        return out, [max(i - 1, 0)] + ([i] if i < len(out) else [])
    aux = [i for i, w in enumerate(words) if _core(w) in NEGATABLE and w == w.rstrip(".,;:!?")]
    if not aux:
        return None
    i = rng.choice(aux)
    return words[: i + 1] + ["not"] + words[i + 1:], [i + 1]


def number(words, donors, rng):
    """A number (word or digits) replaced by another."""
    slots = [i for i, w in enumerate(words) if _core(w) in NUMBERS or _core(w).isdigit()]
    if not slots:
        return None
    i = rng.choice(slots)
    old = _core(words[i])
    new = str(int(old) + rng.randint(1, 9)) if old.isdigit() else rng.choice([n for n in NUMBERS if n != old])
    return words[:i] + [_with_punct(words[i], new)] + words[i + 1:], [i]


def word_order(words, donors, rng):
    """Two neighbouring words swapped (at least one a content word, the two different)."""
    pairs = [i for i in range(len(words) - 1) if _core(words[i]) != _core(words[i + 1])
             and (i in _content(words) or i + 1 in _content(words)) and words[i][-1:].isalpha()]
    if not pairs:
        return None
    i = rng.choice(pairs)
    a, b = _core(words[i]), _core(words[i + 1])
    out = list(words)
    out[i], out[i + 1] = _with_punct(words[i], b), _with_punct(words[i + 1], a)
    return out, [i, i + 1]


def repetition(words, donors, rng):
    """A word or two repeated right after themselves."""
    n = rng.randint(1, 2)
    if len(words) < n + 1:
        return None
    i = rng.randrange(0, len(words) - n + 1)
    chunk = [_core(w) or w for w in words[i : i + n]]
    return words[: i + n] + chunk + words[i + n:], list(range(i + n, i + 2 * n))


def spelling(words, donors, rng):
    """Two neighbouring letters of a word of five or more letters swapped."""
    slots = [i for i, w in enumerate(words) if len(_core(w)) >= 5]
    if not slots:
        return None
    i = rng.choice(slots)
    w = words[i]
    letters = [k for k in range(len(w) - 1) if w[k].isalpha() and w[k + 1].isalpha() and w[k] != w[k + 1]]
    if not letters:
        return None
    k = rng.choice(letters)
    return words[:i] + [w[:k] + w[k + 1] + w[k] + w[k + 2:]] + words[i + 1:], [i]


CORRUPTIONS: dict[str, Callable] = {"mistranslation": mistranslation, "omission": omission,
                                    "addition": addition, "polarity": polarity, "number": number,
                                    "word order": word_order, "repetition": repetition,
                                    "spelling": spelling}


def char_span(words: list[str], bad: list[int]) -> tuple[int, int]:
    """Character span, in ``" ".join(words)``, from the first to the last bad word."""
    starts = [sum(len(w) + 1 for w in words[:i]) for i in range(len(words))]
    return starts[min(bad)], starts[max(bad)] + len(words[max(bad)])


def make_suite(items: list[dict], seed: int = 0) -> list[dict]:
    """Candidates for Eval Other: per item its references (label 1, kind "reference") and, from
    its first reference, one candidate per error kind that applies (label 0).

    Args:
        items: ``{"source", "refs"}`` per verse (the references as whitespace-normalised text).
        seed: everything random comes from it.

    Returns:
        ``{"item", "source", "candidate", "label", "kind", "mqm", "bad_words", "span"}`` dicts;
        ``bad_words`` indexes ``candidate.split()``, ``span`` is (start, end) in ``candidate``.
    """
    rng, out = random.Random(seed), []
    for n, item in enumerate(items):
        for ref in item["refs"]:
            out.append({"item": n, "source": item["source"], "candidate": " ".join(ref.split()),
                        "label": 1, "kind": "reference", "mqm": None, "bad_words": [], "span": None})
        words = item["refs"][0].split()
        donors = items[(n + 1 + rng.randrange(len(items) - 1)) % len(items)]["refs"][0].split() if len(items) > 1 else []
        for kind, corrupt in CORRUPTIONS.items():
            got = corrupt(words, donors, rng)
            if got is None or got[0] == words:
                continue
            new, bad = got
            out.append({"item": n, "source": item["source"], "candidate": " ".join(new), "label": 0,
                        "kind": kind, "mqm": KINDS[kind], "bad_words": sorted(set(bad)),
                        "span": char_span(new, bad)})
        nxt = items[(n + 1) % len(items)]["refs"][0].split()
        if nxt != words:
            out.append({"item": n, "source": item["source"], "candidate": " ".join(nxt), "label": 0,
                        "kind": "next verse", "mqm": KINDS["next verse"], "bad_words": list(range(len(nxt))),
                        "span": (0, len(" ".join(nxt)))})
    return out


def pairwise_accuracy(scores, cands: list[dict], kind: str) -> float:
    """Share of (first reference, its own corruption of ``kind``) pairs where the reference
    scores strictly higher (ties count a half)."""
    first = {}
    for i, c in enumerate(cands):
        if c["kind"] == "reference" and c["item"] not in first:
            first[c["item"]] = i
    wins = [1.0 if scores[first[c["item"]]] > scores[i] else 0.5 if scores[first[c["item"]]] == scores[i] else 0.0
            for i, c in enumerate(cands) if c["kind"] == kind]
    return float(sum(wins) / len(wins)) if wins else float("nan")
