"""Checking what a person typed before any model sees it: clear messages, nothing dropped."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from backends.nonce_lm import inflect, word_pattern, written_without_spaces

# Caps that keep one request from starving the others (documented in the README).
MAX_WORD_CHARS = 40
MAX_EXAMPLES = 10
MAX_EXAMPLE_CHARS = 600
MAX_DEFINITION_CHARS = 600
MAX_NEIGHBOURS = 200  # k nearest neighbours per space; faiss allocates k results per query
# All sentences together, before blank lines are dropped: refused at once, before any scan.
MAX_EXAMPLES_TOTAL_CHARS = 4 * MAX_EXAMPLES * MAX_EXAMPLE_CHARS

# A nonce word: letters (any script), digits, inner hyphens or apostrophes; no spaces. It is
# matched on a skeleton of the word: "a" for a letter or digit, "m" for a combining mark of a
# script written without spaces (Thai, Lao, Khmer, Myanmar spell most words with vowel and
# tone marks: ฟลอร์ป), each mark after a letter; other marks stay refused (zalgo text).
_WORD = re.compile(r"^am*(?:['\-]*am*)*$")

# Invisible characters refused wherever a person types: sentences are shown to other people,
# and a direction override (U+202E) or isolate makes them read other than they are written;
# zero-width spaces and BOMs hide inside a word. Not refused: the zero-width (non-)joiners
# U+200C/U+200D, which Persian, Indic scripts and emoji sequences need, nor the direction
# marks U+200E/U+200F/U+061C, which mixed right-to-left text uses and which move no letters.
_DIRECTION_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ZERO_WIDTH = frozenset("\u200b\u2060\ufeff")
# A next-line control (U+0085) is a line break inside a sentence (the forms end a line only
# at \n, \r\n or \r): a space, as are U+2028/U+2029, which are not controls.
_SPACE_CONTROLS = "\t\n\x85"


class InputError(ValueError):
    """A person's input the library refuses, with a message fit to show them."""


@dataclass(frozen=True)
class Example:
    """One example sentence that uses the nonce word."""

    text: str


def _clean(text: str, what: str, limit: int) -> str:
    if not isinstance(text, str):
        raise InputError(f"{what} must be text, got {type(text).__name__}")
    if len(text) > limit:
        raise InputError(f"{what} is {len(text):,} characters long; the limit is {limit:,}")
    for c in text:
        if c in _DIRECTION_CONTROLS:
            kind = "an invisible direction-control character"
        elif c in _ZERO_WIDTH:
            kind = "an invisible zero-width character"
        elif unicodedata.category(c) in ("Cc", "Cs", "Co") and c not in _SPACE_CONTROLS:
            kind = "a control or binary character"
        else:
            continue
        raise InputError(f"{what} contains {kind} (U+{ord(c):04X}); remove it")
    return " ".join(unicodedata.normalize("NFC", text).split())


def check_word(word: str, what: str = "the word") -> str:
    word = _clean(word, what, MAX_WORD_CHARS)
    if not word:
        raise InputError("enter the new word")
    skeleton = "".join(
        "a" if re.match(r"\w", c) else "m" if _spaceless_mark(c) else c for c in word
    )
    if not _WORD.match(skeleton):
        raise InputError(
            f"{what} {word!r} must be a single word: letters or digits, inner - or ' allowed"
        )
    return word


def check_real_word(word: str | None, new_word: str | None = None) -> str | None:
    """The real word a person says the new one stands for (optional: blank is none), held
    to the new word's rules, and not the made-up `new_word` itself nor a form of it (florps,
    FLORP): the LM knows that no better than the learners, so its card would compare
    nothing. A new word WordNet knows (anvil for anvil) may be its own real word: the
    learners' new token is then set beside the LM's own word; and a real word WordNet knows
    stands even where it reads as a form of the new one (baked for "bak")."""
    if word is None or (isinstance(word, str) and not word.strip()):
        return None
    from backends.word_forms import is_form_of, known_word

    real = check_word(word, "the real word")
    same = new_word is not None and is_form_of(real, new_word)
    if same and not known_word(new_word) and not known_word(real):  # baked for "bak" stands
        raise InputError(
            f"the real word {real!r} is the new word itself, which the LM knows no better "
            "than a learner: give the word it stands for (anvil for florp), or leave it empty"
        )
    return real


def _spaceless_mark(c: str) -> bool:
    return unicodedata.category(c).startswith("M") and written_without_spaces(c)


def _takes_endings(word: str) -> bool:
    """Whether to suggest English endings for `word`: only one with Latin letters, and not of a
    script written without spaces (its pattern takes no ending)."""
    latin = any(unicodedata.name(c, "").startswith("LATIN") for c in word)
    return latin and not written_without_spaces(word)


def check_examples(word: str, examples: list[str]) -> list[Example]:
    """Strip blanks; every remaining sentence must use the word."""
    if isinstance(examples, str):
        examples = [examples]
    if not isinstance(examples, (list, tuple)):
        raise InputError(f"sentences must be a list of text, got {type(examples).__name__}")
    total = sum(len(t) for t in examples if isinstance(t, str))
    if total > MAX_EXAMPLES_TOTAL_CHARS:
        raise InputError(
            f"the sentences hold {total:,} characters; the limit is {MAX_EXAMPLES} sentences "
            f"of {MAX_EXAMPLE_CHARS:,} characters"
        )
    texts = [_clean(t, f"sentence {i + 1}", MAX_EXAMPLE_CHARS) for i, t in enumerate(examples)]
    texts = [t for t in texts if t]
    if not texts:
        raise InputError(f"give at least one sentence that uses {word!r}")
    if len(texts) > MAX_EXAMPLES:
        raise InputError(f"{len(texts)} sentences given; the limit is {MAX_EXAMPLES}")
    pattern = word_pattern(word)
    missing = [i + 1 for i, t in enumerate(texts) if not pattern.search(t)]
    if missing:
        which = ", ".join(str(i) for i in missing)
        message = f"sentence {which} does not contain the word {word!r}"
        if _takes_endings(word):
            forms = ", ".join(inflect(word, ending) for ending in ("s", "ed", "ing"))
            message += f" (as typed, or with an ending: {forms})"
        raise InputError(message)
    return [Example(t) for t in texts]


def check_definition(definition: str | None) -> str | None:
    if definition is None:
        return None
    return _clean(definition, "the definition", MAX_DEFINITION_CHARS) or None


def check_neighbours(k: int) -> int:
    """How many neighbours to list: a whole number 1..MAX_NEIGHBOURS."""
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_NEIGHBOURS:
        raise InputError(
            f"k={str(k)[:40]}: choose a whole number of neighbours 1..{MAX_NEIGHBOURS}"
        )
    return k
