"""Agreement of two judgments of the same battles (Cohen 1960's kappa): two people on battles
shown twice, or a person and the automatic judge (demo/judge.py).

agreement([("a", "a"), ("b", "tie")])  # Agreement(pairs=2, observed=0.5, kappa=...)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from demo.vocabulary import VOTE_VALUES


@dataclass(frozen=True)
class Agreement:
    pairs: int  # battles with both judgments
    observed: float  # share of them where both gave the same vote (NaN for none)
    kappa: float  # Cohen's kappa: agreement beyond what the two vote shares give by chance

    def summary(self, battles: str = "judged twice") -> str:
        """E.g. "75% agreement on 4 battles judged twice (Cohen's κ = 0.64)"; `battles` says
        which battles were paired."""
        if not self.pairs:
            return f"no battle {battles} yet"
        kappa = "undefined" if math.isnan(self.kappa) else f"{self.kappa:.2f}"
        return (
            f"{self.observed:.0%} agreement on {self.pairs} battle{'s' * (self.pairs != 1)} "
            f"{battles} (Cohen's κ = {kappa})"
        )


def agreement(pairs: Sequence[tuple[str, str]]) -> Agreement:
    """Agreement of (first vote, second vote) pairs over the four vote values."""
    bad = {v for pair in pairs for v in pair} - set(VOTE_VALUES)
    if bad:
        raise ValueError(f"unknown vote(s) {sorted(bad)}; valid: {', '.join(VOTE_VALUES)}")
    n = len(pairs)
    if n == 0:
        return Agreement(0, math.nan, math.nan)
    observed = sum(first == second for first, second in pairs) / n
    firsts, seconds = Counter(p[0] for p in pairs), Counter(p[1] for p in pairs)
    chance = sum(firsts[v] * seconds[v] for v in VOTE_VALUES) / (n * n)
    kappa = math.nan if chance == 1.0 else (observed - chance) / (1.0 - chance)
    return Agreement(n, observed, kappa)
