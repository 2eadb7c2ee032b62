"""CoLLEGe's training corpus, built offline: sentences that use a word, grouped by word.

Teehan, Lake & Ren (2024) train on episodes drawn from an example buffer: for a word w,
support sentences that use w and a query sequence that also uses w. Their sentences
come from a large web corpus; offline we take every sentence we can find that *uses* a
word (rather than defines it):

- WordNet 3.0 usage examples of the word's synsets ("the dog barked all night");
- WordNet glosses of *other* synsets that mention the word ("a young dog" -> w = dog);
- GCIDE (Debian `dict-gcide`) quotations ("--Addison.") and "as, ..." usage phrases.

Filters, after the paper's: a sentence keeps 5..60 words, holds the word 1..3 times, is
not repetitive (>= 50% distinct words), and does not define the word outright
("w is a ...", "called w", "known as w"). Every evaluation word (and its inflections)
is removed as a target word (`backends.shared_data.excluded_words()`).
"""

from __future__ import annotations

import gzip
import json
import logging
import random
import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from backends.nonce_lm import SUFFIXES
from backends.nonce_lm import word_pattern as _word_pattern

log = logging.getLogger(__name__)

GCIDE_PATH = Path("/usr/share/dictd/gcide.dict.dz")
_WORD_OK = re.compile(r"^[a-z]{3,20}$")
_HEADWORD = re.compile(r"^([A-Z][A-Za-z]+) \\")  # "Actuate \Ac"tu*ate\, v. t. ..."
_QUOTE_AUTHOR = re.compile(r"\s--[A-Z][^\n]*$")
# GCIDE writes letters ASCII lacks in brackets: a ligature, or an accent mark then its letter
_GCIDE_LIGATURES = {"ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ"}
_GCIDE_MARKS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303"}
_GCIDE_MARKS |= {"=": "\u0304", ",": "\u0327"}  # macron, cedilla
_GCIDE_LETTER = re.compile(r"\[(ae|AE|oe|OE|['`^\"~=,][A-Za-z])\]")
_AS_PHRASE = re.compile(r"\bas,\s+([^.;\[\]{}]+)[.;]")


@dataclass(frozen=True)
class CorpusConfig:
    # Sentence length bounds in words (the paper keeps sentences of moderate length).
    min_words: int = 5
    max_words: int = 60
    # Most occurrences of the word in one sentence (more is a list, not a use).
    max_occurrences: int = 3
    # Least share of distinct words (drops "very very very ..." and tables).
    min_distinct: float = 0.5
    # Most sentences kept per word (keeps frequent words from dominating).
    max_per_word: int = 8
    # Use WordNet glosses of other synsets that mention the word.
    use_glosses: bool = True
    # Use GCIDE quotations and usage phrases.
    use_gcide: bool = True
    seed: int = 0


@cache
def word_pattern(word: str) -> re.Pattern[str]:
    return _word_pattern(word)  # compiled once per word: the corpus has 600k+ pairs


def defines_outright(word: str, text: str) -> bool:
    """True for sentences that state what the word is ("A wug is a ...", "called wugs")."""
    w = re.escape(word)
    lower = text.lower()
    head = rf"^(?:an?\s+|the\s+)?{w}\w{{0,3}}\s+(?:is|are|was|were|means|refers)\b"
    named = rf"\b(?:called|named|known as|termed|term)\s+(?:an?\s+|the\s+)?{w}\b"
    return bool(re.search(head, lower) or re.search(named, lower))


def keep_sentence(word: str, text: str, cfg: CorpusConfig) -> bool:
    words = text.split()
    if not cfg.min_words <= len(words) <= cfg.max_words:
        return False
    hits = len(word_pattern(word).findall(text))
    if not 1 <= hits <= cfg.max_occurrences:
        return False
    if len({w.lower() for w in words}) < cfg.min_distinct * len(words):
        return False
    return not defines_outright(word, text)


def is_excluded(word: str, excluded: set[str]) -> bool:
    """The word or any plain inflection of an excluded word (and vice versa)."""
    if word in excluded:
        return True
    for suffix in SUFFIXES:
        if word.endswith(suffix) and word[: -len(suffix)] in excluded:
            return True
        if word + suffix in excluded:
            return True
    return False


def wordnet_sentences(use_glosses: bool) -> list[tuple[str, str]]:
    """(word, sentence) pairs from WordNet usage examples (and other synsets' glosses)."""
    from backends.lexicon import wordnet

    pairs = []
    vocab = set()
    for synset in wordnet().all_synsets():
        names = {n.lower() for n in synset.lemma_names() if _WORD_OK.match(n.lower())}
        vocab |= names
        for text in synset.examples():
            pairs.extend((n, text) for n in names if word_pattern(n).search(text))
    if use_glosses:
        for synset in wordnet().all_synsets():
            gloss = synset.definition()
            own = {n.lower() for n in synset.lemma_names()}
            for token in set(re.findall(r"[a-z]+", gloss.lower())):
                if token in vocab and token not in own:
                    pairs.append((token, gloss))
    return pairs


def sense_glosses(
    sentences: dict[str, list[str]], excluded: set[str] = frozenset()
) -> dict[tuple[str, str], str]:
    """(word, usage example) -> the gloss of the synset the example illustrates.

    The definition-probe episodes' queries (`training.college`): support "a desert
    nomad's austere life" pairs with 'The word "austere" is defined as practicing great
    self-denial.' Only the gloss's first clause (up to ';') is kept, as a definition's
    first sentence; a gloss that uses the word itself defines nothing and is skipped.
    A synset that holds an evaluation word (`excluded`, or an inflection of one) gives
    no target at all: its gloss is that word's reference definition too ("mind" is a
    training word's synonym in head.n.02), and training on it would leak the answer."""
    from backends.lexicon import wordnet

    wanted = {(w, s) for w, ss in sentences.items() for s in ss}
    glosses = {}
    for synset in wordnet().all_synsets():
        gloss = synset.definition().split(";")[0].strip()
        lemmas = {n.lower() for n in synset.lemma_names()}
        if any(is_excluded(n, excluded) for n in lemmas):
            continue
        for name in lemmas:
            if not gloss or word_pattern(name).search(gloss):
                continue
            for text in synset.examples():
                text = " ".join(text.split())
                if (name, text) in wanted:
                    glosses.setdefault((name, text), gloss)
    return glosses


def gcide_letters(text: str) -> str:
    """GCIDE's bracketed letters as Unicode: 'a["e]ry' -> 'aëry', '[ae]ternus' -> 'æternus';
    an editor's brackets ('it [land]') stay. Used where people read the text (the arena's
    pool); the training corpus keeps GCIDE's text as the shipped generator read it."""

    def letter(match: re.Match) -> str:
        code = match.group(1)
        if code in _GCIDE_LIGATURES:
            return _GCIDE_LIGATURES[code]
        return unicodedata.normalize("NFC", code[1] + _GCIDE_MARKS[code[0]])

    return _GCIDE_LETTER.sub(letter, text)


def gcide_sentences(path: Path = GCIDE_PATH) -> list[tuple[str, str]]:
    """(headword, text) pairs: GCIDE quotations and "as, ..." usage phrases per entry."""
    if not path.exists():
        log.warning("%s missing (apt-get install dict-gcide); no GCIDE sentences", path)
        return []
    pairs: list[tuple[str, str]] = []
    current: str | None = None
    text = gzip.open(path).read().decode("utf-8", errors="replace")
    for entry in text.split("\n\n"):
        lines = entry.split("\n")
        match = _HEADWORD.match(lines[0])
        if match:
            head = match.group(1).lower()
            body = "\n".join(lines[1:])
            pairs.extend((head, m.group(1).strip()) for m in _AS_PHRASE.finditer(body))
            current = head
        elif current and lines[0].startswith("            "):
            # An indented block is a quotation; its author line ("--Addison.") ends it.
            quote = " ".join(line.strip() for line in lines)
            quote = _QUOTE_AUTHOR.sub("", quote.replace("[1913 Webster]", "")).strip()
            pairs.append((current, quote))
    return pairs


def build_corpus(excluded: set[str], cfg: CorpusConfig = CorpusConfig()) -> dict[str, list[str]]:
    """word -> up to `max_per_word` filtered sentences that use it; evaluation words removed."""
    pairs = wordnet_sentences(cfg.use_glosses)
    log.info("WordNet: %d (word, sentence) pairs", len(pairs))
    if cfg.use_gcide:
        gcide = gcide_sentences()
        log.info("GCIDE: %d (word, sentence) pairs", len(gcide))
        pairs += gcide
    by_word: dict[str, list[str]] = defaultdict(list)
    for word, text in pairs:
        text = " ".join(text.split())
        if not _WORD_OK.match(word) or is_excluded(word, excluded):
            continue
        if keep_sentence(word, text, cfg) and text not in by_word[word]:
            by_word[word].append(text)
    rng = random.Random(cfg.seed)
    corpus = {}
    for word in sorted(by_word):
        sentences = by_word[word]
        rng.shuffle(sentences)
        corpus[word] = sentences[: cfg.max_per_word]
    log.info("corpus: %d words, %d sentences", len(corpus), sum(len(s) for s in corpus.values()))
    return corpus


def save_corpus(corpus: dict[str, list[str]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(corpus, ensure_ascii=False), encoding="utf-8")


def load_corpus(path: Path) -> dict[str, list[str]]:
    return json.loads(path.read_text(encoding="utf-8"))
