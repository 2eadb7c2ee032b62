"""Rank statistics, as tiny pure functions: Spearman's ρ (Spearman 1904) over
tie-averaged ranks, reciprocal rank, MRR (Voorhees 1999) and median rank. The benchmarks
report them (`benchmarks.metrics`) and CoLLEGe training's dev evaluation watches them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median


def average_ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks of `values` (smallest = 1); tied values share their mean rank.

    The "fractional ranking" Spearman's ρ uses with ties: [10, 20, 20, 30] → [1, 2.5, 2.5, 4].
    """
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1  # mean of ranks start+1 .. end+1
        start = end + 1
    return ranks


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson's r; nan when either side is constant (the correlation is undefined)."""
    if len(xs) != len(ys):
        raise ValueError(f"pearson needs equal lengths, got {len(xs)} and {len(ys)}")
    n = len(xs)
    if n < 2:
        return math.nan
    mx, my = sum(xs) / n, sum(ys) / n
    dx = [x - mx for x in xs]
    dy = [y - my for y in ys]
    sxx, syy = sum(d * d for d in dx), sum(d * d for d in dy)
    if sxx == 0 or syy == 0:
        return math.nan
    return sum(a * b for a, b in zip(dx, dy, strict=True)) / math.sqrt(sxx * syy)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rank correlation ρ (Spearman 1904): Pearson's r of the tie-averaged ranks.

    nan when either side is constant or contains nan, as ρ is undefined there
    (average over items with `nanmean`-style skipping).
    """
    if any(math.isnan(v) for v in (*xs, *ys)):
        return math.nan
    return pearson(average_ranks(xs), average_ranks(ys))


def reciprocal_rank(rank: int) -> float:
    """1 / rank for a 1-based rank (Voorhees 1999, the TREC-8 QA track)."""
    if rank < 1:
        raise ValueError(f"rank must be 1-based (>= 1), got {rank}")
    return 1.0 / rank


def mrr(ranks: Sequence[int]) -> float:
    """Mean reciprocal rank (Voorhees 1999) of 1-based ranks; nan for no ranks."""
    if not ranks:
        return math.nan
    return sum(reciprocal_rank(rank) for rank in ranks) / len(ranks)


def median_rank(ranks: Sequence[int]) -> float:
    """Median of 1-based ranks (Herbelot & Baroni 2017 report it beside MRR); nan if empty."""
    if not ranks:
        return math.nan
    return float(median(ranks))
