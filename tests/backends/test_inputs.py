"""Bad input gets a clear InputError naming what is wrong."""

import pytest

from backends.inputs import (
    MAX_EXAMPLE_CHARS,
    MAX_EXAMPLES,
    InputError,
    check_definition,
    check_examples,
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


def test_definition_is_optional():
    assert check_definition(None) is None and check_definition("  ") is None
    assert check_definition(" a small bird ") == "a small bird"
