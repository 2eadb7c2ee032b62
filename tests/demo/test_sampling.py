"""Battle definitions sampled per battle: seeded, different per seed, learners' hooks kept."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from backends.inputs import check_examples
from backends.learners import load_learner
from demo.sampling import Decoding, define_sampled

EXAMPLES = ["the bird sang at night .", "my daughter fed the bird some bread ."]


@pytest.fixture(scope="module")
def embeddings(tiny_lm):
    checked = check_examples("bird", EXAMPLES)
    return [
        load_learner(name).learn(tiny_lm, "bird", checked) for name in ("centroid", "prompting")
    ]


def test_the_same_seed_gives_the_same_texts_and_other_seeds_others(tiny_lm, embeddings):
    decoding = Decoding(temperature=1.0, top_k=0, max_new_tokens=12)
    first = define_sampled(tiny_lm, embeddings, decoding, seed=11)
    assert define_sampled(tiny_lm, embeddings, decoding, seed=11) == first
    others = {tuple(define_sampled(tiny_lm, embeddings, decoding, seed=s)) for s in range(6)}
    assert len(others) == 6  # six seeds, six different pairs of texts


def test_top_k_one_is_greedy(tiny_lm, embeddings):
    from backends.definitions import define

    greedy = [d.text for d in define(tiny_lm, embeddings, max_new_tokens=8)]
    one = Decoding(temperature=0.7, top_k=1, max_new_tokens=8)
    assert define_sampled(tiny_lm, embeddings, one, seed=1) == greedy
    assert define_sampled(tiny_lm, embeddings, one, seed=2) == greedy


def test_a_learners_own_hook_still_shapes_the_distribution(tiny_lm, embeddings):
    only = tiny_lm.tokenizer.convert_tokens_to_ids("▁moon")

    def make_hook(_nonce_id):
        def hook(hidden, logprobs):  # a learner that allows one token only
            out = torch.full_like(logprobs, float("-inf"))
            out[..., only] = 0.0
            return out

        return hook

    forced = [replace(embeddings[0], make_hook=make_hook)]
    [text] = define_sampled(tiny_lm, forced, Decoding(max_new_tokens=5), seed=3)
    assert text.split() == ["moon"] * 5


def test_decoding_is_checked_and_stored_as_json():
    assert json.loads(Decoding().as_json()) == {
        "max_new_tokens": 32,
        "temperature": 0.8,
        "top_k": 40,
    }
    for bad in ({"temperature": 0}, {"temperature": -1}, {"top_k": -1}, {"max_new_tokens": 0}):
        with pytest.raises(ValueError):
            Decoding(**bad)
