"""Bad input gets a clear InputError naming what is wrong."""

import pytest

from backends.inputs import (
    MAX_EXAMPLE_CHARS,
    MAX_EXAMPLES,
    InputError,
    check_definition,
    check_examples,
    check_real_word,
    check_word,
)


@pytest.mark.parametrize(
    ("word", "message"),
    [
        ("", "enter the new word"),
        ("   ", "enter the new word"),
        ("two words", "single word"),
        ("<script>", "single word"),
        ("x" * 10_000, "limit"),
        ("wu\x00g", "control"),
        ("\u202ewug", r"direction-control character \(U\+202E\)"),
        ("wu\u200bg", r"zero-width character \(U\+200B\)"),
        ("w\u0300\u0301\u0302u", "single word"),  # Latin marks stacked: zalgo, not a word
        ("\u0e35ก", "single word"),  # a combining mark with no letter before it
        (b"wug", "must be text"),
    ],
)
def test_bad_words(word, message):
    with pytest.raises(InputError, match=message):
        check_word(word)


def test_good_words_are_normalised():
    assert check_word("  wug ") == "wug"
    assert check_word("blick-ish") == "blick-ish"
    assert check_word("смурф") == "смурф"


@pytest.mark.parametrize("word", ["弗洛普", "フロップ", "T恤", "ฟลอร์ป", "ສະບາຍ", "ကြိုး", "ញ៉ាំ"])
def test_words_of_scripts_written_without_spaces_are_words(word):
    # Thai, Lao, Myanmar and Khmer spell most words with combining vowel and tone marks
    assert check_word(word) == word


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        ([], "at least one sentence"),
        (["", "   "], "at least one sentence"),
        (["A dog sat."], "sentence 1 does not contain"),
        (["A wug sat.", "No word here."], "sentence 2 does not contain"),
        (["wug " * 5000], "limit"),
        (["a wug"] * (MAX_EXAMPLES + 1), "limit"),
        (["a wug \x07 bell"], "control"),
        (["x" * (10 * 1024 * 1024)], "limit"),
    ],
)
def test_bad_examples(examples, message):
    with pytest.raises(InputError, match=message):
        check_examples("wug", examples)


def test_examples_keep_html_as_plain_text_and_drop_only_blank_rows():
    got = check_examples("wug", ["<script>alert(1)</script> a wug", "", "Two wugs."])
    assert [e.text for e in got] == ["<script>alert(1)</script> a wug", "Two wugs."]
    assert len("a wug " * 10) < MAX_EXAMPLE_CHARS


def test_examples_may_use_the_word_with_an_ending_that_changes_its_spelling():
    got = check_examples("quib", ["He quibbed the ball.", "Stop quibbing!", "Don't quib."])
    assert len(got) == 3
    with pytest.raises(InputError, match=r"with an ending: quibs, quibbed, quibbing"):
        check_examples("quib", ["A quibber."])  # doubled before -er reads hammer as ham


def test_an_adjective_may_be_compared():
    # "the splunkest day" was refused as not containing the word
    texts = ["Is it splunker today than yesterday?", "Today is the splunkest day of the year."]
    assert len(check_examples("splunk", texts)) == 2
    assert len(check_examples("glib", ["The glibbest answer."])) == 1


@pytest.mark.parametrize(
    ("word", "sentence"),
    [
        ("弗洛普", "我喜欢弗洛普。"),
        ("弗洛普", "弗洛普很好吃"),
        ("フロップ", "これはフロップです。"),
        ("ฟลอร์ป", "ฉันชอบฟลอร์ปมาก"),
    ],
)
def test_a_word_of_a_script_without_spaces_is_found_inside_its_sentence(word, sentence):
    assert [e.text for e in check_examples(word, [sentence])] == [sentence]


@pytest.mark.parametrize(
    ("word", "sentence"),
    [
        ("弗洛普", "我喜欢你。"),
        ("فلورب", "الفلورب جميل"),  # an attached article is not read off (yet)
        ("смурф", "Нет слова."),
    ],
)
def test_a_word_without_latin_letters_is_not_offered_english_endings(word, sentence):
    with pytest.raises(InputError) as refused:
        check_examples(word, [sentence])
    assert str(refused.value) == f"sentence 1 does not contain the word {word!r}"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("The wug \u202esat on the mat\u202c today.", "U+202E"),  # right-to-left override
        ("The wug \u202dsat.", "U+202D"),
        ("The wug \u202asat.", "U+202A"),
        ("The wug \u2067sat\u2069.", "U+2067"),  # right-to-left isolate
        ("The \u2066wug sat.", "U+2066"),
    ],
)
def test_direction_controls_are_refused_with_their_code_point(text, code):
    with pytest.raises(InputError) as refused:
        check_examples("wug", ["A wug.", text])
    assert str(refused.value) == (
        f"sentence 2 contains an invisible direction-control character ({code}); remove it"
    )
    with pytest.raises(InputError, match=r"the definition contains an invisible direction"):
        check_definition(f"a bird {text}")


@pytest.mark.parametrize(("text", "code"), [("a wu\u200bg", "U+200B"), ("\ufeffa wug", "U+FEFF")])
def test_zero_width_spaces_and_byte_order_marks_are_refused(text, code):
    with pytest.raises(InputError) as refused:
        check_examples("wug", [text])
    assert str(refused.value) == (
        f"sentence 1 contains an invisible zero-width character ({code}); remove it"
    )
    with pytest.raises(InputError, match=r"the definition contains an invisible zero-width"):
        check_definition(text)


def test_joiners_and_direction_marks_are_kept():
    # ZWNJ/ZWJ: Persian, Indic scripts and emoji sequences need them; marks move no letters
    texts = [
        "The wug is \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.",
        "A wug 👩\u200d👩\u200d👧.",
    ]
    texts += ["The wug \u200fשלום\u200e sang."]
    assert [e.text for e in check_examples("wug", texts)] == texts


def test_unicode_line_breaks_inside_a_sentence_are_spaces():
    got = check_examples("wug", ["The wug\u2028sat.\u2029 And a wug\x85 here."])
    assert [e.text for e in got] == ["The wug sat. And a wug here."]


@pytest.mark.parametrize(
    ("char", "code"), [("\x0b", "U+000B"), ("\x0c", "U+000C"), ("\x1e", "U+001E")]
)
def test_other_line_controls_are_refused_by_code_point(char, code):
    with pytest.raises(InputError) as refused:
        check_examples("wug", [f"The wug{char}sat."])
    assert str(refused.value) == (
        f"sentence 1 contains a control or binary character ({code}); remove it"
    )


def test_definition_is_optional():
    assert check_definition(None) is None and check_definition("  ") is None
    assert check_definition(" a small bird ") == "a small bird"


def test_the_real_word_is_optional_and_held_to_the_new_words_rules():
    assert check_real_word(None) is None and check_real_word(" \u3000") is None
    assert check_real_word(" anvil ") == "anvil"
    assert check_real_word("anvil", "florp") == "anvil"
    for same in (" Florp", "florps", "FLORPED", "ｆｌｏｒｐ"):  # it, or a form of it
        with pytest.raises(InputError, match="is the new word itself"):
            check_real_word(same, "florp")  # the LM knows it no better than a learner
    assert check_real_word("anvils", "anvil") == "anvils"  # a word WordNet knows: the LM's own
    assert check_real_word("baked", "bak") == "baked"  # a real word, though it reads as bak + ed
    with pytest.raises(InputError, match="the real word 'two words' must be a single word"):
        check_real_word("two words")
    with pytest.raises(InputError, match="the real word must be text"):
        check_real_word(b"anvil")
    with pytest.raises(InputError, match="the real word is 41 characters long"):
        check_real_word("a" * 41)
