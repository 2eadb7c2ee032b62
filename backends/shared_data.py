"""The shared development data the whole project keeps apart from training: Chimera
(Lazaridou, Marelli & Baroni 2017) and Definitional Nonce (Herbelot & Baroni 2017) as
typed, frozen dataclasses, and `excluded_words()`, the words no training may use (the
word-level split of our WordNet sets plus the shared files' words). Training reads it to
leave those words out; the benchmarks read it to measure on them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]
# The shared development data sits beside the repository (see its README.md).
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
SETS_DIR = REPO_ROOT / "benchmarks" / "sets"

BLANK = "___"  # how Chimera, Definitional Nonce and Cloze sentences write the nonce / gap

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


def load_definitional_nonce(path: Path | None = None) -> list[NonceItem]:
    """Definitional Nonce items (file: word, sentence with `___`)."""
    path = path if path is not None else definitional_nonce_path()
    return [NonceItem(word.strip(), sentence.strip()) for word, sentence in _rows(path, 2)]


def chimera_sources_path() -> Path:
    """The two real words each development chimera was made from (`sources.dev.tsv`)."""
    return SHARED_DATA / "chimeras" / "sources.dev.tsv"


def chimera_source_words() -> set[str]:
    """The real words whose passages were mixed into the Chimera items: the answer a
    learner's vector is compared against, so never a training target."""
    rows = chimera_sources_path().read_text(encoding="utf-8").splitlines()[1:]
    return {w.strip().lower() for row in rows if row.strip() for w in row.split("\t")[1:]}


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
