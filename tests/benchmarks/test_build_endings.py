"""DefGen with endings: the same items, the nonce keeping its regular ending."""

import re

import pytest

from backends import lexicon
from backends.shared_data import SETS_DIR
from benchmarks.build_endings import build, masked, with_endings
from benchmarks.data import DefGenItem, load_defgen

needs_wordnet = pytest.mark.skipif(
    not (lexicon.DEBIAN_WORDNET_DIR / "data.noun").is_file(),
    reason=f"WordNet files absent from {lexicon.DEBIAN_WORDNET_DIR}; {lexicon.INSTALL_HINT}",
)


@needs_wordnet
@pytest.mark.parametrize(
    ("sentence", "word", "pos", "expected"),
    [
        ("the noise drowned out her speech", "drown", "v", "the noise <nonce>ed out her speech"),
        ("he stopped the car", "stop", "v", "he <nonce>ed the car"),  # doubled p: the stem's
        ("the building collapsed", "collapse", "v", "the building <nonce>ed"),  # daxed, not daxd
        ("she carries it", "carry", "v", "she <nonce>es it"),
        ("the geese flew", "goose", "n", "the <nonce> flew"),  # irregular: no ending to keep
        ("a dog-eared dog", "dog", "n", "a dog-eared <nonce>"),  # DefGen's tokens alone
    ],
)
def test_an_inflected_token_keeps_its_regular_ending(sentence, word, pos, expected):
    assert masked(sentence, word, pos, with_ending=True) == expected
    defgen = re.sub(r"<nonce>\w+", "<nonce>", expected)  # DefGen masks the whole token
    assert masked(sentence, word, pos, with_ending=False) == defgen


@needs_wordnet
def test_each_example_is_traced_back_to_its_wordnet_sentence():
    items = {item.word: item for item in load_defgen(SETS_DIR / "defgen.dev.jsonl")}
    cycle = with_endings(items["cycle"])  # "Schubert's song cycles"
    assert cycle.examples[1] == "Schubert's song <nonce>s"
    assert [e.replace("<nonce>s", "<nonce>") for e in cycle.examples] == items["cycle"].examples
    made_up = DefGenItem("cycle", ["a <nonce> nobody wrote"], "x")
    assert with_endings(made_up) == made_up


@needs_wordnet
def test_the_committed_files_are_what_the_builder_writes(tmp_path):
    for split in ("dev", "test"):
        (tmp_path / f"defgen.{split}.jsonl").write_bytes(
            (SETS_DIR / f"defgen.{split}.jsonl").read_bytes()
        )
    sizes = build(tmp_path)
    assert sizes == {"defgen.dev.endings.jsonl": 73, "defgen.test.endings.jsonl": 35}
    for name in sizes:
        assert (tmp_path / name).read_bytes() == (SETS_DIR / name).read_bytes()
