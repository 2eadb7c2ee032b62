"""The arena's two vocabularies, defined once: what a vote can say and who can judge.

The store (and its SQL CHECK constraints), the ratings, the page and the load driver all
read these, so a new value is added here and nowhere else.
"""

from __future__ import annotations

from typing import Literal, get_args

VoteValue = Literal["a", "b", "tie", "both_bad"]
Judge = Literal["human", "auto"]

VOTE_VALUES: tuple[str, ...] = get_args(VoteValue)
JUDGES: tuple[str, ...] = get_args(Judge)

# the page's button for each vote, and how the reveal repeats it
VOTE_BUTTONS: dict[str, str] = {
    "a": "A is better",
    "b": "B is better",
    "tie": "Tie",
    "both_bad": "Both bad",
}
VOTE_SAID: dict[str, str] = {
    "a": "A is better",
    "b": "B is better",
    "tie": "a tie",
    "both_bad": "both bad",
}
JUDGE_TITLES: dict[str, str] = {
    "human": "Human judges",
    "auto": "Automatic judge (benchmarks' tournament)",
}


def sql_in(column: str, values: tuple[str, ...]) -> str:
    """A CHECK clause `column IN ('x', 'y')` over one of the vocabularies above."""
    return f"{column} IN ({', '.join(repr(v) for v in values)})"
