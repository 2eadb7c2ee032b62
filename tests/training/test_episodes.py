"""CoLLEGe's LM episodes: the paper's query sentences and the definition-probe queries."""

from __future__ import annotations

import random
from dataclasses import replace

import torch

from backends.definitions import PROMPT
from training.college import Data, TrainConfig, lm_episodes
from training.college_losses import episode_ids


def tiny_data() -> Data:
    words = ["bird", "cat"]
    sentences = [
        "a bird sang in the garden",
        "the bird pecked some seeds",
        "my cat was fed bread",
        "the cat hopped across the road",
    ]
    owner = [0, 0, 1, 1]
    empty = torch.zeros(len(words), 32)
    return Data(
        words=words,
        sentences=sentences,
        owner=owner,
        of_word=[[0, 1], [2, 3]],
        features=[torch.zeros(3, 8) for _ in sentences],
        glosses=[(0, "a small animal"), (3, "a small animal that was fed milk")],
        ref_in=empty,
        ref_out=empty,
        vocab=empty,
    )


def test_definition_queries_read_the_probe_then_the_support_sentences_gloss(tiny_lm):
    data, V = tiny_data(), tiny_lm.vocab_size
    cfg = replace(TrainConfig(), lm_batch=6, definitions=1.0)
    episodes, support = lm_episodes(tiny_lm, data, random.Random(0), cfg)
    assert len(episodes) == len(support) == 6
    for e, ((student, teacher, align, _), s) in enumerate(zip(episodes, support)):
        gloss = dict(data.glosses)[s]  # the support sentence is the gloss's own example
        word = data.words[data.owner[s]]
        query = f"{PROMPT.format(word=word)} {gloss}."
        assert (student, teacher, align) == episode_ids(tiny_lm, query, word, V + e)
        assert student.count(V + e) == 1  # the probe names the word once, as the new token
        assert align[0][0] == student.index(V + e) - 1  # losses start where it is predicted


def test_without_definitions_the_query_is_another_sentence_of_the_word(tiny_lm):
    data, V = tiny_data(), tiny_lm.vocab_size
    cfg = replace(TrainConfig(), lm_batch=6, definitions=0.0)
    episodes, support = lm_episodes(tiny_lm, data, random.Random(0), cfg)
    for e, ((student, teacher, _, _), s) in enumerate(zip(episodes, support)):
        w = data.owner[s]
        (q,) = [q for q in data.of_word[w] if q != s]  # the word's other sentence
        expected = episode_ids(tiny_lm, data.sentences[q], data.words[w], V + e)
        assert (student, teacher) == expected[:2]
        assert V + e in student
