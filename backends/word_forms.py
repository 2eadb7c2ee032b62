"""A real word's English forms: finding them in text (the real word's card, the benchmarks'
`names_word` and masked identification, the arena's oracle), and putting the real word in
a made-up one's place with its ending (`with_real_word`: the oracle in context's sentences).

A made-up word has no dictionary, so `backends.nonce_lm.word_pattern` reads any stem and
regular ending after it (data may even hide "stipulated" as "fruliskd"). A real word has
one, and reading it that loosely finds words that are not its forms: car in "card", flow
in "flower", tie in "tier". So a real word's forms are English's regular spellings of its
endings (`inflect`), each kept only where WordNet reads it as a form of the word or does
not know it at all, and not where it is the same spelling of another word's (stared is
stare's, not star's); and WordNet's own irregular forms of it (mouse -> mice, go -> went,
good -> better). An irregular form that is also a word of its own (saw, left, found) is
found as the word's form wherever it stands: spelling alone cannot tell them apart.

    >>> from backends.word_forms import names_word
    >>> names_word("Two mice and a flower.", "mouse"), names_word("a flower", "flow")
    (True, False)
"""

from __future__ import annotations

import logging
import re
import unicodedata
from functools import lru_cache

from backends.nonce_lm import (
    _DOUBLED,
    _MARKS,
    SUFFIXES,
    capitals_like,
    inflect,
    inflected_pattern,
    word_pattern,
    written_without_spaces,
)

log = logging.getLogger(__name__)

_POS = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
_THIRD_PERSON = ("is", "has", "does")  # irregular verb forms that are not past ones
_PLAIN = ("am", "are")


def _ending(pos: str, form: str) -> str:
    """The ending a made-up word takes in the place of an irregular form of this class:
    mice -> blicks, went -> blicked, is -> blicks, are -> blick, better -> blicker, best ->
    blickest."""
    if pos == "noun":
        return "s"
    if pos == "verb":
        if form.endswith("ing"):
            return "ing"
        if form in _PLAIN:
            return ""
        return "s" if form in _THIRD_PERSON or form.endswith("es") else "ed"  # quizzes, went
    return "est" if form.endswith("st") else "er"


def fold(text: str) -> str:
    """The key forms are compared by: compatibility-normalised and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


@lru_cache(maxsize=1)
def _wordnet():
    """The WordNet reader, or None where it cannot be read (not installed, a cache folder
    that cannot be written): then every regular spelling stands and there are no irregular
    forms, rather than a card or a battle failing after its work is done. Asked once, not
    again for every spelling of every word."""
    from backends.lexicon import wordnet

    try:
        return wordnet()
    except (RuntimeError, LookupError, OSError) as err:
        log.warning("WordNet cannot be read (%s): a real word's forms by spelling alone", err)
        return None


@lru_cache(maxsize=1)
def _irregular_forms() -> dict[str, dict[str, str]]:
    """WordNet's exception lists turned round: base -> {irregular form: ending}."""
    wn = _wordnet()
    forms: dict[str, dict[str, str]] = {}
    for pos in _POS if wn is not None else ():
        with wn.open(f"{pos}.exc") as lines:
            for line in lines:
                form, *bases = line.split()
                if "_" in form:  # phrases: not one word
                    continue
                for base in bases:
                    if base != form:
                        forms.setdefault(base, {}).setdefault(form, _ending(pos, form))
    return forms


def _bases(form: str) -> set[str] | None:
    """Every word WordNet reads `form` as a form of, in every class (stared: stare, star;
    days: days, day), where its `morphy` gives one a class; None where WordNet cannot be
    read. (NLTK keeps the whole list in `_morphy`.)"""
    wn = _wordnet()
    if wn is None:
        return None
    return {base for pos in _POS.values() for base in wn._morphy(form, pos)}


@lru_cache(maxsize=4096)
def english_forms(word: str) -> dict[str, str]:
    """A real word's forms, each (`fold`ed) -> the ending a made-up word takes in its place
    ("" for the word itself): its regular spellings (`inflect` of each ending; the plain
    -ed and -ing besides, and an e dropped before -ing: layered, continuing; -es after an
    o; a last consonant doubled where English may double it) where WordNet reads them as
    its forms or does not know them, but not a spelling that is another word's form as
    well (star + ed is "starred": "stared" is stare's); and WordNet's irregular forms.
    A word of one or two letters takes only -ing and an o's -es, and only where WordNet
    reads them as its forms (being, going, goes): I + s is "is", a + s "as", us + es
    "uses". Without WordNet, every spelling stands."""
    lower = fold(word)
    if not lower:
        return {}
    forms = {lower: ""}
    plain = [(lower + "ing", "ing")]  # being, layering (inflect doubles "layer": one syllable)
    regular = []
    if len(lower) >= 3:  # a short word's other spellings are mostly other words: as, is, uses
        regular += [(inflect(lower, e), e) for e in SUFFIXES if e != "'s"]  # s before es
        if lower.endswith("e"):
            plain.append((lower[:-1] + "ing", "ing"))  # continuing, arguing
        else:
            plain.append((lower + "ed", "ed"))  # layered
        if _DOUBLED.search(lower):  # a stressed last syllable: occurred, occurring
            regular += [(lower + lower[-1] + e, e) for e in ("ed", "ing", "est")]
    if lower.endswith("o"):
        regular.append((lower + "es", "s"))  # potatoes, goes
    rival = lower + "e"  # a word whose own forms the plain ones may spell: stare, hope, cape
    rivals = {inflect(rival, e) for e in ("ed", "ing")} if _bases(rival) else set()
    for form, ending in regular + [(f, e) for f, e in plain if f not in rivals]:
        bases = _bases(form)
        if bases is None:
            kept = True
        elif len(lower) <= 2:  # a short word: only what WordNet reads as its own
            kept = lower in bases
        else:  # a longer one: all but what WordNet reads only as other words (flow + er)
            kept = not bases or lower in bases
        if kept:
            forms.setdefault(form, ending)
    for form, ending in _irregular_forms().get(lower, {}).items():
        forms.setdefault(form, ending)
    return forms


def real_word_pattern(word: str) -> re.Pattern[str]:
    """Case-insensitive whole-word match of a real word or one of its `english_forms`, the
    form whole (a possessive's "'s" stays out). A word of a script without spaces: as typed."""
    if written_without_spaces(word):
        return word_pattern(word)
    forms = set(english_forms(word))
    if not forms:  # no word: nothing to find
        return re.compile(r"(?!)")
    # as typed too: a capital whose lower case is two letters (İ) folds to a spelling that
    # no text holds, while the regex's own case-blind match reads İstanbul as istanbul
    stem = fold(word)
    forms |= {word + form[len(stem) :] for form in forms if form.startswith(stem)}
    ordered = sorted(forms, key=len, reverse=True)  # the longest form first
    alternatives = "|".join(map(re.escape, ordered))
    # nor before a combining mark: "cafe" + U+0301 is café, not cafe
    return re.compile(rf"(?<!\w)(?:{alternatives})(?![\w{_MARKS}])", re.IGNORECASE)


def names_word(text: str, word: str) -> bool:
    """Whether `text` says the real `word` or one of its forms ('to bruise', 'bruised',
    'mice'), found by spelling: a definition that does names what it defines (the
    benchmarks' `names_word`, the real word's card)."""
    return bool(real_word_pattern(word).search(text))


# A made-up word's ending (as `word_pattern` leaves it) -> the ending class of
# `english_forms`: the irregular forms that take its place.
_ENDING_CLASS = {"s": "s", "es": "s", "ed": "ed", "d": "ed", "ing": "ing", "er": "er", "est": "est"}


def spelled(real: str, ending: str) -> str:
    """The real word with a made-up word's `ending` as English spells it: WordNet's
    irregular form where it has just one for that ending (mouse + s -> mice, good + er ->
    better; for -ed only a spelling of the regular past, occur + ed -> occurred), else the
    regular spelling (`inflect`: bird + s -> birds; ring + ed -> ringed, since WordNet
    does not say whether rang or rung; overflow + ed -> overflowed, not overflown)."""
    base, kind = fold(real), _ENDING_CLASS.get(ending.lower())
    found = [f for f, e in _irregular_forms().get(base, {}).items() if kind and e == kind]
    if kind == "ed":  # a past of its own may stand beside the regular one (overflown,
        # learnt), or be a participle (drunk): only the regular past's own spelling (occurred)
        found = [f for f in found if f.startswith(base) and f.endswith("ed")]
    return found[0] if len(found) == 1 else inflect(real, ending.lower())


def with_real_word(word: str, text: str, real: str) -> str:
    """`text` with the made-up `word` replaced by the `real` one it stands for, the made-up
    word's ending put on the real one as English spells it (blicks -> birds, mice;
    `spelled`) and its capitals (Blick -> Bird, BLICKS -> BIRDS; a real word with capitals
    of its own, eBay, keeps them): the sentences the LM reads when it already knows the
    word (the oracle in context). English endings go only on a word of a script written
    with spaces."""
    stem = word_pattern(word)
    endings = not written_without_spaces(real)

    def real_form(match: re.Match[str]) -> str:
        typed = match.group()
        ending = typed[stem.match(typed).end() :]
        return capitals_like(typed, spelled(real, ending) if ending and endings else real)

    return inflected_pattern(word).sub(real_form, text)


def with_made_up_word(text: str, real: str, word: str) -> str:
    """`text` with the `real` word's forms replaced by the made-up `word` with the same
    ending (birds -> blicks, mice -> blicks) and capitals: where the LM, knowing the word,
    still names it, the text a reader sees of it names the made-up one instead, as a
    learner's would. A made-up word of a script without spaces takes no English ending."""
    endings = english_forms(real)
    takes_endings = not written_without_spaces(word)

    def made_up(match: re.Match[str]) -> str:
        ending = endings.get(fold(match.group()), "")
        return capitals_like(
            match.group(), inflect(word, ending) if ending and takes_endings else word
        )

    return real_word_pattern(real).sub(made_up, text)


def is_form_of(real: str, word: str) -> bool:
    """Whether the `real` word as typed is the made-up `word` itself or a form of it
    (florps, FLORP, ｆｌｏｒｐ, florp's), both compared in compatibility form."""
    real = unicodedata.normalize("NFKC", real).removesuffix("'s").removesuffix("’s")
    return bool(inflected_pattern(unicodedata.normalize("NFKC", word)).fullmatch(real))


def known_word(word: str) -> bool:
    """Whether WordNet reads `word` as a word or a form of one (False where it cannot be
    read)."""
    return bool(_bases(fold(word)))
