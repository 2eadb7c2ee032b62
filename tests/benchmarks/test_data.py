"""Benchmark loaders on the shared dev files and the WordNet-built sets."""

import json

import pytest

from backends import shared_data
from backends.shared_data import BLANK
from benchmarks import data
from benchmarks.data import PLACEHOLDER

needs_shared = pytest.mark.skipif(
    not shared_data.SHARED_DATA.is_dir(),
    reason=f"shared dev data absent from {shared_data.SHARED_DATA}",
)


@needs_shared
@pytest.mark.parametrize("level", [2, 4, 6])
def test_chimera_loader(level):
    items = shared_data.load_chimera(level)
    assert len(items) == 220
    assert len({item.id for item in items}) == 220
    for item in items:
        assert len(item.examples) == level
        assert len(item.probes) == len(item.ratings)
        assert all(1 <= r <= 5 for r in item.ratings)
    # the source file has one L6 item (id 100) with five probes; every other has six
    odd = [item.id for item in items if len(item.probes) != 6]
    assert odd == ([] if level != 6 else ["100"])


@needs_shared
def test_chimera_mixed_encodings_decode():
    examples = [e for item in shared_data.load_chimera(2) for e in item.examples]
    assert any("pâté" in e for e in examples)  # a Windows-1252 line
    assert any("’" in e for e in examples)  # a UTF-8 line
    assert not any("\ufffd" in e for e in examples)


def test_chimera_bad_level():
    with pytest.raises(ValueError, match="valid levels"):
        shared_data.chimera_path(3)


def test_bad_field_count(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("1\tonly two\n")
    with pytest.raises(ValueError, match="expected 4"):
        shared_data.load_chimera(path=path)


@needs_shared
def test_definitional_nonce_loader():
    items = shared_data.load_definitional_nonce()
    assert len(items) == 700
    assert items[0] == shared_data.NonceItem("pride", items[0].sentence)
    assert all(BLANK in item.sentence for item in items)


def test_with_nonce():
    assert data.with_nonce("the ___ barked", "wug") == "the wug barked"
    assert data.with_nonce("a <nonce> here", "wug") == "a wug here"


def test_defgen_set_schema():
    items = data.load_defgen()
    assert 150 <= len(items) <= 250
    assert len({item.word for item in items}) == len(items)
    for item in items:
        assert 1 <= len(item.examples) <= 3
        assert all(PLACEHOLDER in example for example in item.examples)
        assert item.definition and item.word not in item.definition.lower().split()
    assert (shared_data.SETS_DIR / "defgen.dev.jsonl").stat().st_size < 1_000_000


def test_cloze_set_schema():
    items = data.load_cloze()
    assert 100 <= len(items) <= 200
    for item in items:
        assert item.sentence.count(BLANK) >= 1
        assert len(item.candidates) == 5
        assert len({c.word for c in item.candidates}) == 5
        assert all(1 <= len(c.examples) <= 3 for c in item.candidates)
        assert all(PLACEHOLDER in e for c in item.candidates for e in c.examples)
        target = item.candidates[item.answer]
        assert item.sentence.replace(BLANK, PLACEHOLDER) not in target.examples
    assert (shared_data.SETS_DIR / "cloze.dev.jsonl").stat().st_size < 1_000_000


def test_cloze_answer_out_of_range(tmp_path):
    path = tmp_path / "cloze.jsonl"
    row = {"sentence": "a ___", "candidates": [{"word": "x", "examples": ["<nonce>"]}], "answer": 1}
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match="answer 1"):
        data.load_cloze(path)


def test_split_contains_every_dev_word():
    split = set(json.loads(shared_data.split_path().read_text())["eval_words"])
    assert {item.word for item in data.load_defgen()} <= split
    assert {c.word for item in data.load_cloze() for c in item.candidates} <= split


@needs_shared
def test_excluded_words_cover_all_eval_sets():
    excluded = shared_data.excluded_words()
    assert {item.word.lower() for item in shared_data.load_definitional_nonce()} <= excluded
    assert {
        p for level in (2, 4, 6) for i in shared_data.load_chimera(level) for p in i.probes
    } <= excluded
    assert {item.word for item in data.load_defgen()} <= excluded


def test_chimera_sources_name_two_words_for_dev_items():
    sources = data.chimera_sources()
    items = shared_data.load_chimera(2)
    known = [item for item in items if item.id in sources]
    assert known, "sources.dev.tsv should cover the dev items"
    assert all(len(sources[item.id]) == 2 and all(sources[item.id]) for item in known)
    assert data.chimera_sources(shared_data.SHARED_DATA / "no-such-file.tsv") == {}


@pytest.mark.parametrize(
    "written, wordnet",
    [
        ("defgen.test.natural.jsonl", "defgen.test.jsonl"),
        ("defgen.test.natural2.jsonl", "defgen.test.jsonl"),  # a second author's
        ("defgen.dev.natural.jsonl", "defgen.dev.jsonl"),
    ],
)
def test_written_sentence_sets_are_the_wordnet_words_in_written_sentences(written, wordnet):
    """`defgen.*.natural*.jsonl`: a WordNet file's words and references, each word in
    three sentences written for its sense, the word (whole, ending and all) as `<nonce>`
    once in each and nowhere else."""
    held_out = data.load_defgen(shared_data.SETS_DIR / wordnet)
    natural = data.load_defgen(shared_data.SETS_DIR / written)
    assert [(i.word, i.definition) for i in natural] == [(i.word, i.definition) for i in held_out]
    for item, wordnet_item in zip(natural, held_out):
        assert len(set(item.examples)) == 3
        assert not set(item.examples) & set(wordnet_item.examples)
        for example in item.examples:
            assert example.count(PLACEHOLDER) == 1
            said = example.replace(PLACEHOLDER, " ").lower().split()
            assert not any(w.strip(".,;:!?'\"").startswith(item.word) for w in said), example
