"""Benchmark data loaders for our WordNet-built DefGen and Cloze sets (after CoLLEGe,
Teehan, Lake & Ren 2024), each as a list of typed, frozen dataclasses. The shared
Chimera and Definitional Nonce files, and the words no training may use, are read by
`backends.shared_data`, which training uses too.

Chimera and Definitional Nonce write the nonce as `___`; DefGen and Cloze examples write
it as `<nonce>`. `with_nonce` puts a chosen nonce word in either place.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from backends.shared_data import BLANK, SETS_DIR, SHARED_DATA

log = logging.getLogger(__name__)

PLACEHOLDER = "<nonce>"  # how DefGen and Cloze candidate examples write the nonce


@dataclass(frozen=True)
class DefGenItem:
    """A word known from example sentences (`<nonce>` in place of it) and its definition."""

    word: str
    examples: list[str]
    definition: str


@dataclass(frozen=True)
class ClozeCandidate:
    """One candidate nonce word, known only from its examples (`<nonce>` in place of it)."""

    word: str
    examples: list[str]


@dataclass(frozen=True)
class ClozeItem:
    """A sentence with a gap (`___`) and candidate words; `answer` indexes the right one."""

    sentence: str
    candidates: list[ClozeCandidate]
    answer: int


def with_nonce(text: str, nonce: str) -> str:
    """`text` with its nonce placeholder (`___` or `<nonce>`) replaced by `nonce`."""
    return text.replace(PLACEHOLDER, nonce).replace(BLANK, nonce)


def chimera_sources(path: Path | None = None) -> dict[str, tuple[str, str]]:
    """Chimera id -> the two real words its passages came from (`sources.dev.tsv`); empty
    when the file is absent. What an oracle that knows the chimera would average."""
    path = path if path is not None else SHARED_DATA / "chimeras" / "sources.dev.tsv"
    if not path.exists():
        return {}
    rows = path.read_text(encoding="utf-8").splitlines()[1:]  # header: id, word_1, word_2
    return {r.split("\t")[0]: tuple(r.split("\t")[1:3]) for r in rows if r.strip()}


def read_jsonl(path: Path) -> list[dict]:
    """The JSON objects of a JSON-lines file, one per non-blank line."""
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def write_jsonl(path: Path, items: Iterable[object]) -> None:
    """Write dataclass items as JSON lines (UTF-8, non-ASCII kept as is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for item in items:
            out.write(json.dumps(asdict(item), ensure_ascii=False) + "\n")


def load_defgen(path: Path | None = None) -> list[DefGenItem]:
    """DefGen items: `{"word", "examples": [... <nonce> ...], "definition"}` per line."""
    path = path if path is not None else SETS_DIR / "defgen.dev.jsonl"
    return [
        DefGenItem(row["word"], list(row["examples"]), row["definition"])
        for row in read_jsonl(path)
    ]


def load_cloze(path: Path | None = None) -> list[ClozeItem]:
    """Cloze items: `{"sentence": "... ___ ...", "candidates": [{"word", "examples"}],
    "answer": index}` per line."""
    path = path if path is not None else SETS_DIR / "cloze.dev.jsonl"
    items = []
    for row in read_jsonl(path):
        candidates = [ClozeCandidate(c["word"], list(c["examples"])) for c in row["candidates"]]
        if not 0 <= row["answer"] < len(candidates):
            raise ValueError(f"{path}: answer {row['answer']} outside 0..{len(candidates) - 1}")
        items.append(ClozeItem(row["sentence"], candidates, row["answer"]))
    return items
