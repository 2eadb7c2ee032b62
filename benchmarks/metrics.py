"""Benchmark metrics as tiny pure functions: Spearman ρ (Spearman 1904), reciprocal rank
and MRR (Voorhees 1999), ROUGE-L (Lin 2004) and accuracy. The rank statistics live in
`backends.ranking` (training's dev evaluation uses them too); they are named here so the
benchmarks have one module of metrics.

Each takes plain Python values and returns a float, so the task code stays declarative
and the numbers can be checked by hand.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from backends.function_words import is_content_word, is_counted_word
from backends.ranking import average_ranks, median_rank, mrr, pearson, reciprocal_rank, spearman

__all__ = [
    "accuracy",
    "average_ranks",
    "babbles",
    "degenerate",
    "distractors",
    "gap_closed",
    "identified",
    "lcs_length",
    "masked",
    "median_rank",
    "mrr",
    "names_word",
    "pearson",
    "rank_of",
    "reciprocal_rank",
    "repeats_ngram",
    "repeats_word",
    "rouge_l",
    "spearman",
    "tokens",
]


def rank_of(gold_score: float, candidate_scores: Sequence[float]) -> int:
    """1-based rank of the gold: 1 + number of candidates scoring strictly higher.

    Ties are resolved in the gold's favour (optimistic rank), as a candidate with the
    same score is not ranked above it. `candidate_scores` should exclude the gold itself.
    """
    return 1 + sum(1 for score in candidate_scores if score > gold_score)


_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Lowercased word tokens (runs of letters, digits, underscore); punctuation dropped."""
    return _WORD.findall(text.lower())


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists (dynamic programming)."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l(reference: str, candidate: str, beta: float = 1.0) -> float:
    """ROUGE-L F-measure (Lin 2004, §3.1) over lowercased word tokens.

    R = LCS/|reference|, P = LCS/|candidate|, F = (1+β²)RP / (R + β²P); β = 1 gives
    the harmonic mean, as in the usual `rouge-score` "rougeL" F1. 0 when either is empty.
    """
    ref, cand = tokens(reference), tokens(candidate)
    lcs = lcs_length(ref, cand)
    if lcs == 0:
        return 0.0
    recall, precision = lcs / len(ref), lcs / len(cand)
    return (1 + beta**2) * recall * precision / (recall + beta**2 * precision)


def accuracy(golds: Sequence[object], preds: Sequence[object]) -> float:
    """Fraction of positions where the prediction equals the gold; nan for no items."""
    if len(golds) != len(preds):
        raise ValueError(f"accuracy needs equal lengths, got {len(golds)} and {len(preds)}")
    if not golds:
        return math.nan
    return sum(g == p for g, p in zip(golds, preds, strict=True)) / len(golds)


def repeats_ngram(words: Sequence[str], n: int = 3) -> bool:
    """Whether some word n-gram occurs twice in `words` (a loop, the commonest failure)."""
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return len(grams) != len(set(grams))


def repeats_word(words: Sequence[str], limit: int = 3) -> bool:
    """Whether a content word, or from DefGen version 6 a form of "do", is said `limit` or
    more times ('a shed or shed is a shed', 'to do, to do something, to do'), or any word
    right after itself ('past events, events'): loops no n-gram repeats."""
    counted = Counter(w for w in words if is_counted_word(w))
    stutter = any(a == b for a, b in zip(words, words[1:]))
    return stutter or max(counted.values(), default=0) >= limit


# Babble: at least this many words, under this share of them content words. Every one of
# the 5 357 distinct DefGen definitions in benchmarks/results that falls below 15% reads
# as function words strung together ('a word that is not defined, a, and is not a, and not
# a, not a, is not', prompting at k = 3) or as a list of digits ('a number that is
# divisible by 1, 2, 3, 4, 5, 6, 7, 8.'); between 15% and 25% some are whole sentences
# ('a number that is divisible by 10 or 100.').
BABBLE_WORDS = 8
BABBLE_CONTENT = 0.15


def babbles(words: Sequence[str]) -> bool:
    """Whether a definition of `BABBLE_WORDS` words or more says almost nothing: under
    `BABBLE_CONTENT` of its words are content words. No loop of one word or n-gram, yet
    no reader can use it."""
    if len(words) < BABBLE_WORDS:
        return False
    return sum(map(is_content_word, words)) < BABBLE_CONTENT * len(words)


def repeats_quotation(definition: str) -> bool:
    """Whether something is quoted twice ('"a" or "a" (plural)'): a loop no n-gram repeats
    and no content word counts, when what is quoted is a function word."""
    from backends.decoding import quotations

    quoted = [q for q in quotations(definition) if q]
    return len(quoted) != len(set(quoted))


def degenerate(definition: str, word: str) -> bool:
    """A definition no reader can use: empty, saying the defined word (or an inflection of
    it) again, repeating a word 3-gram, looping on a word (`repeats_word`) or on a
    quotation (`repeats_quotation`), or babbling (`babbles`, from DefGen version 6)."""
    from backends.nonce_lm import word_pattern

    said = tokens(definition)
    if not said or word_pattern(word).search(definition):
        return True
    loops = repeats_ngram(said, 3) or repeats_word(said) or repeats_quotation(definition)
    return loops or babbles(said)


def names_word(definition: str, word: str) -> bool:
    """Whether a definition says the real `word` or one of its forms ('to bruise', 'bruised',
    'mice'): `backends.word_forms`."""
    from backends.word_forms import names_word as says  # the library's, as the app's card uses

    return says(definition, word)


def masked(definition: str, word: str, mask: str) -> str:
    """The definition with `word` and its inflections put as `mask`: what it says of the
    word besides naming it ('"to bruise" or "to cause pain"' -> '"to dax" or ...')."""
    from backends.word_forms import real_word_pattern

    return real_word_pattern(word).sub(mask, definition)


def identified(own: float, others: Sequence[float]) -> bool:
    """Whether a definition is closer to its own reference than to every other one:
    could a reader tell which of the words it defines? (ties count against it)."""
    return all(own > other for other in others)


def margin(own: float, others: Sequence[float]) -> float:
    """How far a definition's closeness to its own reference beats the closest other one
    (> 0: identified); the tournament's judge compares two definitions by it."""
    return own - max(others)


def distractors(n_items: int, item: int, n: int, seed: int) -> list[int]:
    """`n` other item indices for `item`, drawn without replacement, seeded per item, so
    every learner and every run face the same line-up."""
    import random

    others = [i for i in range(n_items) if i != item]
    return random.Random(seed * 1_000_003 + item).sample(others, min(n, len(others)))


def gap_closed(learner: float, centroid: float, oracle: float) -> float:
    """Share of the centroid-to-oracle gap a learner closes: (learner - centroid) / (oracle -
    centroid); nan when the oracle is no better than the centroid."""
    if any(math.isnan(v) for v in (learner, centroid, oracle)) or oracle <= centroid:
        return math.nan
    return (learner - centroid) / (oracle - centroid)
