"""Fitting the LM reader's weights: the listwise loss, the fit, and the words it is fitted on."""

from __future__ import annotations

import math

import pytest
import torch

from backends import lexicon
from tests.refusals import refused
from training.reader_weights import evaluate, fit, listwise_loss, training_words


def row(features: list[list[float]], gold: int) -> dict:
    mask = torch.zeros(len(features), dtype=torch.bool)
    mask[gold] = True
    return {"features": torch.tensor(features), "gold": mask, "word": "w", "k": 1}


def test_the_listwise_loss_is_minus_the_log_of_the_words_softmax_weight():
    r = row([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], gold=0)
    weights = torch.tensor([2.0, 1.0])  # scores 2, 1, 0
    expected = -math.log(math.exp(2) / (math.exp(2) + math.exp(1) + 1))
    assert float(listwise_loss([r], weights)) == pytest.approx(expected, rel=1e-5)


def test_the_fit_finds_which_evidence_points_at_the_word():
    """The word is the best candidate by the first feature; the second is noise that the
    starting weights trust. The fit must turn to the first."""
    torch.manual_seed(0)
    rows = []
    for _ in range(60):
        features = torch.randn(8, 2)
        rows.append(row(features.tolist(), gold=int(features[:, 0].argmax())))
    start = torch.tensor([0.0, 1.0])
    fitted = fit(rows, start, l2=1e-4)
    assert fitted[0] > 3 * abs(fitted[1])
    assert evaluate(rows, fitted)["top1"] == 1.0
    assert evaluate(rows, fitted)["weight_on_word"] > evaluate(rows, start)["weight_on_word"]


def test_rows_without_the_word_do_not_move_the_fit():
    rows = [row([[1.0], [0.0]], gold=0)]
    missing = {"features": torch.tensor([[5.0], [-5.0]]), "gold": torch.zeros(2, dtype=bool)}
    both = fit([*rows, {**missing, "word": "x", "k": 1}], torch.zeros(1), l2=1e-2)
    assert torch.allclose(both, fit(rows, torch.zeros(1), l2=1e-2))


@pytest.mark.skipif(
    not (lexicon.DEBIAN_WORDNET_DIR / "data.noun").is_file(),
    reason=f"WordNet files absent from {lexicon.DEBIAN_WORDNET_DIR}; {lexicon.INSTALL_HINT}",
)
def test_training_words_are_no_evaluation_word_nor_a_synonym_of_one():
    from backends.shared_data import excluded_words

    words = training_words({"n": 5, "v": 5, "a": 5})
    assert len(words) == 15
    excluded = excluded_words()
    for word, pos, texts in words:
        assert pos in "nva"
        assert word not in excluded
        synonyms = {n.lower() for s in lexicon.wordnet().synsets(word) for n in s.lemma_names()}
        assert not synonyms & excluded
        assert 1 <= len(texts) <= 3 and all("dax" in t and word not in t.split() for t in texts)


@pytest.mark.integration
def test_extract_gives_each_reading_its_features_and_the_words_row(real_lm):
    from backends.learners.college import CollegeLearner
    from backends.learners.lm_reader import FEATURES
    from training.reader_weights import extract

    words = [("bird", "n", ["The dax sang in the tree.", "A dax built its nest on our roof."])]
    rows = extract(real_lm, CollegeLearner(), words, [1, 2])
    assert [r["k"] for r in rows] == [1, 2]
    for r in rows:
        assert r["features"].shape == (len(r["gold"]), len(FEATURES))
    assert rows[1]["gold"].any()  # two examples put the word among the candidates


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--per-pos", "abc"], "--per-pos"),
        (["--per-pos", "1,2,3,4"], "--per-pos"),
        (["--per-pos", "5,-1"], "--per-pos"),
        (["--per-pos", "0,0,0"], "--per-pos"),
        (["--shots", "0"], "--shots"),
        (["--shots", "1,4"], "--shots"),
        (["--threads", "two"], "--threads"),
        (["--drop", "proposal,nope"], "--drop"),
        (["--out", "/nonexistent-folder/weights.json"], "--out"),
    ],
)
def test_bad_arguments_get_one_line_naming_them_before_any_model_loads(capsys, argv, message):
    from training.reader_weights import main

    assert message in refused(capsys, main, argv, "python -m training.reader_weights")
