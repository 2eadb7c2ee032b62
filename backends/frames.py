"""The classes an example's syntax leaves the new word: "a blick of lightning" is no verb.

CoLLEGe's reader (`backends/learners/lm_reader.py`) guesses the word's part of speech
from what the LM read it as: a blick read as "flash" is mostly a verb by WordNet's counts,
and its definition was written after 'The verb "blick" is defined as' although every
example used it as a noun. The words right beside the new word settle many such cases,
as they do for a person:

- after a determiner ("a blick", "the blick", "their blick"): a noun or an adjective,
  or an adverb before one ("a zimbly built house");
- before one, not after one ("dax a sonnet", "she quibbed the ball"): a verb;
- after an intensifier ("so snerk that", "too snerk"): an adjective or an adverb;
- in its plain form after a modal ("will quib"), or after a subject pronoun
  ("he sproked"): a verb, or an adverb before one ("she zimbly opened");
- in its plain form after "to" and before a particle of motion ("loves to snoggle into
  the blankets"): a verb (or an adverb); "to" alone says nothing ("went to school",
  "went to war over");
- in its plain form after a determiner and a plural noun ("the children snoggle
  under the duvet", "his knees dax"): a verb that noun is the subject of (or an adverb).

"this" and "that" are left out of the determiners (they are pronouns as often: "This
exceeds all my expectations"), as are "to" (an infinitive or a preposition) and "it"
(subject or object). A plural noun is a form WordNet reads only as a noun's
(`lexicon.plural_noun`): "systems" passes, so "the systems dax" (an analyst) is misread,
a compound rare in made-up words' examples. On the 200 DefGen dev items the class guess
goes from 85% to 88% right at one example and from 96% to 97% at three, fixing nine items
and breaking none (model card, "The examples' syntax in the class guess"). The frames
after "to" and after a plural noun came later, for examples people write ("the children
snoggle under the duvet" was read as burrow and called a noun): on DefGen dev and its
written sentences they narrow 10 of 800 items' classes (k = 1 and 3) to a verb's, each
its true class, which the reading had already guessed, and on the held-out files none
(model card, "The class guess after 'to' and after a plural subject").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from backends.function_words import MODALS
from backends.lexicon import CLASSES, Pos, plural_noun
from backends.nonce_lm import word_pattern

DETERMINERS = frozenset("a an the my your his her its our their every each another".split())
INTENSIFIERS = frozenset("very too so extremely quite rather".split())
SUBJECTS = frozenset("i he she we they".split())
# Particles a verb takes and a bare noun after "to" rarely has after it ("to snoggle
# into", "to climb up"); not "over", "through" or "in": "went to war over a strip of
# land", "to work through lunch", "to school in the morning".
MOTION_PARTICLES = frozenset("into onto up down out off away back".split())

_LAST_WORD = re.compile(r"(?<![\w'])([A-Za-z]+)\s+$")  # the word right before, nothing between
_NEXT_WORD = re.compile(r"^[A-Za-z]*\s+([A-Za-z]+)")  # after any ending ("quibbed the")
_TWO_BEFORE = re.compile(r"(?<![\w'])([A-Za-z]+)\s+[A-Za-z]+\s+$")  # "the" of "the children dax"


def frame_classes(text: str, word: str) -> set[Pos]:
    """The classes every use of `word` in `text` allows by the words beside it; all of
    `CLASSES` where no use says anything (or its uses disagree)."""
    allowed = set(CLASSES)
    for match in word_pattern(word).finditer(text):
        before = _LAST_WORD.search(text[: match.start()])
        after = _NEXT_WORD.match(text[match.end() :])
        previous = before.group(1).lower() if before else ""
        earlier = _TWO_BEFORE.search(text[: match.start()])
        before_previous = earlier.group(1).lower() if earlier else ""
        following = after.group(1).lower() if after else ""
        plain = not text[match.end() : match.end() + 1].isalpha()  # no ending: "quib", not "quibs"
        if previous in DETERMINERS:
            use = {"n", "a", "r"}
        elif following in DETERMINERS:
            use = {"v"}
        elif previous in INTENSIFIERS:
            use = {"a", "r"}
        elif previous in SUBJECTS or (previous in MODALS and plain):
            use = {"v", "r"}
        elif plain and previous == "to" and following in MOTION_PARTICLES:
            use = {"v", "r"}
        elif plain and before_previous in DETERMINERS and plural_noun(previous):
            use = {"v", "r"}
        else:
            continue
        allowed &= use
    return _agreed(allowed)


def allowed_classes(word: str, texts: Iterable[str]) -> set[Pos]:
    """The classes the examples' frames leave the word, all of `CLASSES` where they
    disagree: "the cry" and "she cried" together rule nothing out."""
    allowed = set(CLASSES)
    for text in texts:
        allowed &= frame_classes(text, word)
    return _agreed(allowed)


def _agreed(allowed: set[Pos]) -> set[Pos]:
    """`allowed`, or every class where the uses agree on none: the adverb, left by most
    frames, is no agreement by itself ("the cry" and "she cried" leave only it)."""
    return allowed if allowed - {"r"} else set(CLASSES)
