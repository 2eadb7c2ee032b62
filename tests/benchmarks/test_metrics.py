"""Benchmark metrics against hand-worked answers."""

import math

import pytest

from benchmarks.metrics import (
    accuracy,
    average_ranks,
    lcs_length,
    median_rank,
    mrr,
    rank_of,
    reciprocal_rank,
    rouge_l,
    spearman,
)


def test_spearman_perfect_and_reversed():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)


def test_spearman_is_rank_based():
    # monotone but not linear: still a perfect rank agreement
    assert spearman([1, 2, 3, 4], [1, 8, 27, 1000]) == pytest.approx(1.0)


def test_spearman_with_ties_by_hand():
    # ranks x: [1, 2.5, 2.5, 4], y: [1, 2, 3, 4]; means 2.5
    # deviations x: [-1.5, 0, 0, 1.5], y: [-1.5, -0.5, 0.5, 1.5]
    # sum xy = 4.5; sum xx = 4.5; sum yy = 5 → ρ = 4.5 / sqrt(22.5)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(22.5))


def test_spearman_undefined_is_nan():
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    assert math.isnan(spearman([1, 2, 3], [5, 5, 5]))
    assert math.isnan(spearman([1, float("nan"), 3], [1, 2, 3]))
    assert math.isnan(spearman([1], [2]))


def test_spearman_length_mismatch_raises():
    with pytest.raises(ValueError, match="equal lengths"):
        spearman([1, 2], [1, 2, 3])


def test_average_ranks_ties():
    assert average_ranks([10, 20, 20, 30]) == [1, 2.5, 2.5, 4]
    assert average_ranks([3, 1, 2]) == [3, 1, 2]
    assert average_ranks([5, 5, 5]) == [2, 2, 2]


def test_rank_of_and_reciprocal_rank():
    # two candidates score higher than the gold → rank 3, RR 1/3
    assert rank_of(0.5, [0.9, 0.7, 0.1, 0.4]) == 3
    assert reciprocal_rank(rank_of(0.5, [0.9, 0.7, 0.1, 0.4])) == pytest.approx(1 / 3)
    assert rank_of(1.0, []) == 1


def test_rank_of_ties_favour_the_gold():
    assert rank_of(0.5, [0.5, 0.5, 0.9]) == 2


def test_reciprocal_rank_rejects_zero():
    with pytest.raises(ValueError, match="1-based"):
        reciprocal_rank(0)


def test_mrr_and_median_rank():
    assert mrr([1, 2, 4]) == pytest.approx((1 + 0.5 + 0.25) / 3)
    assert median_rank([1, 2, 4]) == 2
    assert median_rank([1, 2, 4, 10]) == 3
    assert math.isnan(mrr([]))
    assert math.isnan(median_rank([]))


def test_lcs_length():
    assert lcs_length("abcbdab", "bdcaba") == 4
    assert lcs_length([], ["a"]) == 0


def test_rouge_l_hand_computed():
    # Lin 2004's example: reference "police killed the gunman",
    # candidate "police kill the gunman": LCS = "police the gunman" = 3 → R = P = 3/4
    assert rouge_l("police killed the gunman", "police kill the gunman") == pytest.approx(0.75)
    # reference 6 tokens, candidate 4, LCS "the cat on mat" = 4 → R 4/6, P 1, F = 0.8
    assert rouge_l("The cat sat on the mat.", "the cat on mat") == pytest.approx(0.8)


def test_rouge_l_edge_cases():
    assert rouge_l("a b c", "A B C") == pytest.approx(1.0)
    assert rouge_l("a b c", "d e f") == 0.0
    assert rouge_l("", "a") == 0.0
    assert rouge_l("a", "") == 0.0


def test_accuracy():
    assert accuracy([0, 1, 2, 3], [0, 1, 0, 0]) == 0.5
    assert math.isnan(accuracy([], []))
    with pytest.raises(ValueError, match="equal lengths"):
        accuracy([1], [1, 2])


def test_degenerate_definitions_are_empty_say_the_word_or_loop():
    from benchmarks.metrics import degenerate, repeats_ngram

    assert degenerate("", "dax")
    assert degenerate("a small dax that sings.", "dax")
    assert degenerate("the daxes of a bird.", "dax")  # an inflection says it too
    assert degenerate('a "group of people" or "group of people".', "dax")
    assert not degenerate("a small bird that sings at night.", "dax")
    assert not degenerate("a dachshund.", "dax")  # another word sharing letters
    assert repeats_ngram(["a", "b", "c", "a", "b", "c"], 3)
    assert not repeats_ngram(["a", "b", "a", "c", "b"], 3)
    # loops that no 3-gram repeats: a content word three times, a word after itself
    assert degenerate('a " shed " or " shed " is a " shed ".', "dax")
    assert degenerate("the study of past events, events, and society.", "dax")
    assert not degenerate("a shed or a hut, a small shed.", "dax")  # twice is allowed
    assert not degenerate("a piece of a thing that is a part of a whole.", "dax")  # "a" x4
    # a quotation said twice: the definition reader's loop on a quoted function word
    assert degenerate('a "small" or "little" or "a" or "a" (plural) or "a" (singular)', "dax")
    assert degenerate('a "small" or "tiny" or "me" or "Me."', "dax")  # case, punctuation
    assert not degenerate('"to read" or "to see", as in "a" and "an".', "dax")
    assert not degenerate('a "small" or "little" object.', "dax")

    # version 6: "do" counts as a content word, and babble is degenerate
    assert degenerate("to run, to go, to travel, to do, to do something, to do.", "dax")
    assert not degenerate("a promise to do something, or to do it well.", "dax")  # twice
    assert degenerate("a word that is not defined, a, and is not a, and not a, not a", "dax")
    assert not degenerate("a small bird that is not a finch.", "dax")


def test_babble_is_a_long_run_of_function_words():
    from benchmarks.metrics import babbles, tokens

    assert babbles(tokens("it is and it is not and it's not and is it and it"))
    assert babbles(tokens("a number that is divisible by 1, 2, 3, 4, 5, 6, 7, 8."))  # digits
    assert not babbles(tokens("a number that is divisible by 10 or 100."))  # 2 of 9 content
    assert not babbles(tokens("it is and it is not"))  # too short to tell
    assert not babbles([])


def test_identified_only_when_closer_than_every_distractor():
    from benchmarks.metrics import identified

    assert identified(0.9, [0.1, 0.5, 0.89])
    assert not identified(0.5, [0.1, 0.6])
    assert not identified(0.5, [0.5])  # a tie does not identify


def test_distractors_are_seeded_per_item_and_exclude_the_item():
    from benchmarks.metrics import distractors

    drawn = distractors(200, 7, 29, seed=0)
    assert len(drawn) == len(set(drawn)) == 29 and 7 not in drawn
    assert drawn == distractors(200, 7, 29, seed=0)
    assert drawn != distractors(200, 8, 29, seed=0)
    assert distractors(5, 0, 29, seed=0) != [] and len(distractors(5, 0, 29, seed=0)) == 4


def test_gap_closed_is_the_share_of_the_centroid_to_oracle_gap():
    from benchmarks.metrics import gap_closed

    assert gap_closed(0.5, 0.2, 0.8) == pytest.approx(0.5)
    assert gap_closed(0.2, 0.2, 0.8) == 0
    assert gap_closed(0.1, 0.2, 0.8) == pytest.approx(-1 / 6)
    assert math.isnan(gap_closed(0.5, 0.8, 0.8))


def test_share_interval_brackets_the_share_of_the_oracle():
    from benchmarks.word_tasks import share_interval

    oracle = [0.2, 0.5, 0.4, 0.1, 0.6, 0.3]
    assert share_interval([r / 2 for r in oracle], oracle, seed=0) == pytest.approx((0.5, 0.5))
    noisy = [0.3, 0.1, 0.5, -0.2, 0.4, 0.2]
    low, high = share_interval(noisy, oracle, seed=0)
    assert low < (sum(noisy) / sum(oracle)) < high
    assert all(math.isnan(v) for v in share_interval([0.1, math.nan], [0.2, 0.3], seed=0))
