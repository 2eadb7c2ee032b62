"""One vocabulary of votes and judges: the ratings, the SQL constraint and the page agree."""

from __future__ import annotations

import pytest
from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError

from demo import ratings
from demo.store import Item, Matchup, VoteStore, votes
from demo.vocabulary import JUDGES, VOTE_BUTTONS, VOTE_SAID, VOTE_VALUES


def test_every_vote_has_an_outcome_a_button_and_a_phrase():
    assert set(ratings.OUTCOME_CODE) == set(VOTE_VALUES) == set(VOTE_BUTTONS) == set(VOTE_SAID)
    assert ratings.OUTCOMES == VOTE_VALUES and JUDGES == ("human", "auto")


def test_the_database_itself_refuses_a_vote_outside_the_vocabulary(tmp_path):
    store = VoteStore.open(tmp_path / "votes.sqlite")
    matchup = Matchup(Item("blick", ("A blick sat.",)), "centroid", "cache", "x", "y", "lm")
    battle = store.create_battle(matchup, annotator="anon:1")
    row = {
        "battle_id": battle.id,
        "word": "blick",
        "examples": "[]",
        **{k: getattr(matchup, k) for k in ("learner_a", "learner_b", "output_a", "output_b")},
        "lm": "lm",
        "annotator": "anon:1",
        "created_at": battle.created_at,
    }
    with pytest.raises(IntegrityError), store.engine.begin() as conn:  # bypasses record_vote
        conn.execute(insert(votes), [{**row, "vote": "c", "judge": "human"}])
    with pytest.raises(IntegrityError), store.engine.begin() as conn:
        conn.execute(insert(votes), [{**row, "vote": "a", "judge": "robot"}])
    with store.engine.begin() as conn:
        conn.execute(insert(votes), [{**row, "vote": "both_bad", "judge": "human"}])
    assert store.count_votes() == 1
    store.close()
