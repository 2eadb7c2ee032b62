"""The LM reader: the frozen LM's expectation at the new word's slot, pooled over examples."""

from __future__ import annotations

import pytest
import torch

from backends.inputs import Example
from backends.learners.lm_reader import (
    ReaderConfig,
    left_contexts,
    slot_logprobs,
    soft_guess,
    word_tokens,
)


def test_word_tokens_are_whole_words_only(tiny_lm):
    mask = word_tokens(tiny_lm)
    pieces = tiny_lm.tokenizer.convert_ids_to_tokens(list(range(tiny_lm.vocab_size)))
    kept = {p for p, keep in zip(pieces, mask.tolist()) if keep}
    assert "▁bird" in kept and "▁the" in kept
    assert not kept & {"<pad>", "<eos>", ".", "▁.", ",", "▁a"}  # specials, punctuation, 1 letter


def test_left_contexts_skip_examples_without_one(tiny_lm):
    examples = [Example("wug sang"), Example("the small wug sang"), Example("no word here")]
    prefixes = left_contexts(tiny_lm, "wug", examples)
    assert prefixes == [tiny_lm.encode("the small")]
    assert soft_guess(tiny_lm, "wug", examples[:1]) is None  # nothing to read


def test_soft_guess_is_the_expected_row_of_the_pooled_top_words(tiny_lm):
    examples = [Example("the small wug sang"), Example("my daughter fed the wug")]
    config = ReaderConfig(temperature=0.7, top_m=5)
    guess = soft_guess(tiny_lm, "wug", examples, config)
    pooled = slot_logprobs(tiny_lm, left_contexts(tiny_lm, "wug", examples)).sum(0)
    pooled[~word_tokens(tiny_lm)] = float("-inf")
    top = pooled.topk(5)
    expected = torch.softmax(top.values / 0.7, -1) @ tiny_lm.input_matrix[top.indices]
    assert torch.allclose(guess, expected, atol=1e-6)
    # a sharp temperature gives the single most expected word's row
    sharp = soft_guess(tiny_lm, "wug", examples, ReaderConfig(temperature=1e-4, top_m=5))
    assert torch.allclose(sharp, tiny_lm.input_matrix[top.indices[0]], atol=1e-5)


@pytest.mark.integration
def test_the_real_lm_reads_a_slot_as_the_word_that_fits(real_lm):
    from backends.neighbours import vocabulary_index

    examples = [
        Example("Every morning and every night I brush my dax."),
        Example("The dentist told me to floss between my dax."),
    ]
    guess = soft_guess(real_lm, "dax", examples, ReaderConfig(temperature=0.5))
    found = vocabulary_index(real_lm, "input").search(guess, 5)[0]
    words = {n.token.strip().lower() for n in found}
    assert "teeth" in words, words
