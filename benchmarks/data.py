"""Benchmark data loaders: Chimera (Lazaridou, Marelli & Baroni 2017), Definitional Nonce
(Herbelot & Baroni 2017), and our WordNet-built DefGen and Cloze sets (after CoLLEGe,
Teehan, Lake & Ren 2024), each as a list of typed, frozen dataclasses.

Chimera and Definitional Nonce write the nonce as `___`; DefGen and Cloze examples write
it as `<nonce>`. `with_nonce` puts a chosen nonce word in either place.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]
# The shared development data sits beside the repository (see its README.md).
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
SETS_DIR = REPO_ROOT / "benchmarks" / "sets"

BLANK = "___"  # how Chimera, Definitional Nonce and Cloze sentences write the nonce / gap
PLACEHOLDER = "<nonce>"  # how DefGen and Cloze candidate examples write the nonce

ChimeraLevel = Literal[2, 4, 6]
CHIMERA_LEVELS: tuple[ChimeraLevel, ...] = (2, 4, 6)


@dataclass(frozen=True)
class ChimeraItem:
    """One chimera: passages using the nonce (`___`), six probe words and their ratings."""

    id: str
    examples: list[str]
    probes: list[str]
    ratings: list[float]  # mean human similarity of the chimera to each probe


@dataclass(frozen=True)
class NonceItem:
    """One Definitional Nonce item: a Wikipedia first sentence with the word as `___`."""

    word: str
    sentence: str


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


def chimera_path(level: ChimeraLevel) -> Path:
    """The shared Chimera development file with `level` (2, 4 or 6) passages per item."""
    if level not in CHIMERA_LEVELS:
        raise ValueError(f"unknown Chimera level {level!r}; valid levels: {CHIMERA_LEVELS}")
    return SHARED_DATA / "chimeras" / f"chimeras.dataset.l{level}.tokenised.train.txt"


def definitional_nonce_path() -> Path:
    """The shared Definitional Nonce development file (700 items)."""
    return SHARED_DATA / "definitional_nonce" / "nonce.definitions.700.train"


def _decode(raw: bytes) -> str:
    """A line as text: UTF-8, else Windows-1252 (some Chimera lines are each)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


def _rows(path: Path, n_fields: int) -> Iterator[list[str]]:
    """Tab-separated rows of `path`, skipping blank lines; ValueError on a wrong field count."""
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        line = _decode(raw).rstrip("\r\n")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != n_fields:
            raise ValueError(
                f"{path}:{number}: expected {n_fields} tab-separated fields, got {len(fields)}"
            )
        yield fields


def load_chimera(level: ChimeraLevel = 2, path: Path | None = None) -> list[ChimeraItem]:
    """Chimera items with `level` passages each (file: id, passages, probes, ratings)."""
    path = path if path is not None else chimera_path(level)
    items = []
    for id_, passages, probes, ratings in _rows(path, 4):
        items.append(
            ChimeraItem(
                id=id_.strip(),
                examples=[p.strip() for p in passages.split(" @@ ")],
                probes=[p.strip() for p in probes.split(",")],
                ratings=[float(r) for r in ratings.split(",")],
            )
        )
    log.debug("loaded %d Chimera items from %s", len(items), path)
    return items


def chimera_sources(path: Path | None = None) -> dict[str, tuple[str, str]]:
    """Chimera id -> the two real words its passages came from (`sources.dev.tsv`); empty
    when the file is absent. What an oracle that knows the chimera would average."""
    path = path if path is not None else SHARED_DATA / "chimeras" / "sources.dev.tsv"
    if not path.exists():
        return {}
    rows = path.read_text(encoding="utf-8").splitlines()[1:]  # header: id, word_1, word_2
    return {r.split("\t")[0]: tuple(r.split("\t")[1:3]) for r in rows if r.strip()}


def load_definitional_nonce(path: Path | None = None) -> list[NonceItem]:
    """Definitional Nonce items (file: word, sentence with `___`)."""
    path = path if path is not None else definitional_nonce_path()
    return [NonceItem(word.strip(), sentence.strip()) for word, sentence in _rows(path, 2)]


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


def split_path() -> Path:
    """The word-level split file written by `python -m benchmarks.build_wordnet_sets`."""
    return SETS_DIR / "split.json"


def shared_eval_words() -> set[str]:
    """Words the shared dev data evaluates: Chimera probes and Definitional Nonce gold words."""
    words = {item.word for item in load_definitional_nonce()}
    for level in CHIMERA_LEVELS:
        words.update(probe for item in load_chimera(level) for probe in item.probes)
    return {word.lower() for word in words}


def excluded_words(path: Path | None = None) -> set[str]:
    """Lowercased words no training may use: split.json's eval words plus the shared
    dev data's words (Chimera probes, Definitional Nonce gold words)."""
    path = path if path is not None else split_path()
    split = json.loads(path.read_text(encoding="utf-8"))
    return {word.lower() for word in split["eval_words"]} | shared_eval_words()
