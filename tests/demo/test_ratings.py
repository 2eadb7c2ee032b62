"""Ratings against hand-worked answers and synthetic votes with known strengths."""

import math

import numpy as np
import pytest

from demo import ratings
from demo.ratings import BTSettings, EloSettings


def _synthetic(strengths: dict[str, float], votes: int, seed: int) -> list[ratings.Match]:
    """Votes drawn from a BT model with the given Elo-scale strengths, no ties."""
    rng = np.random.default_rng(seed)
    names = list(strengths)
    a = rng.integers(0, len(names), votes)
    b = (a + rng.integers(1, len(names), votes)) % len(names)
    gap = np.array([strengths[names[x]] - strengths[names[y]] for x, y in zip(a, b, strict=True)])
    a_wins = rng.random(votes) < 1.0 / (1.0 + 10.0 ** (-gap / 400.0))
    return [
        (names[x], names[y], "a" if won else "b") for x, y, won in zip(a, b, a_wins, strict=True)
    ]


def test_one_win_between_equals_moves_both_by_half_k() -> None:
    assert ratings.elo([("x", "y", "a")]) == {"x": 1002.0, "y": 998.0}
    assert ratings.elo([("x", "y", "b")]) == {"x": 998.0, "y": 1002.0}


def test_tie_between_equals_changes_nothing() -> None:
    assert ratings.elo([("x", "y", "tie")]) == {"x": 1000.0, "y": 1000.0}


def test_second_game_uses_updated_ratings() -> None:
    # after 1002/998, x is expected to score 1/(1+10^(-4/400)); losing costs 4 times that
    expected = 1.0 / (1.0 + 10.0 ** (-4.0 / 400.0))
    result = ratings.elo([("x", "y", "a"), ("x", "y", "b")])
    assert result["x"] == pytest.approx(1002.0 - 4.0 * expected)
    assert result["x"] + result["y"] == pytest.approx(2000.0)


def test_elo_settings_change_the_step() -> None:
    assert ratings.elo([("x", "y", "a")], EloSettings(k=32.0))["x"] == 1016.0


def test_both_bad_counts_as_a_tie() -> None:
    history = [("x", "y", "a"), ("y", "z", "b"), ("x", "z", "tie")]
    bad = [("x", "y", "a"), ("y", "z", "b"), ("x", "z", "both_bad")]
    assert ratings.elo(bad) == ratings.elo(history)
    assert ratings.leaderboard(bad).rows == ratings.leaderboard(history).rows


def test_unknown_outcome_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="'draw'.*a, b, tie, both_bad"):
        ratings.elo([("x", "y", "draw")])


def test_self_battle_is_refused() -> None:
    with pytest.raises(ValueError, match="'x' twice"):
        ratings.pair_table([("x", "x", "a")])


def test_pair_table_orients_each_pair_from_its_lower_name() -> None:
    table = ratings.pair_table([("y", "x", "a"), ("x", "y", "a"), ("y", "x", "tie")])
    assert table.learners == ("x", "y")
    assert table.counts.tolist() == [[1, 1, 1]]


def test_bt_of_a_balanced_record_is_even() -> None:
    table = ratings.pair_table([("x", "y", "a"), ("x", "y", "b"), ("x", "y", "tie")])
    score, _ = ratings.bradley_terry(table, rounds=10)
    assert score == pytest.approx([1000.0, 1000.0], abs=1e-6)


def test_bt_matches_the_closed_form_for_two_learners() -> None:
    # 3 wins to 1: the MLE odds are 3, i.e. a gap of 400 log10(3) split around the mean 1000
    table = ratings.pair_table([("x", "y", "a")] * 3 + [("x", "y", "b")])
    flat = BTSettings(prior_sd=1e3)  # a prior too wide to matter: the maximum likelihood
    score, _ = ratings.bradley_terry(table, rounds=10, settings=flat)
    half_gap = 200.0 * math.log10(3.0)
    assert score == pytest.approx([1000.0 + half_gap, 1000.0 - half_gap], abs=0.05)


def test_the_prior_is_the_posterior_mode_s_closed_form() -> None:
    # x beats y 3-1, strengths +s and -s, prior precision 1/4 on each: the mode solves
    # 3 - 4 sigmoid(2s) = s / 4 (x's gradient): s = 0.47327, a gap of 164.4 points where the
    # likelihood alone gives 400 log10(3) = 190.8
    table = ratings.pair_table([("x", "y", "a")] * 3 + [("x", "y", "b")])
    score, _ = ratings.bradley_terry(table, rounds=10)
    s = 0.47327
    assert 3 - 4 / (1 + math.exp(-2 * s)) == pytest.approx(s / 4, abs=1e-4)
    half_gap = s * 400.0 / math.log(10.0)
    assert score == pytest.approx([1000.0 + half_gap, 1000.0 - half_gap], abs=0.05)


def test_bt_recovers_known_strengths() -> None:
    truth = {"p": 1150.0, "q": 1050.0, "r": 1000.0, "s": 800.0}
    table = ratings.pair_table(_synthetic(truth, 40_000, seed=1))
    score, _ = ratings.bradley_terry(table, rounds=10)
    mean = np.mean(list(truth.values()))
    expected = [truth[name] - mean + 1000.0 for name in table.learners]
    assert score == pytest.approx(expected, abs=10.0)


def test_anchor_learner_sits_at_the_anchor() -> None:
    table = ratings.pair_table(_synthetic({"p": 1100.0, "q": 1000.0}, 2_000, seed=2))
    score, boot = ratings.bradley_terry(table, rounds=5, settings=BTSettings(anchor_learner="q"))
    assert score[1] == pytest.approx(1000.0) and np.allclose(boot[:, 1], 1000.0)
    with pytest.raises(ValueError, match="'zz'.*p, q"):
        ratings.bradley_terry(table, rounds=5, settings=BTSettings(anchor_learner="zz"))


def test_a_learner_that_won_everything_gets_a_finite_score() -> None:
    score, boot = ratings.bradley_terry(ratings.pair_table([("x", "y", "a")] * 20), rounds=10)
    assert np.all(np.isfinite(score)) and np.all(np.isfinite(boot)) and score[0] > score[1]


def test_bootstrap_is_reproducible_with_its_seed() -> None:
    table = ratings.pair_table(_synthetic({"p": 1050.0, "q": 1000.0, "r": 950.0}, 500, seed=3))
    first = ratings.bradley_terry(table, rounds=20, seed=7)[1]
    assert np.array_equal(first, ratings.bradley_terry(table, rounds=20, seed=7)[1])
    assert not np.array_equal(first, ratings.bradley_terry(table, rounds=20, seed=8)[1])


def test_ranks_count_learners_clearly_above() -> None:
    # intervals [10, 20], [5, 12], [4, 8], [-10, 0]: the third lies wholly below the first only
    low, high = np.array([10.0, 5.0, 4.0, -10.0]), np.array([20.0, 12.0, 8.0, 0.0])
    assert ratings.ranks(low, high).tolist() == [1, 1, 2, 4]


def test_dominance_ordering_ranks_one_two_three() -> None:
    votes = _synthetic({"best": 1300.0, "mid": 1000.0, "worst": 700.0}, 3_000, seed=4)
    board = ratings.leaderboard(votes, rounds=100, seed=0)
    assert [row.learner for row in board.rows] == ["best", "mid", "worst"]
    assert [row.rank for row in board.rows] == [1, 2, 3]
    assert all(row.ci_low <= row.score <= row.ci_high for row in board.rows)
    assert sum(row.battles for row in board.rows) == 2 * len(votes)
    # 1000 is the mean over battles: each learner weighed by the battles it fought
    weighed = [row.score * row.battles for row in board.rows]
    assert sum(weighed) / (2 * len(votes)) == pytest.approx(1000.0)
    assert board.groups == (("best", "mid", "worst"),) and board.ordered_only == ()


def _established(seed: int) -> list[ratings.Match]:
    return _synthetic({"p": 1100.0, "q": 1050.0, "r": 950.0, "s": 900.0}, 800, seed)


def test_a_learner_with_three_battles_moves_no_one_else() -> None:
    # it won all three: with a mean over learners and a bare ridge it sat at 2155 and pulled
    # every other score down by about 290 points and their intervals out to 300 points wide
    before = {r.learner: r for r in ratings.leaderboard(_established(5)).rows}
    newcomer = [("new", "p", "a"), ("q", "new", "b"), ("new", "r", "a")]
    board = ratings.leaderboard(_established(5) + newcomer)
    after = {r.learner: r for r in board.rows}
    for name, row in before.items():
        assert after[name].score == pytest.approx(row.score, abs=3.0)
        assert after[name].ci_high - after[name].ci_low < 1.5 * (row.ci_high - row.ci_low)
    assert 1150.0 < after["new"].score < 1450.0  # the prior's, moved by three wins
    assert board.ordered_only == ((("new",), ("p", "q", "r", "s")),)


def test_learners_never_compared_are_ranked_within_their_group() -> None:
    # x-y and z-w never met, directly or through anyone: no rank can say x beats w
    votes = [("x", "y", "a")] * 45 + [("x", "y", "b")] * 5
    votes += [("z", "w", "a")] * 25 + [("z", "w", "b")] * 25
    board = ratings.leaderboard(votes)
    assert {frozenset(group) for group in board.groups} == {frozenset("xy"), frozenset("zw")}
    rank = {row.learner: row.rank for row in board.rows}
    assert rank == {"x": 1, "y": 2, "z": 1, "w": 1}


def test_sets_that_won_every_battle_against_the_rest_are_named() -> None:
    # a and b split 1-1, c and d too, then a beat c and b beat d 30 times each: no learner
    # won everything, yet {a, b} won every battle against {c, d}, so only the prior says how
    # far apart the two pairs are (2319 against -319 with a prior too wide to matter)
    votes = [("a", "b", "a"), ("a", "b", "b"), ("c", "d", "a"), ("c", "d", "b")]
    votes += [("a", "c", "a"), ("b", "d", "a")] * 30
    board = ratings.leaderboard(votes)
    assert board.ordered_only == ((("a", "b"), ("c", "d")),)
    # a tie is points taken both ways: the same board with one tie across is measured
    assert ratings.leaderboard([*votes, ("b", "c", "tie")]).ordered_only == ()
    table = ratings.pair_table(votes)
    assert ratings.scored_sets(table).tolist() == [0, 0, 2, 2]


def test_a_group_s_rows_stay_together() -> None:
    votes = [("x", "y", "a")] * 45 + [("x", "y", "b")] * 5
    votes += [("z", "w", "a")] * 25 + [("z", "w", "b")] * 25
    assert ratings.leaderboard(votes).learners in (("x", "y", "z", "w"), ("x", "y", "w", "z"))


@pytest.mark.parametrize("sd", [0.0, -1.0, math.inf, math.nan])
def test_a_prior_without_a_positive_finite_sd_is_refused(sd) -> None:
    with pytest.raises(ValueError, match="prior's sd must be a positive number"):
        BTSettings(prior_sd=sd)


def test_components_join_through_a_chain() -> None:
    table = ratings.pair_table(
        [("a", "b", "a"), ("c", "d", "b"), ("b", "c", "tie"), ("e", "f", "a")]
    )
    label = ratings.components(table)
    assert len(set(label[:4])) == 1 and label[4] == label[5] != label[0]


def test_overlapping_intervals_share_a_rank() -> None:
    votes = [("x", "y", "a"), ("x", "y", "b"), ("y", "x", "a")] * 3
    board = ratings.leaderboard(votes, rounds=50)
    assert [row.rank for row in board.rows] == [1, 1]


def test_win_rate_matrix_counts_ties_half() -> None:
    votes = [("x", "y", "a"), ("x", "y", "a"), ("y", "x", "tie"), ("x", "y", "b"), ("x", "z", "a")]
    board = ratings.leaderboard(votes, rounds=10)
    order = {name: k for k, name in enumerate(board.learners)}
    rate = board.win_rate
    assert rate[order["x"], order["y"]] == pytest.approx(2.5 / 4)
    assert rate[order["y"], order["x"]] == pytest.approx(1.5 / 4)
    assert rate[order["x"], order["z"]] == 1.0
    assert math.isnan(rate[order["y"], order["z"]]) and math.isnan(rate[order["x"], order["x"]])


def test_battle_counts() -> None:
    votes = [("x", "y", "a"), ("y", "z", "tie"), ("x", "z", "both_bad")]
    assert ratings.battle_counts(votes) == {"x": 2, "y": 2, "z": 2}


def test_empty_leaderboard() -> None:
    board = ratings.leaderboard([])
    assert board.rows == () and board.win_rate.shape == (0, 0)
