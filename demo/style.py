"""Style-controlled Bradley–Terry: learner strengths with the definitions' length difference
held fixed, as LMArena's style control does (Li et al. 2024, "Does style matter?").

A logistic model of P(A beats B) = σ(β_A − β_B + γ·s), where s is the normalised length
difference (len A − len B) / (len A + len B) of the two definitions (rounded to 0.05, so
votes group into a few cells); ties count half a win each way. The β are then on the Elo
scale like the plain fit's, and γ says how much a longer definition wins on its own.
Bootstrap intervals resample votes.

γ has a standard normal prior (one logit, 174 Elo points at s = +1): with a handful of
votes between the same two learners, length and learner are one and the same column, and
the unpenalised fit sent γ to a thousand points either way; a few hundred votes outweigh
the prior (each carries about ¼ s² of information on γ). The learners' strengths take the
plain fit's prior, anchor (the mean over battles) and groups (`demo.ratings`).

    board = style_controlled([("x", "y", "a", 40, 12), ...], rounds=100)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from demo.ratings import (
    OUTCOME_CODE,
    BTSettings,
    EloSettings,
    components,
    pair_table,
    ranks,
    row_order,
    to_elo_scale,
)

StyledMatch = tuple[str, str, str, int, int]  # (learner_a, learner_b, vote, len_a, len_b)
STEP = 0.05  # the length difference s is rounded to this before fitting
LENGTH_PRIOR = 1.0  # precision of γ's normal prior, in logits (sd 1: 174 Elo points at s = +1)


@dataclass(frozen=True)
class StyleRow:
    learner: str
    score: float  # on the Elo scale, mean over battles 1000 (as the plain fit)
    ci_low: float
    ci_high: float
    rank: int


@dataclass(frozen=True)
class StyleBoard:
    rows: tuple[StyleRow, ...]
    length_effect: float  # γ on the Elo scale: points a definition gains from s = +1
    length_ci: tuple[float, float]


def _cells(
    matches: Sequence[StyledMatch],
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    """Votes grouped into cells of equal (A, B, rounded s, outcome), so a fit costs the same
    for 100 votes as for 100 000: learners, X (C, n + 1) (+1 for A, −1 for B, then s),
    y (C,) (1, 0 or ½ for A) and counts (C,)."""
    learners = tuple(sorted({m[0] for m in matches} | {m[1] for m in matches}))
    index = {name: k for k, name in enumerate(learners)}
    lengths = np.array([(m[3], m[4]) for m in matches], dtype=float)
    diff = (lengths[:, 0] - lengths[:, 1]) / np.maximum(lengths.sum(axis=1), 1.0)
    keys = np.stack(
        [
            [index[m[0]] for m in matches],
            [index[m[1]] for m in matches],
            np.round(diff / STEP).astype(int),  # s in steps of STEP
            [OUTCOME_CODE[m[2]] for m in matches],
        ],
        axis=1,
    )
    cells, counts = np.unique(keys, axis=0, return_counts=True)
    x = np.zeros((len(cells), len(learners) + 1))
    rows = np.arange(len(cells))
    x[rows, cells[:, 0]], x[rows, cells[:, 1]] = 1.0, -1.0
    x[:, -1] = cells[:, 2] * STEP
    y = np.array([1.0, 0.0, 0.5])[cells[:, 3]]
    return learners, x, y, counts


def _fit(
    x: np.ndarray,
    w: np.ndarray,
    y: np.ndarray,
    l2: float,
    length_l2: float = LENGTH_PRIOR,
    max_iter: int = 50,
) -> np.ndarray:
    """Logistic regression under normal priors on weighted cells by Newton's method, for R
    weightings of the same cells at once: x (C, d), w (R, C), y (C,) -> coefficients (R, d).
    `l2` is the learners' prior precision (the plain fit's), `length_l2` γ's."""
    penalty = np.full(x.shape[1], l2)
    penalty[-1] = length_l2
    rounds, d = w.shape[0], x.shape[1]
    outer = (x[:, :, None] * x[:, None, :]).reshape(len(x), d * d)  # (C, d²): each cell's x xᵀ
    beta = np.zeros((rounds, d))
    for _ in range(max_iter):
        p = expit(beta @ x.T)  # (R, C)
        gradient = (w * (y - p)) @ x - penalty * beta
        hessian = ((w * p * (1 - p)) @ outer).reshape(rounds, d, d) + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        beta += np.clip(step, -4.0, 4.0)
        if np.max(np.abs(step)) < 1e-9:
            break
    return beta


def style_controlled(
    matches: Sequence[StyledMatch],
    rounds: int = 100,
    seed: int = 0,
    elo: EloSettings | None = None,
    settings: BTSettings | None = None,
) -> StyleBoard:
    """The style-controlled board, with bootstrap intervals over resampled votes; the
    learners' prior, anchor and interval coverage are `settings`' (the plain fit's)."""
    if not matches:
        return StyleBoard((), math.nan, (math.nan, math.nan))
    if rounds < 1:
        raise ValueError(f"bootstrap rounds must be at least 1, got {rounds}")
    elo, settings = elo or EloSettings(), settings or BTSettings()
    learners, x, y, counts = _cells(matches)
    table = pair_table([m[:3] for m in matches])  # the same learners, sorted alike
    # resampling votes with replacement = multinomial counts over the cells
    rng = np.random.default_rng(seed)
    resampled = rng.multinomial(counts.sum(), counts / counts.sum(), size=rounds)
    weights = np.concatenate([counts[None], resampled]).astype(float)  # (R + 1, C)
    fits = _fit(x, weights, y, l2=1.0 / settings.prior_sd**2)  # (R + 1, n + 1), natural logs
    scores = to_elo_scale(fits[:, :-1], table, settings, elo)  # (R + 1, n)
    length = fits[:, -1] * elo.scale / math.log(elo.base)  # γ on the Elo scale
    tail = 50.0 * (1.0 - settings.confidence)
    low, high = np.percentile(scores[1:], [tail, 100.0 - tail], axis=0)
    group = components(table)
    rank = ranks(low, high, group)
    rows = tuple(
        StyleRow(learners[k], float(scores[0, k]), float(low[k]), float(high[k]), int(rank[k]))
        for k in row_order(scores[0], rank, group)
    )
    effect = np.percentile(length[1:], [tail, 100.0 - tail])
    return StyleBoard(rows, float(length[0]), (float(effect[0]), float(effect[1])))
