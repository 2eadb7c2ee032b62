"""WordNet's usage examples as templates of the words they use (Morphy base forms).

Steps 1-2 of how the DefGen and Cloze sets are made (`benchmarks/build_wordnet_sets.py`):
the usages of every noun, verb and adjective lemma, and which words are eligible. They
live in the library because training draws items the same way from words the sets do
not use (`training/reader_weights.py`), and training never imports the benchmarks.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from backends import lexicon

MIN_USAGES = 3  # DefGen: 3-shot; Cloze: 1 blanked + 2 shown
MIN_COUNT = 2  # SemCor tag count summed over the word's senses in that part of speech
MAX_SENSES = 10  # leaves out "be", "have", "make" and the like

_TOKEN = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Usage:
    """One WordNet example sentence using `word` (sense `synset`), masked as a template."""

    word: str
    synset: str
    template: str  # the sentence with the word's tokens replaced by "{}"


Pool = dict[str, list[Usage]]  # word → its usages in sense order


@cache
def base_form(token: str, pos: str) -> str | None:
    """The token's WordNet base form for `pos` (Morphy), or None."""
    return lexicon.wordnet().morphy(token.lower(), pos)


def shows_word(text: str, word: str, pos: str) -> bool:
    """Whether `text` contains `word` inflected, or a form sharing its stem ("happily")."""
    stem = word[: max(4, len(word) - 1)] if len(word) >= 4 else None
    for token in _TOKEN.findall(text.lower()):
        if token == word or base_form(token, pos) == word:
            return True
        if stem is not None and token.startswith(stem):
            return True
    return False


def mask_word(
    sentence: str, word: str, pos: str, mark: Callable[[str], str] = lambda token: "{}"
) -> str:
    """`sentence` with each token whose base form is `word` (letters only, not inside a
    hyphenated word) replaced by `mark(token)`, and "{" written "(" so "{}" is the only
    brace left."""

    def mask(match: re.Match[str]) -> str:
        token = match.group()
        hit = token.lower() == word or base_form(token, pos) == word
        return mark(token) if hit else token

    return re.sub(r"(?<![\w-])[A-Za-z]+(?![\w-])", mask, sentence.replace("{", "("))


def template(sentence: str, word: str, pos: str) -> str | None:
    """`sentence` with each token whose base form is `word` replaced by "{}"; None when
    the word does not occur or still shows after masking."""
    masked = mask_word(sentence, word, pos)
    if "{}" not in masked or shows_word(masked.replace("{}", " "), word, pos):
        return None
    return masked


def find_usages(pos: str) -> dict[str, list[Usage]]:
    """Every usage of every single-word lemma in WordNet's examples for `pos`."""
    usages: dict[str, list[Usage]] = defaultdict(list)
    for synset in lexicon.wordnet().all_synsets(pos):
        names = {lemma.name() for lemma in synset.lemmas() if lemma.name().isalpha()}
        for sentence in synset.examples():
            for word in sorted(names):
                masked = template(sentence, word, pos)
                if masked is not None:
                    usages[word].append(Usage(word, synset.name(), masked))
    return usages


def first_sense_pos(word: str) -> str | None:
    """The part of speech (n, v, a) of the word's most frequent sense."""
    senses = lexicon.senses(word)
    pos = senses[0].synset().pos() if senses else None
    return "a" if pos == "s" else pos


def is_eligible(word: str, pos: str, usages: list[Usage]) -> bool:
    """The rules of step 2 in the module docstring."""
    if not (word.isalpha() and word.islower() and len(word) >= 3):
        return False
    if len(usages) < MIN_USAGES or first_sense_pos(word) != pos:
        return False
    first = lexicon.wordnet().synsets(word, pos)[0].name()
    if not any(usage.synset == first for usage in usages):  # 1-shot must show the defined sense
        return False
    lemmas = lexicon.wordnet().lemmas(word, pos)
    if not 0 < len(lemmas) <= MAX_SENSES or sum(lemma.count() for lemma in lemmas) < MIN_COUNT:
        return False
    return not shows_word(definition(word, pos), word, pos)


def definition(word: str, pos: str) -> str:
    """The gloss of the word's first (most frequent) sense in `pos`."""
    return lexicon.wordnet().synsets(word, pos)[0].definition()


def ordered(word: str, pos: str, usages: list[Usage]) -> list[Usage]:
    """Usages in WordNet's sense order (most frequent first), one per sentence."""
    rank = {s.name(): i for i, s in enumerate(lexicon.wordnet().synsets(word, pos))}
    unique = {u.template: u for u in usages}.values()
    return sorted(unique, key=lambda u: rank.get(u.synset, len(rank)))


def fill(usage: Usage, marker: str) -> str:
    """The usage's sentence with `marker` in place of the word."""
    return usage.template.replace("{}", marker)
