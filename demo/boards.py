"""Leaderboards from the store: one per kind of judge, number of sentences shown and part of
speech of the hidden word, each recomputed only when its votes changed: the plain Bradley–Terry
fit, the style-controlled one, the agreement of annotators on battles shown twice, their
agreement with the automatic judge on battles it judged, and how often the definition shown
first won (position bias)."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd

from demo.agreement import Agreement, agreement
from demo.ratings import Leaderboard, leaderboard
from demo.store import Vote, VoteStore
from demo.style import StyleBoard, style_controlled
from demo.vocabulary import PARTS_OF_SPEECH, Judge

COLUMNS = ["rank", "learner", "BT score", "95% interval", "Elo", "battles"]
STYLE_COLUMNS = ["rank", "learner", "BT score (length held fixed)", "95% interval"]
# Below this many battles a learner's score is preliminary (as LMArena marks new models):
# against evenly matched learners a battle carries about 1/4 logit² of information, so
# after n battles the score's standard error is about 2/sqrt(n) logits, 348/sqrt(n) Elo
# points: 50 battles for a 95% interval near ±100. With a few, the fit's prior holds the
# score (two wins against even learners: 1300) and a bootstrap of them cannot show how
# little is known.
PRELIMINARY_BATTLES = 50
# "how many sentences the learners saw" filters: all, or exactly 1, 2, or 3 and more
SENTENCES = ("all", "1", "2", "3+")
# "part of speech of the hidden word" filters: all, or one (prepared items only carry one)
POS_FILTERS = ("all", *PARTS_OF_SPEECH)


def shown_sentences(vote: Vote, sentences: str) -> bool:
    """Whether a vote belongs on the board of `sentences` (one of SENTENCES)."""
    if sentences == "all":
        return True
    count = len(vote.item.examples)
    return count >= 3 if sentences == "3+" else count == int(sentences)


def of_pos(vote: Vote, pos: str) -> bool:
    """Whether a vote belongs on the board of part of speech `pos` (one of POS_FILTERS)."""
    return pos == "all" or vote.item.pos == pos


@dataclass(frozen=True)
class Position:
    """How often the definition shown first (A) won the decisive votes: a study's check for
    position bias, since which learner shows first is drawn at random per battle."""

    decisive: int  # votes for A or for B (ties and "both bad" say nothing of position)
    first: int  # of them, votes for A

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """Wilson's 95% score interval for A's share (Wilson 1927): sound at small counts."""
        n = self.decisive
        if n == 0:
            return (math.nan, math.nan)
        share = self.first / n
        centre = (share + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return (centre - half, centre + half)

    def summary(self) -> str:
        """E.g. "the first definition shown won 52% of 120 decisive votes (95% interval
        43-61%; 50% is no bias)"."""
        if not self.decisive:
            return "no decisive vote yet"
        low, high = self.interval()
        plural = "" if self.decisive == 1 else "s"
        return (
            f"the first definition shown won {self.first / self.decisive:.0%} of "
            f"{self.decisive} decisive vote{plural} (95% interval {low:.0%}–{high:.0%}; "
            "50% is no bias)"
        )


def position(votes: list[Vote]) -> Position:
    """Position bias over `votes`: A's wins among the votes for A or B."""
    return Position(sum(v.vote in ("a", "b") for v in votes), sum(v.vote == "a" for v in votes))


@dataclass(frozen=True)
class Board:
    """What the Leaderboard tab shows for one judge."""

    judge: Judge
    votes: int
    ratings: Leaderboard
    style: StyleBoard
    agreement: Agreement  # between two annotators, on battles shown twice
    # between the vote and the automatic judge's verdict stored with its battle, for verdicts
    # of the judge as it reads now (`Boards.auto_judge`)
    with_judge: Agreement
    # verdicts stored by another version of that judge, left out of `with_judge`
    other_verdicts: int = 0
    # how often the definition shown first won: position bias
    position: Position = Position(0, 0)

    def table(self) -> pd.DataFrame:
        rows = [
            [
                r.rank,
                r.learner,
                round(r.score, 1),
                f"{r.ci_low:.0f} – {r.ci_high:.0f}",
                round(r.elo, 1),
                r.battles,
            ]
            for r in self.ratings.rows
        ]
        return pd.DataFrame(rows, columns=COLUMNS)

    def style_table(self) -> pd.DataFrame:
        rows = [
            [r.rank, r.learner, round(r.score, 1), f"{r.ci_low:.0f} – {r.ci_high:.0f}"]
            for r in self.style.rows
        ]
        return pd.DataFrame(rows, columns=STYLE_COLUMNS)

    @property
    def preliminary(self) -> list[str]:
        """Learners with fewer than `PRELIMINARY_BATTLES` battles on this board."""
        return [r.learner for r in self.ratings.rows if r.battles < PRELIMINARY_BATTLES]

    @property
    def win_rate(self) -> np.ndarray:
        return self.ratings.win_rate


def _board(judge: Judge, votes: list[Vote], rounds: int, auto_judge: str | None) -> Board:
    matches = [(v.learner_a, v.learner_b, v.vote) for v in votes]
    styled = [(*m, len(v.output_a), len(v.output_b)) for m, v in zip(matches, votes, strict=True)]
    by_battle = {v.battle_id: v for v in votes}
    pairs = [(by_battle[v.repeat_of].vote, v.vote) for v in votes if v.repeat_of in by_battle]
    verdicts = [v for v in votes if v.auto_vote is not None]
    judged = [(v.auto_vote, v.vote) for v in verdicts if v.auto_judge == auto_judge]
    return Board(
        judge,
        len(votes),
        leaderboard(matches, rounds=rounds),
        style_controlled(styled, rounds=rounds),
        agreement(pairs),
        agreement(judged),  # type: ignore[arg-type]
        other_verdicts=len(verdicts) - len(judged),
        position=position(votes),
    )


class Boards:
    """Cached leaderboards: a board is refitted only when its judge's vote count changed.

    People are compared with the verdicts of the automatic judge named `auto_judge` (the
    arena's, `PoolJudge.name`); None compares them with verdicts stored without a name."""

    def __init__(self, store: VoteStore, rounds: int = 100, auto_judge: str | None = None) -> None:
        self.store, self.rounds, self.auto_judge = store, rounds, auto_judge
        self._cache: dict[tuple[str, str, str], tuple[int, Board]] = {}
        self._lock = threading.Lock()

    def board(self, judge: Judge, sentences: str = "all", pos: str = "all") -> Board:
        if sentences not in SENTENCES:
            raise ValueError(f"unknown sentence count {sentences!r}; valid: {', '.join(SENTENCES)}")
        if pos not in POS_FILTERS:
            raise ValueError(f"unknown part of speech {pos!r}; valid: {', '.join(POS_FILTERS)}")
        key = (judge, sentences, pos)
        count = self.store.count_votes(judge)
        cached = self._cache.get(key)
        if cached is not None and cached[0] == count:
            return cached[1]
        with self._lock:  # one refit at a time; concurrent callers reuse it
            cached = self._cache.get(key)
            if cached is not None and cached[0] == count:
                return cached[1]
            votes = [
                v
                for v in self.store.votes(judge)
                if shown_sentences(v, sentences) and of_pos(v, pos)
            ]
            board = _board(judge, votes, self.rounds, self.auto_judge)
            self._cache[key] = (count, board)
            return board
