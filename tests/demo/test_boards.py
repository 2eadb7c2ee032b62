"""Boards by part of speech, and people's agreement with the automatic judge's stored verdicts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from demo.boards import Boards, Position
from demo.store import Item, Matchup, VoteStore

# (part of speech, automatic verdict, the person's vote) per battle
BATTLES = [
    ("noun", "a", "a"),
    ("noun", "b", "a"),
    ("verb", "tie", "tie"),
    (None, None, "b"),  # a person's own word: no part of speech, no verdict
]


@pytest.fixture
def boards(sqlite_store: VoteStore) -> Boards:
    for n, (pos, verdict, vote) in enumerate(BATTLES):
        item = Item(f"blick{n}", ("A blick sat.",), "cat" if pos else None, pos)
        matchup = Matchup(item, "centroid", "college", "x", "y", "lm", auto_vote=verdict)
        battle = sqlite_store.create_battle(matchup, annotator="anon-1")
        sqlite_store.record_vote(battle.id, vote, annotator="anon-1")  # type: ignore[arg-type]
    return Boards(sqlite_store, rounds=5)


def test_boards_split_by_the_hidden_words_part_of_speech(boards):
    counts = {pos: boards.board("human", pos=pos).votes for pos in ("all", "noun", "verb")}
    assert counts == {"all": 4, "noun": 2, "verb": 1}
    adjectives = boards.board("human", pos="adjective")
    assert adjectives.votes == 0 and adjectives.ratings.rows == ()
    assert boards.board("human", "1", "noun").votes == 2  # both filters at once
    with pytest.raises(ValueError, match="valid: all, noun, verb, adjective, adverb"):
        boards.board("human", pos="pronoun")


def test_people_are_compared_with_the_verdict_stored_with_each_battle(boards):
    judged = boards.board("human").with_judge
    # 2 of the 3 judged battles agree; chance from the shares: verdicts a, b, tie once each,
    # votes a twice and tie once -> (1*2 + 1*0 + 1*1) / 9 = 1/3; kappa = (2/3 - 1/3) / (2/3)
    assert (judged.pairs, judged.observed) == (3, pytest.approx(2 / 3))
    assert judged.kappa == pytest.approx(0.5)
    assert boards.board("human", pos="verb").with_judge.observed == 1.0
    assert boards.board("auto").with_judge.pairs == 0


def test_the_board_says_how_often_the_definition_shown_first_won(boards):
    shown_first = boards.board("human").position
    assert (shown_first.decisive, shown_first.first) == (3, 2)  # votes a, a, tie, b
    low, high = shown_first.interval()  # Wilson's interval: 2 of 3 -> 0.208 .. 0.939
    assert (low, high) == (pytest.approx(0.2077, abs=1e-4), pytest.approx(0.9385, abs=1e-4))
    summary = shown_first.summary()
    assert summary.startswith("the first definition shown won 67% of 3 decisive votes (95%")
    assert Position(0, 0).summary() == "no decisive vote yet"
    assert Position(1000, 500).interval() == (
        pytest.approx(0.469, abs=1e-3),
        pytest.approx(0.531, abs=1e-3),
    )


def test_people_are_compared_only_with_the_judge_as_it_reads_now(sqlite_store):
    # two versions of the judge gave verdicts; the person agrees with the new one each time
    for n, (verdict, by) in enumerate([("a", "judge-v2"), ("b", "judge-v1"), ("b", None)]):
        item = Item(f"blick{n}", ("A blick sat.",), "cat", "noun")
        matchup = Matchup(item, "centroid", "college", "x", "y", "lm", auto_vote=verdict)
        battle = sqlite_store.create_battle(replace(matchup, auto_judge=by), "anon-1")
        sqlite_store.record_vote(battle.id, "a", annotator="anon-1")
    board = Boards(sqlite_store, rounds=5, auto_judge="judge-v2").board("human")
    assert (board.with_judge.pairs, board.with_judge.observed) == (1, 1.0)
    assert board.other_verdicts == 2  # the older verdicts (one unnamed) are not pooled in
    unnamed = Boards(sqlite_store, rounds=5).board("human")  # no name: the unnamed verdicts
    assert (unnamed.with_judge.pairs, unnamed.with_judge.observed, unnamed.other_verdicts) == (
        1,
        0.0,
        2,
    )


def test_a_learner_is_preliminary_until_it_has_fought_enough_battles(sqlite_store):
    from demo.boards import PRELIMINARY_BATTLES

    def fight(n: int, a: str, b: str) -> None:
        item = Item("blick", ("A blick sat.",), None, None)
        for _ in range(n):
            battle = sqlite_store.create_battle(Matchup(item, a, b, "x", "y", "lm"), "anon-1")
            sqlite_store.record_vote(battle.id, "a", annotator="anon-1")

    fight(PRELIMINARY_BATTLES, "centroid", "college")
    fight(3, "centroid", "cache")
    board = Boards(sqlite_store, rounds=5).board("human")
    assert board.preliminary == ["cache"]  # centroid and college have fought 50 or more


def test_the_note_names_learners_never_compared(sqlite_store):
    from demo.callbacks import _board_note

    item = Item("blick", ("A blick sat.",), None, None)
    for a, b, vote in [("centroid", "college", "a"), ("college", "centroid", "a")] + [
        ("cache", "prompting", "a"),
        ("prompting", "cache", "tie"),
    ]:
        battle = sqlite_store.create_battle(Matchup(item, a, b, "x", "y", "lm"), "anon-1")
        sqlite_store.record_vote(battle.id, vote, annotator="anon-1")
    board = Boards(sqlite_store, rounds=5).board("human")
    assert {frozenset(group) for group in board.ratings.groups} == {
        frozenset({"centroid", "college"}),
        frozenset({"cache", "prompting"}),
    }
    note = _board_note(board)
    assert "Never compared, directly or through another learner: " in note
    assert "ranks count within a group" in note and "Ordered, not measured" not in note
