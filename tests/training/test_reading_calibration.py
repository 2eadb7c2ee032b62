"""The calibration table of college's readings: who counts as right, and how they are counted."""

from __future__ import annotations

import pytest

from training.reading_calibration import same_word, synonyms, table


def test_a_reading_is_right_when_it_is_the_word_or_an_inflection_of_it():
    assert same_word("anvil", "anvil")
    assert same_word("birds", "bird")  # the word's own headword
    assert not same_word("forge", "anvil")


def test_a_synonym_is_marked_apart_and_by_the_words_own_class():
    pytest.importorskip("nltk")
    assert synonyms("vacation", "holiday", "n")  # one WordNet synset of nouns
    assert not synonyms("hammer", "anvil", "n")
    assert synonyms("cite", "quote", "v") and not synonyms("cite", "quote", "a")


def test_readings_are_counted_per_k_and_band_of_their_top_weight():
    readings = [
        {"k": 1, "weight": 0.3, "right": False},
        {"k": 1, "weight": 0.995, "right": True},
        {"k": 3, "weight": 1.0, "right": True},
        {"k": 3, "weight": 0.999, "right": False},
        {"k": 3, "weight": 0.95, "right": True},
    ]
    counted = table(readings)
    assert counted["1"] == [[1, 0], [0, 0], [0, 0], [1, 1]]
    assert counted["2"] == [[0, 0]] * 4
    assert counted["3"] == [[0, 0], [0, 0], [1, 1], [2, 1]]
