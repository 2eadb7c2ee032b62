"""A real word's forms (backends/word_forms.py): English's regular spellings that WordNet
does not know as other words, WordNet's irregular forms, and the made-up word put back in
their place with the same ending and capitals."""

import pytest

from backends.word_forms import (
    english_forms,
    is_form_of,
    names_word,
    with_made_up_word,
    with_real_word,
)


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("Bruised skin.", "bruise"),
        ("two cars", "car"),
        ("potatoes", "potato"),  # -es after an o
        ("he goes", "go"),
        ("a state of being", "be"),  # a short word's -ing, as WordNet reads it
        ("layered", "layer"),
        ("to be occurring", "occur"),  # a stressed last syllable doubles its consonant
        ("Two MICE", "mouse"),  # WordNet's irregular forms
        ("a book written by", "write"),
        ("the number of days", "day"),  # a form WordNet also lists as a word of its own
        ("İstanbul is big", "İstanbul"),  # a capital whose lower case is two letters
        ("continuing", "continue"),  # an e dropped before -ing
        ("it was starred", "star"),
    ],
)
def test_a_real_words_forms_are_found(text, word):
    assert names_word(text, word)


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("a card", "car"),  # car + d
        ("what one cares for", "car"),  # car + es
        ("a flower", "flow"),  # another word WordNet knows
        ("a tier of seats", "tie"),
        ("the best", "be"),
        ("it is", "i"),  # a short word takes no -s
        ("as well", "a"),
        ("abruise", "bruise"),  # part of a word
        ("She stared, staring", "star"),  # stare's forms, though Morphy reads star in them
        ("I hoped so", "hop"),
        ("a helper", "help"),  # help is only a synonym of one of its senses
        ("a ruler", "rule"),
        ("cafe\u0301", "cafe"),  # the letter goes on: café
        ("anything at all", ""),  # no word
    ],
)
def test_other_words_that_start_with_it_are_not(text, word):
    assert not names_word(text, word)


def test_without_wordnet_every_regular_spelling_stands(monkeypatch):
    import backends.lexicon
    import backends.word_forms

    def unreadable():
        raise PermissionError("a cache folder that cannot be written")

    caches = (english_forms, backends.word_forms._wordnet, backends.word_forms._irregular_forms)

    def clear():
        for cached in caches:
            cached.cache_clear()

    clear()
    monkeypatch.setattr(backends.lexicon, "wordnet", unreadable)
    try:
        assert names_word("two quaggas", "quagga") and not names_word("mice", "mouse")
        assert with_made_up_word("quaggas", "quagga", "blick") == "blicks"
    finally:
        clear()  # WordNet read again by the tests after this one


def test_each_form_says_the_ending_a_made_up_word_takes_in_its_place():
    forms = english_forms("mouse")
    assert forms["mouse"] == "" and forms["mice"] == "s" and forms["mousing"] == "ing"
    assert english_forms("go")["went"] == "ed" and english_forms("good")["best"] == "est"
    assert with_made_up_word("They are; it is; it was.", "be", "dax") == (
        "They dax; it daxes; it daxed."
    )


def test_the_made_up_word_takes_the_real_ones_place_ending_and_capitals_kept():
    text = "Birds: a flock of BIRDS, birdsong, a bird's nest."
    assert with_made_up_word(text, "bird", "blick") == (
        "Blicks: a flock of BLICKS, birdsong, a blick's nest."
    )
    assert with_made_up_word("Two mice.", "mouse", "blick") == "Two blicks."
    assert with_made_up_word("birds", "bird", "弗洛普") == "弗洛普"  # no English ending
    assert with_made_up_word("Birds", "bird", "eBlick") == "eBlicks"  # its own capitals


def test_a_form_of_the_made_up_word_is_told_from_another_word():
    assert is_form_of("florps", "florp") and is_form_of("ＦＬＯＲＰ", "florp")
    assert is_form_of("florp's", "florp") and is_form_of("florp", "ｆｌｏｒｐ")
    assert not is_form_of("anvil", "florp") and not is_form_of("florpish", "florp")


def test_the_real_word_takes_the_made_up_ones_place_and_ending():
    text = "Two blicks sat. The blick's nest; Blicked, the blicket stayed."
    filled = with_real_word("blick", text, "bird")
    assert filled == "Two birds sat. The bird's nest; Birded, the blicket stayed."
    # capitals as typed; a real word's own capitals kept; no English ending on a script
    # written without spaces
    assert with_real_word("florp", "The FLORPS fell. Florp!", "anvil") == "The ANVILS fell. Anvil!"
    assert with_real_word("florp", "FLORPS, FLORPED", "box") == "BOXES, BOXED"
    assert with_real_word("florp", "Florp is here; florps.", "eBay") == "eBay is here; eBays."
    assert with_real_word("florp", "Two florps. Florped.", "金床") == "Two 金床. 金床."
    # WordNet's irregular form where it has one for the ending; else the regular spelling
    assert with_real_word("florp", "Two florps florped.", "mouse") == "Two mice moused."
    assert with_real_word("florp", "It florped, florping.", "occur") == "It occurred, occurring."
    assert with_real_word("florp", "It florped.", "ring") == "It ringed."  # rang or rung?
    assert with_real_word("florp", "It florped.", "overflow") == "It overflowed."  # not overflown
