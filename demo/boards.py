"""Leaderboards from the store: one per kind of judge, recomputed only when votes arrive."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd

from demo.ratings import Leaderboard, leaderboard
from demo.store import Judge, VoteStore

COLUMNS = ["rank", "learner", "BT score", "95% interval", "Elo", "battles"]


@dataclass(frozen=True)
class Board:
    """What the Leaderboard tab shows for one judge."""

    judge: Judge
    votes: int
    ratings: Leaderboard

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

    @property
    def win_rate(self) -> np.ndarray:
        return self.ratings.win_rate


class Boards:
    """Cached leaderboards: a board is refitted only when its judge's vote count changed."""

    def __init__(self, store: VoteStore, rounds: int = 100) -> None:
        self.store, self.rounds = store, rounds
        self._cache: dict[str, Board] = {}
        self._lock = threading.Lock()

    def board(self, judge: Judge) -> Board:
        count = self.store.count_votes(judge)
        cached = self._cache.get(judge)
        if cached is not None and cached.votes == count:
            return cached
        with self._lock:  # one refit at a time; concurrent callers reuse it
            cached = self._cache.get(judge)
            if cached is not None and cached.votes == count:
                return cached
            votes = self.store.votes(judge)
            matches = [(v.learner_a, v.learner_b, v.vote) for v in votes]
            board = Board(judge, len(votes), leaderboard(matches, rounds=self.rounds))
            self._cache[judge] = board
            return board
