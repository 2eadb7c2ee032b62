"""The calibration table of college's readings: who counts as right, and how they are counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.refusals import refused
from training.reading_calibration import same_word, synonyms, table

ASSET = Path(__file__).resolve().parents[2] / "assets/college/minilm-l6__gemma-3-270m"


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


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--per-pos", "-1"], "--per-pos"),
        (["--per-pos", "0"], "--per-pos"),
        (["--skip", "x"], "--skip"),
        (["--threads", "-2"], "--threads"),
        (["--out", "/nonexistent-folder/reading_calibration.json"], "--out"),
        (["--out", "."], "--out"),
    ],
)
def test_bad_arguments_are_refused_before_any_work_and_write_nothing(capsys, argv, message):
    from training.reading_calibration import main

    shipped = ASSET / "reading_calibration.json"  # what a run without --out overwrites
    before = shipped.read_bytes()
    assert message in refused(capsys, main, argv, "python -m training.reading_calibration")
    assert shipped.read_bytes() == before
