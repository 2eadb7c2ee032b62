"""The shipped word lists: ready examples for the Learn tab and prepared arena items."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from backends.inputs import MAX_EXAMPLES, MAX_EXAMPLES_TOTAL_CHARS
from demo.store import Item
from demo.vocabulary import PARTS_OF_SPEECH


@dataclass(frozen=True)
class ReadyExample:
    """One click fills the Learn form with these."""

    word: str
    examples: tuple[str, ...]
    definition: str = ""
    real_word: str = ""  # the word it stands for, where there is one: the card to compare with


@lru_cache(maxsize=4)
def ready_examples(path: Path) -> tuple[ReadyExample, ...]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return tuple(
        ReadyExample(
            r["word"], tuple(r["examples"]), r.get("definition") or "", r.get("real_word") or ""
        )
        for r in rows
    )


@lru_cache(maxsize=4)
def arena_pool(path: Path) -> tuple[Item, ...]:
    """Prepared arena items, one JSON object {"word", "examples"[, "answer", "pos", "reference"]}
    per line: answer is the real word hidden behind the made-up one, shown after the vote; pos
    its part of speech in those sentences; reference the gloss the automatic judge reads."""
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(_item(json.loads(line)))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as err:
            raise ValueError(f"{path}:{number}: not an arena item ({err})") from err
    if not items:
        raise ValueError(f"{path} holds no arena items")
    return tuple(items)


def _item(row: dict) -> Item:
    pos = row.get("pos")
    if pos is not None and pos not in PARTS_OF_SPEECH:
        raise ValueError(f"unknown part of speech {pos!r}; valid: {', '.join(PARTS_OF_SPEECH)}")
    extras = (row.get("answer"), pos, row.get("reference"))
    return Item(row["word"], tuple(row["examples"]), *extras)


def split_sentences(text: str | None) -> list[str]:
    """The Learn and Arena forms take one sentence per line; blank lines are dropped. Text over
    the library's total limit is refused before it is split (no list of a million lines)."""
    if text is not None and not isinstance(text, str):
        raise ValueError(f"sentences must be text, one per line; got {type(text).__name__}")
    if text is not None and len(text) > MAX_EXAMPLES_TOTAL_CHARS:
        raise ValueError(
            f"the sentences are {len(text):,} characters; the limit is "
            f"{MAX_EXAMPLES_TOTAL_CHARS:,} in all (up to {MAX_EXAMPLES} sentences)"
        )
    # A line ends at \n, \r\n or \r only, as a person types it: str.splitlines also ends one
    # at U+2028, U+2029, U+0085 and some controls, which pasted text carries inside a sentence.
    lines = (text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [line.strip() for line in lines if line.strip()]
