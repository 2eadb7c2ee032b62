"""The prepared pool: real words hidden behind made-up ones, never an evaluation word."""

from __future__ import annotations

import json

import pytest

from backends import lexicon
from backends.inputs import check_examples
from demo.items import arena_pool
from demo.settings import ASSETS
from demo.vocabulary import PARTS_OF_SPEECH
from tools.build_arena_pool import gives_away, hide, names_something, wordnet_sense
from training.corpus import GCIDE_PATH

needs_wordnet = pytest.mark.skipif(
    not (lexicon.DEBIAN_WORDNET_DIR / "data.noun").is_file(),
    reason=f"WordNet files absent from {lexicon.DEBIAN_WORDNET_DIR}; {lexicon.INSTALL_HINT}",
)


def test_hiding_keeps_case_and_inflection():
    assert hide("nestle", "glaskeal", "Nestles grow; she nestled in.") == (
        "Glaskeals grow; she glaskealed in."  # the ending respelled: not glaskeald
    )
    assert hide("stop", "pindle", "He stopped, then stopping, stops.") == (
        "He pindled, then pindling, pindles."
    )
    assert hide("watch", "migrax", "the dog's watches") == "the dog's migraxes"
    assert hide("dog", "blick", "a hotdog and dogma") == "a hotdog and dogma"  # whole words only
    # the article fits the made-up word: "an wospit" would misprint and tell a vowel
    assert hide("armchair", "wospit", "An armchair, an armchair") == "A wospit, a wospit"
    assert hide("dog", "oskal", "a dog, a dogma") == "an oskal, a dogma"
    assert gives_away("downstairs", ["the downstair phone"])
    assert not gives_away("wise", ["a poogeld comment"])


def test_a_sentence_with_a_word_of_the_slur_guard_is_never_shown():
    from backends.blocked_words import SLURS
    from tools.build_arena_pool import shows_a_slur

    word = sorted(SLURS)[0]
    assert shows_a_slur(f"An old line: the {word.upper()}, it said.")
    assert not shows_a_slur("The warmth distends the cracks.")


@needs_wordnet
def test_the_shipped_pool_hides_real_words_never_evaluated():
    from backends.lexicon import wordnet
    from backends.shared_data import excluded_words
    from training.corpus import is_excluded

    pool = arena_pool(ASSETS / "arena_items.jsonl")
    prepared = [item for item in pool if item.answer]
    assert len(prepared) >= 500
    assert {len(item.examples) for item in prepared} == {1, 2, 3}
    assert len({item.word for item in pool}) == len(pool)  # every made-up word once
    excluded = frozenset(excluded_words())
    reader = wordnet()
    for item in prepared:
        check_examples(item.word, list(item.examples))  # each sentence uses the made-up word
        assert not is_excluded(item.answer, excluded), item.answer
        assert not reader.synsets(item.word) and reader.morphy(item.word) is None, item.word
        assert not gives_away(item.answer, list(item.examples)), item
        assert item.reference and item.pos in PARTS_OF_SPEECH, item
        shown = [hide(item.word, item.answer, s) for s in item.examples]  # the real sentences
        assert not names_something(item.answer, shown), item  # a word to learn, not a name
    assert {item.pos for item in prepared} == set(PARTS_OF_SPEECH)  # every board has items


def test_a_word_written_with_a_capital_inside_a_sentence_is_a_name():
    assert names_something("sulla", ["Mithridates was defeated by Sulla in 86 BC"])
    assert names_something("winner", ["broad in scope; - T.G.Winner"])  # a gloss's author
    assert not names_something("dog", ["Dogs bark.", "It ran. Dogs bark.", '"Dogs!" he said'])
    assert not names_something("dog", ["the dog barked", "(Dogs bark.)"])


@pytest.fixture(scope="module")
def sense():
    """The builder's sense finder, read from WordNet once for the tests that ask it."""
    return wordnet_sense()


@needs_wordnet
def test_a_name_has_no_sense(sense):
    assert sense("ghana", ["the capital and largest city of ghana"]) is None  # Ghana
    assert sense("odin", ["chief god; counterpart of odin"]) is None  # Odin
    assert sense("buteo", ["any hawk of the genus buteo"]) is None  # the genus Buteo
    assert sense("dog", ["the dog barked all night"]) is not None


@needs_wordnet
def test_the_sense_is_the_one_a_usage_example_shows_else_the_commonest(sense):
    # "Catholics sometimes fast during Lent" illustrates fast.v.01, though the word's commonest
    # sense is an adjective
    assert sense("fast", ["Catholics sometimes fast during Lent"]) == (
        "verb",
        "abstain from certain foods, as for religious or medical reasons",
    )
    # no usage example among the sentences: the commonest sense by SemCor counts wins, here
    # the adjective (quick.s.01) over WordNet's first-listed noun (quick.n.01)
    assert sense("quick", ["she gave a quick answer to a hard question"]) == (
        "adjective",
        "accomplished rapidly and without delay",
    )
    assert sense("kleapret", ["a kleapret sat there"]) is None  # not in WordNet: no item


@pytest.mark.skipif(not GCIDE_PATH.exists(), reason=f"{GCIDE_PATH} absent (make pool installs it)")
def test_the_shipped_pool_shows_gcide_quotations():
    from training.corpus import gcide_sentences

    quoted = {" ".join(text.split()) for _, text in gcide_sentences()}
    prepared = [item for item in arena_pool(ASSETS / "arena_items.jsonl") if item.answer]
    # the made-up word swapped back for the real one gives the sentence as GCIDE spells it
    shown = {hide(item.word, item.answer, s) for item in prepared for s in item.examples}
    assert shown & quoted


def test_gcide_letters_are_shown_as_letters():
    from training.corpus import gcide_letters

    assert gcide_letters('After his a["e]ry flight') == "After his aëry flight"
    assert gcide_letters('The word "[ae]ternus"') == 'The word "æternus"'
    assert gcide_letters("caf['e], fa[,c]ade, [OE]dipus") == "café, façade, Œdipus"
    assert (
        gcide_letters("condemn it [land] to [PJC]") == "condemn it [land] to [PJC]"
    )  # an editor's
    # and the shipped pool shows none of GCIDE's markup (two items did: '[ae]ternus')
    shown = [s for item in arena_pool(ASSETS / "arena_items.jsonl") for s in item.examples]
    assert not [s for s in shown if gcide_letters(s) != s]


@pytest.mark.parametrize("line", [0, -1])
def test_pool_lines_are_plain_json_objects(line):
    rows = (ASSETS / "arena_items.jsonl").read_text(encoding="utf-8").splitlines()
    assert set(json.loads(rows[line])) <= {"word", "examples", "answer", "pos", "reference"}


def test_the_shipped_pool_reads_as_arena_items_for_the_builder():
    from tools.build_arena_pool import arena_rows

    rows = arena_rows(ASSETS / "arena_items.jsonl")
    assert rows and sum(not row.get("answer") for row in rows) >= 1  # hand-written ones kept


@pytest.mark.parametrize(
    "text",
    [
        "word,examples\nbrastle,The gate would brastle.\n",  # a CSV
        json.dumps({"word": "wug", "examples": ["A wug."], "vote": "a", "annotator": "x"}),
        json.dumps({"word": "wug", "examples": '["A wug."]'}),  # examples as a JSON string
        json.dumps(["wug", ["A wug."]]),
    ],
)
def test_an_out_file_that_is_no_pool_is_refused_before_the_build_and_left_alone(
    tmp_path, capsys, text
):
    from tools.build_arena_pool import main

    out = tmp_path / "pool.jsonl"
    out.write_text(text, encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        main(["--out", str(out)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--out" in err.splitlines()[-1] and "not an arena item" in err
    assert "Traceback" not in err
    assert out.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("count", ["-1", "0", "many"])
def test_a_count_below_one_is_refused(tmp_path, capsys, count):
    from tools.build_arena_pool import main

    with pytest.raises(SystemExit) as exit_:
        main(["--count", count, "--out", str(tmp_path / "pool.jsonl")])
    assert exit_.value.code == 2
    assert "--count" in capsys.readouterr().err.splitlines()[-1]
    assert not (tmp_path / "pool.jsonl").exists()


def test_an_out_in_no_folder_is_refused(tmp_path, capsys):
    from tools.build_arena_pool import main

    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "missing" / "pool.jsonl")])
    assert "no folder" in capsys.readouterr().err
