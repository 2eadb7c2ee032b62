"""The prepared pool: real words hidden behind made-up ones, never an evaluation word."""

from __future__ import annotations

import json

import pytest

from backends import lexicon
from backends.inputs import check_examples
from demo.items import arena_pool
from demo.settings import ASSETS
from tools.build_arena_pool import gives_away, hide


def test_hiding_keeps_case_and_inflection():
    assert hide("nestle", "glaskeal", "Nestles grow; she nestled in.") == (
        "Glaskeals grow; she glaskeald in."
    )
    assert hide("dog", "blick", "a dogged hotdog") == "a dogged hotdog"  # whole words only
    assert gives_away("downstairs", ["the downstair phone"])
    assert not gives_away("wise", ["a poogeld comment"])


@pytest.mark.skipif(
    not (lexicon.DEBIAN_WORDNET_DIR / "data.noun").is_file(),
    reason=f"WordNet files absent from {lexicon.DEBIAN_WORDNET_DIR}; {lexicon.INSTALL_HINT}",
)
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


@pytest.mark.parametrize("line", [0, -1])
def test_pool_lines_are_plain_json_objects(line):
    rows = (ASSETS / "arena_items.jsonl").read_text(encoding="utf-8").splitlines()
    assert set(json.loads(rows[line])) <= {"word", "examples", "answer"}
