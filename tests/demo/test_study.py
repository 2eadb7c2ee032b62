"""Study statistics: inter-annotator agreement and the style-controlled Bradley–Terry board."""

from __future__ import annotations

import math

import numpy as np
import pytest

from demo.agreement import agreement
from demo.ratings import leaderboard
from demo.style import style_controlled


def test_agreement_and_kappa_by_hand():
    pairs = [("a", "a"), ("b", "b"), ("a", "b"), ("tie", "tie")]
    result = agreement(pairs)
    # chance: firsts a2 b1 tie1, seconds a1 b2 tie1 -> (2 + 2 + 1) / 16
    assert result.pairs == 4 and result.observed == 0.75
    assert result.kappa == pytest.approx((0.75 - 5 / 16) / (1 - 5 / 16))
    assert "75% agreement on 4 battles" in result.summary()
    assert math.isnan(agreement([("a", "a")]).kappa)  # one category only: chance is 1
    assert agreement([]).summary() == "no battle judged twice yet"
    assert agreement([]).summary("it judged") == "no battle it judged yet"
    assert "75% agreement on 4 battles it judged" in result.summary("it judged")
    with pytest.raises(ValueError, match="unknown vote"):
        agreement([("a", "maybe")])


def _length_driven(votes: int, seed: int) -> list[tuple[str, str, str, int, int]]:
    """x and y are equally good, but x's definitions are usually longer and longer ones win."""
    rng = np.random.default_rng(seed)
    matches = []
    for _ in range(votes):
        long_x = rng.random() < 0.8
        len_x, len_y = (60, 20) if long_x else (20, 60)
        s = (len_x - len_y) / (len_x + len_y)
        x_wins = rng.random() < 1 / (1 + math.exp(-3 * s))
        if rng.random() < 0.5:
            matches.append(("x", "y", "a" if x_wins else "b", len_x, len_y))
        else:
            matches.append(("y", "x", "b" if x_wins else "a", len_y, len_x))
    return matches


def test_style_control_separates_length_from_quality():
    matches = _length_driven(3000, seed=4)
    plain = leaderboard([m[:3] for m in matches], rounds=20)
    assert plain.rows[0].learner == "x" and plain.rows[0].score - plain.rows[1].score > 100
    styled = style_controlled(matches, rounds=30)
    scores = {row.learner: row.score for row in styled.rows}
    assert abs(scores["x"] - scores["y"]) < 30  # equal once length is held fixed
    assert styled.length_effect > 300 and styled.length_ci[0] > 0  # longer wins on its own
    assert all(row.ci_low <= row.score <= row.ci_high for row in styled.rows)


def test_a_few_votes_between_one_pair_give_no_runaway_length_effect():
    # two votes, same pair: learner and length are confounded; without γ's prior the fit
    # sent it to -3300 points at s = +1 (the leaderboard said "-1111 points" for as long again)
    matches = [("a", "b", "a", 40, 12), ("a", "b", "b", 20, 30)]
    styled = style_controlled(matches, rounds=30)
    assert abs(styled.length_effect) < 200 and max(map(abs, styled.length_ci)) < 200
    # and the prior is negligible against a real study's votes (the test above: > 300)


def test_without_length_differences_style_control_matches_the_plain_fit():
    rng = np.random.default_rng(5)
    matches = [("p", "q", "a" if rng.random() < 0.7 else "b", 30, 30) for _ in range(2000)]
    plain = {r.learner: r.score for r in leaderboard([m[:3] for m in matches], rounds=5).rows}
    styled = {r.learner: r.score for r in style_controlled(matches, rounds=5).rows}
    assert styled == pytest.approx(plain, abs=1.0)
    assert style_controlled([]).rows == ()
