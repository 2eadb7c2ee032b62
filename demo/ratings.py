"""Ratings from pairwise votes: online Elo and a bootstrapped Bradley–Terry leaderboard.

As in Chatbot Arena (Chiang et al., 2024, arXiv:2403.04132) and CoLLEGe's Table 2: online
Elo (K=4); Bradley–Terry, ties half a win each way, with bootstrap 95% intervals; rank = 1 +
number of learners whose lower bound beats this one's upper bound.

Two things an arena's board meets that a large one rarely does: a learner with a handful of
battles, and learners never compared. So the Bradley–Terry fit is the posterior mode under a
weak normal prior on each log-strength (worth one even battle: a learner that won all three
of its battles gets a finite score its votes can still move, not the fit's numerical bound);
1000 is the mean over battles, not over learners (a learner with three battles, whose score
swings from one bootstrap round to the next, no longer swings everyone else's); and learners
in separate groups of the comparison graph, whose scores share no scale, are ranked only
within their group (`Leaderboard.groups`), and sets of learners that won every battle
against the rest of their group, which the votes order but do not measure apart, are named
(`Leaderboard.ordered_only`).

    board = leaderboard([("hice", "additive", "a"), ("additive", "hice", "tie")])
    board.rows[0].learner, board.rows[0].score, board.win_rate
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from demo.vocabulary import VOTE_VALUES, VoteValue

log = logging.getLogger(__name__)

Outcome = VoteValue
Match = tuple[str, str, str]  # (learner_a, learner_b, outcome), in time order
OUTCOMES: tuple[str, ...] = VOTE_VALUES
# code per outcome: 0 = a won, 1 = b won, 2 = tie ("both bad" counts as a tie)
OUTCOME_CODE = {"a": 0, "b": 1, "tie": 2, "both_bad": 2}


@dataclass(frozen=True)
class EloSettings:
    """Online Elo, as in CoLLEGe and Chatbot Arena."""

    init: float = 1000.0  # every learner's starting rating
    k: float = 4.0  # step per battle; small, so the latest votes do not swing the ratings
    scale: float = 400.0  # a rating gap of `scale` means odds of `base` to 1
    base: float = 10.0


@dataclass(frozen=True)
class BTSettings:
    """Bradley–Terry fit and its bootstrap."""

    confidence: float = 0.95  # coverage of the percentile intervals
    # the battle-weighted mean score, or `anchor_learner`'s score, on the Elo scale
    anchor: float = 1000.0
    anchor_learner: str | None = None  # None: anchor the mean over battles
    # sd of the normal prior on each log-strength, in logits (2: 347 Elo points). Its
    # precision, 1/4, is the information of one battle between even learners, so it holds
    # a learner that won or lost every battle at a finite score and is small beside 50.
    prior_sd: float = 2.0
    max_iter: int = 100  # Newton steps; it converges in ~10 on real data

    def __post_init__(self) -> None:
        if not (math.isfinite(self.prior_sd) and self.prior_sd > 0):
            raise ValueError(f"the prior's sd must be a positive number, got {self.prior_sd}")


@dataclass(frozen=True)
class PairTable:
    """Votes aggregated per unordered pair: counts[p] = (i won, j won, ties) for i[p] < j[p]."""

    learners: tuple[str, ...]  # sorted; i and j index into it
    i: np.ndarray  # (P,) int
    j: np.ndarray  # (P,) int
    counts: np.ndarray  # (P, 3) int


@dataclass(frozen=True)
class Row:
    """One learner's line on the leaderboard; scores are on the Elo scale."""

    learner: str
    elo: float  # online Elo
    score: float  # Bradley–Terry score: the posterior mode under the fit's prior
    ci_low: float
    ci_high: float
    rank: int
    battles: int


@dataclass(frozen=True)
class Leaderboard:
    """Rows sorted by rank then score, and win rates in the same learner order."""

    rows: tuple[Row, ...]
    learners: tuple[str, ...]
    # (n, n): fraction of their battles the row learner won against the column one, ties
    # half; NaN where they never met
    win_rate: np.ndarray = field(compare=False)
    # the comparison graph's connected groups, in row order: with more than one, scores of
    # two groups share no scale (only the prior places them) and ranks count within a group
    groups: tuple[tuple[str, ...], ...] = ()
    # per group whose votes only order some of its learners, its sets in row order: every
    # battle between two sets went one way (a learner that won all its battles is a set of
    # its own), so the votes say which set is above, and the prior alone how far
    ordered_only: tuple[tuple[tuple[str, ...], ...], ...] = ()


def _encode(matches: Sequence[Match]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    """Learner names, and per match the indices of a and b and the outcome code."""
    bad = {outcome for _, _, outcome in matches} - set(OUTCOMES)
    if bad:
        raise ValueError(f"unknown outcome(s) {sorted(bad)}; valid: {', '.join(OUTCOMES)}")
    learners = tuple(sorted({m[0] for m in matches} | {m[1] for m in matches}))
    index = {name: k for k, name in enumerate(learners)}
    count = len(matches)
    a = np.fromiter((index[m[0]] for m in matches), dtype=np.int64, count=count)
    b = np.fromiter((index[m[1]] for m in matches), dtype=np.int64, count=count)
    code = np.fromiter((OUTCOME_CODE[m[2]] for m in matches), dtype=np.int64, count=count)
    if np.any(a == b):
        name = learners[int(a[np.argmax(a == b)])]
        raise ValueError(f"a battle needs two different learners, got {name!r} twice")
    return learners, a, b, code


def elo(matches: Sequence[Match], settings: EloSettings | None = None) -> dict[str, float]:
    """Online Elo over matches in time order; returns learner -> rating."""
    return _elo(*_encode(matches), settings or EloSettings())


def _elo(
    learners: tuple[str, ...], a: np.ndarray, b: np.ndarray, code: np.ndarray, settings: EloSettings
) -> dict[str, float]:
    ratings = [settings.init] * len(learners)
    score_a = (1.0, 0.0, 0.5)  # per outcome code
    k, scale, base = settings.k, settings.scale, settings.base
    for x, y, c in zip(a.tolist(), b.tolist(), code.tolist(), strict=True):
        expected = 1.0 / (1.0 + base ** ((ratings[y] - ratings[x]) / scale))
        delta = k * (score_a[c] - expected)
        ratings[x] += delta
        ratings[y] -= delta
    return dict(zip(learners, ratings, strict=True))


def battle_counts(matches: Sequence[Match]) -> dict[str, int]:
    """How many battles each learner fought."""
    return _battle_counts(pair_table(matches))


def _battle_counts(table: PairTable) -> dict[str, int]:
    n, games = len(table.learners), table.counts.sum(axis=1)
    fought = np.bincount(table.i, games, minlength=n) + np.bincount(table.j, games, minlength=n)
    return {name: int(count) for name, count in zip(table.learners, fought, strict=True)}


def pair_table(matches: Sequence[Match]) -> PairTable:
    """Aggregate matches into per-pair outcome counts (order of play no longer matters)."""
    return _pair_table(*_encode(matches))


def _pair_table(
    learners: tuple[str, ...], a: np.ndarray, b: np.ndarray, code: np.ndarray
) -> PairTable:
    n = len(learners)
    low, high = np.minimum(a, b), np.maximum(a, b)
    # seen from the lower index: when a is the higher one, "a won" means "j won"
    swapped = np.where((a > b) & (code < 2), 1 - code, code)
    cells = np.bincount((low * n + high) * 3 + swapped, minlength=n * n * 3).reshape(n * n, 3)
    pairs = np.flatnonzero(cells.sum(axis=1))
    return PairTable(learners, pairs // n, pairs % n, cells[pairs])


def win_rate_matrix(table: PairTable) -> np.ndarray:
    """(n, n) share of battles the row learner won against the column one; ties count half."""
    n = len(table.learners)
    rate = np.full((n, n), np.nan)
    won_i, won_j, ties = table.counts.T
    games = table.counts.sum(axis=1)
    rate[table.i, table.j] = (won_i + 0.5 * ties) / games
    rate[table.j, table.i] = (won_j + 0.5 * ties) / games
    return rate


def _fit(table: PairTable, counts: np.ndarray, settings: BTSettings) -> np.ndarray:
    """Log-strengths maximising the BT likelihood times the prior for R count tables at once.

    counts: (R, P, 3) outcome counts per pair; returns (R, n) natural-log strengths (their
    mean is 0 in each connected group: the likelihood does not move it, the prior centres it).
    Newton's method: the log-posterior is strictly concave and n is small.
    """
    precision = 1.0 / settings.prior_sd**2
    rounds, n = counts.shape[0], len(table.learners)
    pairs = np.arange(len(table.i))
    incidence = np.zeros((len(pairs), n))  # (P, n): +1 at i, -1 at j
    incidence[pairs, table.i], incidence[pairs, table.j] = 1.0, -1.0
    points_i = counts[..., 0] + 0.5 * counts[..., 2]  # (R, P): ties are half a win each way
    games = counts.sum(axis=-1)  # (R, P)
    strengths = np.zeros((rounds, n))
    for _ in range(settings.max_iter):
        p_i = expit(strengths @ incidence.T)  # (R, P): chance that i beats j
        gradient = (points_i - games * p_i) @ incidence - precision * strengths
        weight = games * p_i * (1.0 - p_i)  # (R, P)
        # negative Hessian: the weighted graph Laplacian plus the prior; shape (R, n, n)
        hessian = np.zeros((rounds, n, n))
        hessian[:, table.i, table.j] = -weight
        hessian[:, table.j, table.i] = -weight
        hessian[:, np.arange(n), np.arange(n)] = weight @ np.abs(incidence) + precision
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        strengths += np.clip(step, -4.0, 4.0)  # damp the first steps on lopsided data
        if np.max(np.abs(step)) < 1e-9:
            break
    return strengths


def to_elo_scale(
    strengths: np.ndarray, table: PairTable, settings: BTSettings, elo: EloSettings
) -> np.ndarray:
    """Log-strengths (..., n) of `table`'s learners to scores on the Elo scale, anchored as
    settings ask: by default the mean over `table`'s battles (each learner weighed by the
    battles it fought there, in every bootstrap round alike) sits at the anchor."""
    # odds of base^(gap/scale): a natural-log gap d is d * scale / ln(base) rating points
    scores = strengths * elo.scale / math.log(elo.base)
    learners = table.learners
    if settings.anchor_learner is None:
        battles = np.array(list(_battle_counts(table).values()), dtype=float)
        offset = (scores @ (battles / battles.sum()))[..., None]
    elif settings.anchor_learner in learners:
        offset = scores[..., [learners.index(settings.anchor_learner)]]
    else:
        raise ValueError(
            f"unknown anchor learner {settings.anchor_learner!r}; valid: {', '.join(learners)}"
        )
    return scores - offset + settings.anchor


def bradley_terry(
    table: PairTable,
    rounds: int = 100,
    seed: int = 0,
    settings: BTSettings | None = None,
    elo_settings: EloSettings | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """BT scores on the Elo scale, (n,), and `rounds` bootstrap resamples of them, (rounds, n).

    Bootstrapping rows with replacement gives multinomial counts over the (pair, outcome)
    cells, so resampling the counts directly is the same bootstrap at O(pairs) per round.
    """
    settings, elo_settings = settings or BTSettings(), elo_settings or EloSettings()
    if rounds < 1:
        raise ValueError(f"bootstrap rounds must be at least 1, got {rounds}")
    flat = table.counts.reshape(-1)
    rng = np.random.default_rng(seed)
    resampled = rng.multinomial(flat.sum(), flat / flat.sum(), size=rounds)
    counts = np.concatenate([table.counts[None], resampled.reshape(rounds, -1, 3)])
    scores = to_elo_scale(_fit(table, counts, settings), table, settings, elo_settings)
    return scores[0], scores[1:]


def ranks(low: np.ndarray, high: np.ndarray, group: np.ndarray | None = None) -> np.ndarray:
    """1 + the number of learners (of the same `group`, where given) whose lower bound
    exceeds this one's upper bound."""
    above = low[None, :] > high[:, None]
    if group is not None:
        above &= group[None, :] == group[:, None]
    return 1 + above.sum(axis=1)


def components(table: PairTable) -> np.ndarray:
    """(n,) a label per learner: learners share one when a chain of battles joins them."""
    label = np.arange(len(table.learners))
    changed = True
    while changed:  # spread the smallest label along every pair until nothing moves
        low = np.minimum(label[table.i], label[table.j])
        before = label.copy()
        np.minimum.at(label, table.i, low)
        np.minimum.at(label, table.j, low)
        label = label[label]  # follow labels to their root
        changed = not np.array_equal(label, before)
    return label


def scored_sets(table: PairTable) -> np.ndarray:
    """(n,) a label per learner: learners share one when each took points (a win or a tie)
    from the other through some chain of battles, the strongly connected sets of the graph
    "took points from". Within a connected group the fit without its prior has a finite
    optimum only when the group is one such set (Zermelo 1929; Ford 1957)."""
    n = len(table.learners)
    won_i, won_j, ties = table.counts.T
    reach = np.eye(n, dtype=bool)
    reach[table.i, table.j] |= (won_i + ties) > 0  # i took points from j
    reach[table.j, table.i] |= (won_j + ties) > 0
    while True:  # transitive closure by squaring: a handful of rounds for any board
        closed = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
        if np.array_equal(closed, reach):
            break
        reach = closed
    both = reach & reach.T
    return np.argmax(both, axis=1)  # the lowest index each learner shares both ways with


def leaderboard(
    matches: Sequence[Match],
    rounds: int = 100,
    seed: int = 0,
    settings: BTSettings | None = None,
    elo_settings: EloSettings | None = None,
) -> Leaderboard:
    """The leaderboard of one kind of judge: Elo, BT score, interval, rank, battles, win rates."""
    settings = settings or BTSettings()
    matches = list(matches)
    if not matches:
        return Leaderboard(rows=(), learners=(), win_rate=np.zeros((0, 0)))
    encoded = _encode(matches)
    table = _pair_table(*encoded)
    score, boot = bradley_terry(table, rounds, seed, settings, elo_settings)
    tail = 50.0 * (1.0 - settings.confidence)
    low, high = np.percentile(boot, [tail, 100.0 - tail], axis=0)
    group = components(table)
    rank = ranks(low, high, group)
    online = _elo(*encoded, elo_settings or EloSettings())
    fought = _battle_counts(table)
    order = row_order(score, rank, group)
    rows = []
    for k in order:
        name = table.learners[k]
        stats = (float(score[k]), float(low[k]), float(high[k]), int(rank[k]))
        rows.append(Row(name, online[name], *stats, battles=fought[name]))
    rates = win_rate_matrix(table)[np.ix_(order, order)]
    sets, ordered_only = scored_sets(table), []
    for members in _partition(group, order, range(len(table.learners))):
        split = _partition(sets, members, table.learners)
        if len(split) > 1:
            ordered_only.append(split)
    log.info("leaderboard of %d learners from %d votes", len(rows), len(matches))
    return Leaderboard(
        rows=tuple(rows),
        learners=tuple(r.learner for r in rows),
        win_rate=rates,
        groups=_partition(group, order, table.learners),
        ordered_only=tuple(ordered_only),
    )


def row_order(score: np.ndarray, rank: np.ndarray, group: np.ndarray) -> list[int]:
    """Learners in board order: a group's rows together (groups by their best score), then
    by rank and score."""
    best = {g: -max(score[group == g]) for g in set(group.tolist())}
    return sorted(range(len(score)), key=lambda k: (best[int(group[k])], rank[k], -score[k]))


def _partition(label: np.ndarray, order: Sequence[int], names: Sequence) -> tuple[tuple, ...]:
    """`order`'s members grouped by `label`, groups and members in `order`'s order."""
    parts: dict[int, list] = {}
    for k in order:
        parts.setdefault(int(label[k]), []).append(names[k])
    return tuple(tuple(part) for part in parts.values())
