"""The arena's vocabularies, defined once: what a vote can say, who can judge, and the parts of
speech a prepared item's hidden word can have.

The store (and its SQL CHECK constraints), the ratings, the page and the load driver all
read these, so a new value is added here and nowhere else.
"""

from __future__ import annotations

from typing import Literal, get_args

VoteValue = Literal["a", "b", "tie", "both_bad"]
Judge = Literal["human", "auto"]
# WordNet's four (its satellite adjectives count as adjectives), spelled out for the exports
PartOfSpeech = Literal["noun", "verb", "adjective", "adverb"]

VOTE_VALUES: tuple[str, ...] = get_args(VoteValue)
JUDGES: tuple[str, ...] = get_args(Judge)
PARTS_OF_SPEECH: tuple[str, ...] = get_args(PartOfSpeech)

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
